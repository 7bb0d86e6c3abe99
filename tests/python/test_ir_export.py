"""ir_export: the IR text of known graphs (golden files), every argument kind, and that the
text parses (test reader; ``fxfuse-opt`` when built)."""
from __future__ import annotations

import operator
import os
import shutil
import subprocess

import pytest
import torch
import torch.fx
import torch.nn.functional as F

import _ir_parse
from fxfuse.ir_export import format_float, graph_to_ir
from helpers import ROOT, Block, GatedMLP, Int8Linear, MLP

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
UPDATE = os.environ.get("FXFUSE_UPDATE_GOLDEN") == "1"


def check_golden(name: str, text: str) -> None:
    path = os.path.join(GOLDEN, name)
    if UPDATE or not os.path.exists(path):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        if not UPDATE:
            pytest.skip(f"golden {name} written; rerun")
    with open(path) as f:
        assert text == f.read(), f"{name} differs (FXFUSE_UPDATE_GOLDEN=1 to update)"


def small_graph() -> torch.fx.Graph:
    """Placeholders with meta, kwargs, a multi-output op + getitem, a node without meta."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    x.meta["val"] = torch.empty(4, 8)
    w = g.placeholder("w")
    w.meta["val"] = torch.empty(16, 8, dtype=torch.bfloat16)
    p = g.call_function(torch.ops.aten.permute.default, (w, [1, 0]))
    p.meta["val"] = torch.empty(16, 8, dtype=torch.bfloat16).permute(1, 0)
    c = g.call_function(torch.ops.prims.convert_element_type.default, (p, torch.float32))
    c.meta["val"] = torch.empty(8, 16)
    mm = g.call_function(torch.ops.aten.mm.default, (x, c))
    mm.meta["val"] = torch.empty(4, 16)
    ge = g.call_function(torch.ops.aten.gelu.default, (mm,), {"approximate": "tanh"})
    ge.meta["val"] = torch.empty(4, 16)
    mx = g.call_function(torch.ops.aten.max.dim, (ge, 1, True))
    mx.meta["val"] = (torch.empty(4, 1), torch.empty(4, 1, dtype=torch.int64))
    gi = g.call_function(operator.getitem, (mx, 0))
    gi.meta["val"] = torch.empty(4, 1)
    odd = g.call_function(torch.ops.aten.add.Tensor, (gi, 1e-6), {"alpha": 0.5})  # no meta: '?'
    full = g.call_function(torch.ops.aten.full.default, ([2, 3], float("-inf")),
                           {"dtype": torch.bfloat16, "device": torch.device("cpu"), "layout": torch.strided,
                            "pin_memory": False})
    full.meta["val"] = None
    s = g.call_function(torch.ops.aten.where.self, (None, 'a "quoted"\\ \n str', -3))
    g.output((ge, odd, full, s))
    return g


def test_small_graph_text():
    text = graph_to_ir(small_graph())
    check_golden("small_graph.ir", text)
    assert "%permute_default : bf16[8,16]{1,8}@cpu = aten.permute.default(%w, [1, 0])" in text
    assert "prims.convert_element_type.default(%permute_default, f32)" in text
    assert 'aten.gelu.default(%mm_default, approximate="tanh")' in text
    assert "%max_dim : (f32[4,1]{1,1}@cpu, i64[4,1]{1,1}@cpu) = aten.max.dim(%gelu_default, 1, true)" in text
    assert "%getitem : f32[4,1]{1,1}@cpu = operator.getitem(%max_dim, 0)" in text
    assert "%add_tensor : ? = aten.add.Tensor(%getitem, 9.9999999999999995e-07, alpha=0.5)" in text
    assert ("aten.full.default([2, 3], -inf, dtype=bf16, device=device(cpu), layout=enum(strided), "
            "pin_memory=false)") in text
    assert r'"a \"quoted\"\\ \n str"' in text
    assert "  output (%gelu_default, %add_tensor, %full_default, %where_self)" in text
    nodes, outs = _ir_parse.parse(text)
    assert [n.name for n in nodes][:3] == ["x", "w", "permute_default"]
    assert nodes[-2].type == "none"


@pytest.mark.parametrize("x,text", [(1.0, "1.0"), (0.5, "0.5"), (0.1, "0.10000000000000001"), (1e300, "1.0000000000000001e+300"),
                                    (-2.0, "-2.0"), (float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan"),
                                    (0.7978845608028654, "0.79788456080286541")])
def test_floats_round_trip(x, text):
    assert format_float(x) == text
    assert float(text) == x or (x != x and text == "nan")


def capture_post_grad(fn, *args, dynamic=False):
    """IR text of the post-grad graph(s) Inductor hands to the custom pass."""
    import torch._inductor.config as cfg

    graphs = []
    with cfg.patch(post_grad_custom_post_pass=lambda g: graphs.append(graph_to_ir(g)), fx_graph_cache=False):
        torch._dynamo.reset()
        torch.compile(fn, dynamic=dynamic)(*args)
    return graphs


def test_symbolic_dims():
    x = torch.randn(8, 16)
    torch._dynamo.mark_dynamic(x, 0)
    (text,) = capture_post_grad(lambda x, w: torch.relu(x @ w.t()), x, torch.randn(32, 16))
    nodes, _ = _ir_parse.parse(text)
    mm = next(n for n in nodes if n.op == "aten.mm.default")
    assert isinstance(mm.type.dims[0], str) and mm.type.dims[1] == 32
    assert any(n.type == "sym" for n in nodes)


def test_3d_symbolic_strides_parse():
    (text,) = capture_post_grad(lambda x, w: F.relu(F.linear(x, w)), torch.randn(2, 5, 16), torch.randn(32, 16), dynamic=True)
    nodes, _ = _ir_parse.parse(text)
    x = next(n for n in nodes if n.op == "placeholder" and n.type != "sym" and len(n.type.dims) == 3)
    assert any(isinstance(s, str) and s.startswith("(") for s in x.type.strides), x.type


@pytest.mark.parametrize("make", [lambda: (MLP(), torch.randn(4, 32)), lambda: (Block(), torch.randn(2, 5, 32)),
                                  lambda: (GatedMLP(), torch.randn(4, 32)), lambda: (Int8Linear(), torch.randn(4, 32))],
                         ids=["mlp", "block", "gated", "int8"])
def test_real_graphs_parse(make):
    model, x = make()
    for text in capture_post_grad(model, x):
        _ir_parse.parse(text)
    ep = torch.export.export(model, (x,))
    _ir_parse.parse(graph_to_ir(ep.graph))
    _ir_parse.parse(graph_to_ir(ep.run_decompositions().graph))


def _fxfuse_opt():
    for build in ("build-py", "build"):
        path = os.path.join(ROOT, build, "tools", "fxfuse-opt")
        if os.path.exists(path):
            return path
    return shutil.which("fxfuse-opt")


@pytest.mark.parametrize("make", [lambda: (MLP(), torch.randn(4, 32)), lambda: (Block(), torch.randn(2, 5, 32))], ids=["mlp", "block"])
def test_round_trip_through_fxfuse_opt(make, tmp_path):
    tool = _fxfuse_opt()
    if tool is None:
        pytest.skip("fxfuse-opt is not built")
    model, x = make()
    texts = capture_post_grad(model, x) + [graph_to_ir(torch.export.export(model, (x,)).graph)]
    for i, text in enumerate(texts):
        path = tmp_path / f"g{i}.ir"
        path.write_text(text)
        res = subprocess.run([tool, str(path)], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr + "\n" + text


def test_known_values_state_small_integer_tables_and_k_group_indices():
    """The contents the IR states of a buffer (docs/ir.md): the pass folds GPTQ's storage on them."""
    from fxfuse.ir_export import known_values_text

    assert known_values_text(torch.arange(0, 32, 4, dtype=torch.int32).unsqueeze(0)) == \
        " values [0, 4, 8, 12, 16, 20, 24, 28]"
    assert known_values_text(torch.tensor([-3], dtype=torch.int8)) == " values [-3]"
    K, G = 4096, 128
    g_idx = torch.arange(K, dtype=torch.int32) // G
    assert known_values_text(g_idx) == f" kgroups {G}"
    assert known_values_text(g_idx.long()) == f" kgroups {G}"
    assert known_values_text(torch.arange(100) // 7) == " kgroups 7"  # a ragged last group is still the rule
    # not stated: an act-order permutation, a 2-D table beyond 64 elements, floats, a fake tensor, nothing
    assert known_values_text(g_idx[torch.randperm(K)]) == ""
    assert known_values_text(g_idx.flip(0)) == ""
    assert known_values_text(torch.zeros(K, dtype=torch.int32)) == f" kgroups {K}"  # one group: i // K
    assert known_values_text(torch.arange(128).view(2, 64)) == ""
    assert known_values_text(torch.arange(8.0)) == ""
    assert known_values_text(None) == ""
    with torch._subclasses.FakeTensorMode():
        fake = torch.arange(8, dtype=torch.int32)
    assert known_values_text(fake) == ""
