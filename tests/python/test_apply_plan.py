"""apply_plan: handcrafted plans on traced graphs (no C++ pass needed): users redirected,
replaced nodes erased, meta["val"] on new nodes, toposort when an outside user comes early,
chained rewrites, and unsafe plans skipped rather than applied."""
from __future__ import annotations

import operator

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

from fxfuse.apply_plan import apply_plan
from helpers import rel_err

SPEC_RELU = "fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [n,k]\n%2 = mm %0 %1 : f32\n" \
            "%3 = input 2 f32 [n]\n%4 = add %2 %3 : f32\n%5 = relu %4 : f32\noutput %5\n"


def traced(fn, *args):
    return make_fx(fn, tracing_mode="fake")(*args)


def names(gm, target):
    return [n.name for n in gm.graph.nodes if n.target == target]


def f_mlp(x, w, b, w2):
    h = torch.relu(torch.addmm(b, x, w.t()))
    return h @ w2.t(), h.sum()


def test_single_rewrite_redirects_and_erases():
    args = (torch.randn(4, 8), torch.randn(16, 8), torch.randn(16), torch.randn(3, 16))
    gm = traced(f_mlp, *args)
    g = gm.graph
    ph = [n.name for n in g.nodes if n.op == "placeholder"]
    t = next(n for n in g.nodes if n.target == torch.ops.aten.t.default and n.args[0].name == ph[1])
    addmm = next(n for n in g.nodes if n.target == torch.ops.aten.addmm.default)
    relu = next(n for n in g.nodes if n.target == torch.ops.aten.relu.default)
    plan = {"rewrites": [{"id": 0, "replaced": [t.name, addmm.name, relu.name], "inputs": [ph[0], ph[1], ph[2]],
                          "outputs": [relu.name], "spec": SPEC_RELU}]}
    res = apply_plan(g, plan)
    gm.recompile()
    assert res.applied == [0] and not res.skipped
    fused = res.fused_nodes[0]
    assert fused.target == torch.ops.fxfuse.gemm_chain.default
    assert [a.name for a in fused.args[0]] == ph[:3] and fused.args[1] == SPEC_RELU
    (gi,) = fused.users
    assert gi.target is operator.getitem and gi.args == (fused, 0)
    assert len(gi.users) == 2  # the mm and the sum
    assert gi.meta["val"].shape == (4, 16) and isinstance(fused.meta["val"], list)
    assert not names(gm, torch.ops.aten.relu.default) and not names(gm, torch.ops.aten.addmm.default)
    out = gm(*args)
    ref = f_mlp(*args)
    assert rel_err(out[0], ref[0]) < 1e-5 and rel_err(out[1], ref[1]) < 1e-5


def f_extra(x, w, b, y):
    a = torch.addmm(b, x, w.t())
    early = a.sum()          # a user of the extra output `a` …
    z = y * 2.0              # … and an input computed after it
    return torch.relu(a) + z, early


SPEC_EXTRA = "fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [n,k]\n%2 = mm %0 %1 : f32\n" \
             "%3 = input 2 f32 [n]\n%4 = add %2 %3 : f32\n%5 = relu %4 : f32\n%6 = input 3 f32 [m,n]\n" \
             "%7 = add %5 %6 : f32\noutput %4\noutput %7\n"


def test_extra_output_user_before_input_is_moved():
    args = (torch.randn(4, 8), torch.randn(16, 8), torch.randn(16), torch.randn(4, 16))
    gm = traced(f_extra, *args)
    g = gm.graph
    ph = [n.name for n in g.nodes if n.op == "placeholder"]
    by = {n.target: n for n in g.nodes if n.op == "call_function"}
    t, addmm, relu = by[torch.ops.aten.t.default], by[torch.ops.aten.addmm.default], by[torch.ops.aten.relu.default]
    mul = by[torch.ops.aten.mul.Tensor]
    add = next(n for n in g.nodes if n.target == torch.ops.aten.add.Tensor)
    plan = {"rewrites": [{"id": 0, "replaced": [t.name, addmm.name, relu.name, add.name],
                          "inputs": [ph[0], ph[1], ph[2], mul.name], "outputs": [addmm.name, add.name],
                          "spec": SPEC_EXTRA}]}
    res = apply_plan(g, plan)
    gm.recompile()
    assert res.applied == [0]
    order = list(g.nodes)
    fused = res.fused_nodes[0]
    sum_node = next(n for n in g.nodes if n.target == torch.ops.aten.sum.default)
    assert order.index(mul) < order.index(fused) < order.index(sum_node)
    out, ref = gm(*args), f_extra(*args)
    assert rel_err(out[0], ref[0]) < 1e-5 and rel_err(out[1], ref[1]) < 1e-5


