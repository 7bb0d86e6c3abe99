"""The planner's profitability question (`_C.kernel_variant`), answered without a GPU: which
kernel the op would pick for a problem, and whether it is a fast one. Chains without a fast
kernel are left unfused by the C++ pass (pass/profitability.cpp, reported `not_profitable`);
tests/pass/profitability.ir has the text-file cases."""
from __future__ import annotations

import pytest

import fxfuse._C as C


@pytest.fixture(autouse=True)
def _nvrtc_present(monkeypatch):
    """The planner's answers here assume kernels can be compiled (NVRTC found); the test without
    NVRTC sets it absent itself."""
    from fxfuse import pass_driver

    monkeypatch.setattr(pass_driver, "nvrtc_available", lambda: True)

HEAD = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
BIAS_RELU = HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = relu %4 : bf16\noutput %5\n"
BIAS_GELU = HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\noutput %5\n"
RESIDUAL = HEAD + "%3 = input 2 bf16 [m,n]\n%4 = add %2 %3 : bf16\noutput %4\n"
# expensive epilogues outside what the planner's rule was measured on (staged: one 16-bit output,
# at most one 16-bit residual; fast-math activations)
GELU_TWO_OUTPUTS = BIAS_GELU + "output %4\n"
GELU_F32_OUT = HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : f32\n%5 = gelu_tanh %4 : f32\noutput %5\n"
ERF_GELU = HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu %4 : bf16\noutput %5\n"
F32_RESIDUAL = HEAD + "%3 = input 2 f32 [m,n]\n%4 = add %2 %3 : bf16\noutput %4\n"
INT8 = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [n,k]\n%2 = convert %1 : bf16\n"
        "%3 = input 2 bf16 [n,1]\n%4 = mul %2 %3 : bf16\n%5 = mm %0 %4 : bf16\n%6 = input 3 bf16 [n]\n"
        "%7 = add %5 %6 : bf16\noutput %7\n")


@pytest.mark.parametrize("spec,m,k,arch,variant,fast", [
    (BIAS_RELU, 4096, 4096, "sm_90", "sm90_wgmma", True),     # cheap epilogue: the Hopper kernel wins
    (BIAS_RELU, 4096, 14336, "sm_90", "sm90_wgmma", True),    # ... at every K
    (BIAS_GELU, 4096, 4096, "sm_90", "sm90_wgmma", True),     # GELU wins up to K = 4096 (RESULTS Run L)
    (BIAS_GELU, 4096, 14336, "sm_90", "sm90_wgmma", True),    # ... from 512 rows to K = 14336 (Run AQ)
    (BIAS_GELU, 4096, 16384, "sm_90", "sm80_mma", False),     # ... not beyond: unfused
    (RESIDUAL, 4096, 1024, "sm_90", "sm90_wgmma", True),      # a full residual read, the same
    (RESIDUAL, 4096, 8192, "sm_90", "sm80_mma", False),
    (GELU_TWO_OUTPUTS, 4096, 1024, "sm_90", "sm80_mma", False),  # not staged: not measured
    (GELU_F32_OUT, 4096, 1024, "sm_90", "sm80_mma", False),
    (ERF_GELU, 4096, 1024, "sm_90", "sm80_mma", False),          # erf: no fast-math form
    (F32_RESIDUAL, 4096, 1024, "sm_90", "sm80_mma", False),      # a residual not staged
    (BIAS_GELU, 1, 4096, "sm_90", "gemv", True),              # decode: the weight-streaming kernel
    (BIAS_GELU, 64, 4096, "sm_90", "sm80_mma", False),        # dense M=64: cuBLAS is faster
    (INT8, 64, 4096, "sm_90", "gemv", True),                  # int8 weights up to M=64
    (INT8, 16, 4096, "sm_80", "gemv", True),
    (BIAS_RELU, 4096, 4096, "sm_80", "sm80_mma", False),      # no Hopper kernel before sm_90
])
def test_kernel_variant(spec, m, k, arch, variant, fast):
    assert C.kernel_variant(spec, m, 4096, k, 1, arch) == (variant, fast)


