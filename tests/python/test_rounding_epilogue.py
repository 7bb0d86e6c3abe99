"""round / floor / ceil / trunc after a GEMM (spec ops since session 56; they had ended the chain), and the epilogue
they make possible: requantizing a GEMM's output to int8 in the same kernel, `clamp(round(y * s), -128, 127)
.to(int8)`, as W8A8 inference pipelines do between layers. The GEMMs are exact (helpers.rows_gemm), so every result
must be eager's bits; y holds the halves where round's ties-to-even matters and the values past int8's range."""
from __future__ import annotations

import pytest
import torch

import fxfuse
import testlib
from helpers import GemmThen, fused_run, rows_gemm, run_the_generated_kernel

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
# halves (ties to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2), values either side of them, int8's range edges
ROWS = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.25, 0.75, -0.75, 127.5, 128.0, -128.5, -129.0, 300.0, -300.0, 0.0,
        3.0, -3.0, 1.25, -1.25]


@pytest.fixture(autouse=True)
def _run_the_kernel(monkeypatch):
    run_the_generated_kernel(monkeypatch)


EPILOGUES = {
    "round": torch.round, "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc,
    "requantize_int8": lambda y: torch.clamp(torch.round(y * 0.5), -128, 127).to(torch.int8),
    "requantize_uint8": lambda y: torch.clamp(torch.round(y + 128), 0, 255).to(torch.uint8),
    "floor_to_int32": lambda y: torch.floor(y * 2).to(torch.int32),
}


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "f16", "f32"])
@pytest.mark.parametrize("name", list(EPILOGUES))
def test_a_rounding_epilogue_is_fused_with_eagers_bits(device, dtype, name):
    x, w = rows_gemm(ROWS, dtype, device, testlib.generator("cpu", "rounding", name))
    model = GemmThen(EPILOGUES[name])
    ep = fxfuse.rewrite(torch.export.export(model, (x, w)), only_profitable=False)
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert targets.count("fxfuse.gemm_chain.default") == 1, targets
    assert not any(t.startswith(("aten.round", "aten.floor", "aten.ceil", "aten.trunc")) for t in targets), targets
    got, want = ep.module()(x, w), model(x, w)
    assert got.dtype == want.dtype
    assert torch.equal(got, want), (got[:len(ROWS), 0], want[:len(ROWS), 0])


def _identity_gemm(y):
    """x, w with x @ w.t() == y exactly in any GEMM: w is the identity (each output one product by 1)."""
    n = y.shape[1]
    return y, torch.eye(n, dtype=y.dtype, device=y.device)


def _decimal_values(dtype, device, g, m=64, n=64):
    """Random values of `dtype` at several scales, with the ties round's ties-to-even meets after the scaling
    (0.25, 0.35, 2.675, -0.45, 1250...), values past float's range once scaled (f32 only), infinities, NaN and
    negative zero."""
    y = torch.randn(m, n, generator=g, dtype=torch.float64) * torch.tensor([0.01, 1.0, 40.0, 3000.0]).repeat(n // 4)
    special = [0.25, 0.35, 2.675, -0.45, 0.05, -0.05, 1250.0, -1350.0, 0.004, -0.0, float("inf"), float("-inf"),
               float("nan"), 65000.0, -0.015, 0.125]
    if dtype == torch.float32:
        special += [3.0e38, -3.0e38]
    y[0, :len(special)] = torch.tensor(special, dtype=torch.float64)
    return y.to(dtype).to(device)


def _same_bits(got, want):
    """Equal values (NaN where eager has NaN) with the same signs of zero."""
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(torch.signbit(got) & (got == 0), torch.signbit(want) & (want == 0)), "signs of zero differ"


ROUND_DECIMALS = [1, 2, 3, -1, -2]


def _fused_run(model, x, w, path):
    """model(x, w) with its one GEMM chain fused (helpers.fused_run); nothing of round's left beside the fused op."""
    return fused_run(model, (x, w), path, absent="round")


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "f16", "f32"])
@pytest.mark.parametrize("decimals", ROUND_DECIMALS)
@pytest.mark.parametrize("path", ["export", "compile"])
def test_round_with_decimals_gives_eagers_bits(device, dtype, decimals, path):
    """torch.round(y, decimals=d) is one ATen kernel, nearbyint(y * 10^d) / 10^d, in f32 on the CPU and in the
    tensor's own type on CUDA (pass/round_decimals.h). torch.export keeps `aten.round.decimals`, lowered to that
    formula; torch.compile's graphs hold Inductor's decomposition, `mul(10.0**d) -> round -> mul(1.0 / 10.0**d)`,
    collapsed back into the op around the pass (python/fxfuse/decomposed_round.py; session 56's last hunt: the
    decomposition's bf16 product was one step off at a tenth of the elements, and its multiply by 0.1 differs from
    eager's division by 10 in the last bit of f32)."""
    g = testlib.generator("cpu", "round_decimals", str(dtype), decimals, path)
    x, w = _identity_gemm(_decimal_values(dtype, device, g))
    model = GemmThen(lambda y: torch.round(y, decimals=decimals))
    _same_bits(_fused_run(model, x, w, path), model(x, w))


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
@pytest.mark.parametrize("path", ["export", "compile"])
def test_the_users_own_scale_round_scale_keeps_its_roundings(device, dtype, path):
    """`torch.round(y * 10) * 0.1` written out is three eager ops, each rounded to y's type: the same ops as Inductor's
    decomposition of round(decimals=1), but the user's, so it keeps those roundings on both paths (the backend tells
    the two apart by the nodes' `original_aten`; the review of session 57 found the first version folding these)."""
    g = testlib.generator("cpu", "round_literal", str(dtype), path)
    x, w = _identity_gemm(_decimal_values(dtype, device, g))
    model = GemmThen(lambda y: torch.round(y * 10.0) * 0.1)
    want = model(x, w)
    _same_bits(_fused_run(model, x, w, path), want)
    # the premise: eager's literal form differs from round(decimals=1) on these values (bf16 on the CPU: its rounded
    # product; f32: its multiply by 0.1), so a fold here would be caught. CUDA's bf16 round(decimals) rounds its
    # product to bf16 too, and x / 10 and x * 0.1 rounded to bf16 agreed on every element (session 58's GPU run):
    # there the two forms give the same bits, so only the bits above are checked.
    same_forms = device == "cuda" and dtype == torch.bfloat16
    assert same_forms or not torch.equal(torch.nan_to_num(want), torch.nan_to_num(torch.round(x @ w.t(), decimals=1)))


@pytest.mark.needs_real_pass
def test_a_round_with_decimals_no_chain_takes_is_left_as_inductor_computes_it():
    """The backend collapses Inductor's decomposition of round(decimals) into one op before the pass; where no chain
    takes it (no GEMM before it here) it is expanded back, since Inductor cannot lower that op after its
    decompositions have run: the program compiles and gives torch.compile's own answer."""
    g = testlib.generator("cpu", "round_unfused")
    x = _decimal_values(torch.bfloat16, "cpu", g)

    def f(t):
        return torch.round(t + 1, decimals=2) * 3

    torch._dynamo.reset()
    fxfuse.reset_stats()
    got = fxfuse.compile(f)(x)
    torch._dynamo.reset()
    _same_bits(got, torch.compile(f)(x))
