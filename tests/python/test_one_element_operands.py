"""A one-element tensor operand (0-d, or every dim 1) of another type beside a 16-bit result, fused as eager
computes it on each device (session 55).

Eager computes `y_bf16 * t` in bf16's common dtype with fp32 opmath, but reads `t` differently per device:
- CUDA's kernels load every tensor operand as the common type: `t` is rounded to bf16 first (a CPU scalar,
  which the chain leaves outside, is the one read in fp32);
- ATen's 16-bit CPU kernels round it too, except as the second operand of a mul or div, read as a scalar in
  fp32 (`y_f16 * int32(70000)` is 35008 on the CPU, inf on CUDA).
The pass converts such an operand to the common type on CUDA; on the CPU it leaves mul / div / add / sub to
the CPU kernel, which calls ATen as eager did. Before session 55 a 0-d CUDA operand was read in fp32 (f16
`y * 1e5` finite where eager has inf) and a [1]-shaped CPU integer divisor was rounded where eager's is not.
"""
from __future__ import annotations

import pytest
import torch

import fxfuse
import testlib
from helpers import EpilogueOf, exact_gemm_inputs, rows_gemm, run_the_generated_kernel

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
OPS = {
    "add": lambda y, r: y + r, "radd": lambda y, r: r + y, "sub": lambda y, r: y - r, "rsub": lambda y, r: r - y,
    "mul": lambda y, r: y * r, "rmul": lambda y, r: r * y, "div": lambda y, r: y / r, "rdiv": lambda y, r: r / y,
    "add_alpha": lambda y, r: torch.add(y, r, alpha=2), "sub_alpha_minus_1": lambda y, r: torch.sub(y, r, alpha=-1),
    "maximum": torch.maximum, "gt": lambda y, r: y > r,
    "where": lambda y, r: torch.where(y > 1, r, y), "clamp_min": lambda y, r: torch.clamp(y, min=r),
}
# (type, shape): integer ones of each one-element shape; float ones 0-d (with dims they set the result type)
OPERANDS = [(torch.int32, ()), (torch.int32, (1,)), (torch.int32, (1, 1)), (torch.float32, ()),
            ("other16", ())]


@pytest.fixture(autouse=True)
def _run_the_kernel(monkeypatch):
    run_the_generated_kernel(monkeypatch)


def _rewrite(ep):
    """Every chain fused: on CUDA the planner leaves these small GEMMs with one epilogue op unfused
    (`not_profitable`, cuBLAS plus eager's one kernel is faster), which would leave nothing to test."""
    return fxfuse.rewrite(ep, only_profitable=False)


def _operands(kind, shape, dtype, device):
    """Values eager's two readings tell apart: an integer bf16 / f16 rounds (257, 2049) or overflows (70000), a
    float that rounds (257.3, 0.1) or overflows f16 (1e5). Every one is run: the program takes r as an input.
    (maximum, where and clamp_min give the same answer either way, rounding being monotone, and so does gt on
    these y: they check the convert itself; the comparisons' rounding is checked by the test below.)"""
    if kind is torch.int32:
        values = [257, 2049, -2049, 70000]
    elif kind is torch.float32:
        values = [257.3, 0.1, -3.3, 1e5]
    else:
        kind = torch.float16 if dtype is torch.bfloat16 else torch.bfloat16
        values = [257.3, 0.1, -3.3]
    return [torch.full(shape, v, dtype=kind, device=device) for v in values]


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("kind, shape", OPERANDS, ids=["i32_0d", "i32_1", "i32_1x1", "f32_0d", "other16_0d"])
@pytest.mark.parametrize("op", list(OPS))
def test_a_one_element_operand_is_read_as_eager_reads_it(device, dtype, kind, shape, op):
    g = testlib.generator("cpu", "one_element", device, str(dtype), str(kind), shape, op)
    x, w = exact_gemm_inputs(dtype, device, g)
    rs = _operands(kind, shape, dtype, device)
    model = EpilogueOf(OPS[op])
    ep = _rewrite(torch.export.export(model, (x, w, rs[0])))
    # a 16-bit add with alpha 2 ends the chain on the CPU (test_export's test_16bit_cpu_add_with_alpha_ends_the_chain)
    fused = 0 if (device, op) == ("cpu", "add_alpha") else 1
    assert sum(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep.graph.nodes) == fused, ep.graph
    for r in rs:
        torch.testing.assert_close(ep.module()(x, w, r), model(x, w, r), rtol=0, atol=0, equal_nan=True)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("kind, shape", OPERANDS, ids=["i32_0d", "i32_1", "i32_1x1", "f32_0d", "other16_0d"])
