"""One node standing for a group of a graph's nodes while the pass runs, and the group put back where no chain took
that node: the backend's collapses of Inductor's decompositions into eager's own op (decomposed_round.py,
decomposed_activations.py; each module says why)."""
from __future__ import annotations

import dataclasses
from typing import Any

import torch.fx

__all__ = ["Collapsed", "collapse_into", "expand_unfused", "original_aten"]


def original_aten(n: torch.fx.Node) -> str | None:
    """The eager op a call node's decomposition came from (its ``meta["original_aten"]``), by name: the meta's
    OpOverload is not always torch.ops.aten's object."""
    op = n.meta.get("original_aten") if n.op == "call_function" else None
    return str(op) if op is not None else None


@dataclasses.dataclass
class Collapsed:
    node: torch.fx.Node    # the node standing for the group
    group: torch.fx.Graph  # the group's nodes, copied (metas too), its one input a placeholder


def collapse_into(graph: torch.fx.Graph, order: list[torch.fx.Node], x: torch.fx.Node, target: Any,
                  args: tuple, kwargs: dict) -> Collapsed:
    """Replaces `order` (a group in graph order whose only input is `x` and whose last node alone is read outside it)
    by one call of `target`, with the last node's meta."""
    last = order[-1]
    copy = torch.fx.Graph()
    env = {x: copy.placeholder("x")}
    for n in order:
        env[n] = copy.node_copy(n, lambda a: env[a])
    copy.output(env[last])
    with graph.inserting_after(last):
        node = graph.call_function(target, args, kwargs)
    node.meta = dict(last.meta)
    last.replace_all_uses_with(node)
    for n in reversed(order):
        graph.erase_node(n)
    return Collapsed(node, copy)


def expand_unfused(graph: torch.fx.Graph, collapsed: list[Collapsed]) -> None:
    """Puts each group back whose node the pass left in `graph` (no chain took it)."""
    in_graph = set(graph.nodes)
    for c in collapsed:
        if c.node not in in_graph:
            continue  # fused into a chain
        env: dict[torch.fx.Node, torch.fx.Node] = {}
        with graph.inserting_before(c.node):
            for n in c.group.nodes:
                if n.op == "placeholder":
                    env[n] = c.node.args[0]
                elif n.op == "output":
                    c.node.replace_all_uses_with(env[n.args[0]])
                else:
                    env[n] = graph.node_copy(n, lambda a: env[a])
        graph.erase_node(c.node)
