"""Fixes from differential testing (issue 8) on the Python side and in eager semantics:

- a rewrite the op's fake/meta kernel rejects is skipped and reported as
  ``not_fused: apply_rejected`` with the op's error text (BUG-4);
- a graph from ``make_fx(fn)(real tensors)`` (each value in its own fake mode) is rewritten,
  with the op's Meta kernel checking each rewrite instead (BUG-5);
- a complex GEMM is ``unsupported_dtype`` (BUG-3);
- Python scalars and 0-d fp32 tensors in a bf16 epilogue are fp32 in opmath, as in eager.
"""
from __future__ import annotations

import re

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import testlib
import fxfuse
from helpers import EpilogueOf
from fxfuse import pass_driver
from fxfuse.apply_plan import _fake_mode_of, apply_plan
from fxfuse.pass_driver import Options, run_on_graph

# The [m,k] A input given a 3-D tensor: the op's checks reject it (rank mismatch).
BAD_SPEC = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [n,k]\n"
            "%2 = mm %0 %1 : f32\n%3 = relu %2 : f32\noutput %3\n")


def f_linear_relu(x, w):
    return torch.relu(x @ w.t())


def _chains(gm):
    return [n for n in gm.graph.nodes if n.target == torch.ops.fxfuse.gemm_chain.default]


def _bad_plan(gm):
    """A plan for ``f_linear_relu`` whose spec the op rejects for the traced x of rank 3."""
    nodes = {n.target: n for n in gm.graph.nodes if n.op == "call_function"}
    ph = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    relu = nodes[torch.ops.aten.relu.default]
    replaced = [n.name for n in gm.graph.nodes if n.op == "call_function"]
    return {"rewrites": [{"id": 0, "replaced": replaced, "inputs": ph, "outputs": [relu.name],
                          "spec": BAD_SPEC}],
            "report": [{"gemm": "mm", "status": "fused", "rewrite": 0, "chain": "mm → relu"}],
            "counters": {"gemms_seen": 1, "chains_fused": 1}}


@pytest.mark.parametrize("tracing", ["fake", "real"])
def test_rewrite_the_op_rejects_is_reported_apply_rejected(tracing, monkeypatch):
    """BUG-4: the op's fake (or, without one fake mode, Meta) kernel raising means the rewrite
    is not applied, and the report says apply_rejected with the op's message."""
    x, w = torch.randn(2, 4, 8), torch.randn(16, 8)
    gm = make_fx(f_linear_relu, tracing_mode=tracing)(x, w)
    before = str(gm.graph)
    monkeypatch.setattr(pass_driver, "plan_for_graph", lambda graph, options, **_: ("", _bad_plan(gm)))
    res = run_on_graph(gm.graph, Options())
    assert res.applied.applied == [] and 0 in res.applied.skipped
    entry = res.plan["report"][0]
    assert entry["status"] == "not_fused" and entry["reason"] == "apply_rejected"
    assert "fxfuse.gemm_chain rejected the spec" in entry["detail"]
    assert "input 0" in entry["detail"]  # the op's own text: which input and why
    assert res.plan["counters"]["reject.apply_rejected"] == 1
    assert str(gm.graph) == before
    torch.testing.assert_close(gm(x, w), f_linear_relu(x, w))


def test_fake_mode_of_real_traced_graph_is_none():
    """BUG-5: make_fx on real tensors gives each value its own fake mode: no AssertionError."""
    gm = make_fx(f_linear_relu)(torch.randn(4, 8), torch.randn(16, 8))
    assert _fake_mode_of(gm.graph) is None


@pytest.mark.needs_real_pass
def test_real_traced_graph_is_rewritten_and_checked_on_meta():
    """BUG-5: the pass on a make_fx(fn)(real tensors) graph fuses, the fused op's values keep
    the graph's shapes and dtypes, and the result is eager's."""
    def fn(x, w, b):
        return torch.nn.functional.gelu(torch.addmm(b, x, w.t()), approximate="tanh") * 0.5

    args = (torch.randn(4, 8), torch.randn(16, 8), torch.randn(16))
    gm = make_fx(fn)(*args)
    res = run_on_graph(gm.graph, Options())
    assert res.applied.applied == [0] and not res.applied.skipped, res.report_text
    (fused,) = _chains(gm)
    assert [tuple(v.shape) for v in fused.meta["val"]] == [(4, 16)]
    torch.testing.assert_close(gm(*args), fn(*args))


