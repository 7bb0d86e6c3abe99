"""fxfuse.rewrite on ExportedPrograms (before and after run_decompositions): a valid program
that saves, loads in a fresh process after `import fxfuse`, and gives eager's answers."""
from __future__ import annotations

import operator
import os

import pytest
import torch

import fxfuse
from helpers import GatedMLP, Int8Linear, Linear3d, MLP, ScaledByCpuScalar, rel_err, run_python

TOL = 1e-4


def _fused_ops(ep):
    return [n for n in ep.graph.nodes if n.target == torch.ops.fxfuse.gemm_chain.default]


@pytest.mark.parametrize("decompose", [False, True], ids=["training_ir", "decomposed"])
@pytest.mark.parametrize("act", ["relu", "gelu_tanh", "relu6"])
def test_rewrite_mlp(decompose, act):
    model = MLP(act=act).eval()
    x = torch.randn(8, 32)
    ep = torch.export.export(model, (x,))
    if decompose:
        ep = ep.run_decompositions()
    before = str(ep.graph)
    ep2 = fxfuse.rewrite(ep)
    assert str(ep.graph) == before, "rewrite must not change its input"
    assert len(_fused_ops(ep2)) == 1 and fxfuse.stats()["chains_fused"] == 1
    for n in ep2.graph.nodes:
        if n.op == "call_function":
            assert "val" in n.meta, n
    x2 = torch.randn(8, 32)
    assert rel_err(ep2.module()(x2), model(x2)) < TOL
    assert [s.arg.name for s in ep2.graph_signature.input_specs] == [s.arg.name for s in ep.graph_signature.input_specs]


def test_rewritten_output_is_renamed_in_signature():
    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(16, 8)

        def forward(self, x):
            return torch.relu(self.l(x))   # the fused chain's value is the program output

    ep2 = fxfuse.rewrite(torch.export.export(Head(), (torch.randn(4, 16),)))
    out = next(n for n in ep2.graph.nodes if n.op == "output").args[0][0]
    assert ep2.graph_signature.output_specs[0].arg.name == out.name
    ep2.validate() if hasattr(ep2, "validate") else None


SUBPROCESS_CHECK = """
import torch, fxfuse
ep = torch.export.load(sys.argv[1])
x, ref = torch.load(sys.argv[2])
assert any(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep.graph.nodes)
out = ep.module()(x)
err = ((out - ref).norm() / ref.norm()).item()
print("rel_err", err)
sys.exit(0 if err < 1e-4 else 3)
"""


@pytest.mark.parametrize("make", [lambda: (MLP(act="gelu"), torch.randn(8, 32)),
                                  lambda: (GatedMLP(), torch.randn(8, 32)),
                                  lambda: (Int8Linear(), torch.randn(8, 32)),
                                  lambda: (Linear3d(), torch.randn(2, 5, 32))],
                         ids=["mlp_gelu", "gated", "int8", "3d"])
@pytest.mark.parametrize("decompose", [False, True], ids=["training_ir", "decomposed"])
def test_save_load_in_fresh_process(make, decompose, tmp_path, standin):
    model, x = make()
    model.eval()
    ep = torch.export.export(model, (x,))
    if decompose:
        ep = ep.run_decompositions()
    ep2 = fxfuse.rewrite(ep)
    if not _fused_ops(ep2):
        if standin:
            pytest.skip("the test stand-in does not fuse this model")
        pytest.fail("nothing fused:\n" + str(fxfuse.report(ep)))
    path = tmp_path / "m.pt2"
    torch.export.save(ep2, str(path))
    x2 = torch.randn_like(x)
    torch.save((x2, model(x2).detach()), str(tmp_path / "io.pt"))
    res = run_python(SUBPROCESS_CHECK, str(path), str(tmp_path / "io.pt"))
    assert res.returncode == 0, res.stdout + res.stderr


def test_dynamic_batch_export():
    model = MLP(act="relu").eval()
    batch = torch.export.Dim("batch", min=2, max=1024)
    ep = torch.export.export(model, (torch.randn(8, 32),), dynamic_shapes={"x": {0: batch}})
    ep2 = fxfuse.rewrite(ep)
    assert len(_fused_ops(ep2)) == 1
    for m in (3, 40):
        x = torch.randn(m, 32)
        assert rel_err(ep2.module()(x), model(x)) < TOL


