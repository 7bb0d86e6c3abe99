"""Apply the pass's rewrite plan (docs/interfaces.md) to an fx.Graph.

Per rewrite:  replaced region  ⇒  %fx = fxfuse.gemm_chain.default([inputs], spec)
                                  %out_i = operator.getitem(%fx, i)   (one per output)
Outside users of each output are redirected to its getitem; the region is erased. The new
node goes after its last input; users of the outputs that sit before that point are moved
after it (a stable topological sort: nothing moves unless a dependency forces it).

A rewrite that would break the graph (unknown names, a replaced node used outside the
region, an input computed from the region) is skipped with a reason, never applied.
"""
from __future__ import annotations

import logging
import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

log = logging.getLogger("fxfuse")

__all__ = ["apply_plan", "ApplyResult", "gemm_chain_op"]


def gemm_chain_op():
    """``torch.ops.fxfuse.gemm_chain.default`` (registered when ``fxfuse._C`` is imported)."""
    return torch.ops.fxfuse.gemm_chain.default


@dataclass
class ApplyResult:
    applied: list[int] = field(default_factory=list)          # rewrite ids
    skipped: dict[int, str] = field(default_factory=dict)     # rewrite id -> reason
    fused_nodes: dict[int, torch.fx.Node] = field(default_factory=dict)
    moved_nodes: int = 0


def _fake_mode_of(graph: torch.fx.Graph):
    """The FakeTensorMode of the placeholders' values, or None when there is none or there
    are several (``make_fx(fn)(real tensors)`` gives each value its own fake mode): then the
    rewrite is checked on meta tensors instead (``_meta_outputs``)."""
    from torch._guards import detect_fake_mode

    vals = [n.meta.get("val") for n in graph.nodes if n.op == "placeholder"]
    try:
        return detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
    except Exception as e:  # noqa: BLE001 - AssertionError: mismatched fake modes
        log.debug("fxfuse: no single fake mode for the graph (%s); checking rewrites on meta tensors",
                  str(e).splitlines()[0] if str(e) else type(e).__name__)
        return None


def _concrete(xs) -> list[int] | None:
    out = []
    for x in xs:
        if isinstance(x, torch.SymInt):
            x = x.node.maybe_as_int() if hasattr(x.node, "maybe_as_int") else None
        if not isinstance(x, int):
            return None
        out.append(int(x))
    return out


def _meta_tensor(v):
    """A meta tensor of v's shape, strides and dtype (None when v has symbolic sizes)."""
    shape, stride = _concrete(v.shape), _concrete(v.stride())
    if shape is None or stride is None:
        return None
    return torch.empty_strided(shape, stride, dtype=v.dtype, device="meta")


def _meta_outputs(op, vals, spec):
    """The op's Meta kernel on meta tensors built from the inputs' values, for a graph
    without one fake mode. Returns the outputs (on meta), None when the values have symbolic
    sizes (nothing to build meta tensors from), or raises what the op raises."""
    metas = [_meta_tensor(v) for v in vals]
    if any(m is None for m in metas):
        return None
    return list(op(metas, spec))


def _reject_text(e: BaseException) -> str:
    return f"fxfuse.gemm_chain rejected the spec: {str(e).splitlines()[0] if str(e) else type(e).__name__}"


def _fake_outputs(op, in_nodes, outputs, spec, fake_mode) -> tuple[list | None, str | None]:
    """Output values of the fused op: its fake kernel run under the graph's FakeTensorMode
    and checked against the replaced output nodes (shape, dtype). Returns (values, None), or
    (None, reason) when the op rejects the spec or disagrees with the graph: such a rewrite
    would fail later in Inductor or compute something else, so it is not applied. Without a
    fake mode (a graph whose values come from several fake modes) the op's Meta kernel is the
    judge and the replaced outputs' values are kept; without values (a graph without meta)
    nothing can be checked and the replaced outputs' values are used."""
    vals = [n.meta.get("val") for n in in_nodes]
    expected = [o.meta.get("val") for o in outputs]
    if not all(isinstance(v, torch.Tensor) for v in vals):
        return expected, None
    try:
        if fake_mode is not None:
            with fake_mode:
                got = list(op(vals, spec))
        else:
            got = _meta_outputs(op, vals, spec)
            if got is None:
                return expected, None
    except Exception as e:  # noqa: BLE001 - the op's own check: report it, don't apply
        return None, _reject_text(e)
    if len(got) != len(outputs):
        return None, f"the op returns {len(got)} outputs, the plan names {len(outputs)}"
    for g, e, o in zip(got, expected, outputs):
        if isinstance(e, torch.Tensor) and (not _same_shape(g.shape, e.shape) or g.dtype != e.dtype):
            return None, (f"output {o.name}: the op gives {g.dtype} {list(g.shape)}, "
                          f"the graph has {e.dtype} {list(e.shape)}")
        if isinstance(e, torch.Tensor) and not _same_layout(g, e):
            # The op writes its outputs contiguous; where eager's value has another layout (an add whose
            # first operand is a transposed or channels-last residual), the graph's later views of it
            # (`.t().view(-1)`) fail and the program's outputs lose eager's strides.
            return None, (f"output {o.name}: the op gives strides {list(g.stride())}, "
                          f"the graph has {list(e.stride())}")
    if fake_mode is None:
        # Meta tensors are no values for the graph: keep the replaced outputs' (a value
        # whose shape and dtype the op was just checked to agree with).
        got = [e if isinstance(e, torch.Tensor) else g for g, e in zip(got, expected)]
    return got, None


