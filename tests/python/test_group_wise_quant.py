"""Group-wise weight quantization (GPTQ / AWQ: int8 or fp8 weights with a scale, and a zero point, per group of G
along K) folded into the GEMM's prologue: the chain reads the scale [N, K/G] through a 'g' dim (k's group) and the
spec's `kgroup G`, where it had been left outside, its dequantized [N, K] weight written and read back.

Every fused program is checked against eager on fresh random inputs: bit for bit on the CPU (the CPU kernel computes
eager's ops in eager's order), by relative error against a float64 product on CUDA (marked gpu)."""
from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

import fxfuse
import testlib
from helpers import check_op_path, rel_err, strict_cuda_path

pytestmark = pytest.mark.needs_real_pass
gemm_chain = torch.ops.fxfuse.gemm_chain.default


def _fused(ep):
    return [n for n in ep.graph.nodes if n.target == gemm_chain]


def _spec(ep) -> str:
    (node,) = _fused(ep)
    return node.args[1]


def _int8(*shape, device="cpu"):
    return torch.randint(-128, 128, shape, dtype=torch.int8, device=device)


def _scale(*shape, dtype=torch.bfloat16, device="cpu"):
    # never zero, both signs: an unwritten or misindexed group shows
    s = (torch.rand(*shape, device=device) * 0.02 + 0.001) * torch.where(torch.rand(*shape, device=device) < 0.5, -1, 1)
    return s.to(dtype)