def test_report_lists_every_gemm():
    rep = fxfuse.report(MLP(act="relu"), torch.randn(8, 32))
    assert len(rep.entries) == 2 and len(rep.fused) == 1
    assert rep.rejected[0]["reason"] == "no_epilogue_no_prologue"
    text = str(rep)
    assert "fused" in text and "no_epilogue_no_prologue" in text


def test_report_refuses_a_graph_of_module_calls():
    """A torch.fx.symbolic_trace graph calls its Linear layers as modules, which the pass cannot see into: the
    report said "(no GEMM in this graph)" (hunt B, session 53)."""
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).eval()
    with pytest.raises(TypeError, match="call_module 0"):
        fxfuse.report(torch.fx.symbolic_trace(model))
    assert len(fxfuse.report(model, torch.randn(4, 16)).entries) == 2
    # an exported program's module is an ATen graph: its call of torch's _guards_fn hides no GEMM (hunt D)
    assert len(fxfuse.report(torch.export.export(model, (torch.randn(4, 16),)).module()).entries) == 2


def test_a_refused_epilogue_names_its_reason_on_the_report_line():
    """`linear(x, w) * r` with r [B,1,1] (broadcast along part of the flattened M) was reported "a bare GEMM:
    cuBLAS is as good", its real reason in the notes alone (hunt A, session 53)."""
    class Model(torch.nn.Module):
        def forward(self, x, w, r):
            return torch.nn.functional.linear(x, w) * r

    (entry,) = fxfuse.report(Model(), torch.randn(2, 5, 16), torch.randn(8, 16), torch.randn(2, 1, 1),
                             only_profitable=False).entries
    assert entry["reason"] == "no_epilogue_no_prologue"
    assert "broadcasts along part of the flattened M" in entry["detail"], entry


@pytest.mark.parametrize("shape,perm", [((1, 5, 16), (1, 0, 2)), ((5, 1, 16), (1, 0, 2)), ((2, 1, 4, 16), (0, 2, 1, 3)),
                                        ((1, 5, 16), "t01"), ((2, 1, 4, 16), "t12")],
                         ids=["1x5", "5x1", "2x1x4", "transpose_1x5", "transpose_2x1x4"])
def test_a_permute_that_moves_a_size_1_m_dim_keeps_the_output_shape(shape, perm):
    """The permute (or transpose) was read through as if it kept the m dims' order, so the op's output had A's
    own order ([1,5,N] for the graph's [5,1,N]) and only apply_plan's fake check refused the rewrite (hunt A and
    the review, session 53); the permuted tensor is now A itself."""
    class Model(torch.nn.Module):
        def forward(self, x, w):
            moved = x.transpose(int(perm[1]), int(perm[2])) if isinstance(perm, str) else x.permute(*perm)
            return torch.relu(torch.nn.functional.linear(moved, w))

    x, w = torch.randn(*shape), torch.randn(8, 16)
    ep2 = fxfuse.rewrite(torch.export.export(Model(), (x, w)), only_profitable=False)
    assert len(_fused_ops(ep2)) == 1
    got, want = ep2.module()(x, w), Model()(x, w)
    assert got.shape == want.shape and rel_err(got, want) < TOL


def test_a_prologue_value_the_epilogue_reads_stays_in_the_graph():
    """`xs = x * s; relu(xs @ w + xs)`: the prologue took the mul and the epilogue read xs as an input, so the
    plan replaced a node it read and the rewrite was refused (apply_rejected; hunt A, session 53)."""
    class Model(torch.nn.Module):
        def forward(self, x, s, w):
            xs = x * s
            return torch.relu(xs @ w + xs)

    x, s, w = torch.randn(8, 16), torch.randn(16), torch.randn(16, 16)
    ep2 = fxfuse.rewrite(torch.export.export(Model(), (x, s, w)), only_profitable=False)
    assert len(_fused_ops(ep2)) == 1
    assert rel_err(ep2.module()(x, s, w), Model()(x, s, w)) < TOL

    class CastReadTwice(torch.nn.Module):  # the cast, read again through a slice (session 49's refused case)
        def forward(self, x, w):
            h = x.to(torch.bfloat16)
            return torch.relu(h @ w) + h[:, : w.shape[1]]

    w16 = torch.randn(16, 16, dtype=torch.bfloat16)
    ep2 = fxfuse.rewrite(torch.export.export(CastReadTwice(), (x, w16)))
    assert len(_fused_ops(ep2)) == 1
    assert torch.equal(ep2.module()(x, w16), CastReadTwice()(x, w16))


