"""GPTQ's own int32 storage folded into the GEMM's prologue (docs/quantized_storage/README.md pieces 1, 2, 3, 5):
eight 4-bit values of k to an int32 word read packed (the spec's 'p' dim, i32), `scales[g_idx]` and `zeros[g_idx]`
read at k's group ('g'), and the int8 `w - z` of nibbles computed in floating point (exact: -15..15). The fold rests
on two buffers' contents, the shift table `wf` and `g_idx` = arange(K) // G, which the exporter states (docs/ir.md)
and the fused op checks at each call (the spec's `expect` lines): a program whose buffers are later loaded with
other values (an act-order checkpoint) raises instead of answering wrong.

Every fused program is checked against eager on fresh random inputs: bit for bit on the CPU (the CPU kernel computes
eager's ops in eager's order), by relative error against a float64 product on CUDA (marked gpu)."""
from __future__ import annotations

import os

import pytest
import torch

import fxfuse
import testlib
from gptq_linear import GPTQLinear
from helpers import rel_err, strict_cuda_path
from test_packed_int4 import _left, _specs, gemm_chain

pytestmark = pytest.mark.needs_real_pass


def float64_product(model: GPTQLinear, x: torch.Tensor) -> torch.Tensor:
    y = x.double() @ model.weight().double()
    return y + model.bias.double() if model.bias is not None else y


CASES = [  # K, N, G, dtype, bias, the activation's leading dims
    (256, 64, 128, torch.float16, False, (4,)),
    (512, 96, 32, torch.bfloat16, True, (2, 3)),
    (1024, 40, 64, torch.float16, True, (1,)),
]


@pytest.mark.parametrize("K,N,G,dtype,bias,lead", CASES)
def test_gptq_storage_folds_and_keeps_eagers_bits(K, N, G, dtype, bias, lead):
    testlib.seed("gptq", K, N, G, bias)
    model = GPTQLinear(K, N, G, dtype=dtype, bias=bias)
    x = torch.randn(*lead, K).to(dtype)
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    (spec,) = _specs(ep2)
    assert f"gemm mm kgroup {G}\n" in spec and " i32 [p,n]\n" in spec and " i32 [g,q]\n" in spec, spec
    assert "i32 [k] kgroups" in spec and "i32 [1,8] values 0 4 8 12 16 20 24 28" in spec, spec
    # the weight's and the zero points' unpacks (eight to a word along k, along n), the dequantization and the
    # product are the op's: nothing of the layer is left to ATen
    assert _left(ep2) == [], _left(ep2)
    for _ in range(2):
        x = torch.randn(*lead, K).to(dtype)
        got, want = ep2.module()(x), model(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got, want), (got - want).abs().max()


def test_symmetric_gptq_folds_with_a_constant_zero_point():
    """GPTQ's sym=True checkpoints (`w - 8`): the words and the scales per group, the zero point a constant (the gemv's
    FX_B_ZERO on CUDA, no zero point tensor)."""
    testlib.seed("gptq_sym")
    model = GPTQLinear(512, 64, 128, symmetric=True, bias=True)
    x = torch.randn(3, 512).half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    (spec,) = _specs(ep2)
    assert " i32 [p,n]\n" in spec and "= const 8 : f32" in spec and "[g,q]" not in spec, spec
    assert _left(ep2) == [], _left(ep2)
    for _ in range(2):
        x = torch.randn(3, 512).half()
        assert torch.equal(ep2.module()(x), model(x))