class LinearGroupWise(torch.nn.Module):
    """`F.linear(x, (w.view(N, K/G, G).to(dt) * s[:, :, None]).view(N, K), b)`, then an activation: the GPTQ / AWQ
    form with the weight stored [N, K]. `zero`: `(w - z) * s` with a zero point per group."""

    def __init__(self, N, K, G, dtype=torch.bfloat16, raw=torch.int8, zero=False, bias=True, device="cpu"):
        super().__init__()
        self.N, self.K, self.G, self.dtype = N, K, G, dtype
        w = _int8(N, K, device=device) if raw == torch.int8 else (torch.randn(N, K, device=device) * 8).to(raw)
        self.register_buffer("w", w)
        self.register_buffer("s", _scale(N, K // G, dtype=dtype, device=device))
        self.register_buffer("z", (torch.randn(N, K // G, device=device) * 4).to(dtype) if zero else None)
        self.register_buffer("b", torch.randn(N, device=device).to(dtype) if bias else None)

    def forward(self, x):
        N, K, G = self.N, self.K, self.G
        w = self.w.view(N, K // G, G).to(self.dtype)
        if self.z is not None:
            w = w - self.z[:, :, None]
        w = (w * self.s[:, :, None]).view(N, K)
        return F.gelu(F.linear(x, w, self.b), approximate="tanh")


class MatmulGroupWise(torch.nn.Module):
    """`relu(x @ (w.view(K/G, G, N).to(dt) * s[:, None, :]).view(K, N))`: the weight stored [K, N], grouped along
    its first dim."""

    def __init__(self, N, K, G, dtype=torch.bfloat16, device="cpu"):
        super().__init__()
        self.N, self.K, self.G, self.dtype = N, K, G, dtype
        self.register_buffer("w", _int8(K, N, device=device))
        self.register_buffer("s", _scale(K // G, N, dtype=dtype, device=device))

    def forward(self, x):
        N, K, G = self.N, self.K, self.G
        return torch.relu(x @ (self.w.view(K // G, G, N).to(self.dtype) * self.s[:, None, :]).view(K, N))


def float64_product(model, x):
    """The model's answer from eager's dequantized weight (exact in its dtype), its product in float64."""
    N, K, G, dtype = model.N, model.K, model.G, model.dtype
    if isinstance(model, MatmulGroupWise):
        deq = (model.w.view(K // G, G, N).to(dtype) * model.s[:, None, :]).view(K, N)
        return torch.relu(x.double() @ deq.double())
    deq = model.w.view(N, K // G, G).to(dtype)
    if model.z is not None:
        deq = deq - model.z[:, :, None]
    deq = (deq * model.s[:, :, None]).view(N, K)
    want = x.double() @ deq.double().t() + (model.b.double() if model.b is not None else 0)
    return F.gelu(want, approximate="tanh")


def check_on_cuda(ep2, model, M):
    """The rewritten program on fresh CUDA inputs, twice: no element unwritten (poisoned outputs read NaN), within
    1e-2 of the float64 product and of eager."""
    for _ in range(2):
        x = torch.randn(M, model.K, device="cuda").to(model.dtype)
        got = ep2.module()(x)
        torch.cuda.synchronize()
        want = float64_product(model, x)
        assert not got.isnan().any()
        assert rel_err(got, want) < 1e-2, rel_err(got, want)
        assert rel_err(got, model(x)) < 1e-2, rel_err(got, model(x))


@pytest.mark.parametrize("decompose", [False, True], ids=["training_ir", "decomposed"])
@pytest.mark.parametrize("form", ["linear", "linear_zero_point", "linear_no_bias", "matmul", "f16", "fp8"])
def test_group_wise_dequantization_fuses_and_keeps_eager_bits(form, decompose):
    testlib.seed("groupwise", form, decompose)
    N, K, G = 48, 128, 32
    dtype = torch.float16 if form == "f16" else torch.bfloat16
    if form == "matmul":
        model = MatmulGroupWise(N, K, G, dtype=dtype)
    else:
        model = LinearGroupWise(N, K, G, dtype=dtype, zero=form == "linear_zero_point", bias=form != "linear_no_bias",
                                raw=torch.float8_e4m3fn if form == "fp8" else torch.int8)
    x = torch.randn(8, K).to(dtype)
    ep = torch.export.export(model, (x,))
    if decompose:
        ep = ep.run_decompositions()
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    spec = _spec(ep2)
    assert f"\ngemm mm kgroup {G}\n" in spec, spec
    assert ("[g,n]" if form == "matmul" else "[n,g]") in spec, spec
    # the dequantization went into the chain: no reshape, conversion or scale is left in the graph
    left = [str(n.target) for n in ep2.graph.nodes if n.op == "call_function" and n.target != gemm_chain
            and "getitem" not in str(n.target) and "assert" not in str(n.target)]
    assert left == [], left
    for _ in range(2):
        x2 = torch.randn(8, K).to(dtype)
        assert torch.equal(ep2.module()(x2), model(x2))


class RepeatInterleaveGroupWise(torch.nn.Module):
    """The group broadcast spelled `t.repeat_interleave(G, dim)` (AWQ's dequantization and many hand-written ones):
    `F.linear(x, w.to(dt) * s.repeat_interleave(G, -1), b)` with w [N, K], or `x @ ((w & 15) - (z & 15).repeat_interleave(G,
    0)).to(dt) * s.repeat_interleave(G, 0)` with w [K, N] and a zero point per group."""

    def __init__(self, N, K, G, layout, dtype=torch.bfloat16):
        super().__init__()
        self.N, self.K, self.G, self.layout, self.dtype = N, K, G, layout, dtype
        self.register_buffer("w", _int8(N, K) if layout == "linear" else _int8(K, N))
        self.register_buffer("s", _scale(N, K // G, dtype=dtype) if layout == "linear" else _scale(K // G, N, dtype=dtype))
        self.register_buffer("z", _int8(K // G, N))
        self.register_buffer("b", torch.randn(N).to(dtype))

    def weight(self):
        G = self.G
        if self.layout == "linear":
            return self.w.to(self.dtype) * self.s.repeat_interleave(G, -1)
        return ((self.w & 15) - (self.z & 15).repeat_interleave(G, 0)).to(self.dtype) * self.s.repeat_interleave(G, 0)

    def forward(self, x):
        if self.layout == "linear":
            return F.linear(x, self.weight(), self.b)
        return x @ self.weight() + self.b


@pytest.mark.parametrize("layout", ["linear", "matmul_zero_point"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_group_broadcast_by_repeat_interleave_folds(layout, dtype):
    testlib.seed("group_repeat_interleave", layout, dtype)
    model = RepeatInterleaveGroupWise(48, 256, 64, layout, dtype)
    x = torch.randn(3, 256).to(dtype)
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
    spec = _spec(ep2)
    assert "gemm mm kgroup 64\n" in spec, spec
    assert " [g,n]\n" in spec or " [n,g]\n" in spec, spec
    left = [str(n.target) for n in ep2.graph.nodes if n.op == "call_function"]
    # the group broadcasts and the sub folded (the masks of unpacked bytes stay ATen's: no bitwise op in a chain)
    assert not any("repeat_interleave" in t or "sub" in t for t in left), left
    for _ in range(2):
        x = torch.randn(3, 256).to(dtype)
        assert torch.equal(ep2.module()(x), model(x))


def test_a_repeat_along_n_or_by_a_tensor_of_counts_stays_outside():
    """Only a repeat along k by one count is k's group broadcast: along n it is no 'g' dim, and a tensor of counts
    (ragged groups) has no spec form; both are left to ATen with eager's answer."""
    w, s = _int8(64, 32), _scale(64, 8)

    class AlongN(torch.nn.Module):
        def forward(self, x):
            return x @ (w.to(torch.bfloat16) * s.repeat_interleave(4, 1))

    class Counts(torch.nn.Module):
        def forward(self, x):
            return x @ (w.to(torch.bfloat16) * s.t().repeat_interleave(torch.full((8,), 8), 0)[:, :8].repeat(1, 4))

    for model in (AlongN(), Counts()):
        x = torch.randn(2, 64).to(torch.bfloat16)
        ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))
        assert any("repeat_interleave" in str(n.target) for n in ep2.graph.nodes), ep2.graph
        x = torch.randn(2, 64).to(torch.bfloat16)
        assert torch.equal(ep2.module()(x), model(x))


def test_group_wise_activation_and_weight_share_one_group():
    """Per-token-group activations (fp8 [M, K] with a scale per group of 64, as block-quantized LLMs run) beside a
    group-wise weight of the same G: both operands' prologues fold, the A scale read as [m,g]."""
    testlib.seed("groupwise_a")
    M, N, K, G = 16, 32, 256, 64

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", _int8(N, K))
            self.register_buffer("s", _scale(N, K // G))

        def forward(self, xq, sx):
            x = (xq.view(M, K // G, G).to(torch.bfloat16) * sx[:, :, None]).view(M, K)
            w = (self.w.view(N, K // G, G).to(torch.bfloat16) * self.s[:, :, None]).view(N, K)
            return F.silu(F.linear(x, w))

    def inputs():
        return (torch.randn(M, K) * 16).to(torch.float8_e4m3fn), _scale(M, K // G)

    model = Model()
    ep2 = fxfuse.rewrite(torch.export.export(model, inputs()), only_profitable=False)
    spec = _spec(ep2)
    assert "kgroup 64" in spec and "[m,g]" in spec and "[n,g]" in spec, spec
    args = inputs()
    assert torch.equal(ep2.module()(*args), model(*args))


def test_two_group_sizes_leave_the_second_outside_and_say_why():
    """One chain has one group size: a weight grouped by 32 beside activations grouped by 64 folds the first operand's
    region and leaves the other's reshape outside, named on the report line."""
    testlib.seed("groupwise_two_sizes")
    M, N, K = 8, 32, 256

    class Model(torch.nn.Module):
        def forward(self, xq, sx, w, s):
            x = (xq.view(M, K // 64, 64).to(torch.bfloat16) * sx[:, :, None]).view(M, K)
            w = (w.view(N, K // 32, 32).to(torch.bfloat16) * s[:, :, None]).view(N, K)
            return torch.relu(F.linear(x, w))

    args = (_int8(M, K), _scale(M, K // 64), _int8(N, K), _scale(N, K // 32))
    ep = torch.export.export(Model(), args)
    rep = fxfuse.report(ep, only_profitable=False)
    (entry,) = rep.entries
    assert entry["status"] == "fused", entry
    assert "a second group size in one chain (32 after 64)" in str(rep), str(rep)
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    assert "kgroup 64" in _spec(ep2)
    assert torch.equal(ep2.module()(*args), Model()(*args))


def test_a_region_without_a_group_operand_folds_beside_another_group_size():
    """A grouped by 32 beside a B region of 64 whose only scale is per channel: B's region reads no group's operand,
    so it folds without a group of its own (the review of session 60: it was refused as a second group size)."""
    testlib.seed("groupwise_region_beside")
    M, N, K = 8, 32, 256

    class Model(torch.nn.Module):
        def forward(self, xq, sx, w, c):
            x = (xq.view(M, K // 32, 32).to(torch.bfloat16) * sx[:, :, None]).view(M, K)
            w = (w.view(N, K // 64, 64).to(torch.bfloat16) * c[:, None, None]).view(N, K)
            return torch.relu(F.linear(x, w))

    args = (_int8(M, K), _scale(M, K // 32), _int8(N, K), _scale(N))
    ep2 = fxfuse.rewrite(torch.export.export(Model(), args), only_profitable=False)
    spec = _spec(ep2)
    assert "kgroup 32" in spec and "[m,g]" in spec and "input 2 i8 [n,k]" in spec and "input 3 bf16 [n]\n" in spec, spec
    assert torch.equal(ep2.module()(*args), Model()(*args))


def test_an_operand_along_part_of_a_group_stays_outside_and_is_named():
    """A per-position factor t[G] (varying along k % G, not its group) has no spec dims: the region stays outside the
    chain, its reshape and the operand named, and the answer is eager's."""
    testlib.seed("groupwise_inner")
    N, K, G = 32, 128, 32

    class Model(torch.nn.Module):
        def forward(self, x, w, s, t):
            w = (w.view(N, K // G, G).to(torch.bfloat16) * s[:, :, None] * t).view(N, K)
            return torch.relu(F.linear(x, w))

    args = (torch.randn(4, K).to(torch.bfloat16), _int8(N, K), _scale(N, K // G), _scale(G))
    ep = torch.export.export(Model(), args)
    text = str(fxfuse.report(ep, only_profitable=False))
    assert "a group-wise dequantization (groups of 32 along k) whose operands do not fold" in text, text
    assert "read as [..., K/G, G]" in text, text
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    assert "kgroup" not in "".join(n.args[1] for n in _fused(ep2))
    assert torch.equal(ep2.module()(*args), Model()(*args))


@pytest.mark.parametrize("inner", ["per_channel", "convert_only", "number"])
def test_a_region_without_a_group_operand_fuses_without_kgroup(inner):
    """A [N, K/G, G] region whose operands do not vary by group (a per-channel scale, none, a number) folds as the
    plain [n,k] weight: it had given a spec with `kgroup` and no 'g' input, refused as internal_error (session 60's
    hunt)."""
    testlib.seed("groupwise_no_group_operand", inner)
    N, K, G = 40, 128, 32

    class Model(torch.nn.Module):
        def forward(self, x, w, c):
            v = w.view(N, K // G, G).to(torch.bfloat16)
            v = v * c[:, None, None] if inner == "per_channel" else v * 0.01 if inner == "number" else v
            return torch.relu(F.linear(x, v.view(N, K)))

    args = (torch.randn(6, K).to(torch.bfloat16), _int8(N, K), _scale(N))
    ep2 = fxfuse.rewrite(torch.export.export(Model(), args), only_profitable=False)
    spec = _spec(ep2)
    assert "kgroup" not in spec and "[n,k]" in spec, spec
    assert torch.equal(ep2.module()(*args), Model()(*args))


def test_the_training_irs_unflatten_and_flatten_fold_and_a_second_view_is_named():
    testlib.seed("groupwise_unflatten")
    N, K, G = 40, 128, 32

    class Model(torch.nn.Module):
        def __init__(self, spelling):
            super().__init__()
            self.spelling = spelling

        def forward(self, x, w, s):
            if self.spelling == "unflatten":
                v = (w.unflatten(1, (K // G, G)).to(torch.bfloat16) * s.unsqueeze(2)).flatten(1)
            else:  # merged back by two views: not folded, and the report says where the prologue stopped
                v = (w.view(N, K // G, G).to(torch.bfloat16) * s[:, :, None]).view(N * K // G, G).view(N, K)
            return torch.relu(F.linear(x, v))

    args = (torch.randn(6, K).to(torch.bfloat16), _int8(N, K), _scale(N, K // G))
    ep = torch.export.export(Model("unflatten"), args)
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    assert "kgroup 32" in _spec(ep2)
    assert torch.equal(ep2.module()(*args), Model("unflatten")(*args))
    text = str(fxfuse.report(torch.export.export(Model("two_views"), args), only_profitable=False))
    assert "a reshape that splits or merges the operand's dims" in text, text


def test_a_weight_that_is_a_repeated_scale_is_read_through_the_hooks():
    """`s[:, :, None].expand(N, K/G, G).reshape(N, K)` as the weight itself: B is an input with a 'g' dim, which no
    template loads as a tensor; the kernels read it through fx_load_b at k / G (it had been taken for a plain operand,
    its address written with a division by zero: the review of session 60)."""
    testlib.seed("groupwise_repeated_scale")
    N, K, G = 16, 64, 16

    class Model(torch.nn.Module):
        def forward(self, x, s):
            return torch.relu(F.linear(x, s[:, :, None].expand(N, K // G, G).reshape(N, K)))

    args = (torch.randn(4, K).to(torch.bfloat16), _scale(N, K // G))
    ep2 = fxfuse.rewrite(torch.export.export(Model(), args), only_profitable=False)
    spec = _spec(ep2)
    assert "%1 = input 1 bf16 [n,g]" in spec, spec
    assert torch.equal(ep2.module()(*args), Model()(*args))
    _, source = fxfuse._C.generate_cuda(spec, 512, N, K)
    assert "#define FX_B_PLAIN 0" in source and "(k >> 4) * p.in[1].sk" in source


def test_group_wise_with_a_dynamic_batch_is_one_program():
    testlib.seed("groupwise_dynamic")
    N, K, G = 40, 96, 32
    model = LinearGroupWise(N, K, G)
    batch = torch.export.Dim("batch", min=1, max=512)
    ep = torch.export.export(model, (torch.randn(3, 7, K).to(torch.bfloat16),), dynamic_shapes=({0: batch},))
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    assert "kgroup 32" in _spec(ep2)
    for b in (1, 5, 33):
        x = torch.randn(b, 7, K).to(torch.bfloat16)
        assert torch.equal(ep2.module()(x), model(x))


def test_a_scale_of_the_wrong_group_count_is_a_clear_error():
    """The op checks a 'g' dim against K / kgroup: a scale of the wrong size never reaches a kernel."""
    spec = ("fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [n,k]\n"
            "%2 = convert %1 : bf16\n%3 = input 2 bf16 [n,g]\n%4 = mul %2 %3 : bf16\n%5 = mm %0 %4 : bf16\n"
            "output %5\n")
    x, w = torch.randn(4, 128).to(torch.bfloat16), _int8(16, 128)
    (out,) = gemm_chain([x, w, _scale(16, 4)], spec)
    assert out.shape == (4, 16)
    with pytest.raises(RuntimeError, match=r"'g', K's groups of 32\) must be K / 32"):
        gemm_chain([x, w, _scale(16, 8)], spec)


def test_a_rewritten_group_wise_program_saves_and_loads(tmp_path):
    testlib.seed("groupwise_save")
    model = LinearGroupWise(32, 64, 16)
    x = torch.randn(4, 64).to(torch.bfloat16)
    ep2 = fxfuse.rewrite(torch.export.export(model, (x,)), only_profitable=False)
    path = tmp_path / "gw.pt2"
    torch.export.save(ep2, path)
    loaded = torch.export.load(path)
    assert "kgroup 16" in _spec(loaded)
    assert torch.equal(loaded.module()(x), model(x))


# ---- CUDA: the generic kernel's prologue reads the scale at k / G; the op's own dispatch runs the gemv where it takes
# the scale (groups of 128, no zero point, decode rows) and ATen elsewhere, where the default rewrite leaves the chain
# in the graph as not_profitable ----

@pytest.mark.gpu
@pytest.mark.parametrize("path", ["kernel", "dispatch"])
@pytest.mark.parametrize("M", [1, 16, 100, 512])
@pytest.mark.parametrize("form", ["linear", "linear_zero_point", "matmul", "f16"])
@pytest.mark.parametrize("G", [32, 128])
def test_group_wise_on_cuda_matches_a_float64_product(form, G, M, path, monkeypatch):
    strict_cuda_path(monkeypatch, path)
    testlib.seed("groupwise_cuda", form, G, M, path)
    N, K = 384, 1024
    dtype = torch.float16 if form == "f16" else torch.bfloat16
    if form == "matmul":
        model = MatmulGroupWise(N, K, G, dtype=dtype, device="cuda")
    else:
        model = LinearGroupWise(N, K, G, dtype=dtype, zero=form == "linear_zero_point", device="cuda")
    x = torch.randn(M, K, device="cuda").to(dtype)
    ep = torch.export.export(model, (x,))
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    assert f"kgroup {G}" in _spec(ep2)
    before = fxfuse.stats()
    check_on_cuda(ep2, model, M)
    after = fxfuse.stats()
    # the op's own dispatch runs the gemv where it takes the scale (groups of 128, no zero point, decode rows; the
    # child test below), ATen elsewhere, where the default rewrite keeps the dequantization and the GEMM as they were
    check_op_path(ep, before, after, path, fast=G % 128 == 0 and form != "linear_zero_point" and M <= 64)


# The gemv's fast 8-bit path with a group-wise scale read per stage (FX_B_SCALE_GROUP, groups of 128), where the
# default rewrite fuses (a child: the knob FXFUSE_GEMV_GROUP_SCALES, read once per process, could have been set by the
# caller). Decode rows, both weight layouts, both 16-bit types, a split-K cluster's K (14336) among them.
GEMV_CHILD = r"""
import sys, torch, fxfuse, testlib
import torch.nn.functional as F
from helpers import rel_err
from test_group_wise_quant import LinearGroupWise, MatmulGroupWise, check_on_cuda
form, M, N, K = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
testlib.seed("groupwise_gemv", form, M, N, K)
G, dtype = 128, torch.float16 if form == "f16" else torch.bfloat16
model = (MatmulGroupWise(N, K, G, dtype=dtype, device="cuda") if form == "matmul"
         else LinearGroupWise(N, K, G, dtype=dtype, device="cuda"))
x = torch.randn(M, K, device="cuda").to(dtype)
ep2 = fxfuse.rewrite(torch.export.export(model, (x,)))  # the default: fused only where a fast kernel runs it
(node,) = [n for n in ep2.graph.nodes if n.target == torch.ops.fxfuse.gemm_chain.default]
spec = node.args[1]
assert "kgroup 128" in spec, spec
assert fxfuse._C.kernel_variant(spec, M, N, K)[0] == "gemv", fxfuse._C.kernel_variant(spec, M, N, K)
launches = fxfuse.stats()["launches"]
check_on_cuda(ep2, model, M)
assert fxfuse.stats()["launches"] >= launches + 2 and fxfuse.stats()["aten_dispatch"] == 0, fxfuse.stats()
print("ok")
"""


@pytest.mark.gpu
# (528 columns: a ragged last tile; 520 int8 columns are 8-byte rows, which the gemv's 16-byte loads do not take)
@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (16, 4096, 14336), (64, 1536, 1024), (5, 528, 2048)])
@pytest.mark.parametrize("form", ["linear", "matmul", "f16"])
def test_group_wise_decode_takes_the_gemv(form, M, N, K):
    from helpers import run_gemv_child
    run_gemv_child(GEMV_CHILD, form, M, N, K, knob="FXFUSE_GEMV_GROUP_SCALES")


def test_one_column_with_a_group_wise_scale_keeps_eagers_bits():
    """N = 1 (a one-output linear, a classifier's logit) with a scale per group of k: the CPU kernel multiplies by its
    dequantized weight in eager's layout (W.t(), strides (1, K)); computed [K, 1]-contiguous it took another ATen kernel,
    one bf16 ulp off eager (session 61's hunt: the saved input below, and ~1 in 300 calls of its weight). The saved
    case, then fresh ones."""
    testlib.seed("groupwise_n1")
    K, G = 128, 2
    d = torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "n1_group_scale_case.pt"))
    w_saved = torch.stack([d["w"] & 15, d["w"] >> 4], -1).view(1, K).to(torch.bfloat16)

    class Model(torch.nn.Module):
        def __init__(self, w, s):
            super().__init__()
            self.register_buffer("w", w)
            self.register_buffer("s", s)

        def forward(self, x):
            return F.linear(x, (self.w.view(1, K // G, G) * self.s[:, :, None]).view(1, K))

    cases = [(w_saved, d["s"], d["x"])]
    cases += [(torch.randn(1, K).to(torch.bfloat16), _scale(1, K // G), torch.randn(6, K).to(torch.bfloat16))
              for _ in range(20)]
    for w, s, x in cases:
        model = Model(w, s)
        ep2 = fxfuse.rewrite(torch.export.export(model, (x,)), only_profitable=False)
        assert "kgroup 2" in _spec(ep2)
        assert torch.equal(ep2.module()(x), model(x))
