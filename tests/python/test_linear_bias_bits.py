"""A 16-bit F.linear with a bias on the CPU path gives eager's bits: the chain's product and bias are evaluated as the
one addmm eager calls (runtime/reference_eval.cpp addmmAdd), in its summation order. Computed as an f32 product plus
the bias, rounded once (the same math until session 58), 10-200 of 131,072 elements were one ulp off eager at K =
1024 (session 57's hunt, tests/reliability/hunt_session57/f5_linear_bias.py). The CUDA kernels have their own
summation order; they are compared by relative error elsewhere."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxfuse
import testlib
from helpers import fused_run


class LinearRelu(torch.nn.Module):
    def __init__(self, b):
        super().__init__()
        self.b = torch.nn.Parameter(b, requires_grad=False)

    def forward(self, x, w):
        return torch.relu(F.linear(x, w, self.b))


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("lead", [(256,), (4, 64)], ids=["2d", "3d"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("path", ["export", "compile"])
def test_a_16bit_linear_with_bias_gives_eagers_bits(lead, dtype, path):
    g = testlib.generator("cpu", "linear_bias_bits", str(dtype), path, len(lead))
    K, N = 1024, 512
    x = torch.randn(*lead, K, generator=g).to(dtype)
    w = (torch.randn(N, K, generator=g) / K ** 0.5).to(dtype)
    model = LinearRelu(torch.randn(N, generator=g).to(dtype))
    want = model(x, w)
    got = fused_run(model, (x, w), path)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got, want), f"{int((got != want).sum())} of {want.numel()} elements differ"
    # the premise: the same math in the f32 product's order differs from eager here, so the test can fail
    f32_order = torch.relu((x.float() @ w.float().t() + model.b.float()).to(dtype))
    assert not torch.equal(f32_order, want)


class LinearOnLayout(torch.nn.Module):
    """F.linear on a view of its input: eager's at::linear calls addmm (one rounding of the product and bias) for a
    contiguous input, and matmul then add (the product rounded first) for a non-contiguous one of three dims."""

    def __init__(self, b, view):
        super().__init__()
        self.b = torch.nn.Parameter(b, requires_grad=False)
        self.view = view

    def forward(self, x, w):
        return torch.relu(F.linear(self.view(x), w, self.b))


VIEWS = {"transpose": lambda x: x.transpose(1, 2), "slice": lambda x: x[:, 1:], "contiguous": lambda x: x}


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("decompose", [False, True], ids=["linear", "decomposed"])
def test_linear_rounds_by_its_inputs_layout(view, dtype, decompose):
    """Session 58's hunt: the pass had fused aten.linear as one rounding whatever the layout; on a transposed input
    (a Mixer's token MLP, a 1x1 convolution over an NHWC permute) 20-30 % of the elements were one rounding off."""
    g = testlib.generator("cpu", "linear_layout", view, str(dtype), decompose)
    K, N = 96, 64
    x = torch.randn(3, 40, K, generator=g).to(dtype)
    if view == "transpose":
        x = x.transpose(1, 2).contiguous()  # the model transposes it back: a non-contiguous [3, 40, K]
    w = (torch.randn(N, K, generator=g) / K ** 0.5).to(dtype)
    model = LinearOnLayout(torch.randn(N, generator=g).to(dtype), VIEWS[view])
    ep = torch.export.export(model, (x, w))
    if decompose:
        ep = ep.run_decompositions()
    ep = fxfuse.rewrite(ep, only_profitable=False)
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert targets.count("fxfuse.gemm_chain.default") == 1, targets
    want = model(x, w)
    got = ep.module()(x, w)
    # eager's matmul may multiply a transposed input the other way round (w @ x^T): the same roundings in another
    # summation order, a rounding step at a few elements in f16 (0-2 of 7,680, one near 0 four ulps of its own); a
    # wrong rounding count is a fifth of them
    differ = int((got != want).sum())
    assert differ <= want.numel() // 1000, f"{differ} of {want.numel()} elements differ"
    assert float((got.float() - want.float()).abs().max()) <= 2 ** -7 * float(want.float().abs().max())
    if view != "contiguous":  # the premise: one rounding of the product and bias is far from eager's answer here
        once = torch.relu(torch.addmm(model.b, VIEWS[view](x).reshape(-1, K), w.t()).reshape(want.shape))
        assert int((once != want).sum()) > want.numel() // 20
