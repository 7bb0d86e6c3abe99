"""Chain cases for the gemm_chain op tests (CPU and CUDA share them).

Each case builds, for a dtype, a device and a problem size: the spec text, fresh random
inputs (never zeros), and the eager reference of the same chain evaluated in float64.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

DTYPE_NAMES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16",
               torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool",
               torch.float8_e4m3fn: "f8e4m3", torch.float8_e5m2: "f8e5m2"}

# Bound on the relative (norm) error against the float64 reference, per dtype: about twice
# what a few roundings of the chain's values give (bf16 ~3e-3, f16 ~4e-4, f32 ~2e-7), tight
# enough that a 1% scale error or a wrong op fails. The max error may be 4x that, relative to
# the reference's largest magnitude (a rounding error is relative to the value it rounds).
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 6e-3, torch.float16: 8e-4}


class SpecBuilder:
    """Writes canonical spec text (docs/spec.md); values and slots numbered in order."""

    def __init__(self, gemm: str = "mm"):
        self.lines = ["fxfuse.chain v1", f"gemm {gemm}"]
        self.count = 0
        self.slots = 0

    def _value(self, rhs: str) -> str:
        name = f"%{self.count}"
        self.count += 1
        self.lines.append(f"{name} = {rhs}")
        return name

    def input(self, dtype: torch.dtype, dims: str, slot: int | None = None) -> str:
        if slot is None:
            slot, self.slots = self.slots, self.slots + 1
        return self._value(f"input {slot} {DTYPE_NAMES[dtype]} [{','.join(dims)}]")

    def const(self, value: float, dtype: torch.dtype = torch.float32) -> str:
        text = "nan" if math.isnan(value) else ("inf" if value == math.inf else
                                                "-inf" if value == -math.inf else "%.17g" % value)
        return self._value(f"const {text} : {DTYPE_NAMES[dtype]}")

    def op(self, name: str, *args: str, dtype: torch.dtype) -> str:
        return self._value(f"{name} {' '.join(args)} : {DTYPE_NAMES[dtype]}")

    def mm(self, a: str, b: str, dtype: torch.dtype) -> str:
        return self.op("mm", a, b, dtype=dtype)

    def output(self, *values: str) -> "SpecBuilder":
        self.lines += [f"output {v}" for v in values]
        return self

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class Case:
    spec: str
    inputs: list
    reference: Callable[[list], list]  # float64 eager reference, one tensor per output


def randn(shape, dtype, device, scale=1.0):
    t = torch.randn(shape, dtype=torch.float32, device=device) * scale
    # Never zero: an unwritten output or a missing term must show.
    t = torch.where(t.abs() < 1e-3, torch.full_like(t, 1e-3), t)
    return t.to(dtype)


def d(t):
    return t.to(torch.float64)


def q(t, dtype):
    """Rounds a float64 intermediate like the chain rounds its value (to `dtype`)."""
    return t.to(dtype).to(torch.float64)


# ---- cases ----------------------------------------------------------------------------------
# Each maker: (dtype, device, M, N, K) -> Case. Weights are scaled by 1/sqrt(K) so every GEMM
# output is ~N(0, 1) whatever K is.

def bias_gelu(dt, dev, M, N, K):
    s = SpecBuilder()
    x, w = s.input(dt, "mk"), s.input(dt, "kn")
    y = s.mm(x, w, torch.float32)
    b = s.input(dt, "n")
    out = s.op("gelu", s.op("add", y, b, dtype=dt), dtype=dt)
    s.output(out)
    ins = [randn((M, K), dt, dev), randn((K, N), dt, dev, K ** -0.5), randn((N,), dt, dev)]
    return Case(s.text(), ins, lambda i: [F.gelu(d(i[0]) @ d(i[1]) + d(i[2]))])


def linear_gelu_tanh(dt, dev, M, N, K):
    """F.linear weight layout [N, K]: a transposed B operand."""
    s = SpecBuilder()
    x, w = s.input(dt, "mk"), s.input(dt, "nk")
    y = s.mm(x, w, dt)
    b = s.input(dt, "n")
    s.output(s.op("gelu_tanh", s.op("add", y, b, dtype=dt), dtype=dt))
    ins = [randn((M, K), dt, dev), randn((N, K), dt, dev, K ** -0.5), randn((N,), dt, dev)]
    return Case(s.text(), ins,
                lambda i: [F.gelu(d(i[0]) @ d(i[1]).T + d(i[2]), approximate="tanh")])


def residual(dt, dev, M, N, K):
    """gelu_tanh(x @ w + b) * 0.5 + r with a full [M, N] residual."""
    s = SpecBuilder()
    x, w = s.input(dt, "mk"), s.input(dt, "kn")
    y = s.mm(x, w, torch.float32)
    b = s.input(dt, "n")
    g = s.op("gelu_tanh", s.op("add", y, b, dtype=dt), dtype=dt)
    h = s.op("mul", g, s.const(0.5), dtype=dt)
    r = s.input(dt, "mn")
    s.output(s.op("add", h, r, dtype=dt))
    ins = [randn((M, K), dt, dev), randn((K, N), dt, dev, K ** -0.5), randn((N,), dt, dev),
           randn((M, N), dt, dev)]
    return Case(s.text(), ins, lambda i: [
        F.gelu(d(i[0]) @ d(i[1]) + d(i[2]), approximate="tanh") * 0.5 + d(i[3])])


def silu(dt, dev, M, N, K):
    s = SpecBuilder()
    x, w = s.input(dt, "mk"), s.input(dt, "kn")
    s.output(s.op("silu", s.mm(x, w, dt), dtype=dt))
    ins = [randn((M, K), dt, dev), randn((K, N), dt, dev, K ** -0.5)]
    return Case(s.text(), ins, lambda i: [F.silu(d(i[0]) @ d(i[1]))])


def relu_cast(dt, dev, M, N, K):
    """fp32 epilogue, cast at the end (to bf16 from f32, to f32 from half types)."""
    out_dt = torch.bfloat16 if dt == torch.float32 else torch.float32
    s = SpecBuilder()
    x, w = s.input(dt, "mk"), s.input(dt, "kn")
    r = s.op("relu", s.mm(x, w, torch.float32), dtype=torch.float32)
    s.output(s.op("convert", r, dtype=out_dt))
    ins = [randn((M, K), dt, dev), randn((K, N), dt, dev, K ** -0.5)]
    return Case(s.text(), ins, lambda i: [torch.relu(d(i[0]) @ d(i[1]))])


def int8_weight_only(dt, dev, M, N, K):
    """x @ (w_i8.to(dt) * scale[n]).T + b: per-channel dequant prologue on B."""
    s = SpecBuilder()
    x, wq, sc = s.input(dt, "mk"), s.input(torch.int8, "nk"), s.input(dt, "n1")
    w = s.op("mul", s.op("convert", wq, dtype=dt), sc, dtype=dt)
    y = s.mm(x, w, torch.float32)
    s.output(s.op("add", y, s.input(dt, "n"), dtype=dt))
    wq_t = torch.randint(-127, 128, (N, K), dtype=torch.int8, device=dev)
    wq_t[wq_t == 0] = 1
    scale = (torch.rand((N, 1), device=dev) + 0.5).mul(K ** -0.5 / 64).to(dt)
    ins = [randn((M, K), dt, dev), wq_t, scale, randn((N,), dt, dev)]
    return Case(s.text(), ins, lambda i: [
        d(i[0]) @ q(d(i[1]) * d(i[2]), dt).T + d(i[3])])


def fp8_dequant(dt, dev, M, N, K):
    """x @ (w_f8.to(dt) * s) with a 0-d per-tensor scale."""
    s = SpecBuilder()
    x, wq, sc = s.input(dt, "mk"), s.input(torch.float8_e4m3fn, "kn"), s.input(dt, "")
    w = s.op("mul", s.op("convert", wq, dtype=dt), sc, dtype=dt)
    s.output(s.mm(x, w, dt))
    wq_t = randn((K, N), torch.float32, dev).to(torch.float8_e4m3fn)
    ins = [randn((M, K), dt, dev), wq_t, torch.tensor(K ** -0.5, device=dev).to(dt)]
    return Case(s.text(), ins, lambda i: [d(i[0]) @ q(d(i[1]) * d(i[2]), dt)])


def zero_point(dt, dev, M, N, K):
    """x @ ((w_u8 - zp[n]) * s[n]): asymmetric uint8 weights."""
    s = SpecBuilder()
    x, wq = s.input(dt, "mk"), s.input(torch.uint8, "kn")
    zp, sc = s.input(dt, "n"), s.input(dt, "n")
    w = s.op("mul", s.op("sub", s.op("convert", wq, dtype=dt), zp, dtype=dt), sc, dtype=dt)
    s.output(s.mm(x, w, dt))
    wq_t = torch.randint(0, 256, (K, N), dtype=torch.uint8, device=dev)
    zp_t = (torch.randint(100, 156, (N,), device=dev).float() + 0.5).to(dt)  # never w - zp == 0
    sc_t = ((torch.rand(N, device=dev) + 0.5) * (K ** -0.5) / 64).to(dt)
    ins = [randn((M, K), dt, dev), wq_t, zp_t, sc_t]
    return Case(s.text(), ins, lambda i: [
        d(i[0]) @ q(q(d(i[1]) - d(i[2]), dt) * d(i[3]), dt)])


def bmm_bias(dt, dev, M, N, K, B=3):
    s = SpecBuilder("bmm")
    x, w = s.input(dt, "bmk"), s.input(dt, "bkn")
    s.output(s.op("add", s.mm(x, w, dt), s.input(dt, "n"), dtype=dt))
    ins = [randn((B, M, K), dt, dev), randn((B, K, N), dt, dev, K ** -0.5), randn((N,), dt, dev)]
    return Case(s.text(), ins, lambda i: [torch.bmm(d(i[0]), d(i[1])) + d(i[2])])


def lead_3d(dt, dev, M, N, K):
    """[batch, seq, K] activation (two m dims) with a [batch, seq, N] residual."""
    S = 3
    Bt = max(1, M // S)
    s = SpecBuilder()
    x, w = s.input(dt, "mmk"), s.input(dt, "nk")
    y = s.op("add", s.mm(x, w, dt), s.input(dt, "n"), dtype=dt)
    s.output(s.op("add", y, s.input(dt, "mmn"), dtype=dt))
    ins = [randn((Bt, S, K), dt, dev), randn((N, K), dt, dev, K ** -0.5), randn((N,), dt, dev),
           randn((Bt, S, N), dt, dev)]
    return Case(s.text(), ins, lambda i: [F.linear(d(i[0]), d(i[1]), d(i[2])) + d(i[3])])


def extra_outputs(dt, dev, M, N, K):
    """The pre-activation is used outside the chain: two outputs."""
    s = SpecBuilder()
    x, w = s.input(dt, "mk"), s.input(dt, "kn")
    pre = s.op("add", s.mm(x, w, torch.float32), s.input(dt, "n"), dtype=dt)
    s.output(pre, s.op("gelu", pre, dtype=dt))
    ins = [randn((M, K), dt, dev), randn((K, N), dt, dev, K ** -0.5), randn((N,), dt, dev)]

    def ref(i):
        y = d(i[0]) @ d(i[1]) + d(i[2])
        return [y, F.gelu(q(y, dt))]
    return Case(s.text(), ins, ref)


def transposed_a(dt, dev, M, N, K):
    """A given as x.t() of a [K, M] tensor: dims [k,m]."""
    s = SpecBuilder()
    x, w = s.input(dt, "km"), s.input(dt, "kn")
    s.output(s.mm(x, w, dt))
    ins = [randn((K, M), dt, dev), randn((K, N), dt, dev, K ** -0.5)]
    return Case(s.text(), ins, lambda i: [d(i[0]).T @ d(i[1])])


def broadcasts(dt, dev, M, N, K):
    """Scalar const, row [1,n], column [m,1], full [m,n] and 0-d inputs in one epilogue."""
    s = SpecBuilder()
    x, w = s.input(dt, "mk"), s.input(dt, "kn")
    y = s.mm(x, w, dt)
    y = s.op("mul", y, s.const(1.25), dtype=dt)
    y = s.op("add", y, s.input(dt, "1n"), dtype=dt)
    y = s.op("add", y, s.input(dt, "m1"), dtype=dt)
    y = s.op("mul", y, s.input(dt, "mn"), dtype=dt)
    y = s.op("sub", y, s.input(dt, ""), dtype=dt)
    s.output(y)
    ins = [randn((M, K), dt, dev), randn((K, N), dt, dev, K ** -0.5), randn((1, N), dt, dev),
           randn((M, 1), dt, dev), randn((M, N), dt, dev), randn((), dt, dev)]

    def ref(i):  # rounded per op like the chain: the sums cancel, so rounding shows
        y = q(q(d(i[0]) @ d(i[1]), dt) * 1.25, dt)
        y = q(q(y + d(i[2]), dt) + d(i[3]), dt)
        return [q(y * d(i[4]), dt) - d(i[5])]
    return Case(s.text(), ins, ref)


def activations_mix(dt, dev, M, N, K):
    """clamp (one-sided, `nan` bound), hardswish, leaky_relu, maximum, comparison, where."""
    s = SpecBuilder()
    x, w = s.input(dt, "mk"), s.input(dt, "kn")
    y = s.mm(x, w, torch.float32)
    c = s.op("clamp", y, s.const(float("nan")), s.const(1.5), dtype=dt)
    h = s.op("hardswish", c, dtype=dt)
    lr = s.op("leaky_relu", y, s.const(0.1), dtype=dt)
    r = s.input(dt, "mn")
    mx = s.op("maximum", lr, r, dtype=dt)
    pos = s.op("gt", y, s.const(0.0), dtype=torch.bool)
    s.output(s.op("where", pos, h, mx, dtype=dt), pos)
    ins = [randn((M, K), dt, dev), randn((K, N), dt, dev, K ** -0.5), randn((M, N), dt, dev)]

    def ref(i):
        y = d(i[0]) @ d(i[1])
        h = F.hardswish(q(y.clamp(max=1.5), dt))
        mx = torch.maximum(q(F.leaky_relu(y, 0.1), dt), d(i[2]))
        return [torch.where(y > 0, h, mx), y > 0]
    return Case(s.text(), ins, ref)


def per_op_rounding_chain(dev):
    """(spec, inputs, the output bit for bit): each op computed in fp32 from its operands and
    rounded to its value's dtype, written out with one explicit conversion per step, as the
    ATen evaluator once did it; it must give the same bits whichever way it gets ATen to do
    that (mixed bf16/f16/fp32 operands, a 0-d constant, binary ops that round as they store)."""
    s = SpecBuilder()
    x, w = s.input(torch.bfloat16, "mk"), s.input(torch.bfloat16, "kn")
    y = s.mm(x, w, torch.bfloat16)
    h = s.op("add", y, s.input(torch.bfloat16, "n"), dtype=torch.bfloat16)
    g = s.op("gelu_tanh", h, dtype=torch.bfloat16)
    m = s.op("mul", g, s.input(torch.float16, "mn"), dtype=torch.float16)
    s.output(s.op("div", m, s.const(3.0, torch.bfloat16), dtype=torch.bfloat16))
    M, N, K = 48, 64, 96  # on CUDA: no fast fused kernel at this size
    ins = [randn((M, K), torch.bfloat16, dev), randn((K, N), torch.bfloat16, dev, K ** -0.5),
           randn((N,), torch.bfloat16, dev), randn((M, N), torch.float16, dev)]
    f32 = torch.float32
    h = (torch.mm(ins[0], ins[1]).to(f32) + ins[2].to(f32)).to(torch.bfloat16)
    g = F.gelu(h.to(f32), approximate="tanh").to(torch.bfloat16)
    m = (g.to(f32) * ins[3].to(f32)).to(torch.float16)
    c = torch.scalar_tensor(3.0, dtype=torch.bfloat16).to(f32)  # a constant: 0-d, on the CPU
    return s.text(), ins, (m.to(f32) / c).to(torch.bfloat16)


CASES = {f.__name__: f for f in [
    bias_gelu, linear_gelu_tanh, residual, silu, relu_cast, int8_weight_only, fp8_dequant,
    zero_point, bmm_bias, lead_3d, extra_outputs, transposed_a, broadcasts, activations_mix]}

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def layer_stack(scale, M=16, K=3072, layers=6):
    """A stack of decode-sized nn.Linear layers, gelu_tanh(x @ w.T + b) * scale, each reading the
    one before's output (the gemv's shapes): spec, weights, biases, first input."""
    s = SpecBuilder()
    x, w = s.input(torch.bfloat16, "mk"), s.input(torch.bfloat16, "nk")
    y = s.op("add", s.mm(x, w, torch.bfloat16), s.input(torch.bfloat16, "n"), dtype=torch.bfloat16)
    s.output(s.op("mul", s.op("gelu_tanh", y, dtype=torch.bfloat16), s.const(scale), dtype=torch.bfloat16))
    ws = [randn((K, K), torch.bfloat16, "cuda", K ** -0.5) for _ in range(layers)]
    bs = [randn((K,), torch.bfloat16, "cuda") for _ in range(layers)]
    return s.text(), ws, bs, randn((M, K), torch.bfloat16, "cuda")


def check_layer_stack(ys, ws, bs, scale):
    """Layer i's output ys[i + 1] against float64 from the input it was given, ys[i]."""
    for i, (w, b) in enumerate(zip(ws, bs)):
        ref = F.gelu(d(ys[i]) @ d(w).T + d(b), approximate="tanh") * scale
        check_outputs(Case("", [], lambda _inputs, ref=ref: [ref]), [ys[i + 1]], torch.bfloat16)


