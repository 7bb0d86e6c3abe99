"""An addmm's product and bias on the CPU path give eager's bits in f32 too, and with alpha / beta. Eager's
torch.addmm, and F.linear with a bias (at::linear calls addmm), sum them in one BLAS call, whose summation order and
alpha scaling are not an mm's then an add's: evaluated as mm then add, an f32 linear whose weight the prologue
dequantizes was 1-2 ulps off eager at up to 40 % of its elements, and addmm's alpha / beta at most of them. For a
16-bit chain the spec's types told the two apart (test_linear_bias_bits.py); for f32 both printed `mm : f32` then
`add : f32`, so the pass marks the value eager's one call computed (`addmm` after its dtype, docs/spec.md) and the
CPU reference makes that call (runtime/reference_eval.cpp). `x @ W + b`, two calls in eager, stays unmarked and
keeps eager's mm-then-add bits."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxfuse
import testlib
from helpers import fused_run

M, K, N = 256, 1024, 512


def dequantized(w, s):
    """The prologue's weight: int8 times a scale per output column, in the scale's type."""
    return w.to(s.dtype) * s


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, w, s, b):
        return self.fn(x, w, s, b)


# name: (forward, weight stored [K, N] (else [N, K]), the same math as separate eager ops: what the chain's
# op-by-op evaluation computed before the mark)
CASES = {
    # F.linear(x, W.t(), b) with W [K, N]-contiguous: at::linear multiplies W itself
    "linear_kn": (lambda x, w, s, b: F.linear(x, dequantized(w, s).t(), b), True,
                  lambda x, W, b: torch.mm(x, W) + b),
    "linear_nk": (lambda x, w, s, b: F.linear(x, dequantized(w, s[:, None]), b), False,
                  lambda x, W, b: torch.mm(x, W.t()) + b),
    "linear_nk_relu": (lambda x, w, s, b: torch.relu(F.linear(x, dequantized(w, s[:, None]), b)), False,
                       lambda x, W, b: torch.relu(torch.mm(x, W.t()) + b)),
    "addmm": (lambda x, w, s, b: torch.addmm(b, x, dequantized(w, s)), True,
              lambda x, W, b: torch.mm(x, W) + b),
    "addmm_alpha_beta": (lambda x, w, s, b: torch.addmm(b, x, dequantized(w, s), beta=0.5, alpha=1.5), True,
                         lambda x, W, b: torch.mm(x, W) * 1.5 + b * 0.5),
    # beta 0: no bias operand; the product times alpha is still one BLAS call
    "addmm_alpha_only": (lambda x, w, s, b: torch.relu(torch.addmm(b, x, dequantized(w, s), beta=0, alpha=1.7)),
                         True, lambda x, W, b: torch.relu(torch.mm(x, W) * 1.7)),
}


def inputs(case, dtype, *parts):
    g = testlib.generator("cpu", "addmm_bits", case, str(dtype), *parts)
    x = torch.randn(M, K, generator=g).to(dtype)
    w = torch.randint(-127, 128, (K, N) if CASES[case][1] else (N, K), generator=g, dtype=torch.int8)
    s = (torch.rand(N, generator=g) * 0.01 + 0.001).to(dtype)  # never zero
    b = torch.randn(N, generator=g).to(dtype)
    return x, w, s, b


def rewritten(model, args):
    """The exported program with its one chain fused, and that chain's spec."""
    ep = fxfuse.rewrite(torch.export.export(model, args), only_profitable=False)
    fused = [n for n in ep.graph.nodes if n.op == "call_function" and str(n.target) == "fxfuse.gemm_chain.default"]
    assert len(fused) == 1, [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    return ep, fused[0].args[1]


def differing(got, want):
    return f"{int((got != want).sum())} of {want.numel()} elements differ"


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("case", list(CASES))
def test_an_f32_addmm_gives_eagers_bits(case):
    forward, _, separate = CASES[case]
    model = Fn(forward)
    args = inputs(case, torch.float32)
    ep, spec = rewritten(model, args)
    assert " addmm\n" in spec, spec  # the pass marked the value eager's one call computed
    want = model(*args)
    got = ep.module()(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got, want), differing(got, want)
    # the premise: the chain's ops one at a time differ from eager here, so the test can fail
    x, w, s, b = args
    W = dequantized(w, s) if CASES[case][1] else dequantized(w, s[:, None])
    assert not torch.equal(separate(x, W, b), want)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("case", ["addmm_alpha_beta", "addmm_alpha_only"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_a_16bit_addmm_with_alpha_or_beta_gives_eagers_bits(case, dtype):
    """The 16-bit addmm without alpha and beta was mended by its types alone (session 57); with them the chain has a
    mul before the add, or no add, which that rule did not take."""
    forward, _, separate = CASES[case]
    model = Fn(forward)
    args = inputs(case, dtype)
    ep, spec = rewritten(model, args)
    assert " addmm\n" in spec, spec
    want = model(*args)
    got = ep.module()(*args)
    assert got.dtype == want.dtype and torch.equal(got, want), differing(got, want)
    x, w, s, b = args
    assert not torch.equal(separate(x.float(), dequantized(w, s).float(), b.float()).to(dtype), want)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("path", ["export", "compile"])
def test_an_f32_linear_of_a_3d_input_gives_eagers_bits(path):
    """A contiguous input of three dims: at::linear flattens it and calls addmm."""
    x, w, s, b = inputs("linear_kn", torch.float32, path)
    model = Fn(CASES["linear_kn"][0])
    args = (x.view(4, M // 4, K), w, s, b)
    want = model(*args)
    got = fused_run(model, args, path)
    assert got.shape == want.shape and torch.equal(got, want), differing(got, want)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_an_mm_then_an_add_keeps_eagers_two_roundings(dtype):
    """`x @ W + b` is two calls in eager: the product rounded (to f32: summed in mm's order), then the bias added.
    The chain is not marked and is evaluated so, not as one addmm."""
    model = Fn(lambda x, w, s, b: x @ dequantized(w, s) + b)
    args = inputs("addmm", dtype, "two ops")
    ep, spec = rewritten(model, args)
    assert " addmm\n" not in spec, spec
    want = model(*args)
    got = ep.module()(*args)
    assert got.dtype == want.dtype and torch.equal(got, want), differing(got, want)
    x, w, s, b = args
    if dtype == torch.float32:  # the premise: one addmm differs from eager's two calls here
        assert not torch.equal(torch.addmm(b, x, dequantized(w, s)), want)
