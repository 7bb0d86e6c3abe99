"""The activations eager computes in one ATen kernel of their own (hardsigmoid, softplus, mish, elu, selu, celu,
log_sigmoid) and sign, fused after a GEMM as that kernel computes them (pass/composite_activations.cpp), on the
CPU and on CUDA (`-m gpu`). Until session 56 each of them ended the chain.

The GEMMs are exact (helpers.exact_gemm_inputs, helpers.rows_gemm), so the fused kernel and eager apply the
activation to the same bits and any difference is the activation's. Piecewise-linear ones (hardsigmoid, the elu
family, sign) must give eager's bits; the ones through exp / log1p / tanh are allowed one unit in the last place
of a 16-bit result and four of an f32 one (ATen's CPU activation kernels call other vectorized exp / log1p than its
exp and log1p ops, each within an ulp of f32, and the fused kernel's tanh has a fast-math form for 16-bit
outputs), and nothing else: NaN and infinities where eager has them.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxfuse
import testlib
from helpers import GemmThen, exact_gemm_inputs, rows_gemm, run_the_generated_kernel

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
# name: (the activation, its ATen target, whether eager's bits are required)
ACTIVATIONS = {
    "hardsigmoid": (F.hardsigmoid, "aten.hardsigmoid.default", True),
    "softplus": (F.softplus, "aten.softplus.default", False),
    "softplus_beta2_threshold10": (lambda y: F.softplus(y, 2.0, 10.0), "aten.softplus.default", False),
    "softplus_beta0.5_threshold30": (lambda y: F.softplus(y, 0.5, 30.0), "aten.softplus.default", False),
    "mish": (F.mish, "aten.mish.default", False),
    "elu": (F.elu, "aten.elu.default", True),
    "elu_alpha0.5": (lambda y: F.elu(y, 0.5), "aten.elu.default", True),
    "elu_scaled": (lambda y: torch.ops.aten.elu.default(y, 0.5, 2.0, 1.5), "aten.elu.default", True),
    "selu": (F.selu, "aten.selu.default", True),
    "celu_alpha0.7": (lambda y: F.celu(y, 0.7), "aten.celu.default", True),
    "logsigmoid": (F.logsigmoid, "aten.log_sigmoid.default", False),
    "sign": (torch.sign, "aten.sign.default", True),
}
# y values at each formula's edges: the softplus thresholds (x * beta = 20, 10, 30) and exp's overflow (95), 0 and
# -0 for the elu family's branch and sign, the infinities and NaN
SPECIAL_ROWS = [float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 95.0, -95.0, 20.0, 20.125, 5.0, 5.0625, 60.0,
                60.5, -3.0, 3.0, -2.5, 2.5, 1e-3, -1e-3, 15.0, -15.0, 0.5, -0.5, 1.0]


@pytest.fixture(autouse=True)
def _run_the_kernel(monkeypatch):
    run_the_generated_kernel(monkeypatch)


def _assert_eagers_answer(got, want, exact):
    """got == want bit for bit where `exact`, else within one unit in the last place of a 16-bit want (four of an
    f32 one); NaN and infinities exactly where eager has them either way."""
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.isnan(), want.isnan()), "NaN where eager has none, or the other way"
    finite = want.isfinite()
    assert torch.equal(got[~finite & ~want.isnan()], want[~finite & ~want.isnan()]), "infinities differ"
    g, w = got[finite], want[finite]
    if exact:
        assert torch.equal(g, w), f"{int((g != w).sum())} of {w.numel()} elements differ from eager"
        return
    ulp = (torch.nextafter(w, torch.full_like(w, float("inf"))) - w).abs()
    ulp = torch.maximum(ulp, (w - torch.nextafter(w, torch.full_like(w, float("-inf")))).abs())
    ulps = 4 if want.dtype == torch.float32 else 1
    off = (g.double() - w.double()).abs() > ulps * ulp.double()
    assert not off.any(), f"{int(off.sum())} elements off eager by more than {ulps} ulp: {g[off][:4]} vs {w[off][:4]}"


def _rewrite_and_run(f, target, x, w):
    model = GemmThen(f)
    ep = fxfuse.rewrite(torch.export.export(model, (x, w)), only_profitable=False)
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert targets.count("fxfuse.gemm_chain.default") == 1 and target not in targets, targets
    return ep.module()(x, w), model(x, w)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "f16", "f32"])
@pytest.mark.parametrize("values", ["random", "special"])
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_an_activation_is_fused_with_eagers_answer(device, dtype, values, name):
    f, target, exact = ACTIVATIONS[name]
    g = testlib.generator("cpu", "composite_activation", device, str(dtype), values, name)
    if values == "random":
        x, w = exact_gemm_inputs(dtype, device, g, m=64, k=32, n=128)
        x = x * 2  # y spread over about +-40: both sides of every threshold above
    else:
        x, w = rows_gemm(SPECIAL_ROWS, dtype, device, g)
    got, want = _rewrite_and_run(f, target, x, w)
    _assert_eagers_answer(got, want, exact)


@pytest.mark.needs_real_pass
def test_torch_compile_fuses_the_decomposed_forms():
    """torch.compile's post-grad graphs hold these activations decomposed (softplus and mish into exp / log1p /
    where, elu into expm1 / where, log_sigmoid into minimum / exp / log1p): the backend fuses each, as one chain."""
    g = testlib.generator("cpu", "composite_compile")
    x, w = exact_gemm_inputs(torch.bfloat16, "cpu", g, m=64, k=32, n=128)
    for name in ("softplus_beta2_threshold10", "mish", "selu", "celu_alpha0.7", "logsigmoid", "sign", "hardsigmoid"):
        f = ACTIVATIONS[name][0]
        torch._dynamo.reset()
        fxfuse.reset_stats()
        got = fxfuse.compile(GemmThen(f), only_profitable=False)(x, w)
        assert fxfuse.stats()["chains_fused"] == 1, (name, str(fxfuse.report()))
        _assert_eagers_answer(got, GemmThen(f)(x, w), exact=False)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "f16", "f32"])
@pytest.mark.parametrize("params", [(-1.0, 1.0, 1.0), (1.0, -2.0, -1.0), (float("nan"), 1.0, 1.0)],
                         ids=["alpha-1", "scale-2", "alpha_nan"])
def test_elu_at_zero_takes_each_devices_branch(device, dtype, params):
    """At y = 0 ATen's CPU elu returns y * scale and its CUDA kernel expm1(y * input_scale) * alpha * scale: with a
    negative coefficient they are zeros of opposite signs (1 / elu(y) is +-inf), with a NaN alpha 0 against NaN
    (review, session 56: the CPU chain had CUDA's branch)."""
    x, w = rows_gemm([0.0, 1.0, -1.0, 0.5, -0.5], dtype, device, testlib.generator("cpu", "elu_zero", str(params)))
    got, want = _rewrite_and_run(lambda y: 1.0 / torch.ops.aten.elu.default(y, *params), "aten.elu.default", x, w)
    _assert_eagers_answer(got, want, exact=True)


@pytest.mark.needs_real_pass
@pytest.mark.parametrize("f", [lambda y: F.softplus(y, 1.0, 1e40), lambda y: F.elu(y, 1e40),
                               lambda y: F.celu(y, 1e-40)], ids=["softplus_threshold", "elu_alpha", "celu_alpha"])
def test_a_parameter_past_float_range_is_left_to_eager(f):
    """Eager raises converting such a parameter to its f32 opmath; the chain had computed with inf (review, session
    56). The activation stays in the program, which raises as eager does."""
    x, w = exact_gemm_inputs(torch.float32, "cpu", testlib.generator("cpu", "float_range"))
    model = GemmThen(f)
    ep = fxfuse.rewrite(torch.export.export(model, (x, w)), only_profitable=False)
    assert not any(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep.graph.nodes)
    for run in (model, ep.module()):
        with pytest.raises(RuntimeError, match="without overflow"):
            run(x, w)


class _LinearThen(torch.nn.Module):
    def __init__(self, linear, f):
        super().__init__()
        self.linear, self.f = linear, f

    def forward(self, x):
        return self.f(self.linear(x))


@pytest.mark.gpu
@pytest.mark.needs_real_pass
@pytest.mark.parametrize("name,mkn,fused", [("softplus", (4096, 4096, 4096), True), ("elu", (1024, 160, 5120), True),
                                            ("mish", (2048, 4096, 4096), True), ("mish", (1024, 160, 5120), False)],
                         ids=["softplus_4096", "elu_k160", "mish_2048", "mish_k160"])
def test_the_hopper_planner_takes_exp_log1p_expm1_where_they_won(monkeypatch, name, mkn, fused):
    """Session 57: with the fast-math exp / expm1 / log1p the planner's default (only_profitable) fuses elu,
    softplus and mish on the Hopper kernel where GELU(tanh) fuses (codegen/config_table.cpp, measured in
    bench/RESULTS.md session 57), and leaves mish to eager at 1024 x 160 x 5120, where it lost. The rule is the
    Hopper kernel's (sm_90); the fused answer is compared with float64 beside eager's."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the rule under test is the sm_90 kernel's")
    monkeypatch.delenv("FXFUSE_FORCE_KERNEL", raising=False)  # the planner's own choice, not the forced kernel
    M, K, N = mkn
    g = testlib.generator("cuda", "exp_log_planner", name, str(mkn))
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    linear = torch.nn.Linear(K, N, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(N, K, device="cuda", generator=g) / K ** 0.5 * 3)
        linear.bias.copy_(torch.randn(N, device="cuda", generator=g))
    f = ACTIVATIONS[name][0]
    model = _LinearThen(linear, f)
    ep = torch.export.export(model, (x,))
    text = str(fxfuse.report(ep))
    rewritten = fxfuse.rewrite(ep)
    n_ops = sum(nd.target == torch.ops.fxfuse.gemm_chain.default for nd in rewritten.graph.nodes)
    if not fused:
        assert n_ops == 0 and "three transcendentals (mish)" in text, text
        return
    assert n_ops == 1, text
    before = fxfuse._C.stats()
    with torch.no_grad():
        got = rewritten.module()(x)
        torch.cuda.synchronize()
    after = fxfuse._C.stats()
    assert after["launches"] - before["launches"] == 1 and after["pointwise_launches"] == before["pointwise_launches"]
    with torch.no_grad():
        want = f(F.linear(x.double(), linear.weight.double(), linear.bias.double()))
        eager = model(x)
    err = ((got.double() - want).norm() / want.norm()).item()
    eager_err = ((eager.double() - want).norm() / want.norm()).item()
    assert not got.isnan().any() and err <= 1.2 * eager_err + 1e-4, (err, eager_err)
