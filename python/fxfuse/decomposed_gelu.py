"""F.gelu in the torch.compile backend's CPU graphs.

Inductor decomposes ``aten.gelu`` before the post-grad passes (``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``
or ``0.5 x (1 + erf(x / sqrt 2))``, in f32 between two converts for a 16-bit x). A chain that takes those ops is
evaluated op by op on the CPU (pass/activation_canonicalization.h says why the pass does not fold them there), and
ATen's own tanh is not the one eager's gelu kernel and Inductor's code use: near x = -5.1 (bf16) the chain gave
-1.5e-7 where both give -0 (session 60's helper: 4 of the 65,280 finite bf16 inputs of tanh-GELU; an int8 linear's
dequantized products land there). Eager computed one ``aten.gelu``, and only the nodes' provenance,
``meta["original_aten"]``, tells its decomposition from the same formula written by the user (which eager computed
op by op, as the chain does). So, around the pass, on CPU graphs: each decomposition that came from ``aten.gelu`` is
collapsed into that one node, which the pass lowers to the chain's `gelu` / `gelu_tanh` op (the CPU kernel calls
ATen's gelu: eager's bits); a collapsed node that no chain took is expanded back into Inductor's nodes afterwards.
CUDA graphs are left as they are: there the pass folds the decomposition itself (the kernels compute its
arithmetic).
"""
from __future__ import annotations

import collections
import dataclasses

import torch
import torch.fx

__all__ = ["collapse", "expand_unfused"]

_aten, _prims = torch.ops.aten, torch.ops.prims
# Inductor's decompositions of aten.gelu, by target: what a group must hold, converts aside (two for a 16-bit x)
_FORMS = {
    "tanh": collections.Counter({_aten.mul.Tensor: 6, _aten.add.Tensor: 2, _aten.tanh.default: 1}),
    "none": collections.Counter({_aten.mul.Tensor: 3, _aten.add.Tensor: 1, _aten.erf.default: 1}),
}
_CONVERT = _prims.convert_element_type.default
_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


@dataclasses.dataclass
class _Collapsed:
    node: torch.fx.Node    # the aten.gelu node standing for the group
    nodes: torch.fx.Graph  # the group's nodes, copied, its input a placeholder


def _from_gelu(n: torch.fx.Node) -> bool:
    # compared by name: the meta's OpOverload is not always torch.ops.aten.gelu.default's object
    return n.op == "call_function" and str(n.meta.get("original_aten")) == "aten.gelu.default"


def _group(last: torch.fx.Node) -> tuple[list[torch.fx.Node], torch.fx.Node | None, str | None]:
    """The nodes of the decomposition ending at `last` (in graph order), its one input, and its form; the form is
    None when they are not exactly one of Inductor's decompositions."""
    nodes, inputs, todo = set(), set(), [last]
    while todo:
        n = todo.pop()
        if n in nodes:
            continue
        nodes.add(n)
        for a in n.all_input_nodes:
            if _from_gelu(a):
                todo.append(a)
            else:
                inputs.add(a)
    order = [n for n in last.graph.nodes if n in nodes]
    if len(inputs) != 1 or any(u not in nodes for n in order if n is not last for u in n.users):
        return order, None, None
    (x,) = inputs
    val, xval = last.meta.get("val"), x.meta.get("val")
    if not isinstance(val, torch.Tensor) or not isinstance(xval, torch.Tensor) or val.dtype != xval.dtype \
            or val.dtype not in _DTYPES or val.device.type != "cpu":
        return order, None, None
    targets = collections.Counter(n.target for n in order)
    converts = targets.pop(_CONVERT, 0)
    if converts != (0 if val.dtype == torch.float32 else 2):
        return order, None, None
    form = next((f for f, want in _FORMS.items() if targets == want), None)
    return order, x, form


def collapse(graph: torch.fx.Graph) -> list[_Collapsed]:
    """Replaces each of Inductor's aten.gelu decompositions in a CPU `graph` by one ``aten.gelu`` node."""
    done = []
    for last in list(graph.nodes):
        if last.graph is not graph or not _from_gelu(last) or all(_from_gelu(u) for u in last.users):
            continue  # erased by an earlier collapse, or not the end of a group
        order, x, form = _group(last)
        if form is None:
            continue
        copy = torch.fx.Graph()
        env = {x: copy.placeholder("x")}
        for n in order:
            env[n] = copy.node_copy(n, lambda a: env[a])
        copy.output(env[last])
        with graph.inserting_after(last):
            node = graph.call_function(_aten.gelu.default, (x,), {"approximate": form} if form == "tanh" else {})
        node.meta = dict(last.meta)
        last.replace_all_uses_with(node)
        for n in reversed(order):
            graph.erase_node(n)
        done.append(_Collapsed(node, copy))
    return done


def expand_unfused(graph: torch.fx.Graph, collapsed: list[_Collapsed]) -> None:
    """Puts Inductor's nodes back for each collapsed node the pass left in `graph` (no chain took it)."""
    in_graph = set(graph.nodes)
    for c in collapsed:
        if c.node not in in_graph:
            continue  # fused into a chain
        env: dict[torch.fx.Node, torch.fx.Node] = {}
        out = None
        with graph.inserting_before(c.node):
            for n in c.nodes.nodes:
                if n.op == "placeholder":
                    env[n] = c.node.args[0]
                elif n.op == "output":
                    out = env[n.args[0]]
                else:
                    env[n] = graph.node_copy(n, lambda a: env[a])
        c.node.replace_all_uses_with(out)
        graph.erase_node(c.node)
