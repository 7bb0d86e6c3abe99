"""GEMMs the pass cannot see: those inside the branches and bodies of control-flow operators
(torch.cond, while_loop, map), which export and Dynamo keep as separate graphs. The pass reads one
graph; these report entries give each such GEMM its named reason instead of "no GEMM"."""
from __future__ import annotations

from typing import Any

import torch

__all__ = ["subgraph_gemm_entries"]

_GEMMS = {"aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.baddbmm.default",
          "aten.linear.default", "aten.matmul.default", "aten._int_mm.default"}


def _subgraphs(graph: torch.fx.Graph, module: torch.nn.Module | None):
    """(name, graph) of each graph module a node of ``graph`` reads by get_attr and hands to an operator."""
    if module is None:
        return
    for node in graph.nodes:
        if node.op != "get_attr" or not node.users:
            continue
        try:
            sub = module.get_submodule(str(node.target))
        except AttributeError:
            continue
        if isinstance(sub, torch.fx.GraphModule):
            yield str(node.target), sub


def subgraph_gemm_entries(graph: torch.fx.Graph, module: torch.nn.Module | None,
                          prefix: str = "") -> list[dict[str, Any]]:
    """A "not_fused" report entry, reason ``control_flow``, for each GEMM in a subgraph of ``graph``
    (nested ones too); ``module`` owns the subgraphs (the graph's owning module)."""
    entries = []
    for name, sub in _subgraphs(graph, module):
        where = prefix + name
        for node in sub.graph.nodes:
            if node.op == "call_function" and str(node.target) in _GEMMS:
                entries.append({"gemm": f"{where}.{node.name}", "status": "not_fused", "reason": "control_flow",
                                "detail": f"inside {where}, a branch or body of a control-flow operator "
                                          "(torch.cond / while_loop / map): the pass does not search those graphs"})
        entries += subgraph_gemm_entries(sub.graph, sub, where + ".")
    return entries
