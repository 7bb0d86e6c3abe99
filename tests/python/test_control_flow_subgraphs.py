"""GEMM chains inside the branches and bodies of torch.cond / while_loop / map (separate graph modules of an
exported program): fxfuse.rewrite fuses them in rewritten copies of those subgraphs, nested ones too, and
fxfuse.report names each of their GEMMs once by its path (``true_graph_0.linear``) without changing the
program; a subgraph whose rewrite fails stays as it was, with a named reason; under the torch.compile backend
Inductor runs the pass on each subgraph as a graph of its own, and the top graph's run leaves them to it."""
from __future__ import annotations

import copy
import itertools
import warnings

import pytest
import torch
import torch.nn.functional as F

import fxfuse
from fxfuse.pass_driver import Options, run_on_graph
from helpers import rel_err, run_python

TOL = 1e-4


def _gelu_of(linear, x):
    return F.gelu(linear(x), approximate="tanh")


class _CondGelu(torch.nn.Module):
    """A fusable chain (linear + bias + tanh GELU) in each branch of a torch.cond on the input's sign."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 12), torch.nn.Linear(16, 12)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: _gelu_of(self.a, x), lambda x: _gelu_of(self.b, x), (x,))


class _NestedCond(torch.nn.Module):
    """A cond inside a cond's true branch, predicates given as inputs so a test takes every path."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = (torch.nn.Linear(16, 16) for _ in range(3))

    def forward(self, x, p, q):
        def outer_true(x, q):
            y = _gelu_of(self.a, x)
            return torch.cond(q, lambda y: _gelu_of(self.b, y), lambda y: torch.relu(self.c(y)), (y,))

        return torch.cond(p, outer_true, lambda x, q: _gelu_of(self.c, x), (x, q))


NESTED_GEMMS = {"true_graph_0.linear", "true_graph_0.true_graph_0.linear", "true_graph_0.false_graph_0.linear",
                "false_graph_0.linear"}


class _MapBody(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w, self.b = torch.nn.Parameter(torch.randn(16, 12) / 4), torch.nn.Parameter(torch.randn(12))

    def forward(self, xs):
        from torch._higher_order_ops.map import map as map_over_rows

        return map_over_rows(lambda x, w, b: F.gelu(x @ w + b, approximate="tanh"), xs, self.w, self.b)


class _WhileBody(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w, self.b = torch.nn.Parameter(torch.randn(16, 16) / 4), torch.nn.Parameter(torch.randn(16))

    def forward(self, i, x):
        from torch._higher_order_ops.while_loop import while_loop

        w, b = self.w, self.b
        return while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, F.gelu(x @ w + b, approximate="tanh")), (i, x))


def _fused_op_count(gm: torch.fx.GraphModule) -> int:
    """The fused ops in ``gm``'s own graph (not in its subgraphs)."""
    return sum(1 for n in gm.graph.nodes if n.target == torch.ops.fxfuse.gemm_chain.default)


def _graph_texts(ep) -> dict[str, str]:
    return {name: mod.code for name, mod in ep.graph_module.named_modules() if isinstance(mod, torch.fx.GraphModule)}