@pytest.mark.parametrize("cmp", ["eq", "ge", "lt"])
def test_a_comparison_reads_a_one_element_operand_in_the_common_dtype(device, dtype, kind, shape, cmp):
    """`y == r` with y holding r's 16-bit rounding: eager compares in the common dtype on both devices, so that
    row is equal (bf16 256 == int32 257, 0.10009765625 == f32 0.1); read in fp32, none is."""
    rs = _operands(kind, shape, dtype, device)
    rounded = sorted({float(r.to(dtype).reshape(())) for r in rs} - {float("inf"), float("-inf")})
    x, w = rows_gemm(rounded, dtype, device, testlib.generator("cpu", "comparison", cmp))
    model = EpilogueOf({"eq": torch.eq, "ge": torch.ge, "lt": torch.lt}[cmp])
    ep = _rewrite(torch.export.export(model, (x, w, rs[0])))
    assert sum(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep.graph.nodes) == 1, ep.graph
    for r in rs:
        got, want = ep.module()(x, w, r), model(x, w, r)
        assert torch.equal(got, want), (r, got[:len(rounded), 0], want[:len(rounded), 0])


class _WithFull(torch.nn.Module):
    """`f(y, full((), v))`: a 0-d tensor the graph makes itself, of its own dtype and on y's device."""

    def __init__(self, f, value, dtype):
        super().__init__()
        self.f, self.value, self.dtype = f, value, dtype

    def forward(self, x, w):
        y = x @ w.t()
        return self.f(y, torch.full((), self.value, dtype=self.dtype, device=y.device))


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("value, kind", [(0.1, torch.float32), (257.3, torch.float32), (2049, torch.int32)],
                         ids=["f32_0.1", "f32_257.3", "i32_2049"])
@pytest.mark.parametrize("op", ["eq", "mul", "rmul", "div", "add"])
def test_a_0d_full_is_read_as_a_0d_tensor(device, dtype, value, kind, op):
    """A 0-d `full` is a tensor to eager: compared in the 16-bit common dtype on both devices, multiplied by
    rounded on CUDA (review, session 55: `y > full((), 0.1)` compared with f32 0.1 on the CPU, every element
    wrong). y holds the value's 16-bit rounding in its first row, so a comparison read in fp32 fails."""
    f = {"eq": torch.eq, "mul": torch.mul, "rmul": lambda y, t: t * y, "div": torch.div, "add": torch.add}[op]
    x, w = rows_gemm([float(value)], dtype, device, testlib.generator("cpu", "full", op))
    model = _WithFull(f, value, kind)
    ep = _rewrite(torch.export.export(model, (x, w)))
    assert sum(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep.graph.nodes) == 1, ep.graph
    torch.testing.assert_close(ep.module()(x, w), model(x, w), rtol=0, atol=0, equal_nan=True)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", ["view_1x1", "expand", "full_expand", "clamp_min_nan_full", "clamp_nan_full",
                                  "f32_times_f64_full", "f32_above_f64_full"])