def test_report_of_a_rewritten_program_counts_its_fused_ops():
    """A program rewritten before had been reported "(no GEMM in this graph)" (hunt D, session 53)."""
    ep2 = fxfuse.rewrite(torch.export.export(MLP(act="gelu").eval(), (torch.randn(8, 32),)), only_profitable=False)
    n = len(_fused_ops(ep2))
    text = str(fxfuse.report(ep2))
    assert n >= 1 and f"{n} chain(s) fused before" in text and "no GEMM" not in text, text


def test_report_counters_leave_out_a_rewrite_apply_plan_refused():
    """With preserve_module_call_signature a rewrite is refused (apply_rejected), and the counters line still
    counted it fused: 3 chains beside 2 ops (hunt D, session 53)."""
    class Inner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(64, 128), torch.nn.Linear(128, 64)

        def forward(self, x):
            return self.b(torch.nn.functional.gelu(self.a(x)))

    class Top(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp, self.head = Inner(), torch.nn.Linear(64, 32)

        def forward(self, x):
            return torch.nn.functional.silu(self.head(x + self.mlp(x)))

    ep = torch.export.export(Top().eval(), (torch.randn(4, 64),), preserve_module_call_signature=("mlp",))
    rep = fxfuse.report(ep, only_profitable=False)
    counters = rep.graphs[0][1]["counters"]
    assert counters.get("reject.apply_rejected", 0) >= 1
    assert counters["chains_fused"] == len(rep.fused) == len(_fused_ops(fxfuse.rewrite(ep, only_profitable=False)))


def test_other_gemm_ops_are_reported_with_a_reason():
    """torch._int_mm had no report entry at all, against "a named reason for every GEMM not fused"."""
    class IntMM(torch.nn.Module):
        def forward(self, xq, wq):
            return torch.relu(torch._int_mm(xq, wq).float() * 0.5)

    xq = torch.randint(-127, 127, (32, 64), dtype=torch.int8)
    wq = torch.randint(-127, 127, (64, 48), dtype=torch.int8)
    (entry,) = fxfuse.report(torch.export.export(IntMM(), (xq, wq))).entries
    assert entry["status"] == "not_fused" and entry["reason"] == "unsupported_gemm_op", entry


def test_a_program_unflattened_before_rewrites_and_its_rewrite_too():
    """torch.export.unflatten(ep) leaves its module in ep.graph_module.meta, which cannot be deep-copied:
    rewrite raised (bug hunt, session 54). The new program does not carry it, and a rewritten program that was
    unflattened rewrites again."""
    model = MLP(act="relu").eval()
    ep = torch.export.export(model, (torch.randn(8, 32),))
    torch.export.unflatten(ep)
    ep2 = fxfuse.rewrite(ep)
    assert "unflattened_module" in ep.graph_module.meta and "unflattened_module" not in ep2.graph_module.meta
    assert sum(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep2.graph.nodes) == 1
    torch.export.unflatten(ep2)
    ep3 = fxfuse.rewrite(ep2)
    x = torch.randn(8, 32)
    with torch.no_grad():
        for program in (ep2, ep3):
            assert rel_err(program.module()(x), model(x)) < 1e-4


def test_rewrite_rejects_non_programs():
    with pytest.raises(TypeError):
        fxfuse.rewrite(MLP())


class _WriteViewOfResult(torch.nn.Module):
    def forward(self, x, w, r):
        y = x @ w
        y[:, :6].mul_(0)  # writes y through a view: eager's relu reads the zeros
        return torch.relu(y)


class _WriteViewOfOperand(torch.nn.Module):
    def forward(self, x, w, r):
        y = x @ w
        x[:, :8].mul_(0)  # after the GEMM: an op placed after the epilogue would read the zeros
        return torch.relu(y)


class _WriteViewOfResidual(torch.nn.Module):
    def forward(self, x, w, r):
        a = x @ w + r
        r[:, :6].mul_(0)  # between the epilogue's two reads of r
        return torch.relu(a + r)


class _WriteByOut(torch.nn.Module):
    def forward(self, x, w, r):
        a = x @ w + r
        torch.mul(r, 0.5, out=r)  # an out= overload writes r
        return torch.relu(a + r)


class _WriteInsidePrologue(torch.nn.Module):
    def forward(self, x, w, r):
        h = x * 2.0
        x[:4].mul_(0)  # between the prologue's read of x and the GEMM
        return torch.relu(h @ w + r)


@pytest.mark.parametrize("model", [_WriteViewOfResult, _WriteViewOfOperand, _WriteViewOfResidual, _WriteByOut,
                                   _WriteInsidePrologue], ids=lambda m: m.__name__.strip("_"))
def test_writes_in_place_through_views_keep_eagers_answer(model):
    """torch.export without run_decompositions keeps in-place ops and views. A write through a view
    (`y[:, :6].mul_(0)`) or an out= overload to anything a chain reads, between its nodes, must not be
    fused across: the fused op reads its inputs once, where eager read them node by node (pass/aten_ops.h
    aliasRoot; found by a session-49 review: these gave wrong answers, up to 5.0 off)."""
    m = model()
    x, w, r = torch.randn(8, 16), torch.randn(16, 12), torch.randn(8, 12)
    ep2 = fxfuse.rewrite(torch.export.export(m, (x.clone(), w.clone(), r.clone())))
    x2, w2, r2 = torch.randn(8, 16), torch.randn(16, 12), torch.randn(8, 12)
    got_in = [x2.clone(), w2.clone(), r2.clone()]
    want_in = [x2.clone(), w2.clone(), r2.clone()]
    got, want = ep2.module()(*got_in), m(*want_in)
    assert rel_err(got, want) < TOL
    assert all(torch.equal(a, b) for a, b in zip(got_in, want_in)), "the inputs' writes differ from eager's"


def test_rewrite_a_sequential_whose_input_is_named_input():
    """nn.Sequential's forward takes `input`, a Python builtin's name: copying the graph module renames its
    placeholder to `input_1`, and the rewritten program's signature must follow (it raised
    SpecViolationError for every top-level Sequential, found by a session-49 review)."""
    model = torch.nn.Sequential(torch.nn.Linear(16, 12), torch.nn.GELU(approximate="tanh")).eval()
    ep = torch.export.export(model, (torch.randn(6, 16),))
    ep2 = fxfuse.rewrite(ep)
    assert len(_fused_ops(ep2)) == 1
    x = torch.randn(6, 16)
    assert rel_err(ep2.module()(x), model(x)) < TOL
    placeholders = [n.name for n in ep2.graph.nodes if n.op == "placeholder"]
    assert [s.arg.name for s in ep2.graph_signature.input_specs] == placeholders


@pytest.mark.parametrize("bad", [{"min_k": -5}, {"min_k": "8"}, {"min_k": 3.5}, {"extra_outputs": None},
                                 {"arch": "bogus"}, {"arch": "90"}],
                         ids=["negative", "string", "float", "none", "arch", "arch_digits"])
def test_an_option_the_pass_refuses_raises(bad):
    """The C++ pass answers an invalid option value with an error; rewrite and report raise it (they had left
    the program unfused and reported "no GEMM in this graph", found by a session-49 review)."""
    model = MLP(act="relu").eval()
    ep = torch.export.export(model, (torch.randn(8, 32),))
    key = next(iter(bad))
    with pytest.raises(ValueError, match=key):
        fxfuse.rewrite(ep, **bad)
    with pytest.raises(ValueError, match=key):
        fxfuse.report(ep, **bad)


class _IntPlusOne(torch.nn.Module):
    def forward(self, x, w):
        return (x @ w * 1e8).to(torch.int32) + 1


class _IntWhere(torch.nn.Module):
    def forward(self, x, w):
        return torch.where(x @ w > 0, 123456789, -987654321)


class _IntEquals(torch.nn.Module):
    def forward(self, x, w):
        return (x @ w * 0).to(torch.int64) + 16777217 == 16777217


class _IntBeyondDouble(torch.nn.Module):
    def forward(self, x, w):  # 2**60 + 1 is no double: a spec constant held it as 2**60
        return (x @ w * 1e8).to(torch.int64) + (2**60 + 1)


@pytest.mark.parametrize("model", [_IntPlusOne, _IntWhere, _IntEquals, _IntBeyondDouble],
                         ids=lambda m: m.__name__.strip("_"))
def test_integer_epilogue_constants_are_exact(model):
    """Integer ops with Python-int constants in the fused chain give eager's exact integers: the CPU kernel
    passed constants as double Scalars, and ATen computes an int tensor with a double Scalar in float32
    (248507265 came out 248507264; found by a session-49 review). Equality, not closeness."""
    m = model()
    x, w = torch.randn(8, 16), torch.randn(16, 12)
    ep2 = fxfuse.rewrite(torch.export.export(m, (x, w)))
    assert len(_fused_ops(ep2)) == 1
    x2, w2 = torch.randn(8, 16), torch.randn(16, 12)
    assert torch.equal(ep2.module()(x2, w2), m(x2, w2))


@pytest.mark.parametrize("dtype,fill", [(torch.int64, 2.5), (torch.int32, -2.7), (torch.uint8, -1), (torch.bool, 0.5)],
                         ids=["int64", "int32", "uint8_wraps", "bool"])
def test_a_0d_integer_full_holds_its_truncated_value(dtype, fill):
    """`full((), 2.5, dtype=int64)` is 2, `full((), -1, dtype=uint8)` 255 and `full((), 0.5, dtype=bool)` True:
    the chain had read the fill value itself (hunt A and the review, session 53)."""
    class Model(torch.nn.Module):
        def forward(self, x, w):
            return torch.relu(x @ w.t()) * torch.full((), fill, dtype=dtype)

    x, w = torch.randn(10, 32), torch.randn(24, 32)
    ep2 = fxfuse.rewrite(torch.export.export(Model(), (x, w)), only_profitable=False)
    assert len(_fused_ops(ep2)) == 1
    assert rel_err(ep2.module()(x, w), Model()(x, w)) < TOL


class _BeyondFloatRange(torch.nn.Module):
    def forward(self, x, w):
        y = x @ w.t()
        if y.dtype == torch.float32:  # eager's float32 where raises for -1e39 (its bf16 one gives -inf)
            return y * 1e39, y > -1e39
        return y * 1e39, y > -1e39, torch.where(y > 0, y, -1e39)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_constants_beyond_float_range_are_infinite_as_in_eager(dtype):
    """A Python number past float32's range is +-inf in eager's float ops; the CPU kernel raised 'value cannot
    be converted to type float without overflow' (hunt A, session 53)."""
    x, w = torch.randn(10, 32, dtype=dtype), torch.randn(24, 32, dtype=dtype)
    ep2 = fxfuse.rewrite(torch.export.export(_BeyondFloatRange(), (x, w)), only_profitable=False)
    assert len(_fused_ops(ep2)) >= 1
    for got, want in zip(ep2.module()(x, w), _BeyondFloatRange()(x, w)):
        assert got.dtype == want.dtype
        assert torch.equal(got, want) or torch.allclose(got.double(), want.double(), rtol=1e-2, equal_nan=True)


_SCALAR_FORMS_16 = {
    "number_minus_y": lambda y, r, s: 0.3 - y / 7,
    "add_alpha_minus_1": lambda y, r, s: torch.add(y, r, alpha=-1),
    "rsub_alpha_minus_1": lambda y, r, s: torch.rsub(y, r, alpha=-1),
    "add_0d_alpha_minus_1": lambda y, r, s: torch.add(y, s, alpha=-1),
    "sub_number_alpha_minus_1": lambda y, r, s: torch.sub(y, 3.7, alpha=-1),
    "0d_times_y": lambda y, r, s: s * y,
    "0d_over_y": lambda y, r, s: s / y,
    "0d_minus_y": lambda y, r, s: s - y,
    "y_times_0d": lambda y, r, s: y * s,
}


@pytest.mark.parametrize("form", list(_SCALAR_FORMS_16))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_16bit_cpu_chains_round_scalars_and_alpha_where_eager_does(form, dtype):
    """ATen's 16-bit CPU add / sub round alpha and a number or 0-d tensor in either position to the tensor's
    type first, mul / div only in the first position; the chain computed them unrounded in fp32, 1-6 ulps
    off, and with cancellation (rsub) zeros that were not (hunt A, session 53). The GEMM is exact (small
    integers), so the epilogue alone decides: equality, not closeness."""
    fn = _SCALAR_FORMS_16[form]

    class Model(torch.nn.Module):
        def forward(self, x, w, r, s):
            return fn(x @ w.t(), r, s)

    x = torch.randint(-2, 3, (64, 32)).to(dtype)
    w = torch.randint(-2, 3, (48, 32)).to(dtype)
    r = torch.randn(64, 48).to(dtype)
    s = torch.rand(()) + 0.2  # a float32 0-d tensor
    ep2 = fxfuse.rewrite(torch.export.export(Model(), (x, w, r, s)), only_profitable=False)
    assert len(_fused_ops(ep2)) == 1
    assert torch.equal(ep2.module()(x, w, r, s), Model()(x, w, r, s))


@pytest.mark.parametrize("form", ["add", "sub", "rsub", "add_int_other", "add_0d", "sub_number"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_16bit_cpu_add_with_alpha_ends_the_chain(form, dtype):
    """ATen's 16-bit CPU add with alpha other than +-1 has no one answer: its vector body computes x + bf16(alpha)
    * y in fp32, its scalar tail rounds alpha * y to 16 bits first, so an element's value depends on the tensor's
    size (bf16 -3.75 + 3 * 167: 496 at 8 x 16, 498 at 8 x 64; bug hunt, session 55). The chain stops before it;
    the rewritten program gives eager's answer at every size."""
    fn = {"add": lambda y, r, s: torch.add(y, r, alpha=3), "sub": lambda y, r, s: torch.sub(y, r, alpha=0.3),
          "rsub": lambda y, r, s: torch.rsub(y, r, alpha=0.3),
          "add_int_other": lambda y, r, s: torch.add(y, (r * 4).to(torch.int64), alpha=0.3),
          "add_0d": lambda y, r, s: torch.add(y, s, alpha=0.3),
          "sub_number": lambda y, r, s: torch.sub(y, 3.7, alpha=0.3)}[form]

    class Model(torch.nn.Module):
        def forward(self, x, w, r, s):
            return torch.relu(fn(torch.relu(x @ w.t()), r, s))

    for rows, cols in ((8, 16), (8, 64), (3, 48)):
        x = torch.randint(-2, 3, (rows, 32)).to(dtype)
        w = torch.randint(-2, 3, (cols, 32)).to(dtype)
        r = (torch.randint(100, 200, (cols,)) + torch.rand(cols)).to(dtype)
        s = torch.rand(()) + 0.2
        ep2 = fxfuse.rewrite(torch.export.export(Model(), (x, w, r, s)), only_profitable=False)
        (chain,) = _fused_ops(ep2)  # mm + relu: the add stays outside
        assert "add" not in chain.args[1].split("gemm")[1] and "sub " not in chain.args[1], chain.args[1]
        assert torch.equal(ep2.module()(x, w, r, s), Model()(x, w, r, s))


class _Compare16(torch.nn.Module):
    def forward(self, x, w, t):
        y = x @ w
        return y > 0.1, y == 0.3, y >= t, y < 257


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_16bit_comparisons_round_the_scalar_as_eager_does(dtype):
    """Eager compares a 16-bit tensor with a Python number or a 0-d tensor in the 16-bit type: `y > 0.1` is
    `y > bf16(0.1)`. The chain compared in float32 against the unrounded value, so an element equal to the
    rounded constant flipped (found by a session-49 review). The product's diagonal holds exactly those."""
    x = torch.eye(4, 16, dtype=dtype)
    w = torch.randn(16, 8, dtype=dtype)
    w[0, 0], w[1, 1], w[2, 2], w[3, 3] = 0.1, 0.3, 0.7, 257.0  # y[i, i] = each constant rounded to dtype
    t = torch.tensor(0.7)  # a 0-d float32 threshold; bf16(0.7) < 0.7
    m = _Compare16()
    ep2 = fxfuse.rewrite(torch.export.export(m, (x, w, t)))
    assert len(_fused_ops(ep2)) == 1
    for got, want in zip(ep2.module()(x, w, t), m(x, w, t)):
        assert torch.equal(got, want)


class _ResidualOfTheInput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 64)

    def forward(self, x):
        return x + torch.nn.functional.gelu(self.lin(x))


class _Gram(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x @ x.t())


@pytest.mark.parametrize("model", [_ResidualOfTheInput, _Gram], ids=lambda m: m.__name__.strip("_"))
def test_a_tensor_read_in_two_layouts_takes_two_slots(model):
    """x is the GEMM's A ([m,k]) and also the residual ([m,n], K == N), or both A and B (x @ x.t()): the spec
    declares a slot once per dims list, so x takes a slot per layout (the pass had emitted one slot with two dims
    and refused its own spec as an internal error, found by a session-49 review)."""
    m = model().eval()
    ep2 = fxfuse.rewrite(torch.export.export(m, (torch.randn(8, 64),)))
    (node,) = _fused_ops(ep2)
    assert len(node.args[0]) == len(set(a.name for a in node.args[0])) + 1  # x twice
    x = torch.randn(8, 64)
    assert rel_err(ep2.module()(x), m(x)) < TOL


def test_options_and_keyword_options_together_are_an_error():
    """Keyword options beside options= were silently ignored (found by a session-49 review)."""
    from fxfuse.pass_driver import Options

    ep = torch.export.export(MLP(act="relu").eval(), (torch.randn(8, 32),))
    with pytest.raises(TypeError, match="not both"):
        fxfuse.rewrite(ep, options=Options(), min_k=5)
    with pytest.raises(TypeError, match="not both"):
        fxfuse.report(ep, options=Options(), min_k=5)


def test_options_that_are_not_options_are_a_type_error():
    """A dict as options= failed inside: "'dict' object has no attribute 'enabled'" (hunt B, session 53)."""
    ep = torch.export.export(MLP(act="relu").eval(), (torch.randn(8, 32),))
    for call in (lambda: fxfuse.rewrite(ep, options={"min_k": 4}), lambda: fxfuse.report(ep, options={"min_k": 4}),
                 lambda: fxfuse.FxfusePass({"min_k": 4})):
        with pytest.raises(TypeError, match="options must be fxfuse.Options, got dict"):
            call()


class _TransposedFirstOperand(torch.nn.Module):
    def forward(self, x, w, r):
        return r.t() + torch.relu(x @ w)


def test_report_agrees_with_the_rewrite_when_applying_is_refused():
    """apply_plan refuses the rewrite (eager's sum takes the transposed first operand's strides, which the op's
    contiguous output would lose): the report says so, as the rewrite's own does, instead of "fused" (found by a
    session-49 review, on a cast read outside the chain too, which session 53 fuses)."""
    x, w, r = torch.randn(8, 16), torch.randn(16, 12), torch.randn(12, 8)
    ep = torch.export.export(_TransposedFirstOperand(), (x, w, r))
    entries = fxfuse.report(ep).entries
    assert len(_fused_ops(fxfuse.rewrite(ep))) == 0
    assert [e["status"] for e in entries] == ["not_fused"] and entries[0]["reason"] == "apply_rejected"


class _Casts(torch.nn.Module):
    def forward(self, x, w, b):
        return torch.relu((x @ w + b).float()).to(torch.bfloat16)


def test_exports_metadata_checks_add_no_outputs():
    """torch.export puts an `_assert_tensor_metadata` check beside every `.to()`; it read the chain's values and
    so made each an extra output of the fused op (two M x N writes here, one in f32; found by a session-49
    review). The checks go with the values they check, and so do the values: a check had kept the whole unfused
    chain in the program beside the fused op, computed twice (session 56)."""
    m = _Casts()
    x, w, b = (torch.randn(8, 16, dtype=torch.bfloat16), torch.randn(16, 12, dtype=torch.bfloat16),
               torch.randn(12, dtype=torch.bfloat16))
    ep = torch.export.export(m, (x, w, b))
    assert any(n.target == torch.ops.aten._assert_tensor_metadata.default for n in ep.graph.nodes)
    ep2 = fxfuse.rewrite(ep)
    (node,) = _fused_ops(ep2)
    assert len(node.meta["val"]) == 1, "extra outputs for the metadata checks"
    left = [str(n.target) for n in ep2.graph.nodes if n.op == "call_function" and n is not node
            and n.target is not operator.getitem]
    assert not left, f"the unfused chain is still in the program: {left}"
    assert rel_err(ep2.module()(x, w, b), m(x, w, b)) < TOL


class _ResidualFirstInItsLayout(torch.nn.Module):
    """`r + y`: eager's add gives its result r's layout (transposed here), and `.t().view(-1)` relies on it."""
    def forward(self, x, w, r):
        return (r + torch.relu(x @ w)).t().view(-1)


def test_a_chain_whose_output_eager_lays_out_otherwise_is_not_fused():
    """The op writes its outputs contiguous. Where eager's result has another layout (an add whose first
    operand is a transposed residual), the rewritten program's later `.view()` failed ("view size is not
    compatible with input tensor's size and stride") and its outputs' strides differed from eager's; such a
    chain is left unfused (apply_rejected) since the fused op could not give eager's layout."""
    m = _ResidualFirstInItsLayout()
    x, w, r = torch.randn(8, 16), torch.randn(16, 12), torch.randn(12, 8).t()
    for ep in (torch.export.export(m, (x, w, r)), torch.export.export(m, (x, w, r)).run_decompositions()):
        ep2 = fxfuse.rewrite(ep)
        x2, w2, r2 = torch.randn(8, 16), torch.randn(16, 12), torch.randn(12, 8).t()
        got = ep2.module()(x2, w2, r2)
        assert rel_err(got, m(x2, w2, r2)) < TOL
        rep = fxfuse.report(ep)
        assert [e["reason"] for e in rep.entries] == ["apply_rejected"], str(rep)


class _CastMmRelu(torch.nn.Module):
    def forward(self, x, w):
        return torch.relu(x.to(torch.bfloat16) @ w)


@pytest.mark.parametrize("option,chain", [({}, "matmul [A: convert] → relu"), ({"prologue": False}, "matmul → relu"),
                                          ({"epilogue": False}, "matmul [A: convert]"), ({"min_m": 9}, None),
                                          ({"min_n": 13}, None)])
def test_the_options_fxfuse_sends_reach_the_pass(option, chain):
    """Options' min_m, min_n, prologue and epilogue went to the pass, which did not know them: each was
    ignored with an "unknown option" warning and everything fused as without it (found in session 50)."""
    import warnings

    m = _CastMmRelu()
    x, w = torch.randn(8, 16), torch.randn(16, 12, dtype=torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        entries = fxfuse.report(torch.export.export(m, (x, w)), **option).entries
        ep2 = fxfuse.rewrite(torch.export.export(m, (x, w)), **option)
    assert [e.get("chain") for e in entries] == [chain], entries
    assert torch.equal(ep2.module()(x, w), m(x, w))


class _Sub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x):
        return self.lin(x)


class _TwoSubs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sub, self.sub2 = _Sub(), _Sub()

    def forward(self, x, r):
        return torch.tanh(self.sub2(torch.relu(self.sub(x)) + r)) * 2


@pytest.mark.parametrize("decompose", [False, True], ids=["export", "decomp"])
def test_a_preserved_module_call_signature_keeps_its_values(decompose):
    """`preserve_module_call_signature=("sub",)` names sub's output (the linear's value) in the program's module
    call graph; the chain through it replaced that node and the rewrite raised SpecViolationError "Output linear
    does not exist in the graph" (found in session 50). Such a chain is skipped (apply_rejected); the others fuse,
    and the program runs and unflattens."""
    m = _TwoSubs()
    x, r = torch.randn(8, 16), torch.randn(8, 16)
    ep = torch.export.export(m, (x, r), preserve_module_call_signature=("sub",))
    if decompose:
        ep = ep.run_decompositions()
    ep2 = fxfuse.rewrite(ep)
    assert len(_fused_ops(ep2)) == 1
    assert rel_err(ep2.module()(x, r), m(x, r)) < TOL
    assert rel_err(torch.export.unflatten(ep2)(x, r), m(x, r)) < TOL
    assert [e["reason"] for e in fxfuse.report(ep).rejected] == ["apply_rejected"]


def test_a_cpu_scalar_next_to_cuda_tensors_stays_outside_the_chain():
    """A kernel cannot read a CPU tensor: the chain ends before the op that reads it, where it had taken
    it as an input and the CUDA op then refused every call (review, session 53). Fake CUDA tensors, so
    no GPU is needed; test_gpu.py runs the same model."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True):
        model = ScaledByCpuScalar(torch.empty(512, 256, dtype=torch.bfloat16, device="cuda"),
                                   torch.empty(512, dtype=torch.bfloat16, device="cuda"))
        x = torch.empty(64, 256, dtype=torch.bfloat16, device="cuda")
        s = torch.empty((), dtype=torch.float32)
        ep = torch.export.export(model, (x, s))
    rewritten = fxfuse.rewrite(ep, only_profitable=False, arch="sm_90")
    (op,) = _fused_ops(rewritten)
    assert "s" not in [a.name for a in op.args[0]]
    (entry,) = fxfuse.report(ep, only_profitable=False, arch="sm_90").fused
    assert any("an operand on cpu" in note for note in entry["notes"]), entry


class _TensorConstantInForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(32, 64))

    def forward(self, x):
        return torch.relu(x @ self.w * torch.tensor(0.5))


def test_a_tensor_constant_in_forward_fuses():
    """export writes `torch.tensor(0.5)` in forward as lift_fresh_copy then detach_, an in-place op that changes
    no value: it had rejected the GEMM as a mutation (hunt, session 56)."""
    m = _TensorConstantInForward()
    x = torch.randn(8, 32)
    ep = torch.export.export(m, (x,))
    assert any(n.target == torch.ops.aten.detach_.default for n in ep.graph.nodes)
    ep2 = fxfuse.rewrite(ep, only_profitable=False)
    assert len(_fused_ops(ep2)) == 1
    with torch.no_grad():
        assert rel_err(ep2.module()(x), m(x)) < TOL
