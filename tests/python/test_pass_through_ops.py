"""Ops that pass their operand's values through between a GEMM and its epilogue: nn.Dropout in eval mode, clone,
detach, alias, a view or reshape to the same shape. They ended the chain, so `Linear -> Dropout -> ReLU` fused nothing
and the report said "a bare GEMM" (review, session 56); they now join the chain and emit nothing. A GEMM whose
epilogue ends at an op without a chain form names that op in its reason."""
from __future__ import annotations

import operator

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxfuse
import testlib
from helpers import run_the_generated_kernel

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.fixture(autouse=True)
def _run_the_kernel(monkeypatch):
    run_the_generated_kernel(monkeypatch)


class _LinearDropoutRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.drop = nn.Linear(32, 64), nn.Dropout(0.1)

    def forward(self, x, w, b):
        return F.relu(self.drop(self.fc(x)) + b)


class _Through(nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x, w, b):
        return self.f(x @ w, b)


FORMS = {
    "dropout_eval": _LinearDropoutRelu,
    "clone": lambda: _Through(lambda y, b: torch.relu(y.clone() + b)),
    "detach": lambda: _Through(lambda y, b: torch.relu(y.detach() * 2 + b)),
    "alias": lambda: _Through(lambda y, b: torch.relu(torch.ops.aten.alias.default(y) - b)),
    "same_view": lambda: _Through(lambda y, b: torch.relu(y.view(-1, 64) + b)),
    "same_reshape": lambda: _Through(lambda y, b: torch.sigmoid(y.reshape(y.shape[0], 64)) * b),
    "clone_as_second_output": lambda: _Through(lambda y, b: (torch.relu(y + b), y.clone())),
}


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("decomposed", [False, True], ids=["export", "decomposed"])
@pytest.mark.parametrize("form", list(FORMS))
def test_a_pass_through_op_joins_the_chain(device, decomposed, form):
    g = testlib.generator("cpu", "pass_through", form)
    model = FORMS[form]().eval().to(device)
    x, w, b = (torch.randn(8, 32, generator=g).to(device), torch.randn(32, 64, generator=g).to(device),
               torch.randn(64, generator=g).to(device))
    ep = torch.export.export(model, (x, w, b))
    if decomposed:
        ep = ep.run_decompositions()
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    left = [str(n.target) for n in ep2.graph.nodes if n.op == "call_function"
            and n.target not in (torch.ops.fxfuse.gemm_chain.default, operator.getitem)]
    assert not left, f"left unfused: {left}"
    with torch.no_grad():
        got, want = ep2.module()(x, w, b), model(x, w, b)
    for g_, w_ in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        torch.testing.assert_close(g_, w_, rtol=1e-5, atol=1e-5)


@pytest.mark.needs_real_pass
def test_dropout_in_training_stays_outside():
    """Dropout with train=True draws a mask: it ends the chain (the model's answer is random, so only the graph is
    checked)."""
    ep = torch.export.export(_Through(lambda y, b: F.relu(F.dropout(y, 0.5, training=True) + b)),
                             (torch.randn(8, 32), torch.randn(32, 64), torch.randn(64)))
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    assert any("dropout" in str(n.target) or "bernoulli" in str(n.target) for n in ep2.graph.nodes)
    (entry,) = fxfuse.report(ep, only_profitable=False).entries
    assert "(aten.dropout.default), which the chain does not take with these arguments" in entry["detail"], entry


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("f, named", [(lambda y, b: torch.softmax(y, -1), "%softmax (aten.softmax.int), which has no "
                                       "chain form"),
                                      (lambda y, b: torch.relu(y.view(2, 4, 64)), "%view (aten.view.default), which "
                                       "does not keep the output's shape")])
def test_a_bare_gemm_names_the_op_its_epilogue_ends_at(f, named):
    ep = torch.export.export(_Through(f), (torch.randn(8, 32), torch.randn(32, 64), torch.randn(64)))
    (entry,) = fxfuse.report(ep, only_profitable=False).entries
    assert entry["reason"] == "no_epilogue_no_prologue" and f"the epilogue ends at {named}" in entry["detail"], entry


WRITES_THROUGH = {
    "view": lambda y, b: y.view(8, 64).add_(b),
    "reshape": lambda y, b: y.reshape(8, 64).add_(b),
    "detach": lambda y, b: y.detach().add_(b),
    "alias": lambda y, b: torch.ops.aten.alias.default(y).add_(b),
    "dropout_eval": lambda y, b: F.dropout(y, 0.1, training=False).add_(b),
}


class _WriteThrough(nn.Module):
    def __init__(self, write):
        super().__init__()
        self.write = write

    def forward(self, x, w, b):
        y = x @ w
        z = torch.relu(y * 2)
        self.write(z, b)  # eager's op returns an alias of z: the write reaches z
        return z


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("form", list(WRITES_THROUGH))
def test_a_pass_through_op_written_through_keeps_its_alias(form):
    """Bound to its operand's value, an aliasing op and its operand would be two buffers after the rewrite, and an
    in-place write through one would miss the other (review, session 56: the write was lost). Such an op ends the
    chain; the answer is eager's."""
    g = testlib.generator("cpu", "write_through", form)
    x, w, b = torch.randn(8, 32, generator=g), torch.randn(32, 64, generator=g), torch.randn(64, generator=g)
    model = _WriteThrough(WRITES_THROUGH[form])
    ep2 = fxfuse.rewrite(torch.export.export(model, (x, w, b)), only_profitable=False)
    torch.testing.assert_close(ep2.module()(x, w, b), model(x, w, b), rtol=1e-5, atol=1e-5)


class _SameShapeViewOfA(nn.Module):
    """A 3-D linear as AOT writes it, `mm(x.view(B*S, K), w).view(B, S, N)`, with N == K: `a.view(B, S, K)` has the
    output's shape but is x, not the product (review, session 56: the chain read the GEMM result twice)."""

    def forward(self, x, w):
        a = x.view(-1, 32)
        o = torch.mm(a, w).view(x.shape[0], x.shape[1], 32)
        return torch.relu(o + a.view(x.shape[0], x.shape[1], 32))


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("batch", [1, 2])
def test_the_a_side_view_of_a_3d_linear_is_x(batch):
    g = testlib.generator("cpu", "a_view", batch)
    x, w = torch.randn(batch, 4, 32, generator=g), torch.randn(32, 32, generator=g)
    model = _SameShapeViewOfA()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x, w)), only_profitable=False)
    torch.testing.assert_close(ep2.module()(x, w), model(x, w), rtol=1e-5, atol=1e-5)


@pytest.mark.needs_real_pass
def test_a_linear_and_dropout_alone_is_a_bare_gemm():
    """Dropout passed through is no epilogue: the GEMM alone is left to cuBLAS, and eager's kernel count behind a
    SiLU is one (review, session 56: a Linear -> Dropout was fused as `linear+bias`)."""
    model = nn.Sequential(nn.Linear(32, 64), nn.Dropout(0.1)).eval()
    (entry,) = fxfuse.report(torch.export.export(model, (torch.randn(8, 32),))).entries
    assert entry["reason"] == "no_epilogue_no_prologue", entry
