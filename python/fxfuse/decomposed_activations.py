"""GELU and SiLU in the torch.compile backend's CPU graphs.

Inductor decomposes ``aten.gelu`` / ``aten.silu`` before the post-grad passes (GELU as
``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` or ``0.5 x (1 + erf(x / sqrt 2))``, SiLU as ``x / (1 + exp(-x))``;
in f32 between two converts for a 16-bit x). A chain that takes those ops is evaluated
op by op on the CPU (pass/activation_canonicalization.h says why the pass does not fold them there), and ATen's own
tanh / exp are not the ones eager's activation kernels and Inductor's code use: near x = -5.1 (bf16) a tanh-GELU chain
gave -1.5e-7 where both give -0 (4 of the 65,280 finite bf16 inputs; an int8 linear's dequantized products land
there), and f32 SiLU was one ulp off eager at ~4 % of the elements (session 60's helpers). Eager computed one
activation op, and only the nodes' provenance, ``meta["original_aten"]``, tells its decomposition from the same
formula written by the user (which eager computed op by op, as the chain does). So, around the pass, on CPU graphs:
each decomposition that came from one of these ops, exactly Inductor's form, is collapsed into that one op, which the
pass lowers to the chain's own (`gelu`, `gelu_tanh`, `silu`: eager's kernels on the CPU); a
collapsed node that no chain took is expanded back into Inductor's nodes afterwards. CUDA graphs are left as they
are: there the pass folds the decompositions itself (the kernels compute their arithmetic). Mish and softplus are not
collapsed: the chain computes them as their CUDA kernels do, on the CPU too (the README's known differences).
"""
from __future__ import annotations

import collections

import torch
import torch.fx

from .collapsed_groups import Collapsed, collapse_into, original_aten

__all__ = ["collapse"]

_aten, _prims = torch.ops.aten, torch.ops.prims
_CONVERT = _prims.convert_element_type.default
_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
# Inductor's decompositions, by the op they came from: (the targets a group must hold, converts aside: two for a
# 16-bit x) -> the op and keyword arguments that replace it
_FORMS = {
    "aten.gelu.default": [
        (collections.Counter({_aten.mul.Tensor: 6, _aten.add.Tensor: 2, _aten.tanh.default: 1}),
         _aten.gelu.default, {"approximate": "tanh"}),
        (collections.Counter({_aten.mul.Tensor: 3, _aten.add.Tensor: 1, _aten.erf.default: 1}), _aten.gelu.default, {}),
    ],
    "aten.silu.default": [
        (collections.Counter({_aten.neg.default: 1, _aten.exp.default: 1, _aten.add.Tensor: 1, _aten.div.Tensor: 1}),
         _aten.silu.default, {}),
    ],
}


def _origin(n: torch.fx.Node) -> str | None:
    """The op a node's decomposition came from, where it is one of these activations."""
    origin = original_aten(n)
    return origin if origin in _FORMS else None


def _group(last: torch.fx.Node, origin: str, position: dict) -> tuple[list[torch.fx.Node], torch.fx.Node | None]:
    """The nodes of the decomposition of `origin` ending at `last` (in graph order) and its one input; the input is
    None when they are not one of Inductor's decompositions with a single tensor input and no reader outside."""
    nodes, inputs, todo = set(), set(), [last]
    while todo:
        n = todo.pop()
        if n in nodes:
            continue
        nodes.add(n)
        for a in n.all_input_nodes:
            if _origin(a) == origin:
                todo.append(a)
            else:
                inputs.add(a)
    order = sorted(nodes, key=position.__getitem__)
    if len(inputs) != 1 or any(u not in nodes for n in order if n is not last for u in n.users):
        return order, None
    (x,) = inputs
    val, xval = last.meta.get("val"), x.meta.get("val")
    if not isinstance(val, torch.Tensor) or not isinstance(xval, torch.Tensor) or val.dtype != xval.dtype \
            or val.dtype not in _DTYPES or val.device.type != "cpu":
        return order, None
    return order, x


def _replacement(order: list[torch.fx.Node], origin: str, dtype: torch.dtype):
    """The op and keyword arguments whose decomposition `order` is exactly, or None."""
    targets = collections.Counter(n.target for n in order)
    if targets.pop(_CONVERT, 0) != (0 if dtype == torch.float32 else 2):
        return None
    return next(((op, kwargs) for want, op, kwargs in _FORMS[origin] if targets == want), None)


def collapse(graph: torch.fx.Graph) -> list[Collapsed]:
    """Replaces each of Inductor's decompositions of GELU / SiLU in a CPU `graph` by the one op. In graph order, each
    node tried as a group's last: an activation of an activation collapses inner first, the outer then reading the
    inner's new node, which carries no provenance."""
    done = []
    # (a group's nodes are ancestors of its last, so nothing a collapse erased comes up again in this walk; the
    # positions, taken once, order each group without a walk over the graph per candidate)
    position = {n: i for i, n in enumerate(graph.nodes)}
    for last in list(graph.nodes):
        origin = _origin(last)
        if origin is None:
            continue
        order, x = _group(last, origin, position)
        found = _replacement(order, origin, last.meta["val"].dtype) if x is not None else None
        if found is None:
            continue
        op, kwargs = found
        c = collapse_into(graph, order, x, op, (x,), dict(kwargs))
        c.node.meta.pop("original_aten", None)
        done.append(c)
    return done
