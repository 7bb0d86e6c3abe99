"""Eager ops that the torch.compile backend's graphs hold as several 16-bit steps.

Inductor's decompositions write some single eager ops out as several pointwise nodes typed in the tensor's 16-bit
dtype: lerp as `sub(end, start) -> add(start, _, alpha=w)`, softshrink as `sign(y) * lambda -> sub -> where`.
Eager's one kernel computes such an op in f32 and rounds once; the chain would round every step as the graph
types it (session 57's hunt, tests/reliability/hunt_session57: one bf16 step off at 3-20 % of the elements).
Inductor itself keeps pointwise intermediates in f32, so there it gives eager's answer. Each such op's nodes are
named to the pass (option `unrounded_groups`), which ends an epilogue before them (and folds none of them into a
prologue), leaving them to Inductor.

A node's eager op is the root of its ``meta["from_node"]`` provenance: the nodes one decomposition made share it (a
user's own `y * 2 + 1` is two roots: each op rounded by eager too). A group is named where a value one of its
arithmetic steps rounds to 16 bits reaches another arithmetic step of the group (through exact steps such as
where, clamp, neg or a view, which do not change what the rounding did): a rounding eager's kernel does not make.
Decompositions that compute in f32 (Inductor's GELU and SiLU convert first) have no 16-bit intermediate and stay
fusable, as do groups whose 16-bit steps only select (leaky_relu's `where(y > 0, y, y * slope)`).
round(decimals) is collapsed into one op before this (decomposed_round.py).
"""
from __future__ import annotations

import re

import torch
import torch.fx

__all__ = ["unrounded_groups"]

_HALF = (torch.bfloat16, torch.float16)
# ops whose result is one of their operands' values, a sign change of one, a comparison or a constant: they
# round nothing, so a 16-bit operand's rounding passes through them unchanged
_EXACT = ("where", "gt", "lt", "ge", "le", "eq", "ne", "neg", "abs", "maximum", "minimum", "clamp", "clamp_min",
          "clamp_max", "relu", "sign", "full", "scalar_tensor", "logical_and", "logical_or", "logical_not",
          "view", "reshape", "_unsafe_view", "permute", "expand", "unsqueeze", "squeeze", "clone", "alias")


def _op_name(n: torch.fx.Node) -> str:
    """`aten.where.self` -> "where"."""
    name = getattr(n.target, "__name__", str(n.target))  # OpOverload: "where.self"
    return name.split(".")[0]


def _exact(n: torch.fx.Node) -> bool:
    return _op_name(n) in _EXACT


def _half(n: torch.fx.Node) -> bool:
    v = n.meta.get("val")
    return isinstance(v, torch.Tensor) and v.dtype in _HALF


def _root_source(n: torch.fx.Node):
    """The node n's decomposition started from (its from_node provenance's root), or None."""
    sources = n.meta.get("from_node")
    if not sources:
        return None
    s = sources[0]
    while getattr(s, "from_node", None):
        s = s.from_node[0]
    return s


def _root(n: torch.fx.Node) -> str | None:
    """The name of the node n's decomposition started from, or None."""
    return getattr(_root_source(n), "name", None)


# The GEMMs of an F.linear's decomposition: eager's at::linear rounds its product wherever it computes it apart
# from the bias (matmul, then add: a 3-D input that is not contiguous), which is when Inductor writes these
# instead of one addmm; the rounding is eager's own (session 58's hunt: such linears had been left unfused).
_GEMMS = ("mm", "bmm")


def _target_name(target) -> str:
    """`F.linear` -> "linear", also as from_node keeps it, a string ('<built-in function linear>')."""
    if isinstance(target, str):
        named = re.search(r"(?:function|method) ([\w.]+)", target)
        return (named.group(1) if named else target).split(".")[-1]
    return getattr(target, "__name__", "")


def _rounds_as_eager(n: torch.fx.Node, root_target) -> bool:
    return _op_name(n) in _GEMMS and _target_name(root_target) == "linear"


def unrounded_groups(graph: torch.fx.Graph) -> list[str]:
    """The names of the nodes of every eager op in `graph` whose decomposition rounds an intermediate eager keeps."""
    groups: dict[str, list[torch.fx.Node]] = {}
    for n in graph.nodes:
        if n.op == "call_function":
            root = _root(n)
            if root is not None:
                groups.setdefault(root, []).append(n)
    names: list[str] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        inside = set(members)
        root_target = getattr(_root_source(members[0]), "target", None)
        rounded: set[torch.fx.Node] = set()  # 16-bit values carrying a rounding of an arithmetic step
        double = False
        for n in members:  # graph order
            from_rounded = any(a in rounded for a in n.all_input_nodes if a in inside)
            if from_rounded and not _exact(n):
                double = True
                break
            if _half(n) and (not _exact(n) or from_rounded) and not _rounds_as_eager(n, root_target):
                rounded.add(n)
        if double:
            names += [n.name for n in members]
    return names