@pytest.mark.parametrize("arch", ["sm_100", "sm_120"])
@pytest.mark.parametrize("spec,m", [(BIAS_GELU, 4096), (BIAS_GELU, 1), (INT8, 16)], ids=["tile", "decode", "int8"])
def test_blackwell_gets_a_kernel_its_arch_compiles(spec, m, arch):
    """wgmma and setmaxnreg are sm_90a only: a Blackwell GPU was offered the Hopper kernel, which NVRTC
    refuses for sm_100 / sm_120, so every chain ran the op's ATen fallback (review, session 53)."""
    variant = C.kernel_variant(spec, m, 4096, 4096, 1, arch)[0]
    assert variant != "sm90_wgmma"
    assert len(C.compile_cubin(spec, m, 4096, 4096, arch)) > 0


def _traced_on_fake_cuda(fn, *shapes):
    """fn traced on fake CUDA tensors (works without a GPU): the graph the backend would see."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    with FakeTensorMode():
        args = [torch.empty(*s, device="cuda", dtype=torch.bfloat16) for s in shapes]
    return make_fx(fn, tracing_mode="fake")(*args)


@pytest.mark.parametrize("act,bias,k,path", [
    ("relu", True, 14336, "kernel"),       # the Hopper kernel wins: fused
    ("gelu", True, 4096, "kernel"),        # ... with GELU too, up to K = 4096
    ("gelu", False, 14336, "kernel"),      # ... and from 512 rows to K = 14336 (Run AQ)
    # No fused kernel faster than eager past K = 14336 with GELU (unmeasured). Eager runs add and
    # GELU as two kernels: kept for the op's unfused path (cuBLAS + one epilogue kernel), with a note.
    ("gelu", True, 16384, "unfused path"),
    # GELU alone is one eager kernel, as good as the op's: left unfused, reported.
    ("gelu", False, 16384, "not_profitable"),
])
def test_pass_leaves_unprofitable_chains_unfused(act, bias, k, path):
    import torch
    import torch.nn.functional as F

    from fxfuse.pass_driver import Options, run_on_graph

    activation = {"relu": torch.relu, "gelu": lambda y: F.gelu(y, approximate="tanh")}[act]
    fn = lambda x, w, b: activation(torch.mm(x, w) + b) if bias else activation(torch.mm(x, w))  # noqa: E731
    import fxfuse

    gm = _traced_on_fake_cuda(fn, (4096, k), (k, 4096), (4096,))
    before = fxfuse.stats()["chains_for_unfused_path"]
    res = run_on_graph(gm.graph, Options(precompile=False, arch="sm_90"), "planner")
    assert fxfuse.stats()["chains_for_unfused_path"] - before == (path == "unfused path")
    ops = [n for n in gm.graph.nodes if "gemm_chain" in str(n.target)]
    assert len(ops) == (path != "not_profitable"), res.report_text
    entry = next(e for e in res.plan["report"] if e["gemm"].startswith("mm"))
    assert entry["status"] == ("not_fused" if path == "not_profitable" else "fused")
    unfused_note = [n for n in entry.get("notes", []) if "cuBLAS + one epilogue kernel" in n]
    assert len(unfused_note) == (path == "unfused path"), entry
    assert res.plan["counters"].get("chains_for_unfused_path", 0) == (path == "unfused path")
    if path == "unfused path":
        assert "M=4096, K=16384, N=4096" in unfused_note[0] and "eager's 2 elementwise kernels" in unfused_note[0]
    if path == "not_profitable":
        assert entry["reason"] == "not_profitable" and "M=4096" in entry["detail"]
    # Opting out keeps every chain fused (the GPU tests use it to exercise the kernels).
    gm2 = _traced_on_fake_cuda(fn, (4096, k), (k, 4096), (4096,))
    run_on_graph(gm2.graph, Options(precompile=False, arch="sm_90", only_profitable=False), "planner")
    assert sum("gemm_chain" in str(n.target) for n in gm2.graph.nodes) == 1


@pytest.mark.parametrize("value,kept", [("1", False), ("yes", False), ("0", True), ("", True)])
def test_unfused_path_switched_off_leaves_the_chain_to_eager(value, kept, monkeypatch):
    """FXFUSE_NO_POINTWISE turns the op's unfused path off (codegen::pointwiseEnabled, as the
    runtime reads it: any value but empty or "0"): the pass then does not keep a chain for it, which
    the op would evaluate with ATen, slower than eager."""
    import torch
    import torch.nn.functional as F

    from fxfuse.pass_driver import Options, run_on_graph

    monkeypatch.setenv("FXFUSE_NO_POINTWISE", value)
    fn = lambda x, w, b: F.gelu(torch.mm(x, w) + b, approximate="tanh")  # noqa: E731
    gm = _traced_on_fake_cuda(fn, (4096, 16384), (16384, 4096), (4096,))
    res = run_on_graph(gm.graph, Options(precompile=False, arch="sm_90"), "planner")
    assert sum("gemm_chain" in str(n.target) for n in gm.graph.nodes) == kept, res.report_text


@pytest.mark.parametrize("baseline,m,k,n,chain,fused", [
    ("eager", 4096, 4096, 4096, "relu", 1),           # fxfuse.rewrite: beats cuBLAS + ATen's add and relu kernels
    ("inductor", 4096, 4096, 4096, "relu", 0),        # torch.compile: at par with cuBLAS + one Inductor kernel (Runs E, M, Y)
    ("inductor", 4096, 1024, 4096, "relu", 1),        # ... but wins at K = 1024 (Runs L, M, Y, Z)
    ("inductor", 4096, 1024, 4096, "gelu_resid", 1),  # ... with GELU(tanh), then a residual (Runs Y, Z)
    ("inductor", 4096, 1024, 4096, "silu_resid", 1),  # ... SiLU then a residual follows it (unmeasured)
    ("inductor", 4096, 1024, 4096, "relu_resid", 0),  # ... a residual without GELU/SiLU before it: not measured
    ("inductor", 4096, 1024, 4096, "resid_gelu", 0),  # ... nor one added before the GELU
    ("inductor", 4096, 4096, 1024, "gelu_resid", 1),  # ... and at K = 4096, N = 1024 (Runs F, Y, Z)
    ("inductor", 4096, 4096, 2048, "relu", 0),        # ... not measured at N = 2048
    ("inductor", 4096, 4096, 512, "relu", 0),         # ... nor N = 512
    ("inductor", 4096, 8192, 1024, "relu", 0),        # ... nor K = 8192
    ("inductor", 4096, 512, 4096, "relu", 0),         # ... nor K = 512
    ("inductor", 2048, 1024, 4096, "relu", 0),        # ... measured only from M x B = 4096
    ("inductor", 2048, 1024, 4096, "bmm_relu", 1),    # ... M = 2048 twice (B = 2) is M x B = 4096
    ("inductor", 8, 4096, 4096, "relu", 1),           # decode: the gemv beats Inductor too
])
def test_baseline_decides_what_fused_must_beat(baseline, m, k, n, chain, fused):
    import torch
    import torch.nn.functional as F

    from fxfuse.pass_driver import Options, run_on_graph

    gelu = lambda y: F.gelu(y, approximate="tanh")  # noqa: E731
    fns = {"relu": lambda x, w, b: torch.relu(torch.mm(x, w) + b),
           "gelu_resid": lambda x, w, b, r: gelu(torch.mm(x, w) + b) * 0.5 + r,  # bench_chains' form
           "silu_resid": lambda x, w, r: F.silu(torch.mm(x, w)) + r,
           "relu_resid": lambda x, w, b, r: torch.relu(torch.mm(x, w) + b) + r,
           "resid_gelu": lambda x, w, r: gelu(torch.mm(x, w) + r),
           "bmm_relu": lambda x, w, b: torch.relu(torch.bmm(x, w) + b)}
    shapes = {"relu": [(m, k), (k, n), (n,)], "gelu_resid": [(m, k), (k, n), (n,), (m, n)],
              "silu_resid": [(m, k), (k, n), (m, n)], "relu_resid": [(m, k), (k, n), (n,), (m, n)],
              "resid_gelu": [(m, k), (k, n), (m, n)], "bmm_relu": [(2, m, k), (2, k, n), (n,)]}[chain]
    gm = _traced_on_fake_cuda(fns[chain], *shapes)
    res = run_on_graph(gm.graph, Options(precompile=False, arch="sm_90", baseline=baseline), "planner")
    assert sum("gemm_chain" in str(node.target) for node in gm.graph.nodes) == fused, res.report_text
    if not fused:
        entry = next(e for e in res.plan["report"] if e["gemm"].startswith(("mm", "bmm")))
        assert entry["reason"] == "not_profitable" and "unfused inductor" in entry["detail"], entry


def test_backend_judges_against_inductor(monkeypatch):
    """The torch.compile backend's pass compares with Inductor unless told otherwise."""
    from fxfuse import backend
    from fxfuse.pass_driver import Options

    import torch._inductor.compile_fx as cf

    seen = []  # what _compile hands to Inductor (imported there at call time)

    monkeypatch.setattr(cf, "compile_fx", lambda gm, ex, config_patches, **kw: seen.append(config_patches) or gm)
    import torch

    gm = torch.fx.symbolic_trace(lambda x: x + 1)  # what Dynamo hands the backend (its code keys the pass: backend.py)
    backend._compile(gm, [], Options(), {})
    backend._compile(gm, [], Options(baseline="eager"), {})
    assert [p[backend._PASS_KEY].options.baseline for p in seen] == ["inductor", "eager"]
    with pytest.raises(ValueError, match="baseline"):
        Options(baseline="tensorrt")


