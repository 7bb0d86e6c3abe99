"""AWQ's own int32 storage (docs/quantized_storage/README.md): qweight and qzeros hold eight 4-bit values of n to a word
in AWQ's order, unpacked by a shift along n and a gather by `arange(N).view(-1, 8)[:, c].view(-1)`, c a lifted
constant. The pass folds the whole layer into one op (pass/word_unpack.h orderedWordUnpack): the words are inputs with
a 'q' dim and the spec's `order` (c's values), and the op checks c at each call. CPU: eager's bits. CUDA: the decode
kernel reads the words up to 64 rows (kernels/gemv.cuh FX_B_NWORDS, the rule since session 67; FXFUSE_GEMV_NWORDS=0
leaves them to the generic kernel, which reads them element by element, and the default rewrite then leaves the layer
unfused)."""
from __future__ import annotations

import pytest
import torch

import fxfuse
import testlib
from awq_linear import AWQ_ORDER, AWQLinear
from helpers import rel_err, strict_cuda_path
from test_gptq_storage import EXACT_CHILD, VARIANT_CHILD, run_child
from test_packed_int4 import _left, _specs, gemm_chain


@pytest.mark.parametrize("K,N,G,dtype,bias", [(256, 64, 128, torch.float16, False), (384, 96, 64, torch.float16, True),
                                              (256, 32, 32, torch.bfloat16, True)])
def test_awq_layer_is_one_op_with_eagers_bits(K, N, G, dtype, bias):
    testlib.seed("awq", K, N, G, dtype, bias)
    model = AWQLinear(K, N, G, dtype=dtype, bias=bias)
    x = torch.randn(4, K).to(dtype)
    ep = torch.export.export(model, (x,))
    (entry,) = fxfuse.report(ep).entries
    assert entry["status"] == "fused", entry
    assert "(4-bit values along n, 8 per i32 in the order 0 4 1 5 2 6 3 7)" in entry["chain"], entry
    ep2 = fxfuse.rewrite(ep)
    (spec,) = _specs(ep2)
    assert "i32 [k,q] order 0 4 1 5 2 6 3 7\n" in spec and "i32 [g,q] order 0 4 1 5 2 6 3 7\n" in spec, spec
    assert "values 0 4 1 5 2 6 3 7\n" in spec, spec  # the op checks the gather's constant
    # the unpack, the gather, the group broadcast and the dequantization all went into the chain
    assert _left(ep2) == [], _left(ep2)
    module = ep2.module()
    for _ in range(2):
        x = torch.randn(4, K).to(dtype)
        assert torch.equal(module(x), model(x))
    # the words are read at each call: other words loaded into the buffers, eager's bits again
    for name in ("qweight", "qzeros"):
        fresh = torch.randint(-2**31, 2**31 - 1, getattr(model, name).shape, dtype=torch.int32)
        getattr(model, name).copy_(fresh)
        getattr(module, name).copy_(fresh)
    x = torch.randn(4, K).to(dtype)
    assert torch.equal(module(x), model(x))


def test_a_changed_order_constant_is_an_error_not_a_wrong_answer():
    testlib.seed("awq_changed")
    model = AWQLinear(256, 64, 128)
    x = torch.randn(3, 256).half()
    module = fxfuse.rewrite(torch.export.export(model, (x,))).module()
    assert torch.equal(module(x), model(x))
    order = module.lifted_tensor_0
    order[1], order[2] = order[2].item(), order[1].item()  # another permutation: the fold's premise no longer holds
    with pytest.raises(RuntimeError, match="no longer holds"):
        module(x)
    order[1], order[2] = order[2].item(), order[1].item()
    assert torch.equal(module(x), model(x))


@pytest.mark.parametrize("order", [[1, 0, 3, 2, 5, 4, 7, 6], [7, 6, 5, 4, 3, 2, 1, 0], list(range(8))])
def test_other_orders_fold_as_stated(order):
    testlib.seed("awq_order", order)
    model = AWQLinear(128, 48, 64, order=order)
    x = torch.randn(2, 128).half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    (spec,) = _specs(ep2)
    # (the plain order is no order: one spec text with GPTQ's form; its constant is still expected)
    assert (f"order {' '.join(map(str, order))}\n" in spec) == (order != list(range(8))), spec
    assert f"values {' '.join(map(str, order))}\n" in spec and _left(ep2) == [], spec
    x = torch.randn(2, 128).half()
    assert torch.equal(ep2.module()(x), model(x))