def test_chained_rewrites_second_takes_first_output():
    def f(x, w1, b1, w2, b2):
        h = torch.relu(torch.addmm(b1, x, w1.t()))
        return torch.relu(torch.addmm(b2, h, w2.t()))

    args = (torch.randn(4, 8), torch.randn(16, 8), torch.randn(16), torch.randn(5, 16), torch.randn(5))
    gm = traced(f, *args)
    g = gm.graph
    ph = [n.name for n in g.nodes if n.op == "placeholder"]
    ts = names(gm, torch.ops.aten.t.default)
    mms = names(gm, torch.ops.aten.addmm.default)
    relus = names(gm, torch.ops.aten.relu.default)
    plan = {"rewrites": [
        {"id": 0, "replaced": [ts[0], mms[0], relus[0]], "inputs": ph[0:3], "outputs": [relus[0]], "spec": SPEC_RELU},
        {"id": 1, "replaced": [ts[1], mms[1], relus[1]], "inputs": [relus[0], ph[3], ph[4]], "outputs": [relus[1]],
         "spec": SPEC_RELU}]}
    res = apply_plan(g, plan)
    gm.recompile()
    assert res.applied == [0, 1]
    assert rel_err(gm(*args), f(*args)) < 1e-5


def test_unsafe_plans_are_skipped():
    args = (torch.randn(4, 8), torch.randn(16, 8), torch.randn(16), torch.randn(3, 16))
    gm = traced(f_mlp, *args)
    g = gm.graph
    before = str(g)
    ph = [n.name for n in g.nodes if n.op == "placeholder"]
    addmm = names(gm, torch.ops.aten.addmm.default)[0]
    relu = names(gm, torch.ops.aten.relu.default)[0]
    plan = {"rewrites": [
        {"id": 0, "replaced": [addmm, "nope"], "inputs": ph[:3], "outputs": [addmm], "spec": SPEC_RELU},
        # addmm is used by relu, outside this region, but is not an output
        {"id": 1, "replaced": [addmm], "inputs": ph[:3], "outputs": [], "spec": SPEC_RELU},
        # an input computed from the region: a cycle
        {"id": 2, "replaced": [addmm], "inputs": [ph[0], relu], "outputs": [addmm], "spec": SPEC_RELU},
    ]}
    res = apply_plan(g, plan)
    assert res.applied == [] and set(res.skipped) == {0, 1, 2}
    assert "unknown node nope" in res.skipped[0]
    assert "outside the region" in res.skipped[1]
    assert "depends on the region" in res.skipped[2]
    assert str(g) == before


def test_rewrite_the_op_disagrees_with_is_skipped():
    """The op's fake kernel is the judge: a spec whose result differs from the graph's (here
    bf16 where the graph has f32) is not applied, and the graph is unchanged."""
    args = (torch.randn(4, 8), torch.randn(16, 8), torch.randn(16), torch.randn(3, 16))
    gm = traced(f_mlp, *args)
    before = str(gm.graph)
    ph = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    t = names(gm, torch.ops.aten.t.default)[0]
    addmm = names(gm, torch.ops.aten.addmm.default)[0]
    relu = names(gm, torch.ops.aten.relu.default)[0]
    bad = SPEC_RELU.replace("%5 = relu %4 : f32", "%5 = relu %4 : bf16")
    res = apply_plan(gm.graph, {"rewrites": [{"id": 0, "replaced": [t, addmm, relu], "inputs": ph[:3],
                                               "outputs": [relu], "spec": bad}]})
    assert res.applied == [] and "bfloat16" in res.skipped[0]
    assert str(gm.graph) == before
