"""Expect lines (docs/spec.md): a chain folded from GPTQ's int4 dequantization relies on the values of two buffers
its kernels never read, the shift table `wf` ([0, 4, ..., 28]) and the group index `g_idx` (arange(K) // G). The op
takes them as inputs after the values' and checks them before computing (runtime/known_values_check.h): the same
answer as the chain without them while they hold, an error naming the input once they do not (other values loaded,
an in-place write), never a wrong answer. Their dtypes and sizes are checked without reading them, on fake and meta
tensors too. Every CPU test runs on CUDA as well (marked gpu), with a CUDA graph capture test of its own."""
from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import fxfuse
from fxfuse.spec_expects import expected_tensor, fill_expects, parse_expects

pytestmark = pytest.mark.needs_real_pass  # the real op (the test stand-in's does not read expect lines)
gemm_chain = torch.ops.fxfuse.gemm_chain.default
K, N, M, G = 64, 24, 5, 16

BODY = """fxfuse.chain v1
gemm mm kgroup {G}
%0 = input 0 {dt} [m,k]
%1 = input 1 i32 [p,n]
%2 = convert %1 : {dt}
%3 = const 8 : f32
%4 = sub %2 %3 : {dt}
%5 = input 2 {dt} [g,n]
%6 = mul %4 %5 : {dt}
%7 = mm %0 %6 : {dt}
"""
EXPECTS = "expect 3 i32 [1,8] values 0 4 8 12 16 20 24 28\nexpect 4 i32 [k] kgroups\n"

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def specs(device, group=G):
    """(the GPTQ-like spec with its expect lines, the same chain without them)."""
    body = BODY.format(G=group, dt="f32" if device == "cpu" else "bf16")
    return body + EXPECTS + "output %7\n", body + "output %7\n"


