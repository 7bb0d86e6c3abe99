"""The op's path for a chain without a fast fused kernel (runtime/cuda_launch.cpp
pointwiseEntry): cuBLAS computes the product in fp32, then one generated kernel
(kernels/epilogue_pointwise.cuh) writes every output of the epilogue. Checked against float64
with poisoned outputs; which path ran is read from the op's counters."""
from __future__ import annotations

import pytest
import torch

import fxfuse._C as C
import testlib

pytestmark = pytest.mark.gpu

HEAD = "fxfuse.chain v1\ngemm {g}\n%0 = input 0 bf16 [{a}]\n%1 = input 1 bf16 [{b}]\n%2 = mm %0 %1 : f32\n"
GELU_RESID_TWO_OUT = ("%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\n"
                      "%6 = input 3 bf16 [m,n]\n%7 = add %5 %6 : bf16\noutput %7\noutput %4\n")


@pytest.fixture(autouse=True)
def _unforced(monkeypatch):
    """The op's own decision (FXFUSE_FORCE_KERNEL would run the generic fused kernel)."""
    monkeypatch.delenv("FXFUSE_FORCE_KERNEL", raising=False)
    monkeypatch.delenv("FXFUSE_NO_POINTWISE", raising=False)


def _delta(before, after, key):
    return after.get(key, 0) - before.get(key, 0)


def _run(inputs, spec):
    before = C.stats()
    outs = torch.ops.fxfuse.gemm_chain(inputs, spec)
    torch.cuda.synchronize()
    return outs, before, C.stats()


# (256, 4104, 384): two outputs and K past 4096, either of which keeps GELU off the Hopper kernel
# (codegen/config_table.cpp epilogueRefusal); (1000, 776, 519): odd N, no TMA
@pytest.mark.parametrize("m,k,n", [(256, 4104, 384), (1000, 776, 519), (3, 40, 7)])
def test_chain_without_a_fast_kernel_runs_cublas_plus_one_epilogue_kernel(m, k, n, monkeypatch):
    monkeypatch.setenv("FXFUSE_POISON_OUTPUTS", "1")
    spec = HEAD.format(g="mm", a="m,k", b="k,n") + GELU_RESID_TWO_OUT
    assert not C.kernel_variant(spec, m, n, k)[1]  # GELU + residual: no fast fused kernel
    g = testlib.generator("cuda", "pointwise", m, n)
    x, w = (torch.randn(m, k, device="cuda", generator=g).bfloat16(),
            (torch.randn(k, n, device="cuda", generator=g) / k ** 0.5).bfloat16())
    b, r = torch.randn(n, device="cuda", generator=g).bfloat16(), torch.randn(m, n, device="cuda", generator=g).bfloat16()
    (y, pre), before, after = _run([x, w, b, r], spec)
    assert _delta(before, after, "launches") == 1 and _delta(before, after, "aten_dispatch") == 0
    pre_ref = (x.double() @ w.double() + b.double()).bfloat16().double()
    ref = (torch.nn.functional.gelu(pre_ref, approximate="tanh").bfloat16().double() + r.double())
    for got, want in ((y, ref), (pre, pre_ref)):
        assert not torch.isnan(got).any()
        assert ((got.double() - want).norm() / want.norm()).item() < 1e-2


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
                    reason="needs sm_90 (the Hopper kernel)")
