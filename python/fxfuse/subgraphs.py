"""The graphs inside a graph: the branches and bodies of control-flow operators (torch.cond,
while_loop, map), which export and Dynamo keep as separate graph modules, and the GEMMs in them.
Where the pass does not search those graphs (the torch.compile backend), these report entries give
each such GEMM its named reason instead of "no GEMM"; subgraph_fusion.py searches them."""
from __future__ import annotations

from typing import Any

import torch

__all__ = ["CONTROL_FLOW_OPS", "subgraph_modules", "subgraph_gemms", "not_fused_entries", "subgraph_gemm_entries",
           "wrapped_gemm_entries"]


def _is_gemm(node: torch.fx.Node) -> bool:
    """A matrix product by the pass's own list (pass/gemm_anchor.h): one it matches or one it names."""
    from . import _C

    return node.op == "call_function" and _C.is_gemm_op(str(node.target))


# The higher-order operators whose subgraphs are control flow: each runs its graph as the program
# would, in the program's dtypes, so the pass may rewrite it as a graph of its own. Others (a
# torch.autocast region's wrap_with_autocast, whose body's GEMMs run in the region's dtype, not the
# one its graph states; set_grad_enabled's wrap; any operator not listed) are not searched.
CONTROL_FLOW_OPS = frozenset({"cond", "while_loop", "map_impl", "scan"})


def _hop_name(node: torch.fx.Node) -> str:
    name = getattr(node.target, "name", None)
    return name() if callable(name) else str(node.target)


def subgraph_modules(graph: torch.fx.Graph, module: torch.nn.Module | None,
                     control_flow: bool = True) -> list[tuple[str, torch.fx.GraphModule]]:
    """(attribute name, graph module) of each graph module a node of ``graph`` reads by get_attr and hands
    to an operator; ``module`` owns them (the graph's owning module). ``control_flow``: those every reader
    of which is a control-flow operator (CONTROL_FLOW_OPS); else the others. Each once, though several
    get_attr nodes read it: its GEMMs are reported, and its graph rewritten, once."""
    if module is None:
        return []
    found: dict[str, torch.fx.GraphModule] = {}
    for node in graph.nodes:
        if node.op != "get_attr" or not node.users or str(node.target) in found:
            continue
        try:
            sub = module.get_submodule(str(node.target))
        except AttributeError:
            continue
        flow = all(u.op == "call_function" and _hop_name(u) in CONTROL_FLOW_OPS for u in node.users)
        if isinstance(sub, torch.fx.GraphModule) and flow == control_flow:
            found[str(node.target)] = sub
    return list(found.items())


def subgraph_gemms(name: str, sub: torch.fx.GraphModule) -> list[tuple[str, torch.fx.Node]]:
    """(path of its graph, node) of each GEMM of the subgraph ``sub``, named ``name``, and of the subgraphs
    nested in it: paths ``name``, ``name.<inner>``, ..."""
    found = [(name, node) for node in sub.graph.nodes if _is_gemm(node)]
    for flow in (True, False):
        for inner, nested in subgraph_modules(sub.graph, sub, control_flow=flow):
            found += subgraph_gemms(f"{name}.{inner}", nested)
    return found


def not_fused_entries(name: str, sub: torch.fx.GraphModule, reason: str, detail: str) -> list[dict[str, Any]]:
    """A "not_fused" report entry with ``reason`` for each GEMM of ``sub`` and its nested subgraphs, named
    ``<path>.<node>``; ``detail``: its text, where ``{where}`` stands for the path."""
    return [{"gemm": f"{where}.{node.name}", "status": "not_fused", "reason": reason,
             "detail": detail.replace("{where}", where)} for where, node in subgraph_gemms(name, sub)]


def subgraph_gemm_entries(graph: torch.fx.Graph, module: torch.nn.Module | None) -> list[dict[str, Any]]:
    """A "not_fused" report entry, reason ``control_flow``, for each GEMM in a control-flow subgraph of
    ``graph`` (nested ones too), and reason ``wrapped_region`` for each in another operator's subgraph;
    ``module`` owns the subgraphs (the graph's owning module)."""
    entries = []
    for name, sub in subgraph_modules(graph, module):
        entries += not_fused_entries(
            name, sub, "control_flow", "inside {where}, a branch or body of a control-flow operator (torch.cond / "
            "while_loop / map), which this graph's run does not search (under torch.compile, Inductor passes it "
            "through the pass as a graph of its own; fxfuse.rewrite searches it)")
    return entries + wrapped_gemm_entries(graph, module)


def wrapped_gemm_entries(graph: torch.fx.Graph, module: torch.nn.Module | None) -> list[dict[str, Any]]:
    """A "not_fused" entry, reason ``wrapped_region``, for each GEMM in a subgraph of ``graph`` that is not
    control flow: a torch.autocast or set_grad_enabled region's body (wrap_with_autocast / _set_grad_enabled),
    which no mode searches: an autocast body's GEMMs run in the region's dtype, not the one its graph states."""
    entries = []
    for name, sub in subgraph_modules(graph, module, control_flow=False):
        entries += not_fused_entries(
            name, sub, "wrapped_region", "inside {where}, the body of a higher-order operator that is not control "
            "flow (a torch.autocast or set_grad_enabled region): not searched")
    return entries
