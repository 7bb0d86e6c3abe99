"""GELU and SiLU under the torch.compile backend on the CPU (python/fxfuse/decomposed_activations.py): Inductor's
decomposition of each is collapsed back into the one op before the pass, so a fused chain computes eager's kernel, and
put back where no chain took it."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxfuse
import testlib

pytestmark = pytest.mark.needs_real_pass

# the four finite bf16 inputs where tanh-GELU computed op by op with ATen's tanh is -1.5e-7 and eager's gelu (and
# Inductor's code) -0 (session 60's helper, an exhaustive sweep of the bf16 inputs)
TANH_EDGE = [-5.0625, -5.09375, -5.125, -5.15625]


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and torch.equal(a.view(torch.int16), b.view(torch.int16))


class IdentityLinearGelu(torch.nn.Module):
    """gelu(x @ I + 0): the pre-activations are the inputs themselves, exactly."""

    def __init__(self, n: int, approximate: str):
        super().__init__()
        self.register_buffer("w", torch.eye(n).to(torch.bfloat16))
        self.register_buffer("b", torch.zeros(n).to(torch.bfloat16))
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(F.linear(x, self.w, self.b), approximate=self.approximate)


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_a_fused_gelu_computes_eagers_gelu(approximate):
    testlib.seed("decomposed_gelu", approximate)
    n = 64
    model = IdentityLinearGelu(n, approximate)
    x = torch.randn(16, n).mul(4).to(torch.bfloat16)
    x[0, :4] = torch.tensor(TANH_EDGE).to(torch.bfloat16)
    torch._dynamo.reset()
    fxfuse.reset_stats()
    with torch.no_grad():
        got = torch.compile(model, backend=fxfuse.backend_with(only_profitable=False))(x)
    assert fxfuse.stats()["chains_fused"] == 1
    want = model(x)
    assert _same_bits(got, want), (got != want).nonzero()[:8]
    if approximate == "tanh":
        assert _same_bits(got[0, :4], torch.zeros(4).neg().to(torch.bfloat16)), got[0, :4]  # eager's -0


def test_a_gelu_no_chain_takes_is_inductors_again():
    """A GELU of a graph input (no GEMM before it) is collapsed and then expanded back: Inductor compiles its own
    decomposition, with the same bits as Inductor alone."""
    testlib.seed("decomposed_gelu_unfused")

    def f(x, w):
        return F.gelu(x, approximate="tanh") + (x @ w).sum()

    x, w = torch.randn(8, 32).to(torch.bfloat16), torch.randn(32, 4).to(torch.bfloat16)
    torch._dynamo.reset()
    want = torch.compile(f)(x, w)
    torch._dynamo.reset()
    got = torch.compile(f, backend=fxfuse.backend_with(only_profitable=False))(x, w)
    assert _same_bits(got, want)


def test_a_gelu_formula_written_out_stays_op_by_op():
    """The same formula written by the user is not aten.gelu (no such provenance): eager computed it op by op with
    torch.tanh, and so does the chain."""
    testlib.seed("decomposed_gelu_formula")
    n = 32

    def f(x, w):
        y = F.linear(x, w)
        yf = y.float()
        return (0.5 * yf * (1 + torch.tanh(0.7978845608028654 * (yf + 0.044715 * yf * yf * yf)))).to(y.dtype)

    w = torch.eye(n).to(torch.bfloat16)
    x = torch.randn(8, n).mul(4).to(torch.bfloat16)
    x[0, :4] = torch.tensor(TANH_EDGE).to(torch.bfloat16)
    torch._dynamo.reset()
    fxfuse.reset_stats()
    with torch.no_grad():
        got = torch.compile(f, backend=fxfuse.backend_with(only_profitable=False))(x, w)
    assert fxfuse.stats()["chains_fused"] == 1
    assert _same_bits(got, f(x, w))


def _compiled_bits_match(fn, *args):
    torch._dynamo.reset()
    fxfuse.reset_stats()
    with torch.no_grad():
        got = torch.compile(fn, backend=fxfuse.backend_with(only_profitable=False))(*args)
    want = fn(*args)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.equal(g.view(-1).view(torch.int8), w.view(-1).view(torch.int8)), \
            (g != w).sum()
    return fxfuse.stats()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=["f32", "bf16", "f16"])
def test_a_fused_silu_computes_eagers_kernel(dtype):
    """f32 SiLU had been one ulp off eager at ~4 % of the elements (ATen's exp op by op: session 60's hunt); 256
    columns, so that eager's own vectorized loop computes every element."""
    testlib.seed("decomposed_silu", str(dtype))
    n = 256
    w = torch.eye(n).to(dtype)
    x = torch.randn(32, n).mul(6).to(dtype)
    assert _compiled_bits_match(lambda x, w: F.silu(F.linear(x, w)), x, w)["chains_fused"] == 1


@pytest.mark.parametrize("approximate", ["tanh", "none"])
@pytest.mark.parametrize("inner_out", [False, True], ids=["chained", "inner_also_output"])
def test_a_gelu_of_a_gelu_collapses_both(approximate, inner_out):
    """The outer decomposition's walk had run into the inner one (the same provenance) and matched no form: both were
    computed op by op (4-664 elements off eager; session 60's hunt)."""
    testlib.seed("decomposed_gelu_gelu", approximate, inner_out)
    n = 64
    w = torch.eye(n).to(torch.bfloat16)
    x = torch.randn(16, n).mul(4).to(torch.bfloat16)
    x[0, :4] = torch.tensor(TANH_EDGE).to(torch.bfloat16)

    def fn(x, w):
        inner = F.gelu(F.linear(x, w), approximate=approximate)
        outer = F.gelu(inner, approximate=approximate)
        return (outer, inner) if inner_out else outer

    assert _compiled_bits_match(fn, x, w)["chains_fused"] == 1