def check_outputs(case: Case, outputs, dtype):
    refs = case.reference(case.inputs)
    assert len(outputs) == len(refs)
    for j, (out, ref) in enumerate(zip(outputs, refs)):
        assert out.is_contiguous(), f"output {j} is not contiguous"
        assert tuple(out.shape) == tuple(ref.shape), f"output {j}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
        if ref.dtype == torch.bool:
            # A comparison sits on a rounded GEMM value: allow flips where |y| is tiny.
            mismatch = (out.cpu() != ref.cpu()).float().mean().item()
            assert mismatch < 1e-2, f"output {j}: {mismatch:.2%} of booleans differ"
            continue
        tol = max(TOLERANCE[dtype], TOLERANCE.get(out.dtype, 0.0))
        o = out.cpu().to(torch.float64)
        r = ref.cpu()
        assert torch.isfinite(o).all(), f"output {j} has NaN/inf (an element not written?)"
        scale = r.abs().max().item() + 1e-6
        err = (o - r).abs().max().item()
        assert err <= 4 * tol * scale, (
            f"output {j}: max error {err:.3g} > {4 * tol * scale:.3g} (max |ref| {scale:.3g})")
        rel = ((o - r).norm() / (r.norm() + 1e-12)).item()
        # The norm averages independent roundings over many elements; over a handful (a 1 x 8 output) it is set by the
        # few worst, each up to a rounding per op of the chain: 1x8x16 linear_gelu_tanh (three 16-bit roundings)
        # exceeded the tolerance at 1.6 % (f16) and 2.4 % (bf16) of 1,500 seeds, up to 1.75x / 1.62x (session 63, CI
        # seed 1240419435; small_output_tolerance_sample.py). Outputs of fewer than 64 elements get twice the
        # tolerance; the max-error bound above holds at every size.
        rel_tol = tol * (2 if o.numel() < 64 else 1)
        assert rel <= rel_tol, f"output {j}: relative error {rel:.3g} > {rel_tol:.3g}"