def _as_list(out) -> list[torch.Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _signed(sign: float, *shape: int) -> torch.Tensor:
    """Fresh random values of one sign, so that a cond on the input's sum takes a known branch."""
    return sign * (torch.rand(*shape) + 0.1)


@pytest.mark.parametrize("decompose", [False, True], ids=["training_ir", "decomposed"])
def test_cond_branches_are_fused_and_reported_by_path(decompose):
    m = _CondGelu()
    ep = torch.export.export(m, (torch.randn(4, 16),))
    if decompose:
        ep = ep.run_decompositions()
    gemm = "addmm" if decompose else "linear"
    rep = fxfuse.report(ep)
    assert sorted(e["gemm"] for e in rep.entries) == [f"false_graph_0.{gemm}", f"true_graph_0.{gemm}"], str(rep)
    assert len(rep.fused) == 2, str(rep)
    assert sorted(e["rewrite"] for e in rep.fused) == ["false_graph_0.0", "true_graph_0.0"]
    assert "control_flow" not in str(rep)

    fxfuse.reset_stats()
    ep2 = fxfuse.rewrite(ep)
    assert _fused_op_count(ep2.graph_module) == 0
    assert _fused_op_count(ep2.graph_module.true_graph_0) == 1
    assert _fused_op_count(ep2.graph_module.false_graph_0) == 1
    s = fxfuse.stats()
    assert (s["gemms_seen"], s["chains_fused"], s["rewrites_skipped"]) == (2, 2, 0)
    for sign in (1.0, -1.0, 1.0, -1.0):  # both branches, fresh inputs each time
        x = _signed(sign, 4, 16)
        assert rel_err(ep2.module()(x), m(x)) < TOL


def test_report_and_rewrite_leave_the_programs_subgraphs_as_they_were():
    ep = torch.export.export(_NestedCond(), (torch.randn(4, 16), torch.tensor(True), torch.tensor(False)))
    before = _graph_texts(ep)
    modules = dict(ep.graph_module.named_modules())
    assert len(fxfuse.report(ep).fused) == 4
    fxfuse.rewrite(ep)
    assert _graph_texts(ep) == before
    assert all(mod is modules[name] for name, mod in ep.graph_module.named_modules())
    assert sum(_fused_op_count(mod) for mod in modules.values() if isinstance(mod, torch.fx.GraphModule)) == 0


def test_report_of_a_rewritten_program_counts_the_fused_ops_in_its_branches():
    """Reporting on a program whose chains were fused inside its cond branches said chains_fused=0 and no "fused
    before" line (session 59's hunt): its count had read the top graph's nodes only."""
    ep2 = fxfuse.rewrite(torch.export.export(_NestedCond(), (torch.randn(4, 16), torch.tensor(True), torch.tensor(False))))
    n = sum(_fused_op_count(mod) for _, mod in ep2.graph_module.named_modules() if isinstance(mod, torch.fx.GraphModule))
    assert n == 4
    assert "4 chain(s) fused before" in str(fxfuse.report(ep2))


def test_report_with_enabled_false_fuses_nothing_as_rewrite_does():
    """report(ep, enabled=False) had said "fused" where rewrite(ep, enabled=False) fuses nothing (session 59's hunt).
    Every GEMM is named, the branches' too."""
    ep = torch.export.export(_CondGelu(), (torch.randn(4, 16),))
    rep = fxfuse.report(ep, enabled=False)
    assert not rep.fused
    assert sorted((e["gemm"], e["reason"]) for e in rep.entries) == [("false_graph_0.linear", "disabled"),
                                                                   ("true_graph_0.linear", "disabled")], str(rep)
    ep2 = fxfuse.rewrite(ep, enabled=False)
    assert sum(_fused_op_count(mod) for _, mod in ep2.graph_module.named_modules()
               if isinstance(mod, torch.fx.GraphModule)) == 0


def test_a_nested_cond_is_fused_at_every_level():
    m = _NestedCond()
    ep = torch.export.export(m, (torch.randn(4, 16), torch.tensor(True), torch.tensor(False)))
    rep = fxfuse.report(ep)
    assert sorted(e["gemm"] for e in rep.entries) == sorted(NESTED_GEMMS), str(rep)  # each once
    assert len(rep.fused) == 4, str(rep)
    assert rep.graphs[0][1]["counters"]["gemms_seen"] == 4

    ep2 = fxfuse.rewrite(ep)
    gm = ep2.graph_module
    assert [_fused_op_count(g) for g in (gm, gm.true_graph_0, gm.true_graph_0.true_graph_0,
                                         gm.true_graph_0.false_graph_0, gm.false_graph_0)] == [0, 1, 1, 1, 1]
    for p, q in itertools.product((True, False), repeat=2):
        x = torch.randn(4, 16)
        args = (x, torch.tensor(p), torch.tensor(q))
        assert rel_err(ep2.module()(*args), m(*args)) < TOL, (p, q)


@pytest.mark.parametrize("make", [lambda: (_MapBody(), lambda: (torch.randn(3, 4, 16),)),
                                  lambda: (_WhileBody(), lambda: (torch.tensor(0), torch.randn(4, 16)))],
                         ids=["map", "while_loop"])
def test_map_and_while_loop_bodies_are_fused(make):
    m, inputs = make()
    ep = torch.export.export(m, inputs())
    rep = fxfuse.report(ep)
    assert len(rep.entries) == 1 and len(rep.fused) == 1, str(rep)
    body = rep.fused[0]["gemm"].split(".")[0]
    ep2 = fxfuse.rewrite(ep)
    assert _fused_op_count(getattr(ep2.graph_module, body)) == 1
    for _ in range(2):
        args = inputs()
        got, want = _as_list(ep2.module()(*args)), _as_list(m(*args))
        assert len(got) == len(want) and all(rel_err(g, w) < TOL for g, w in zip(got, want))


def test_cond_with_a_dynamic_batch():
    m = _CondGelu()
    batch = torch.export.Dim("batch", min=2, max=1024)
    ep = torch.export.export(m, (torch.randn(8, 16),), dynamic_shapes={"x": {0: batch}})
    ep2 = fxfuse.rewrite(ep)
    assert _fused_op_count(ep2.graph_module.true_graph_0) == 1
    for rows, sign in ((3, 1.0), (40, -1.0), (40, 1.0)):
        x = _signed(sign, rows, 16)
        assert rel_err(ep2.module()(x), m(x)) < TOL


def test_signature_names_pin_values_of_the_top_graph_only():
    """`preserve_module_call_signature` names the top graph's value `linear`; each branch has a node of that
    name too, which may be replaced: the names are the top graph's."""
    class Sub(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x):
            return self.lin(x)

    class Model(_CondGelu):
        def __init__(self):
            super().__init__()
            self.sub = Sub()

        def forward(self, x):
            y = self.sub(x)
            return torch.cond(x.sum() > 0, lambda y: _gelu_of(self.a, y), lambda y: _gelu_of(self.b, y), (y,))

    m = Model()
    ep = torch.export.export(m, (torch.randn(4, 16),), preserve_module_call_signature=("sub",))
    rep = fxfuse.report(ep)
    assert sorted(e["gemm"] for e in rep.fused) == ["false_graph_0.linear", "true_graph_0.linear"], str(rep)
    assert [e["gemm"] for e in rep.rejected] == ["linear"]  # sub's bare GEMM, at the top
    ep2 = fxfuse.rewrite(ep)
    for sign in (1.0, -1.0):
        x = _signed(sign, 4, 16)
        assert rel_err(ep2.module()(x), m(x)) < TOL
        assert rel_err(torch.export.unflatten(ep2)(x), m(x)) < TOL


def _failing_on(graph_has):
    """apply_plan that raises on a graph for which ``graph_has(graph)`` holds."""
    from fxfuse.apply_plan import apply_plan

    def apply(graph, plan, keep=frozenset()):
        if graph_has(graph):
            raise RuntimeError("injected failure")
        return apply_plan(graph, plan, keep)

    return apply


def _holds_relu(graph):
    return any(n.target == torch.ops.aten.relu.default for n in graph.nodes)


def _holds_a_subgraph(graph):
    return any(n.op == "get_attr" for n in graph.nodes)


@pytest.mark.parametrize("failing, unfused", [
    (_holds_relu, {"true_graph_0.false_graph_0.linear"}),
    (_holds_a_subgraph, {"true_graph_0.linear", "true_graph_0.true_graph_0.linear",
                         "true_graph_0.false_graph_0.linear"}),
], ids=["inner", "outer"])
def test_a_subgraph_whose_rewrite_fails_is_left_unfused(monkeypatch, failing, unfused):
    """The inner subgraph failing leaves its enclosing one fused; the outer failing leaves it and its nested
    ones as they were. The program still computes eager's values on every path."""
    import fxfuse.subgraph_fusion

    monkeypatch.setattr(fxfuse.subgraph_fusion, "apply_plan", _failing_on(failing))
    m = _NestedCond()
    ep = torch.export.export(m, (torch.randn(4, 16), torch.tensor(True), torch.tensor(False)))
    with pytest.warns(RuntimeWarning, match="injected failure"):
        rep = fxfuse.report(ep)
    assert sorted(e["gemm"] for e in rep.entries) == sorted(NESTED_GEMMS), str(rep)
    assert {e["gemm"] for e in rep.rejected} == unfused, str(rep)
    assert {e["reason"] for e in rep.rejected} == {"subgraph_rewrite_failed"}

    fxfuse.reset_stats()
    with pytest.warns(RuntimeWarning, match="injected failure"):
        ep2 = fxfuse.rewrite(ep)
    assert fxfuse.stats()["rejections"] == {"subgraph_rewrite_failed": len(unfused)}
    assert fxfuse.stats()["chains_fused"] == 4 - len(unfused)
    inner = ep2.graph_module.true_graph_0.false_graph_0
    assert _fused_op_count(inner) == 0
    assert any(n.target == torch.ops.aten.linear.default for n in inner.graph.nodes)
    for p, q in itertools.product((True, False), repeat=2):
        args = (torch.randn(4, 16), torch.tensor(p), torch.tensor(q))
        assert rel_err(ep2.module()(*args), m(*args)) < TOL, (p, q)


def test_the_pass_failing_on_a_subgraph_warns_once_naming_it(monkeypatch):
    """An error of the pass itself on a subgraph's graph is one warning, naming the subgraph (the graph-level
    warning of pass_driver.plan_for_graph is left to the caller there), and the subgraph's GEMMs are
    subgraph_rewrite_failed."""
    import json

    import fxfuse._C as C

    real = C.run_pass

    def run_pass(ir_text, opts):
        if "relu" in ir_text and "cond" not in ir_text:  # the innermost branch only
            return json.dumps({"error": "injected pass error"})
        return real(ir_text, opts)

    monkeypatch.setattr(C, "run_pass", run_pass)
    ep = torch.export.export(_NestedCond(), (torch.randn(4, 16), torch.tensor(True), torch.tensor(False)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = fxfuse.report(ep)
    said = [str(w.message) for w in caught if "injected pass error" in str(w.message)]
    assert len(said) == 1 and "true_graph_0.false_graph_0" in said[0], said
    assert {e["gemm"] for e in rep.rejected} == {"true_graph_0.false_graph_0.linear"}, str(rep)
    assert {e["reason"] for e in rep.rejected} == {"subgraph_rewrite_failed"}


SUBPROCESS_CHECK = """
import torch, fxfuse
ep = torch.export.load(sys.argv[1])
cases = torch.load(sys.argv[2])
assert not any(n.target == torch.ops.fxfuse.gemm_chain.default for n in ep.graph.nodes)
for branch in ("true_graph_0", "false_graph_0"):
    assert any(n.target == torch.ops.fxfuse.gemm_chain.default for n in getattr(ep.graph_module, branch).graph.nodes)
for x, ref in cases:
    out = ep.module()(x)
    err = ((out - ref).norm() / ref.norm()).item()
    print("rel_err", err)
    if not err < 1e-4:
        sys.exit(3)
"""


def test_a_rewritten_cond_saves_and_loads_in_a_fresh_process(tmp_path):
    m = _CondGelu()
    ep2 = fxfuse.rewrite(torch.export.export(m, (torch.randn(4, 16),)))
    path = tmp_path / "cond.pt2"
    torch.export.save(ep2, str(path))
    cases = [(x, m(x).detach()) for x in (_signed(1.0, 4, 16), _signed(-1.0, 4, 16))]
    torch.save(cases, str(tmp_path / "io.pt"))
    res = run_python(SUBPROCESS_CHECK, str(path), str(tmp_path / "io.pt"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("rel_err") == 2


def test_run_on_graph_leaves_subgraphs_unsearched_by_default():
    """The torch.compile backend's call: the subgraphs' GEMMs are reported as control_flow, their graphs
    are not touched."""
    ep = torch.export.export(_CondGelu(), (torch.randn(4, 16),))
    gm = copy.deepcopy(ep.graph_module)
    branches = (gm.true_graph_0, gm.false_graph_0)
    texts = [b.code for b in branches]
    result = run_on_graph(gm.graph, Options())
    assert [(e["gemm"], e["reason"]) for e in result.plan["report"]] == [
        ("true_graph_0.linear", "control_flow"), ("false_graph_0.linear", "control_flow")]
    assert (gm.true_graph_0, gm.false_graph_0) == branches and [b.code for b in branches] == texts
    assert result.subgraphs == []


class _CondPackedGemm(torch.nn.Module):
    """A branch whose only GEMM is one the pass names but does not match (packed int8 weights)."""

    def forward(self, x, w, s):
        return torch.cond(x.sum() > 0, lambda x: torch._weight_int8pack_mm(x, w, s), lambda x: x[:, :12] * 2, (x,))


@pytest.mark.needs_real_pass
def test_a_branch_gemm_the_pass_names_unsupported_is_reported_by_the_backend_too():
    """The subgraphs' GEMMs are found by the pass's own list (fxfuse._C.is_gemm_op): a packed-weight GEMM,
    which the pass's report names unsupported_gemm_op, is not missing from the backend's report (it was,
    while Python kept a shorter copy of the list)."""
    args = (torch.randn(4, 16, dtype=torch.bfloat16), torch.randint(-100, 100, (12, 16), dtype=torch.int8),
            torch.rand(12, dtype=torch.bfloat16) + 0.5)
    ep = torch.export.export(_CondPackedGemm(), args)
    (entry,) = fxfuse.report(ep).entries
    assert (entry["gemm"], entry["reason"]) == ("true_graph_0._weight_int8pack_mm", "unsupported_gemm_op"), entry
    result = run_on_graph(copy.deepcopy(ep.graph_module).graph, Options())
    assert [(e["gemm"], e["reason"]) for e in result.plan["report"]] == [
        ("true_graph_0._weight_int8pack_mm", "control_flow")]
    assert fxfuse._C.is_gemm_op("aten.mm.dtype") and not fxfuse._C.is_gemm_op("aten.add.Tensor")


class _CondBareGemm(torch.nn.Module):
    """A branch with a bare GEMM (nothing to fuse), so a GEMM stays in the subgraph after Inductor's own
    pass over it."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 12), torch.nn.Linear(16, 12, bias=False)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: _gelu_of(self.a, x), lambda x: self.b(x), (x,))


def test_the_compile_backend_reports_each_branch_gemm_once_by_its_own_graph():
    """Inductor passes each branch through the pass as a graph of its own (the fused branch runs the
    fused op); the top graph's run neither searches nor reports them, so the GEMM left in a branch is
    named once, by its own graph's run, with that run's reason, not also ``control_flow`` (it was, before
    session 51)."""
    m = _CondBareGemm().eval()
    fxfuse.reset_stats()
    compiled = torch.compile(m, backend="fxfuse")
    with torch.no_grad():
        for sign in (1.0, -1.0):
            x = _signed(sign, 4, 16)
            assert rel_err(compiled(x), m(x)) < TOL
    entries = [e for _, plan, _ in fxfuse.report().graphs for e in plan.get("report") or []]
    assert not any(e.get("reason") == "control_flow" for e in entries), entries
    fused = [e for e in entries if e.get("status") == "fused"]
    bare = [e for e in entries if e.get("status") != "fused"]
    assert len(fused) == 1 and len(bare) == 1, entries  # the GELU branch's GEMM, the bare one's
    assert bare[0]["reason"] != "control_flow", bare


class _AutocastGelu(torch.nn.Module):
    """A fusable-looking chain inside a torch.autocast region: export keeps its body as a graph of
    wrap_with_autocast whose nodes state float32, while the region runs the GEMM in bfloat16."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 12)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return _gelu_of(self.a, x)


def test_an_autocast_regions_body_is_not_rewritten():
    """Only control-flow subgraphs are searched: a chain rewritten from an autocast body's graph would run its
    GEMM in float32 where the region runs it in bfloat16 (a session-51 review found fxfuse.rewrite doing so).
    The body stays as it was, its GEMM reported ``wrapped_region``, and the program computes what it did."""
    m = _AutocastGelu()
    ep = torch.export.export(m, (torch.randn(4, 16),))
    bodies = [name for name, sub in ep.graph_module.named_children() if isinstance(sub, torch.fx.GraphModule)]
    if not bodies:
        pytest.skip("this torch inlines the autocast region at export: nothing wrapped to test")
    texts = _graph_texts(ep)
    rep = fxfuse.report(ep)
    assert [e["reason"] for e in rep.rejected] == ["wrapped_region"], str(rep)
    assert not rep.fused, str(rep)
    ep2 = fxfuse.rewrite(ep)
    assert _graph_texts(ep2) == texts
    assert all(_fused_op_count(getattr(ep2.graph_module, b)) == 0 for b in bodies)
    x = torch.randn(4, 16)
    assert rel_err(ep2.module()(x), ep.module()(x)) == 0


def test_the_dump_has_a_folder_for_each_rewritten_subgraph(tmp_path):
    """dump_dir: besides the program's folder, one per rewritten subgraph with its graphs, report and chains
    (before session 51 a subgraph's chains had no spec or kernel file)."""
    fxfuse.rewrite(torch.export.export(_CondGelu(), (torch.randn(4, 16),)), dump_dir=str(tmp_path))
    folders = sorted(p.name for p in tmp_path.iterdir())
    assert len(folders) == 3 and any(f.endswith("export") for f in folders), folders
    for branch in ("true_graph_0", "false_graph_0"):
        (folder,) = [tmp_path / f for f in folders if f.endswith(f"export.{branch}")]
        files = {p.name for p in folder.iterdir()}
        assert {"graph_before.txt", "graph_after.txt", "before.ir", "after.ir", "report.json", "chain_0.spec"} <= files
        assert "gemm_chain" in (folder / "graph_after.txt").read_text()
        assert "gemm_chain" not in (folder / "graph_before.txt").read_text()
        assert "linear" in (folder / "before.ir").read_text()


def test_a_subgraph_read_by_two_get_attr_nodes_is_reported_once():
    from fxfuse.subgraphs import subgraph_gemm_entries, subgraph_modules

    ep = torch.export.export(_CondGelu(), (torch.randn(4, 16),))
    gm = copy.deepcopy(ep.graph_module)
    cond = next(n for n in gm.graph.nodes if n.target == torch.ops.higher_order.cond)
    with gm.graph.inserting_before(cond):
        again = gm.graph.get_attr("true_graph_0")
    cond.update_arg(2, again)  # both branches read true_graph_0: once through each get_attr node
    gm.graph.eliminate_dead_code()
    assert [name for name, _ in subgraph_modules(gm.graph, gm)] == ["true_graph_0"]
    assert [e["gemm"] for e in subgraph_gemm_entries(gm.graph, gm)] == ["true_graph_0.linear"]