@pytest.mark.parametrize("what", ["residual", "bias"])
def test_input_the_hopper_fast_path_cannot_read_takes_the_unfused_path(what, monkeypatch):
    """A residual the Hopper kernel cannot stage (a slice 2 bytes off 16-byte alignment) or a
    bias it cannot pair (2 bytes off 4-byte alignment) would send its whole launch to the
    per-element edge path: the op runs the unfused path instead (codegen epilogueRefusal,
    the plan's align_bytes_residual / _columns). Aligned, the same chain takes the Hopper kernel."""
    monkeypatch.setenv("FXFUSE_POISON_OUTPUTS", "1")
    tail = "%3 = input 2 bf16 [m,n]\n%4 = add %2 %3 : bf16\noutput %4\n" if what == "residual" else \
        "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = relu %4 : bf16\noutput %5\n"
    spec = HEAD.format(g="mm", a="m,k", b="k,n") + tail
    m, k, n = 1024, 256, 520  # 80 tiles of 64x128: the heuristic takes the Hopper kernel from 64
    assert C.kernel_variant(spec, m, n, k) == ("sm90_wgmma", True)
    g = testlib.generator("cuda", "pointwise", n)
    x = torch.randn(m, k, device="cuda", generator=g).bfloat16()
    w = (torch.randn(k, n, device="cuda", generator=g) / k ** 0.5).bfloat16()
    size = m * n if what == "residual" else n
    for offset, pointwise in ((0, 0), (1, 1)):  # elements: 0 or 2 bytes off the allocation
        e = torch.randn(size + 8, device="cuda", generator=g).bfloat16()[offset:offset + size]
        e = e.view(m, n) if what == "residual" else e
        (y,), before, after = _run([x, w, e], spec)
        assert _delta(before, after, "launches") == 1, offset
        assert _delta(before, after, "pointwise_launches") == pointwise, offset
        ref = x.double() @ w.double() + e.double()
        ref = ref if what == "residual" else torch.relu(ref)
        assert not torch.isnan(y).any()
        assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2, offset


# The epilogue kernel's grid strides over the B * M rows (codegen launchDims): (3, 70, 50) one
# block row per row; (4, 300, 4096) 264 block rows over 1,200 rows, strides crossing matrices;
# (200, 7, 4096) a stride of 264 rows over matrices of 7 (several matrices per step). With a bias
# per matrix ([b, n]) a thread must load its columns' values again in every matrix it enters.
@pytest.mark.parametrize("epilogue", ["silu", "bias_per_matrix"])
@pytest.mark.parametrize("batch,m,n", [(3, 70, 50), (4, 300, 4096), (200, 7, 4096)])
def test_bmm_chain(batch, m, n, epilogue, monkeypatch):
    monkeypatch.setenv("FXFUSE_POISON_OUTPUTS", "1")
    tail = {"silu": "%3 = silu %2 : bf16\noutput %3\n",
            "bias_per_matrix": "%3 = input 2 bf16 [b,n]\n%4 = add %2 %3 : bf16\n%5 = relu %4 : bf16\noutput %5\n"}
    spec = HEAD.format(g="bmm", a="b,m,k", b="b,k,n") + tail[epilogue]
    x = torch.randn(batch, m, 60, device="cuda").bfloat16()  # K % 8 != 0: no Hopper kernel
    w = torch.randn(batch, 60, n, device="cuda").bfloat16() / 8
    bias = torch.randn(batch, 1, n, device="cuda").bfloat16()
    inputs = [x, w] if epilogue == "silu" else [x, w, bias.view(batch, n)]
    (y,), before, after = _run(inputs, spec)
    assert _delta(before, after, "pointwise_launches") == 1 and _delta(before, after, "aten_dispatch") == 0
    prod = x.double() @ w.double()
    ref = torch.nn.functional.silu(prod) if epilogue == "silu" else torch.relu(prod + bias.double())
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2


# A 16-bit product (`torch.mm(x, w)` on bf16 / f16 tensors: the mm value rounded to its dtype, as
# cuBLAS writes it for the epilogue kernel, FX_ACC_LOAD over 2-byte elements), at even and odd N
# (an odd row stride) and over batches: the layouts bench/sm90/ab/pointwise_pair_loads.patch reads
# as 4-byte pairs or falls back from. K = 60: no Hopper kernel.
@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("gemm,batch,m,n", [("mm", 1, 300, 4096), ("mm", 1, 257, 519), ("bmm", 3, 70, 50),
                                            ("bmm", 4, 300, 4097)])