def test_odd_0d_sources_keep_eagers_answer(device, form):
    """The review's cases (session 55): a view with dims of a 0-d f32 tensor ranks as a tensor with dims, so
    `y_bf16 > t.view(1, 1)` compares in f32 (the chain had peeled the view and compared in bf16); a NaN `full`
    clamp bound is a NaN bound, not "no bound" (the CPU kernel raised); a 0-d f64 `full` stays outside (the CPU
    kernel computed its op in f64)."""
    f, dtype = {
        "view_1x1": (lambda y, t: y > t.view(1, 1), torch.bfloat16),
        "expand": (lambda y, t: y > t.expand(32, 64), torch.bfloat16),
        "full_expand": (lambda y, t: y > torch.full((), 0.1, device=y.device).expand(32, 64), torch.bfloat16),
        "clamp_min_nan_full": (lambda y, t: torch.clamp_min(y, torch.full((), float("nan"), device=y.device)),
                               torch.bfloat16),
        "clamp_nan_full": (lambda y, t: torch.clamp(y, torch.full((), float("nan"), dtype=y.dtype, device=y.device),
                                                    torch.full((), float("nan"), dtype=y.dtype, device=y.device)),
                           torch.bfloat16),
        "f32_times_f64_full": (lambda y, t: y * torch.full((), 0.1, dtype=torch.float64, device=y.device),
                               torch.float32),
        "f32_above_f64_full": (lambda y, t: y > torch.full((), 0.1, dtype=torch.float64, device=y.device),
                               torch.float32),
    }[form]
    # y's first rows hold 0.1 and its bf16 rounding, which a comparison in the wrong type tells apart
    x, w = rows_gemm([0.1, 0.10009765625, 0.2, -1.0], dtype, device, testlib.generator("cpu", "odd_0d", form))
    t = torch.tensor(0.1, device=device)
    model = EpilogueOf(f)
    ep = _rewrite(torch.export.export(model, (x, w, t)))
    torch.testing.assert_close(ep.module()(x, w, t), model(x, w, t), rtol=0, atol=0, equal_nan=True)


class _DequantizedWeight(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x, w, s):
        return torch.relu(x @ self.f(w.to(x.dtype), s).t())


PROLOGUES = {"mul": lambda w, s: w * s, "rmul": lambda w, s: s * w, "div": lambda w, s: w / s,
             "sub": lambda w, s: w - s}


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("kind, shape", [(torch.float32, ()), (torch.int32, ()), (torch.int32, (1,)),
                                         (torch.int32, (64, 1))], ids=["f32_0d", "i32_0d", "i32_1", "i32_rows"])
@pytest.mark.parametrize("op", list(PROLOGUES))
def test_a_weight_scale_is_read_as_eager_reads_it(device, dtype, kind, shape, op):
    """The same in an int8 weight's prologue (`w_i8.to(bf16) * s`): a 0-d f32 scale is bf16 on CUDA, an int32
    zero point with dims is rounded to the weight's type on both devices (257 -> 256)."""
    g = testlib.generator("cpu", "weight_scale", device, str(dtype), str(kind), shape, op)
    # exact products: x in 1/16 steps of [0.5, 2), weights in [-4, 4]: every GEMM computes the same bits
    x = (torch.randint(8, 32, (32, 16), generator=g).to(dtype) / 16).to(device)
    w = torch.randint(-4, 5, (64, 16), generator=g, dtype=torch.int8).to(device)
    values = [257, 2049, 3] if kind is torch.int32 else [257.3, 0.0123457, 3.3, 1e5]
    s = torch.full(shape, values[int(torch.randint(0, len(values), (), generator=g))], dtype=kind, device=device)
    model = _DequantizedWeight(PROLOGUES[op])
    ep = _rewrite(torch.export.export(model, (x, w, s)))
    assert sum(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep.graph.nodes) == 1, ep.graph
    torch.testing.assert_close(ep.module()(x, w, s), model(x, w, s), rtol=0, atol=0, equal_nan=True)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_eager_cuda_rounds_a_one_element_operand_to_the_common_dtype(shape):
    """The premise on CUDA: `y_f16 * t` multiplies by f16(t) in every position, 0-d or not (f16(70000) is inf).
    A float tensor counts here only 0-d: with dims, an f32 `t` makes the result f32."""
    y = torch.full((4, 8), 0.5, dtype=torch.float16, device="cuda")
    operands = [torch.full(shape, 70000, dtype=torch.int32, device="cuda")]
    if shape == ():
        operands.append(torch.full(shape, 1e5, dtype=torch.float32, device="cuda"))
    for t in operands:
        assert torch.isinf(y * t).all() and torch.isinf(t * y).all() and (y / t == 0).all()


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_eager_cpu_reads_a_second_mul_operand_unrounded(shape):
    """The premise on the CPU: a one-element second operand of a 16-bit mul / div is read in fp32, the first
    rounded (`y * t` finite, `t * y` inf for t = 70000 in f16)."""
    y = torch.full((4, 8), 0.5, dtype=torch.float16)
    t = torch.full(shape, 70000, dtype=torch.int32)
    assert (y * t == 35008).all() and torch.isinf(t * y).all()
    assert torch.isfinite(y / t).all() and (y / t != 0).all()