def _same_shape(got, expected) -> bool:
    """Equal dims: the same text, provably equal, or equal once an exactly dividing floor division is its quotient
    (ir_export.format_dim: a view's `(s**2)//s` is the op's `s`)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    from .ir_export import format_dim

    return len(got) == len(expected) and all(
        str(g) == str(e) or statically_known_true(g == e) or format_dim(g) == format_dim(e)
        for g, e in zip(got, expected))


def _same_layout(got, expected) -> bool:
    """Whether ``got`` has ``expected``'s strides along every dim of more than one element (a dim
    of size 0 or 1 may have any stride; symbolic strides must be provably equal)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    if len(got.shape) != len(expected.shape):
        return False
    if any(statically_known_true(d == 0) for d in expected.shape):
        return True  # no elements: any layout
    for size, gs, es in zip(expected.shape, got.stride(), expected.stride()):
        if statically_known_true(size <= 1):
            continue
        if not statically_known_true(gs == es):
            return False
    return True


def _region_ok(replaced, inputs, outputs) -> str | None:
    rset = set(replaced)
    oset = set(outputs)
    for n in inputs:
        if n in rset:
            return f"input {n.name} is also replaced"
    for n in replaced:
        if n.op in ("placeholder", "output", "get_attr"):
            return f"cannot replace {n.op} {n.name}"
        if n not in oset:  # a metadata check goes with the value it checks (below)
            outside = [u.name for u in n.users if u not in rset and not _is_metadata_assert(u)]
            if outside:
                return f"replaced node {n.name} has users outside the region: {outside}"
    # A cycle: some input is (transitively) computed from a region node.
    frontier = [u for n in replaced for u in n.users if u not in rset]
    seen: set[torch.fx.Node] = set()
    iset = set(inputs)
    while frontier:
        n = frontier.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in iset:
            return f"input {n.name} depends on the region"
        frontier.extend(n.users)
    return None


def _stable_toposort(graph: torch.fx.Graph) -> int:
    """Reorders only what a dependency forces; returns how many nodes moved."""
    order = list(graph.nodes)
    placed: set[torch.fx.Node] = set()
    waiting: dict[torch.fx.Node, list[torch.fx.Node]] = {}   # dep -> nodes waiting for it
    missing: dict[torch.fx.Node, int] = {}
    result: list[torch.fx.Node] = []

    def place(n):
        stack = [n]
        while stack:
            m = stack.pop()
            result.append(m)
            placed.add(m)
            for w in waiting.pop(m, []):
                missing[w] -= 1
                if missing[w] == 0:
                    stack.append(w)

    for n in order:
        deps = {d for d in n.all_input_nodes if d not in placed}
        if not deps:
            place(n)
        else:
            missing[n] = len(deps)
            for d in deps:
                waiting.setdefault(d, []).append(n)
    if len(result) != len(order):
        raise RuntimeError("fxfuse internal error: graph has a cycle after the rewrite; please report a bug")
    moved = sum(1 for a, b in zip(order, result) if a is not b)
    if moved:
        cursor = next(iter(graph.nodes))
        for n in result[1:]:
            cursor.append(n)
            cursor = n
    return moved