@pytest.mark.parametrize("m,fused", [(4096, 0), (8, 1)])
def test_symbolic_m_is_judged_at_its_hint(m, fused):
    """dynamic=True graphs: the pass gets each symbolic dim's traced size (size_hints) and
    judges M there: decode-sized M fuses (gemv), a large M with GELU past K = 14336 is left unfused."""
    import torch
    import torch.nn.functional as F
    from torch._dynamo.source import ConstantSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

    from fxfuse.pass_driver import Options, run_on_graph, size_hints

    env = ShapeEnv()
    sym_m = env.create_symintnode(env.create_symbol(m, ConstantSource("m"), dynamic_dim=DimDynamic.DYNAMIC), hint=m)
    with FakeTensorMode(shape_env=env):  # fake CUDA tensors: no GPU needed
        x = torch.empty(sym_m, 16384, device="cuda", dtype=torch.bfloat16)
        w = torch.empty(16384, 4096, device="cuda", dtype=torch.bfloat16)
    gm = make_fx(lambda x, w: F.gelu(torch.mm(x, w), approximate="tanh"), tracing_mode="fake")(x, w)
    assert any(isinstance(d, torch.SymInt) for n in gm.graph.nodes
               for d in getattr(n.meta.get("val"), "shape", ())), "M was not traced symbolically"
    assert f"={m}" in size_hints(gm.graph)
    res = run_on_graph(gm.graph, Options(precompile=False, arch="sm_90"), "planner")
    assert sum("gemm_chain" in str(n.target) for n in gm.graph.nodes) == fused, res.report_text
    if not fused:
        entry = next(e for e in res.plan["report"] if e["gemm"].startswith("mm"))
        assert entry["reason"] == "not_profitable" and f"M={m}" in entry["detail"]