def test_sixteen_bit_product(dt, gemm, batch, m, n, monkeypatch):
    monkeypatch.setenv("FXFUSE_POISON_OUTPUTS", "1")
    t = "bf16" if dt == torch.bfloat16 else "f16"
    a, b = ("m,k", "k,n") if gemm == "mm" else ("b,m,k", "b,k,n")
    spec = (f"fxfuse.chain v1\ngemm {gemm}\n%0 = input 0 {t} [{a}]\n%1 = input 1 {t} [{b}]\n%2 = mm %0 %1 : {t}\n"
            f"%3 = input 2 {t} [n]\n%4 = add %2 %3 : {t}\n%5 = gelu_tanh %4 : {t}\noutput %5\n")
    g = testlib.generator("cuda", "pointwise", batch, m, n)
    lead = (m,) if gemm == "mm" else (batch, m)
    wlead = () if gemm == "mm" else (batch,)
    x = torch.randn(*lead, 60, device="cuda", generator=g).to(dt)
    w = (torch.randn(*wlead, 60, n, device="cuda", generator=g) / 8).to(dt)
    bias = torch.randn(n, device="cuda", generator=g).to(dt)
    (y,), before, after = _run([x, w, bias], spec)
    assert _delta(before, after, "pointwise_launches") == 1 and _delta(before, after, "aten_dispatch") == 0
    prod = (x.double() @ w.double()).to(dt).double()
    ref = torch.nn.functional.gelu((prod + bias.double()).to(dt).double(), approximate="tanh")
    assert not torch.isnan(y).any(), "an element was not written (poisoned NaN)"
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2


def test_prologue_chains_and_the_switch_keep_the_aten_path(monkeypatch):
    # int8 weight at M = 256: no fast kernel, and a prologue the epilogue kernel cannot take
    q = ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [k,n]\n%2 = convert %1 : bf16\n"
         "%3 = mm %0 %2 : f32\n%4 = gelu_tanh %3 : bf16\noutput %4\n")
    x = torch.randn(256, 128, device="cuda").bfloat16()
    wq = torch.randint(-8, 8, (128, 96), device="cuda", dtype=torch.int8)
    (y,), before, after = _run([x, wq], q)
    assert _delta(before, after, "launches") == 0 and _delta(before, after, "aten_dispatch") == 1
    ref = torch.nn.functional.gelu(x.double() @ wq.double(), approximate="tanh")
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2
    # FXFUSE_NO_POINTWISE=1 (read when a call site is planned: a new shape here)
    monkeypatch.setenv("FXFUSE_NO_POINTWISE", "1")
    spec = HEAD.format(g="mm", a="m,k", b="k,n") + "%3 = gelu_tanh %2 : bf16\noutput %3\n"
    x = torch.randn(333, 60, device="cuda").bfloat16()  # K % 8 != 0: no Hopper kernel
    w = torch.randn(60, 48, device="cuda").bfloat16()
    (y,), before, after = _run([x, w], spec)
    assert _delta(before, after, "launches") == 0 and _delta(before, after, "aten_dispatch") == 1
    ref = torch.nn.functional.gelu(x.double() @ w.double(), approximate="tanh")
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2


def test_transposed_weight_is_read_by_cublas_without_a_copy(monkeypatch):
    """F.linear's weight [N, K] read as [k, n] (a transposed view): cuBLAS takes the strides,
    the epilogue kernel never reads B, so no per-call copy of the weight is made."""
    monkeypatch.setenv("FXFUSE_POISON_OUTPUTS", "1")
    spec = HEAD.format(g="mm", a="m,k", b="k,n") + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n" \
        "%5 = gelu %4 : bf16\noutput %5\n"
    x = torch.randn(200, 96, device="cuda").bfloat16()
    weight = torch.randn(72, 96, device="cuda").bfloat16() / 10
    b = torch.randn(72, device="cuda").bfloat16()
    torch.cuda.synchronize()
    (y,), before, after = _run([x, weight.t(), b], spec)
    assert _delta(before, after, "launches") == 1
    ref = torch.nn.functional.gelu(x.double() @ weight.double().t() + b.double())
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2


def test_first_call_inside_a_graph_capture_takes_aten_then_the_kernel():
    spec = HEAD.format(g="mm", a="m,k", b="k,n") + "%3 = tanh %2 : bf16\noutput %3\n"
    x = torch.randn(100, 40, device="cuda").bfloat16()
    w = torch.randn(40, 24, device="cuda").bfloat16()
    torch.mm(x, w)  # cuBLAS set up before the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    before = C.stats()
    with torch.cuda.graph(graph):
        (y,) = torch.ops.fxfuse.gemm_chain([x, w], spec)
    assert _delta(before, C.stats(), "aten_dispatch") == 1  # nothing compiles during capture
    graph.replay()
    ref = torch.tanh(x.double() @ w.double())
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2
    (y2,), before, after = _run([x, w], spec)  # outside: planned again, now the kernel
    assert _delta(before, after, "launches") == 1
    assert ((y2.double() - ref).norm() / ref.norm()).item() < 1e-2