def apply_plan(graph: torch.fx.Graph, plan: dict[str, Any], keep: frozenset[str] = frozenset()) -> ApplyResult:
    """Applies every rewrite of ``plan`` to ``graph`` in place and lints the graph. ``keep``: names of
    nodes that must stay in the graph (an exported program's module call signatures name them); a
    rewrite that would replace one is skipped."""
    res = ApplyResult()
    rewrites = plan.get("rewrites") or []
    if not rewrites:
        return res
    op = gemm_chain_op()
    by_name: dict[str, torch.fx.Node] = {n.name: n for n in graph.nodes}
    fake_mode = _fake_mode_of(graph)
    index = {n: i for i, n in enumerate(graph.nodes)}

    for rw in rewrites:
        rid = rw.get("id", len(res.applied) + len(res.skipped))
        try:
            replaced = [by_name[x] for x in rw["replaced"]]
            inputs = [by_name[x] for x in rw["inputs"]]
            outputs = [by_name[x] for x in rw["outputs"]]
        except KeyError as e:
            res.skipped[rid] = f"unknown node {e.args[0]}"
            log.warning("fxfuse: rewrite %s skipped: unknown node %s", rid, e.args[0])
            continue
        why = _region_ok(replaced, inputs, outputs)
        if why is None and not all(o in set(replaced) for o in outputs):
            why = "an output is not among the replaced nodes"
        if why is None and keep:
            pinned = [n.name for n in replaced if n.name in keep]
            if pinned:
                why = f"it replaces {pinned[0]}, which a module call signature of the program names"
        if why is not None:
            res.skipped[rid] = why
            log.warning("fxfuse: rewrite %s skipped: %s", rid, why)
            continue

        vals, why = _fake_outputs(op, inputs, outputs, rw["spec"], fake_mode)
        if why is not None:
            res.skipped[rid] = why
            log.warning("fxfuse: rewrite %s skipped: %s", rid, why)
            continue

        # Every input feeds some region node, so all are defined before the region's last
        # node: insert right after it. Outside users of an earlier (extra) output that sit
        # before this point are moved after it by the toposort below.
        last_replaced = max(replaced, key=lambda n: index[n])
        first_replaced = min(replaced, key=lambda n: index[n])
        with graph.inserting_after(last_replaced):
            fused = graph.create_node("call_function", op, (list(inputs), rw["spec"]),
                                      name=rw.get("op_node") or f"fxfuse_chain_{rid}")
        getitems = []
        last = fused
        for i in range(len(outputs)):
            with graph.inserting_after(last):
                last = graph.call_function(operator.getitem, (fused, i))
            getitems.append(last)

        fused.meta["val"] = list(vals)
        main = next((n for n in replaced if n.target in _GEMM_TARGETS), first_replaced)
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack", "from_node", "seq_nr"):
            if key in main.meta:
                fused.meta[key] = main.meta[key]
        fused.meta["fxfuse_rewrite"] = rid
        for gi, o, v in zip(getitems, outputs, vals):
            gi.meta["val"] = v
            for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
                if key in o.meta:
                    gi.meta[key] = o.meta[key]

        for gi, o in zip(getitems, outputs):
            o.replace_all_uses_with(gi)
            by_name[o.name] = gi  # a later rewrite may take this output as its input
        rset = set(replaced)
        # export's metadata checks of replaced values go with them (pass/aten_ops.h isMetadataAssert)
        for n in replaced:
            for u in list(n.users):
                if u not in rset and _is_metadata_assert(u):
                    graph.erase_node(u)
        # Erase users before producers: reverse graph order within the region.
        for n in sorted(replaced, key=lambda n: -index[n]):
            if any(u not in rset for u in n.users):
                raise RuntimeError(
                    f"fxfuse internal error: {n.name} still has users after the rewrite; please report a bug")
            graph.erase_node(n)
        res.applied.append(rid)
        res.fused_nodes[rid] = fused
        index = {n: i for i, n in enumerate(graph.nodes)}

    res.moved_nodes = _stable_toposort(graph)
    graph.lint()
    return res


_METADATA_ASSERT = torch.ops.aten._assert_tensor_metadata.default


def _is_metadata_assert(n: torch.fx.Node) -> bool:
    """export's check of a value's dtype, device and layout beside a `.to()` (pass/aten_ops.h isMetadataAssert)."""
    return n.op == "call_function" and n.target == _METADATA_ASSERT

_GEMM_TARGETS = {
    getattr(torch.ops.aten, name).default
    for name in ("mm", "addmm", "bmm", "baddbmm", "linear", "matmul", "linalg_matmul")
    if hasattr(getattr(torch.ops.aten, name), "default")
}