def test_real_traced_graph_bad_rewrite_is_skipped_by_the_meta_kernel():
    """BUG-5: without a fake mode the Meta kernel still judges each rewrite."""
    x, w = torch.randn(2, 4, 8), torch.randn(16, 8)
    gm = make_fx(f_linear_relu)(x, w)
    before = str(gm.graph)
    res = apply_plan(gm.graph, _bad_plan(gm))
    assert res.applied == [] and "rejected the spec" in res.skipped[0]
    assert str(gm.graph) == before


@pytest.mark.needs_real_pass
def test_complex_gemm_is_unsupported_dtype():
    """BUG-3: complex64 is outside the spec's dtypes: unsupported_dtype, not unknown_meta."""
    def fn(x, w):
        return torch.mm(x, w) * 2

    args = (torch.randn(4, 6, dtype=torch.complex64), torch.randn(6, 5, dtype=torch.complex64))
    gm = make_fx(fn, tracing_mode="fake")(*args)
    res = run_on_graph(gm.graph, Options())
    (entry,) = res.plan["report"]
    assert entry["status"] == "not_fused" and entry["reason"] == "unsupported_dtype", entry
    assert "complex64" in entry["detail"]


def _bf16_chain_case(fn):
    g = testlib.generator("cpu", "bf16_chain")
    x = torch.randn(32, 64, generator=g).bfloat16()
    w = torch.randn(48, 64, generator=g).bfloat16()
    gm = make_fx(fn, tracing_mode="fake")(x, w)
    res = run_on_graph(gm.graph, Options())
    assert len(res.fused_specs) == 1, res.report_text
    return gm, res.fused_specs[0], (x, w)


@pytest.mark.needs_real_pass
def test_python_scalar_in_bf16_chain_is_an_f32_const():
    """Item 6: `mul(bf16, 0.044715)` and `add(bf16, 1e-3)`: the scalars are f32 consts (eager's
    opmath is fp32; the scalar is not rounded to bf16), and the fused CPU results are eager's
    bit for bit."""
    def fn(x, w):
        return (x @ w.t()) * 0.044715

    gm, spec, args = _bf16_chain_case(fn)
    assert re.search(r"= const 0\.04471\d* : f32\n", spec), spec
    assert ": bf16\n" in spec.splitlines()[-2] + "\n"  # the mul still rounds to bf16
    torch.testing.assert_close(gm(*args), fn(*args), rtol=0, atol=0)

    def fn_add(x, w):
        return (x @ w.t()) + 1e-3

    gm, spec, args = _bf16_chain_case(fn_add)
    assert re.search(r"= const 0\.001\d* : f32\n", spec), spec
    # The spec keeps the unrounded f32 scalar (eager on CUDA reads it in fp32 opmath); the CPU
    # kernel runs ATen's add, which rounds the scalar to bf16 first as eager on CPU does, so the
    # fused CPU result is eager's bit for bit. (Comparing it with fp32 opmath instead failed on
    # 8 of seeds 1-30: the two differ by one ulp on a few elements.)
    torch.testing.assert_close(gm(*args), fn_add(*args), rtol=0, atol=0)


def test_eager_bf16_times_0d_f32_tensor_is_fp32_opmath():
    """Item 7, eager's own rule (CPU): `x_bf16 * torch.tensor(s)` is bf16 (a 0-d tensor does not
    promote within its category) computed with s in fp32, not s rounded to bf16."""
    x = torch.randn(1 << 12, generator=testlib.generator("cpu", "0d_f32")).bfloat16()
    s = 0.1
    r = x * torch.tensor(s)
    assert r.dtype == torch.bfloat16
    assert torch.equal(r, (x.float() * s).bfloat16())
    assert not torch.equal(r, (x.float() * torch.tensor(s).bfloat16().float()).bfloat16())