def test_decomposed_programs_fold_too():
    """run_decompositions writes every `arange(N, dtype=...)` as `arange.start_step(0, N)` without its step (a hunt's
    case): the order index is still read."""
    testlib.seed("awq_decomposed")
    model = AWQLinear(256, 64, 128, bias=True)
    x = torch.randn(3, 256).half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)).run_decompositions())
    assert "order 0 4 1 5 2 6 3 7" in _specs(ep2)[0]
    assert _left(ep2) == [], _left(ep2)
    x = torch.randn(3, 256).half()
    assert torch.equal(ep2.module()(x), model(x))


class _NoScale(torch.nn.Module):
    """AWQ's words with a constant zero point and no scale: nothing along n but the words (a hunt's case, which the
    planner had refused as `no B or output input has an n dim`)."""

    def __init__(self, K, N):
        super().__init__()
        self.register_buffer("qweight", torch.randint(-2**31, 2**31 - 1, (K, N // 8), dtype=torch.int32))

    def forward(self, x):
        iw = torch.bitwise_right_shift(self.qweight[:, :, None], torch.arange(0, 32, 4)[None, None, :]).to(torch.int8)
        iw = iw.view(iw.shape[0], -1)
        order = torch.arange(iw.shape[-1], dtype=torch.int32).view(-1, 8)[:, AWQ_ORDER].view(-1)
        return x @ (torch.bitwise_and(iw[:, order], 15).to(x.dtype) - 8)


def test_words_alone_give_n():
    testlib.seed("awq_no_scale")
    model = _NoScale(64, 24)
    x = torch.randn(2, 64).half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    (spec,) = _specs(ep2)
    assert "[k,q] order 0 4 1 5 2 6 3 7" in spec and "[g,n]" not in spec and " [n]" not in spec, spec
    x = torch.randn(2, 64).half()
    assert torch.equal(ep2.module()(x), model(x))


def test_a_gather_that_is_no_order_within_words_stays_outside():
    """c not a permutation of 0..7 (a value twice): no order a word's values have, so ATen unpacks and gathers (named:
    the prologue's stop at the mask), with eager's answer."""
    testlib.seed("awq_not_order")
    model = AWQLinear(128, 48, 64, order=[0, 4, 1, 5, 2, 6, 3, 3])
    x = torch.randn(2, 128).half()
    ep = torch.export.export(model, (x,))
    (entry,) = fxfuse.report(ep).entries
    assert "values unpacked from packed bits in a form the chain does not read" in str(entry["notes"]), entry
    ep2 = fxfuse.rewrite(ep)
    assert "order" not in _specs(ep2)[0]
    x = torch.randn(2, 128).half()
    assert torch.equal(ep2.module()(x), model(x))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8])
def test_two_values_a_byte_in_an_order(dtype):
    """A byte holding n's values high nibble first (`order 1 0`): the CPU reference reads column n at bits
    4 (1 - n % 2) of byte n / 2 (a review's case: per = 2)."""
    testlib.seed("awq_bytes", dtype)
    raw = "u8" if dtype == torch.uint8 else "i8"
    spec = (f"fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 {raw} [k,q] order 1 0\n"
            "%2 = convert %1 : f32\n%3 = mm %0 %2 : f32\noutput %3\n")
    K, N = 16, 6
    packed = torch.randint(0, 256, (K, N // 2), dtype=torch.uint8).to(dtype)
    values = torch.stack([(packed >> 4) & 15, packed & 15], 2).view(K, N)  # high nibble first
    x = torch.randn(3, K)
    (out,) = gemm_chain([x, packed], spec)
    assert rel_err(out, x.double() @ values.double()) < 1e-6


def test_the_spec_order_reads_as_stated():
    """A hand-written spec: the CPU reference reads column n as the 4-bit value order[n % 8] of word n / 8; an order
    that is no permutation of the element's values, or on an input without a 'q' dim, is a clear error."""
    testlib.seed("awq_spec")
    head = "fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n"
    spec = head + "%1 = input 1 i32 [k,q] order 0 4 1 5 2 6 3 7\n%2 = convert %1 : f32\n%3 = mm %0 %2 : f32\noutput %3\n"
    K, N = 32, 24
    words = torch.randint(-2**31, 2**31 - 1, (K, N // 8), dtype=torch.int32)
    values = torch.stack([(words >> (4 * j)) & 15 for j in AWQ_ORDER], 2).view(K, N)
    x = torch.randn(5, K)
    (out,) = gemm_chain([x, words], spec)
    assert rel_err(out, x.double() @ values.double()) < 1e-6
    for bad, message in (("order 0 4 1 5 2 6 3 3", "each of the element's 8 4-bit values once"),
                         ("order 0 1", "each of the element's 8 4-bit values once")):
        with pytest.raises(Exception, match=message):
            gemm_chain([x, words], spec.replace("order 0 4 1 5 2 6 3 7", bad))
    with pytest.raises(Exception, match="an order is given for an input with a 'q' dim only"):
        gemm_chain([x, torch.randn(K, N)], head + "%1 = input 1 f32 [k,n] order 0 1\n%2 = mm %0 %1 : f32\noutput %2\n")


@pytest.mark.gpu
@pytest.mark.parametrize("M", [1, 16, 100])
def test_awq_storage_on_cuda_matches_a_float64_product(M, monkeypatch):
    """The kernel the rule picks, launched where the op's dispatch would run ATen: the decode kernel on the words at 1
    and 16 rows, the generic kernel at 100 (its hooks read value order[n % 8] of word n / 8)."""
    strict_cuda_path(monkeypatch, "kernel")
    testlib.seed("awq_cuda", M)
    model = AWQLinear(1024, 384, 128, device="cuda", bias=True)
    x = torch.randn(M, 1024, device="cuda").half()
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)), only_profitable=False)
    (spec,) = _specs(ep2)
    assert "order 0 4 1 5 2 6 3 7" in spec, spec
    module = ep2.module()
    for _ in range(2):
        x = torch.randn(M, 1024, device="cuda").half()
        got = module(x)
        torch.cuda.synchronize()
        want = x.double() @ model.weight().double() + model.bias.double()
        assert not got.isnan().any()
        assert rel_err(got, want) < 1e-2
        assert rel_err(got, model(x)) < 1e-2
    # the gather's constant left on the CPU beside CUDA words (a program rewritten on the CPU, then moved with .to():
    # torch does not move lifted constants): a clear error, never a wrong answer (README, AWQ)
    module.lifted_tensor_0 = module.lifted_tensor_0.cpu()
    with pytest.raises(RuntimeError, match="all inputs must be CUDA tensors on one device"):
        module(x)


def test_awq_layer_folds_under_the_torch_compile_backend():
    """Inductor's post-grad graph writes the unpack's aranges as prims.iota and keeps the gather's constant (a
    get_attr the IR states, through lift_fresh_copy): the whole layer folds as in an exported program, the words and
    the zero points read by the chain in AWQ's order, and the result is eager's within the 16-bit output's rounding."""
    testlib.seed("awq_compile")
    model = AWQLinear(256, 64, 128, bias=True).eval()
    compiled = torch.compile(model, backend="fxfuse")
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(4, 256).half()
            assert rel_err(compiled(x), model(x)) < 1e-3
    (entry,) = fxfuse.report().fused
    assert entry["prologue_stops"] == [], entry
    assert "(4-bit values along n, 8 per i32 in the order 0 4 1 5 2 6 3 7)" in entry["chain"], entry


# ---- the gemv on AWQ's words (kernels/gemv.cuh FX_B_NWORDS: each word's 8 columns into the 8-bit tile by two byte
# permutes), the rule since its GPU tests passed in session 67 (FXFUSE_GEMV_NWORDS=0 turns it off; read once per
# process: each check in a child) ----

@pytest.mark.parametrize("knob", ["", "0"], ids=["rule", "knob_off"])
def test_awq_words_take_the_gemv_unless_the_knob_is_off(knob):
    out = run_child(VARIANT_CHILD, "awq", FXFUSE_GEMV_NWORDS=knob)
    rows = dict((int(m), (v, w == "True")) for m, v, w in (line.split() for line in out.strip().splitlines()[:-1]))
    for M in (1, 16, 24, 64):  # decode rows: the gemv on the words, the generic tile with the knob off
        assert rows[M] == (("gemv", True) if knob != "0" else ("sm80_mma", False)), rows
    assert rows[65][0] != "gemv", rows  # (prefill rows: not the gemv's)


# The gemv's dequantized AWQ weight, bit for bit: one-hot activation rows (row m reads k_m alone) and no bias, so each
# output element is one weight element times 1.0 plus zeros, exact in fp32 and in the 16-bit output. Ragged N (544:
# the last column tile's element-wise loader; its word rows, 272 bytes, stay 16-byte aligned, which the gemv needs),
# each product and row tile, both conversion routes.
@pytest.mark.gpu
@pytest.mark.parametrize("pairs", ["", "0"], ids=["pairs", "fp32_route"])
@pytest.mark.parametrize("M,N,K,dtype,knob", [
    (1, 4096, 4096, "float16", ""), (16, 1536, 2048, "bfloat16", ""), (24, 1536, 2048, "float16", ""),
    (64, 544, 2048, "float16", ""), (5, 4096, 14336, "bfloat16", ""), (64, 1536, 2048, "bfloat16", "FXFUSE_GEMV_WGMMA=1"),
    (40, 1536, 2048, "float16", "FXFUSE_GEMV_WGMMA=1+FXFUSE_GEMV_NT=64"),
    (40, 1536, 2048, "bfloat16", "FXFUSE_GEMV_WGMMA=1+FXFUSE_GEMV_KT=64")])
def test_awq_words_gemv_dequantizes_eagers_bits(M, N, K, dtype, knob, pairs):
    env = {"FXFUSE_GEMV_NIBBLE_PAIRS": pairs, "FXFUSE_STRICT": "1", "FXFUSE_POISON_OUTPUTS": "1"}
    if knob:
        env.update(kv.split("=") for kv in knob.split("+"))
    run_child(EXACT_CHILD, M, N, K, dtype, "awq", **env)


# With a bias and random activations, against a float64 product and eager: the words as exported (the fast loader),
# then as column slices of wider words: one 16-byte aligned (the gemv's fast loader on another k stride), one not (the
# gemv refuses it: the generic kernel reads it), and the op's check of the gather's constant still raising.
AWQ_GEMV_CHILD = r"""
import sys, torch, fxfuse, testlib
from helpers import rel_err
from awq_linear import AWQLinear
from test_packed_int4 import _specs, gemm_chain
M, N, K = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
testlib.seed("awq_words_gemv", M, N, K)
model = AWQLinear(K, N, 128, device="cuda", bias=True)
x = torch.randn(M, K, device="cuda").half()
ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
(spec,) = _specs(ep2)
assert fxfuse._C.kernel_variant(spec, M, N, K)[0] == "gemv"
module = ep2.module()
def want(x):
    return x.double() @ model.weight().double() + model.bias.double()
for _ in range(2):
    x = torch.randn(M, K, device="cuda").half()
    got = module(x)
    torch.cuda.synchronize()
    assert not got.isnan().any()
    assert rel_err(got, want(x)) < 1e-2, rel_err(got, want(x))
    assert rel_err(got, model(x)) < 1e-2, rel_err(got, model(x))
assert fxfuse.stats()["aten_dispatch"] == 0, fxfuse.stats()
# the same chain on words that are columns at..at + N / 8 of a wider tensor (k stride N / 8 + 8 words)
call = next(n for n in module.graph.nodes if n.target == torch.ops.fxfuse.gemm_chain.default)
for at in (4, 1):
    wide = torch.randint(-2**31, 2**31 - 1, (K, N // 8 + 8), dtype=torch.int32, device="cuda")
    wide[:, at:at + N // 8] = model.qweight
    words = wide[:, at:at + N // 8]
    args = [x if a.op == "placeholder" else words if a.target == "qweight" else getattr(module, a.target)
            for a in call.args[0]]
    (got,) = gemm_chain(args, call.args[1])
    torch.cuda.synchronize()
    assert rel_err(got, want(x)) < 1e-2, (at, rel_err(got, want(x)))
module.lifted_tensor_0.copy_(module.lifted_tensor_0.flip(0))
try:
    module(x)
except RuntimeError as e:
    assert "no longer holds" in str(e), e
else:
    raise AssertionError("a changed order constant was not refused")
print("ok")
"""


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (16, 14336, 4096), (64, 4096, 14336), (8, 1024, 1152)])
def test_awq_words_gemv_matches_a_float64_product(M, N, K):
    run_child(AWQ_GEMV_CHILD, M, N, K, FXFUSE_STRICT="1", FXFUSE_POISON_OUTPUTS="1")