def test_changed_buffers_are_an_error_not_a_wrong_answer():
    testlib.seed("gptq_changed")
    model = GPTQLinear(256, 32, 64)
    x = torch.randn(3, 256).half()
    module = fxfuse.rewrite(torch.export.export(model, (x,))).module()
    assert torch.equal(module(x), model(x))
    g_idx = module.g_idx.clone()
    # an act-order checkpoint's g_idx loaded in place: the fold's premise no longer holds
    module.g_idx.copy_(g_idx[torch.randperm(256)])
    with pytest.raises(RuntimeError, match="no longer holds"):
        module(x)
    module.g_idx.copy_(g_idx)  # back: checked again, and right
    assert torch.equal(module(x), model(x))
    module.wf[0, 3] = 13  # another shift table
    with pytest.raises(RuntimeError, match="no longer holds"):
        module(x)
    module.wf[0, 3] = 12
    assert torch.equal(module(x), model(x))
    # a whole new tensor bound to the buffer is checked too
    module.g_idx = torch.arange(256, dtype=torch.int32) // 32
    with pytest.raises(RuntimeError, match="no longer holds"):
        module(x)


def test_zero_points_packed_along_n_read_as_the_spec_says():
    """A hand-written spec with GPTQ's zero points as the pass folds them, eight to an i32 word along n (the spec's
    'q'): the CPU reference reads nibble n % 8 of word n / 8 of the row of k's group; a tensor of another size than
    N / 8 is a clear error."""
    testlib.seed("gptq_q")
    spec = ("fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n"
            "%2 = input 2 i32 [g,q]\n%3 = convert %2 : f32\n%4 = sub %1 %3 : f32\n%5 = mm %0 %4 : f32\noutput %5\n")
    K, N = 64, 24
    words = torch.randint(-2**31, 2**31 - 1, (K // 32, N // 8), dtype=torch.int32)
    zeros = torch.stack([(words >> (4 * j)) & 15 for j in range(8)], 2).view(K // 32, N)  # word n / 8, nibble n % 8
    x, w = torch.randn(5, K), torch.randn(K, N)
    (out,) = gemm_chain([x, w, words], spec)
    assert rel_err(out, x.double() @ (w.double() - zeros.double().repeat_interleave(32, 0))) < 1e-6
    with pytest.raises(RuntimeError, match=r"'q', N packed as 8 4-bit values per i32\) must be N / 8"):
        gemm_chain([x, w, torch.zeros(K // 32, N // 4, dtype=torch.int32)], spec)


class _V1Zeros(GPTQLinear):
    """GPTQ v1 checkpoints' zero points, stored one less (`(z & 15) + 1`): the integer add folds where exact, after the
    zero points' unpack or, as AutoGPTQ's v1 kernels write it, between the mask and the reshape (word_unpack reads it
    as part of the unpack, the fold emits it on the nibble)."""
    def __init__(self, *args, after_reshape: bool, addend: int = 1, **kw):
        super().__init__(*args, **kw)
        self.after_reshape, self.addend = after_reshape, addend

    def weight(self):
        zeros = torch.bitwise_right_shift(torch.unsqueeze(self.qzeros, 2).expand(-1, -1, 8), self.wf.unsqueeze(0))
        zeros = torch.bitwise_and(zeros.to(torch.int8), 15)
        zeros = (zeros.reshape(self.scales.shape) + self.addend if self.after_reshape
                 else (zeros + self.addend).reshape(self.scales.shape))
        w = torch.bitwise_right_shift(torch.unsqueeze(self.qweight, 1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        w = torch.bitwise_and(w.to(torch.int8), 15).reshape(self.K, self.N)
        g = self.g_idx.long()
        return self.scales[g] * (w - zeros[g])


@pytest.mark.parametrize("after_reshape", [True, False])
def test_gptq_v1_zero_points_plus_one_fold(after_reshape):
    testlib.seed("gptq_v1", after_reshape)
    model = _V1Zeros(512, 64, 128, bias=True, after_reshape=after_reshape)
    x = torch.randn(3, 512).half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    (spec,) = _specs(ep2)
    assert " i32 [p,n]\n" in spec and " = add " in spec.split(" = mm ")[0], spec
    assert " i32 [g,q]\n" in spec, spec  # the zero points' words read by the chain
    assert _left(ep2) == [], _left(ep2)
    for _ in range(2):
        x = torch.randn(3, 512).half()
        assert torch.equal(ep2.module()(x), model(x))


@pytest.mark.parametrize("addend", [120, -129])
def test_an_add_in_the_unpack_that_may_wrap_stays_outside(addend):
    """15 + 120 wraps in eager's int8 (and -129 promotes the add's result past it): the unpack's add is no exact
    integer op, so the zero points' unpack stays with ATen, named, and the answer is eager's."""
    testlib.seed("gptq_v1_wrap", addend)
    model = _V1Zeros(512, 64, 128, bias=True, after_reshape=False, addend=addend)
    x = torch.randn(3, 512).half()
    ep = torch.export.export(model, (x,))
    ep2 = fxfuse.rewrite(ep)
    (spec,) = _specs(ep2)
    assert " i32 [g,q]\n" not in spec, spec
    assert "aten.add.Tensor" in _left(ep2), _left(ep2)
    for _ in range(2):
        x = torch.randn(3, 512).half()
        assert torch.equal(ep2.module()(x), model(x))


class _NarrowedZeros(GPTQLinear):
    """Zero points `((z & 15) + addend).to(mid).to(int32)`: the add is exact in int32, the conversion to `mid` may
    wrap (250..265 in uint8, 120..135 in int8; a review's case)."""
    def __init__(self, *args, addend: int, mid: torch.dtype, **kw):
        super().__init__(*args, **kw)
        self.addend, self.mid = addend, mid

    def weight(self):
        zeros = torch.bitwise_and(torch.bitwise_right_shift(torch.unsqueeze(self.qzeros, 2).expand(-1, -1, 8),
                                                            self.wf.unsqueeze(0)), 15)
        zeros = (zeros + self.addend).to(self.mid).to(torch.int32).reshape(self.scales.shape)
        w = torch.bitwise_right_shift(torch.unsqueeze(self.qweight, 1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        w = torch.bitwise_and(w.to(torch.int8), 15).reshape(self.K, self.N)
        g = self.g_idx.long()
        return self.scales[g] * (w - zeros[g])


@pytest.mark.parametrize("addend,mid,folds", [(250, torch.uint8, False), (120, torch.int8, False),
                                              (1, torch.uint8, True), (100, torch.uint8, True)])
def test_a_conversion_above_the_unpacks_add_must_keep_its_values(addend, mid, folds):
    """The fold emits the add on the nibble and drops the conversions between it and the reshape: it takes the add
    only where each of them keeps the add's values; else the zero points' unpack stays with ATen. Eager's bits."""
    testlib.seed("gptq_narrowed_zeros", addend, str(mid))
    model = _NarrowedZeros(512, 64, 128, bias=True, addend=addend, mid=mid)
    x = torch.randn(3, 512).half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    assert (_left(ep2) == []) == folds, _left(ep2)
    for _ in range(2):
        x = torch.randn(3, 512).half()
        assert torch.equal(ep2.module()(x), model(x))


class _ByteZerosAlongN(GPTQLinear):
    """Zero points as two 4-bit values of n to a byte, unpacked by `stack([z & 15, (z >> 4) & 15])` (the review's
    form): their range 0..15 reaches the int8 sub through the stack (pass/integer_range.cpp), so the sub folds, and the
    bytes are read as a `q` dim. A u8 sub of such values may wrap (0 - 15): it stays with ATen."""
    def __init__(self, *args, signed: bool, **kw):
        super().__init__(*args, **kw)
        dtype = torch.int8 if signed else torch.uint8
        self.register_buffer("z8", torch.randint(-128 if signed else 0, 128 if signed else 256,
                                                 (self.K // self.G, self.N // 2), dtype=dtype))
        self.signed = signed

    def weight(self):
        z = torch.stack([self.z8 & 15, (self.z8 >> 4) & 15], 2).reshape(self.K // self.G, self.N)
        w = torch.bitwise_right_shift(torch.unsqueeze(self.qweight, 1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        w = torch.bitwise_and(w.to(self.z8.dtype), 15).reshape(self.K, self.N)
        g = self.g_idx.long()
        return self.scales[g] * (w - z[g])


@pytest.mark.parametrize("signed", [True, False], ids=["i8", "u8"])
def test_zero_points_packed_two_to_a_byte_along_n(signed):
    testlib.seed("gptq_byte_zeros", signed)
    model = _ByteZerosAlongN(256, 64, 128, signed=signed)
    x = torch.randn(3, 256).half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    (spec,) = _specs(ep2)
    if signed:
        assert " i8 [g,q]\n" in spec and _left(ep2) == [], (spec, _left(ep2))
    else:  # (u8: 0 - 15 wraps to 241 in eager's sub)
        assert "aten.sub.Tensor" in _left(ep2), _left(ep2)
    for _ in range(2):
        x = torch.randn(3, 256).half()
        assert torch.equal(ep2.module()(x), model(x))


def test_act_order_g_idx_is_gathered_by_aten_and_nothing_is_expected_of_it():
    testlib.seed("gptq_act_order")
    model = GPTQLinear(512, 64, 128, act_order=True)
    x = torch.randn(5, 512).half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    (spec,) = _specs(ep2)
    assert "kgroup" not in spec and " i32 [p,n]\n" in spec, spec
    for _ in range(2):
        x = torch.randn(5, 512).half()
        assert torch.equal(ep2.module()(x), model(x))


def test_gptq_under_the_torch_compile_backend_gathers_g_idx_with_aten():
    """Under the torch.compile backend the module's buffers are graph inputs whose contents the pass is not told (a
    session 67 design that stated them from the backend's example inputs was withdrawn after a hunt: Dynamo serves one
    graph to every instance of a module class and keeps it when weights are loaded after a warm-up, a `.data` write
    escapes the op's version-counted check, and a fallback graph repeated the graph's buffer mutations): the chain
    fuses, ATen gathers the scales and zero points by g_idx, and a g_idx changed after the compile still gives
    eager's answer."""
    testlib.seed("gptq_compile")
    model = GPTQLinear(512, 64, 128, bias=True).eval()
    compiled = torch.compile(model, backend="fxfuse")
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(5, 512).half()
            assert rel_err(compiled(x), model(x)) < 1e-3
        (entry,) = fxfuse.report().fused
        assert any("gather along k" in str(stop) for stop in entry["prologue_stops"]), entry
        model.g_idx.copy_(model.g_idx[torch.randperm(512)])
        for _ in range(2):
            x = torch.randn(5, 512).half()
            assert rel_err(compiled(x), model(x)) < 1e-3


class _TwoLayers(torch.nn.Module):
    def __init__(self, first: GPTQLinear, second: GPTQLinear):
        super().__init__()
        self.first, self.second = first, second

    def forward(self, x):
        return self.second(torch.relu(self.first(x)))


def test_one_compiled_layer_serves_instances_whose_buffers_differ():
    """Regional compilation: Dynamo compiles the repeated layer once and serves every instance, one of them with an
    act-order g_idx: eager's answer for both (a review's case against a design that folded on buffer contents)."""
    testlib.seed("gptq_compile_regional")
    plain, act = GPTQLinear(512, 512, 128).eval(), GPTQLinear(512, 512, 128, act_order=True).eval()
    model = _TwoLayers(plain, act)
    plain.compile(backend="fxfuse")
    act.compile(backend="fxfuse")
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(3, 512).half()
            assert rel_err(model(x), act.forward(torch.relu(plain.forward(x)))) < 1e-3


@pytest.mark.gpu
@pytest.mark.parametrize("layer", ["gptq", "awq"])
@pytest.mark.parametrize("M", [1, 16])
def test_quantized_storage_under_the_torch_compile_backend_on_cuda(layer, M, monkeypatch):
    """GPTQ's and AWQ's layers compiled by the backend on CUDA, against float64 with a bias, on fresh activations. AWQ
    folds whole (its order a constant of the graph: the decode kernel on the words at these rows); GPTQ's g_idx is a
    graph input whose contents the pass is not told, so ATen gathers its scales and zero points."""
    from awq_linear import AWQLinear
    strict_cuda_path(monkeypatch, "op")
    testlib.seed("storage_compile_cuda", layer, M)
    model = (GPTQLinear if layer == "gptq" else AWQLinear)(4096, 1024, 128, bias=True, device="cuda").eval()
    compiled = torch.compile(model, backend="fxfuse")
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(M, 4096, device="cuda").half()
            launches = fxfuse.stats()["launches"]
            got = compiled(x)
            torch.cuda.synchronize()
            assert layer == "gptq" or fxfuse.stats()["launches"] > launches, fxfuse.stats()
            want = x.double() @ model.weight().double() + model.bias.double()
            assert not got.isnan().any() and rel_err(got, want) < 1e-2, rel_err(got, want)
    if layer == "awq":
        (entry,) = fxfuse.report().fused
        assert entry["prologue_stops"] == [], entry


class _GroupsAsAnArgument(GPTQLinear):
    """g_idx passed at each call, not a buffer: its contents are the caller's."""
    def forward(self, x, g_idx):
        self.g_idx = g_idx
        return super().forward(x)


def test_an_integer_argument_is_not_stated_under_the_torch_compile_backend():
    testlib.seed("gptq_compile_argument")
    model = _GroupsAsAnArgument(512, 64, 128).eval()
    g_idx = model.g_idx.clone()
    del model.g_idx
    compiled = torch.compile(model, backend="fxfuse")
    with torch.no_grad():
        for groups in (g_idx, g_idx.flip(0)):  # another table at the next call: still eager's answer
            x = torch.randn(5, 512).half()
            assert rel_err(compiled(x, groups), model(x, groups)) < 1e-3
    (entry,) = fxfuse.report().fused  # the gather by the caller's table stays with ATen: the second call's answer
    assert any("gather along k" in stop for stop in map(str, entry["prologue_stops"])), entry


class _BoolSub(GPTQLinear):
    """The weight's nibbles minus a bool mask: eager refuses the sub; a rewrite must not answer it (review)."""
    def forward(self, x, mask):
        w = torch.bitwise_right_shift(torch.unsqueeze(self.qweight, 1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        w = torch.bitwise_and(w.to(torch.int8), 15).reshape(self.K, self.N)
        return x @ (self.scales[self.g_idx.long()] * (w - mask)).to(x.dtype)


def test_a_sub_eager_refuses_stays_refused():
    model = _BoolSub(256, 32, 64)
    x, mask = torch.randn(3, 256).half(), torch.rand(256, 32) < 0.5
    module = fxfuse.rewrite(torch.export.export(model, (x, mask))).module()
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        module(x, mask)


class _InPlaceMask(GPTQLinear):
    """AutoGPTQ's older kernels mask in place (`torch.bitwise_and(w, 15, out=w)`), which a non-decomposed export keeps."""
    def weight(self):
        zeros = torch.bitwise_right_shift(torch.unsqueeze(self.qzeros, 2).expand(-1, -1, 8), self.wf.unsqueeze(0))
        zeros = torch.bitwise_and(zeros.to(torch.int8), 15).reshape(self.scales.shape)
        w = torch.bitwise_right_shift(torch.unsqueeze(self.qweight, 1).expand(-1, 8, -1), self.wf.unsqueeze(-1))
        w = w.to(torch.int8)
        torch.bitwise_and(w, 15, out=w)
        g = self.g_idx.long()
        return self.scales[g] * (w.reshape(-1, self.N) - zeros[g])


def test_an_in_place_mask_is_named_and_decomposing_folds_it():
    testlib.seed("gptq_in_place")
    model = _InPlaceMask(256, 64, 64)
    x = torch.randn(3, 256).half()
    ep = torch.export.export(model, (x,))
    (entry,) = fxfuse.report(ep).entries
    assert "integer arithmetic on a value computed in place" in str(entry.get("notes")), entry
    assert torch.equal(fxfuse.rewrite(ep).module()(x), model(x))
    (entry,) = fxfuse.report(ep.run_decompositions()).entries
    assert "8 per i32" in entry["chain"], entry


class _TwoBranches(torch.nn.Module):
    """A GPTQ layer in each branch of a torch.cond: the buffers reach the branches as the cond's operands."""
    def __init__(self):
        super().__init__()
        self.a, self.b = GPTQLinear(256, 64, 64), GPTQLinear(256, 64, 128)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.a(x), lambda x: self.b(x), (x,))


def test_gptq_storage_folds_inside_torch_cond_branches():
    testlib.seed("gptq_cond")
    model = _TwoBranches()
    x = torch.randn(3, 256).half()
    ep = torch.export.export(model, (x,))
    entries = fxfuse.report(ep).entries
    assert len(entries) == 2 and all("8 per i32" in e["chain"] and "checked at each call" in e["chain"]
                                      for e in entries), entries
    module = fxfuse.rewrite(ep).module()
    for sign in (1, -1):
        x = sign * torch.randn(3, 256).abs().half()
        assert torch.equal(module(x), model(x))
    module.a.g_idx.copy_(module.a.g_idx.flip(0))
    with pytest.raises(RuntimeError, match="no longer holds"):
        module(torch.randn(3, 256).abs().half())


def test_the_report_names_the_fold():
    model = GPTQLinear(256, 64, 128)
    ep = torch.export.export(model, (torch.randn(2, 256).half(),))
    (entry,) = fxfuse.report(ep).entries
    assert entry["status"] == "fused", entry
    assert "8 per i32" in entry["chain"] and "per 128 k" in entry["chain"], entry
    # the buffers the op checks at each call, named up front
    assert "relies on the contents of %b_g_idx, %b_wf, checked at each call" in entry["chain"], entry


def test_a_saved_program_keeps_the_check(tmp_path):
    testlib.seed("gptq_saved")
    model = GPTQLinear(256, 48, 64, dtype=torch.bfloat16)
    x = torch.randn(2, 256).to(torch.bfloat16)
    path = tmp_path / "gptq.pt2"
    torch.export.save(fxfuse.rewrite(torch.export.export(model, (x,))), path)
    module = torch.export.load(path).module()
    x = torch.randn(2, 256).to(torch.bfloat16)
    assert torch.equal(module(x), model(x))
    module.g_idx.copy_(module.g_idx.flip(0))
    with pytest.raises(RuntimeError, match="no longer holds"):
        module(x)


# ---- CUDA: the generic kernel reads the i32 words (the gemv's packed path reads bytes only: piece 6 of
# docs/quantized_storage/README.md); forced with only_profitable=False ----

@pytest.mark.gpu
@pytest.mark.parametrize("path", ["kernel", "dispatch"])
@pytest.mark.parametrize("M", [1, 16, 100])
def test_gptq_storage_on_cuda_matches_a_float64_product(M, path, monkeypatch):
    strict_cuda_path(monkeypatch, path)
    testlib.seed("gptq_cuda", M, path)
    model = GPTQLinear(1024, 384, 128, device="cuda", bias=True)
    x = torch.randn(M, 1024, device="cuda").half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)), only_profitable=False)
    (spec,) = _specs(ep2)
    assert " i32 [p,n]\n" in spec and "kgroups" in spec, spec
    module = ep2.module()
    for _ in range(2):
        x = torch.randn(M, 1024, device="cuda").half()
        got = module(x)
        torch.cuda.synchronize()
        assert not got.isnan().any()
        assert rel_err(got, float64_product(model, x)) < 1e-2
        assert rel_err(got, model(x)) < 1e-2
    module.g_idx.copy_(module.g_idx.flip(0))
    with pytest.raises(RuntimeError, match="no longer holds"):
        module(x)


# ---- the gemv on GPTQ's words (docs/quantized_storage/README.md piece 6; kernels/gemv.cuh FX_B_WORDS): under the zero
# point tensor rule (FXFUSE_GEMV_ZERO_TENSOR=0 turns it off; read once per process: each check runs in a child) ----

def run_child(code: str, *args, **env):
    """`code` in a fresh interpreter with `env` set (tests/ on its path, for testlib); fails unless it prints ok."""
    from helpers import HERE, run_python
    out = run_python(code, *map(str, args), timeout=300, env=dict(env, PYTHONPATH=os.path.dirname(HERE)))
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout + out.stderr
    return out.stdout

# (both layers' words: GPTQ's along k, FX_B_WORDS; AWQ's along n, FX_B_NWORDS, test_awq_storage.py)
VARIANT_CHILD = r"""
import sys, torch, fxfuse
from awq_linear import AWQLinear
from gptq_linear import GPTQLinear
from test_packed_int4 import _specs
layer = sys.argv[1]
model = (GPTQLinear if layer == "gptq" else AWQLinear)(2048, 1536, 128, bias=True)
ep2 = fxfuse.rewrite(torch.export.export(model, (torch.randn(4, 2048).half(),)), only_profitable=False)
(spec,) = _specs(ep2)
words = "FX_B_WORDS 1" if layer == "gptq" else "FX_B_NWORDS 1"
for M in (1, 16, 24, 64, 65):
    print(M, fxfuse._C.kernel_variant(spec, M, 1536, 2048)[0], words in fxfuse._C.generate_cuda(spec, M, 1536, 2048)[1])
print("ok")
"""


@pytest.mark.parametrize("knob", ["", "0"], ids=["rule", "knob_off"])
def test_gptq_words_take_the_gemv_unless_the_zero_point_knob_is_off(knob):
    out = run_child(VARIANT_CHILD, "gptq", FXFUSE_GEMV_ZERO_TENSOR=knob)
    rows = dict((int(m), (v, w == "True")) for m, v, w in (line.split() for line in out.strip().splitlines()[:-1]))
    for M in (1, 16, 24, 64):  # decode rows: the gemv on the words, the generic tile with the knob off
        assert rows[M] == (("gemv", True) if knob != "0" else ("sm80_mma", False)), rows
    assert rows[65][0] != "gemv", rows  # (prefill rows: not the gemv's)


# The gemv's dequantized GPTQ (or AWQ: argv[5], test_awq_storage.py) weight, bit for bit: one-hot activation rows (row
# m reads k_m alone) and no bias, so each output element is one weight element times 1.0 plus zeros, exact in fp32 and
# in the 16-bit output. The default rewrite takes the gemv (the knob on); both conversion routes
# (FXFUSE_GEMV_NIBBLE_PAIRS=0: the fp32 one).
EXACT_CHILD = r"""
import sys, torch, fxfuse, testlib
from awq_linear import AWQLinear
from gptq_linear import GPTQLinear
from test_packed_int4 import _specs
M, N, K, dtype, layer = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), getattr(torch, sys.argv[4]), sys.argv[5]
testlib.seed(layer + "_words_exact", M, N, K, sys.argv[4])
model = (GPTQLinear if layer == "gptq" else AWQLinear)(K, N, 128, dtype=dtype, device="cuda")
x = torch.randn(M, K, device="cuda").to(dtype)
ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
(spec,) = _specs(ep2)
assert fxfuse._C.kernel_variant(spec, M, N, K)[0] == "gemv", fxfuse._C.kernel_variant(spec, M, N, K)
w = model.weight().to(dtype)
module = ep2.module()
launches = fxfuse.stats()["launches"]
for _ in range(3):
    ks = torch.randperm(K, device="cuda")[:M]
    x = torch.zeros(M, K, device="cuda", dtype=dtype)
    x[torch.arange(M, device="cuda"), ks] = 1
    got = module(x)
    torch.cuda.synchronize()
    want = w[ks]
    bad = got != want
    assert not bad.any(), (int(bad.sum()), bad.nonzero()[:4].tolist(), got[bad][:4].tolist(), want[bad][:4].tolist())
assert fxfuse.stats()["launches"] >= launches + 3 and fxfuse.stats()["aten_dispatch"] == 0, fxfuse.stats()
print("ok")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("pairs", ["", "0"], ids=["pairs", "fp32_route"])
@pytest.mark.parametrize("M,N,K,dtype,knob", [
    (1, 4096, 4096, "float16", ""), (16, 1536, 2048, "bfloat16", ""), (24, 1536, 2048, "float16", ""),
    (64, 528, 2048, "float16", ""), (5, 4096, 14336, "bfloat16", ""),
    # the product by wgmma, forced (the rule gives the words with zero points mma.sync at 64 rows since session 66)
    (64, 528, 2048, "float16", "FXFUSE_GEMV_WGMMA=1"), (40, 1536, 2048, "float16", "FXFUSE_GEMV_WGMMA=1+FXFUSE_GEMV_NT=64"),
    (40, 1536, 2048, "bfloat16", "FXFUSE_GEMV_WGMMA=1+FXFUSE_GEMV_KT=64"), (16, 1536, 2048, "float16", "FXFUSE_GEMV_WGMMA=1")])
def test_gptq_words_gemv_dequantizes_eagers_bits(M, N, K, dtype, knob, pairs):
    env = {"FXFUSE_GEMV_ZERO_TENSOR": "1", "FXFUSE_GEMV_NIBBLE_PAIRS": pairs, "FXFUSE_STRICT": "1",
           "FXFUSE_POISON_OUTPUTS": "1"}
    if knob:
        env.update(kv.split("=") for kv in knob.split("+"))
    run_child(EXACT_CHILD, M, N, K, dtype, "gptq", **env)


# With a bias and random activations, against a float64 product and eager, the words' layout read by the fast loader
# (K a multiple of 128) at each row tile, and the rewrite's check of the buffers it relies on still raising.
GEMV_CHILD = r"""
import sys, torch, fxfuse, testlib
from helpers import rel_err
from gptq_linear import GPTQLinear
from test_gptq_storage import float64_product
from test_packed_int4 import _specs
M, N, K = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
testlib.seed("gptq_words_gemv", M, N, K)
model = GPTQLinear(K, N, 128, device="cuda", bias=True)
x = torch.randn(M, K, device="cuda").half()
ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
(spec,) = _specs(ep2)
assert fxfuse._C.kernel_variant(spec, M, N, K)[0] == "gemv"
module = ep2.module()
for _ in range(2):
    x = torch.randn(M, K, device="cuda").half()
    got = module(x)
    torch.cuda.synchronize()
    assert not got.isnan().any()
    assert rel_err(got, float64_product(model, x)) < 1e-2, rel_err(got, float64_product(model, x))
    assert rel_err(got, model(x)) < 1e-2, rel_err(got, model(x))
assert fxfuse.stats()["aten_dispatch"] == 0, fxfuse.stats()
module.g_idx.copy_(module.g_idx.flip(0))
try:
    module(x)
except RuntimeError as e:
    assert "no longer holds" in str(e), e
else:
    raise AssertionError("a changed g_idx was not refused")
print("ok")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (16, 14336, 4096), (64, 4096, 14336), (8, 1024, 1152)])
def test_gptq_words_gemv_matches_a_float64_product(M, N, K):
    run_child(GEMV_CHILD, M, N, K, FXFUSE_GEMV_ZERO_TENSOR="1", FXFUSE_STRICT="1", FXFUSE_POISON_OUTPUTS="1")