@pytest.mark.needs_real_pass
def test_bf16_chain_times_0d_f32_tensor_matches_eager_exactly():
    """Item 7: `mm_bf16 * s_0d_f32` is `input f32 []` with no convert: the op's fp32 opmath
    reproduces eager (CPU) bit for bit."""
    def fn(x, w, s):
        return (x @ w.t()) * s

    g = testlib.generator("cpu", "0d_scale")
    args = (torch.randn(32, 64, generator=g).bfloat16(), torch.randn(48, 64, generator=g).bfloat16(),
            torch.tensor(0.1))
    gm = make_fx(fn, tracing_mode="fake")(*args)
    res = run_on_graph(gm.graph, Options())
    assert len(res.fused_specs) == 1, res.report_text
    spec = res.fused_specs[0]
    assert re.search(r"= input 2 f32 \[\]\n", spec), spec
    assert "convert" not in spec, spec
    for s in (0.1, 0.044715, 3.3):
        run = args[:2] + (torch.tensor(s),)
        torch.testing.assert_close(gm(*run), fn(*run), rtol=0, atol=0)


def _fused_equals_eager(f, x, w, r):
    model = EpilogueOf(f)
    ep2 = fxfuse.rewrite(torch.export.export(model, (x, w, r)))
    assert sum(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep2.graph.nodes) == 1
    torch.testing.assert_close(ep2.module()(x, w, r), model(x, w, r), rtol=0, atol=0, equal_nan=True)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("f", [lambda y, r: y + r, lambda y, r: y * r, lambda y, r: y / r, lambda y, r: r - y,
                               lambda y, r: (y + 256.5) == r, lambda y, r: torch.maximum(y, r),
                               lambda y, r: torch.where(y > 0.25, r, y)],
                         ids=["add", "mul", "div", "rsub", "eq", "maximum", "where"])
def test_an_integer_tensor_beside_a_16bit_result_is_rounded_to_it(dtype, f):
    """Eager converts an integer tensor operand to the 16-bit common dtype first (bf16(257) is 256, f16(70000)
    inf); the chain converted it to f32 exactly: 258 where eager has 256 (bug hunt, session 54)."""
    g = testlib.generator("cpu", "int_beside_16bit")
    r = torch.tensor([257, 2049, 70000, -70000], dtype=torch.int32)[torch.randperm(4, generator=g)]
    x = (torch.rand(3, 2, generator=g) + 0.25).to(dtype)
    w = torch.ones(4, 2, dtype=dtype)
    _fused_equals_eager(f, x, w, r)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("f", [lambda y, r: y.to(torch.int32) < 2**40, lambda y, r: y.to(torch.int32) == 2**32 + 3,
                               lambda y, r: y.to(torch.int8) == 259, lambda y, r: y.to(torch.uint8).clamp(min=-1),
                               lambda y, r: y.to(torch.uint8) >= -1, lambda y, r: y.to(torch.int32) + r],
                         ids=["i32_lt", "i32_eq", "i8_eq", "u8_clamp", "u8_ge", "i32_plus_i64"])
def test_a_python_int_beside_an_integer_tensor_is_held_in_its_type(f):
    """Eager holds a Python int beside an integer tensor in that tensor's type (wrapped: `int32 < 2**40`
    compares with 0); the chain held it as int64 (bug hunt, session 54)."""
    x = torch.ones(2, 1)
    w = torch.tensor([[0.0], [3.0], [5.0], [100.0]]) * (1 + torch.randint(0, 2, (4, 1), generator=testlib.generator("cpu", "int_number")))
    _fused_equals_eager(f, x, w, torch.tensor(7))


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("f", [lambda y, r: y + r, lambda y, r: y * r, lambda y, r: y / r, lambda y, r: r - y],
                         ids=["add", "mul", "div", "rsub"])
def test_a_0d_integer_tensor_beside_a_16bit_result_is_read_unrounded(dtype, f):
    """Unlike one with dims, a 0-d integer operand is read as a scalar in opmath by ATen's CPU kernels: f16
    `y * int32(70000)` is 35008, not inf. The first form of session 54's integer mend rounded it too."""
    g = testlib.generator("cpu", "int_0d_beside_16bit")
    r = torch.tensor([257, 2049, 70000][int(torch.randint(0, 3, (), generator=g))], dtype=torch.int32)
    x = torch.full((3, 2), 0.25, dtype=dtype) * (1 + torch.randint(0, 2, (3, 1), generator=g))
    _fused_equals_eager(f, x, torch.ones(4, 2, dtype=dtype), r)