def test_no_nvrtc_leaves_cuda_chains_to_inductor_with_one_warning(monkeypatch):
    """Without NVRTC nothing can be compiled for CUDA: the pass leaves CUDA chains in the graph
    (reason nvrtc_unavailable) and says so once per process, instead of rewriting them into an
    op that could only evaluate them with ATen."""
    import warnings

    import torch

    from fxfuse import pass_driver
    from fxfuse.pass_driver import Options, run_on_graph

    monkeypatch.setattr(pass_driver, "nvrtc_available", lambda: False)
    monkeypatch.setattr(pass_driver, "_warned_no_nvrtc", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            gm = _traced_on_fake_cuda(lambda x, w, b: torch.relu(torch.mm(x, w) + b), (4096, 4096), (4096, 4096), (4096,))
            res = run_on_graph(gm.graph, Options(precompile=False, arch="sm_90"), "planner")
            assert not any("gemm_chain" in str(n.target) for n in gm.graph.nodes)
            entry = next(e for e in res.plan["report"] if e["gemm"].startswith("mm"))
            assert entry["reason"] == "nvrtc_unavailable", entry
    said = [w for w in caught if "NVRTC" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]
    # the backend's cache key (FxfusePass.uuid) tells the two rewrites apart
    key_without = Options().key()
    monkeypatch.setattr(pass_driver, "nvrtc_available", lambda: True)
    assert Options().key() != key_without