def chain_inputs(device):
    """Fresh random [x, qweight, scales] (never zeros) and the facts [wf, g_idx] as GPTQ's buffers hold them."""
    dt = torch.float32 if device == "cpu" else torch.bfloat16
    x = torch.randn(M, K, device=device).to(dt)
    words = torch.randint(-2**31, 2**31 - 1, (K // 8, N), dtype=torch.int32, device=device)
    s = ((torch.rand(K // G, N, device=device) * 0.02 + 0.001) * torch.where(
        torch.rand(K // G, N, device=device) < 0.5, -1, 1)).to(dt)
    wf = torch.arange(0, 32, 4, dtype=torch.int32, device=device).unsqueeze(0)
    g_idx = torch.tensor([i // G for i in range(K)], dtype=torch.int32, device=device)
    return [x, words, s], wf, g_idx


def reads():
    return fxfuse._C.stats()["expect_reads"]


@pytest.mark.parametrize("device", DEVICES)
def test_facts_that_hold_give_the_chains_answer(device):
    spec, plain = specs(device)
    values, wf, g_idx = chain_inputs(device)
    (want,) = gemm_chain(values, plain)
    before = reads()
    (out,) = gemm_chain(values + [wf, g_idx], spec)
    assert torch.equal(out, want)
    assert reads() == before + 2
    # checked once: the next calls read neither (a lookup each)
    for _ in range(3):
        (out,) = gemm_chain(values + [wf, g_idx], spec)
        assert torch.equal(out, want)
    assert reads() == before + 2
    # new inputs of the chain's values, the same facts: still no read
    values2, _, _ = chain_inputs(device)
    (want2,) = gemm_chain(values2, plain)
    (out2,) = gemm_chain(values2 + [wf, g_idx], spec)
    assert torch.equal(out2, want2) and reads() == before + 2


@pytest.mark.parametrize("device", DEVICES)
def test_other_values_are_an_error_naming_the_input(device):
    spec, _ = specs(device)
    values, wf, g_idx = chain_inputs(device)
    bad = g_idx.clone()
    bad[5] = 3
    with pytest.raises(RuntimeError, match=r"input 4 no longer holds what the chain was fused for \(the group of "
                                           r"each k, arange\(K\) // 16; element 5 is 3, not 0\): re-run"):
        gemm_chain(values + [wf, bad], spec)
    # a desc_act checkpoint's g_idx: a permutation of the groups
    perm = g_idx[torch.randperm(K, device=device)]
    if not torch.equal(perm, g_idx):
        with pytest.raises(RuntimeError, match="input 4 no longer holds"):
            gemm_chain(values + [wf, perm], spec)
    bad_wf = wf.clone()
    bad_wf[0, 3] = 7
    with pytest.raises(RuntimeError, match=r"input 3 no longer holds what the chain was fused for \(the values "
                                           r"\[0, 4, 8, 12, 16, 20, 24, 28\] of a \[1, 8\] tensor; element \[0, 3\] "
                                           r"is 7, not 12\)"):
        gemm_chain(values + [bad_wf, g_idx], spec)
    # the same tensor checked against another fact: a chain folded for groups of 32
    spec32, _ = specs(device, group=32)
    s32 = torch.randn(K // 32, N, device=device).to(values[2].dtype)
    gemm_chain(values + [wf, g_idx], spec)
    with pytest.raises(RuntimeError, match=r"input 4 no longer holds .*arange\(K\) // 32; element 16 is 1, not 0"):
        gemm_chain([values[0], values[1], s32, wf, g_idx], spec32)


@pytest.mark.parametrize("device", DEVICES)
def test_an_in_place_write_is_seen_at_the_next_call(device):
    """The version counter: a tensor checked once is read again after any in-place write (load_state_dict's copy_
    too), and passes again once it holds the fact again."""
    spec, plain = specs(device)
    values, wf, g_idx = chain_inputs(device)
    (want,) = gemm_chain(values, plain)
    (out,) = gemm_chain(values + [wf, g_idx], spec)
    assert torch.equal(out, want)
    g_idx[3] = 7
    with pytest.raises(RuntimeError, match="input 4 no longer holds .*element 3 is 7, not 0"):
        gemm_chain(values + [wf, g_idx], spec)
    with pytest.raises(RuntimeError, match="input 4 no longer holds"):  # still wrong: read again, raised again
        gemm_chain(values + [wf, g_idx], spec)
    g_idx[3] = 0
    before = reads()
    (out,) = gemm_chain(values + [wf, g_idx], spec)
    assert torch.equal(out, want) and reads() == before + 1
    # a module's buffer loaded from a checkpoint whose g_idx is a permutation (desc_act)
    module = torch.nn.Module()
    module.register_buffer("g_idx", g_idx)
    desc_act = g_idx.flip(0).contiguous()
    module.load_state_dict({"g_idx": desc_act})
    with pytest.raises(RuntimeError, match="input 4 no longer holds"):
        gemm_chain(values + [wf, module.g_idx], spec)
    module.load_state_dict({"g_idx": torch.arange(K, device=device).div(G, rounding_mode="floor").int()})
    (out,) = gemm_chain(values + [wf, module.g_idx], spec)
    assert torch.equal(out, want)
    # written through a view (views share their base's version counter)
    wf.view(8)[0] = 1
    with pytest.raises(RuntimeError, match=r"input 3 no longer holds .*element \[0, 0\] is 1, not 0"):
        gemm_chain(values + [wf, g_idx], spec)


@pytest.mark.parametrize("device", DEVICES)
def test_strided_and_replaced_data_are_checked(device):
    """A strided view holding the fact passes; `t.data = other` (a new data pointer, the version kept) is read."""
    spec, plain = specs(device)
    values, wf, g_idx = chain_inputs(device)
    (want,) = gemm_chain(values, plain)
    wide = torch.zeros(K, 2, dtype=torch.int32, device=device)
    wide[:, 1] = g_idx
    (out,) = gemm_chain(values + [wf, wide[:, 1]], spec)
    assert torch.equal(out, want)
    g = g_idx.clone()
    gemm_chain(values + [wf, g], spec)
    g.data = g_idx.flip(0).contiguous()
    with pytest.raises(RuntimeError, match="input 4 no longer holds"):
        gemm_chain(values + [wf, g], spec)


@pytest.mark.parametrize("device", DEVICES)
def test_a_wrong_dtype_or_shape_is_an_error_without_reading(device):
    """checkInputs: dtype, rank and sizes of the expect inputs (kgroups: 1-D of length K), and their count; on real,
    fake and meta tensors alike (nothing read)."""
    spec, _ = specs(device)
    values, wf, g_idx = chain_inputs(device)
    cases = [
        ([wf, g_idx.long()], r"input 4 has dtype Long but the spec expects i32 \(a tensor the chain was fused for: "
                             r"expect 4 i32 \[k\] kgroups\)"),
        ([wf, g_idx[:-1]], r"input 4 has shape \[63\] but the spec expects a 1-D tensor of length K=64"),
        ([wf, g_idx.view(4, 16)], r"input 4 has shape \[4, 16\] but the spec expects a 1-D tensor of length K"),
        ([wf.view(8), g_idx], r"input 3 has shape \[8\] but the spec expects \[1, 8\]"),
        ([wf.view(2, 4), g_idx], r"input 3 has shape \[2, 4\] but the spec expects \[1, 8\]"),
        ([wf.to(torch.uint8), g_idx], r"input 3 has dtype Byte but the spec expects i32"),
        ([wf], r"the spec takes 5 inputs, got 4"),
    ]
    before = reads()
    for extra, message in cases:
        with pytest.raises(RuntimeError, match=message):
            gemm_chain(values + extra, spec)
        metas = [t.to("meta") for t in values + extra]
        with pytest.raises(RuntimeError, match=message):
            gemm_chain(metas, spec)
        with FakeTensorMode() as mode:
            fakes = [mode.from_tensor(t) for t in values + extra]
            with pytest.raises(RuntimeError, match=message):
                gemm_chain(fakes, spec)
    assert reads() == before
    # right ones: the output's shape, nothing read (a fake g_idx of other values passes: its values are not known)
    flipped = g_idx.flip(0)
    with FakeTensorMode() as mode:
        (out,) = gemm_chain([mode.from_tensor(t) for t in values + [wf, flipped]], spec)
    assert tuple(out.shape) == (M, N) and out.dtype == values[0].dtype
    (out,) = gemm_chain([t.to("meta") for t in values + [wf, g_idx]], spec)
    assert tuple(out.shape) == (M, N)
    assert reads() == before


def test_an_inference_tensor_is_read_at_every_call():
    """PyTorch does not count in-place writes to an inference tensor: it is read (and checked) at every call."""
    spec, plain = specs("cpu")
    values, wf, _ = chain_inputs("cpu")
    with torch.inference_mode():
        g_idx = torch.arange(K, dtype=torch.int32) // G
    (want,) = gemm_chain(values, plain)
    before = reads()
    for _ in range(2):
        (out,) = gemm_chain(values + [wf, g_idx], spec)
        assert torch.equal(out, want)
    assert reads() == before + 3  # wf once, g_idx twice
    with torch.inference_mode():
        g_idx[3] = 7  # not counted by its version counter: seen all the same
    with pytest.raises(RuntimeError, match="input 4 no longer holds .*element 3 is 7, not 0"):
        gemm_chain(values + [wf, g_idx], spec)


def test_fill_expects_makes_inputs_that_hold_the_facts():
    """The autotune's random inputs (fxfuse.autotune.tune): the expect inputs made to hold their facts, in place."""
    spec, plain = specs("cpu")
    (wf_line, g_line) = parse_expects(spec)
    assert wf_line.slot == 3 and wf_line.sizes == (1, 8) and wf_line.values == tuple(range(0, 32, 4))
    assert g_line.slot == 4 and g_line.kind == "kgroups" and g_line.kgroup == G
    assert torch.equal(expected_tensor(g_line, K), torch.arange(K, dtype=torch.int32) // G)
    values, wf, g_idx = chain_inputs("cpu")
    junk = [torch.randint(-100, 100, (1, 8), dtype=torch.int32), torch.randint(-100, 100, (K,), dtype=torch.int32)]
    inputs = fill_expects(values + junk, spec)
    assert torch.equal(inputs[3], wf) and torch.equal(inputs[4], g_idx)
    (out,) = gemm_chain(inputs, spec)
    assert torch.equal(out, gemm_chain(values, plain)[0])
    assert parse_expects(plain) == []


@pytest.mark.gpu
def test_cuda_graph_capture_needs_the_facts_checked_first():
    """A tensor not yet checked cannot be read while a CUDA graph is captured: a clear error; one checked before
    capture is not read again, and the captured graph replays the chain."""
    spec, plain = specs("cuda")
    values, wf, g_idx = chain_inputs("cuda")
    (want,) = gemm_chain(values, plain)
    torch.cuda.synchronize()
    fresh = g_idx.clone()
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="run the model once before capturing it"):
        with torch.cuda.graph(graph):
            gemm_chain(values + [wf, fresh], spec)
    torch.cuda.synchronize()
    # checked once, outside the capture (also the call site's kernel is compiled then)
    (out,) = gemm_chain(values + [wf, fresh], spec)
    assert torch.equal(out, want)
    torch.cuda.synchronize()
    before = reads()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        (captured,) = gemm_chain(values + [wf, fresh], spec)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, want) and reads() == before
