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


class LinearRelu(torch.nn.Module):
    def __init__(self, b):
        super().__init__()
        self.b = torch.nn.Parameter(b, requires_grad=False)

    def forward(self, x, w):
        return torch.relu(F.linear(x, w, self.b))


def _fused(model, x, w, path):
    if path == "export":
        ep = fxfuse.rewrite(torch.export.export(model, (x, w)), only_profitable=False)
        targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
        assert targets.count("fxfuse.gemm_chain.default") == 1, targets
        return ep.module()(x, w)
    torch._dynamo.reset()
    fxfuse.reset_stats()
    got = fxfuse.compile(model, only_profitable=False)(x, w)
    assert fxfuse.stats()["chains_fused"] == 1, str(fxfuse.report())
    return got


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
    got = _fused(model, x, w, path)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got, want), f"{int((got != want).sum())} of {want.numel()} elements differ"
    # the premise: the same math in the f32 product's order differs from eager here, so the test can fail
    f32_order = torch.relu((x.float() @ w.float().t() + model.b.float()).to(dtype))
    assert not torch.equal(f32_order, want)
