"""Offline rewrite of an ExportedProgram: ``fxfuse.rewrite(ep) -> ExportedProgram``.

Works before and after ``run_decompositions()``. Parameters and buffers are placeholders of
the exported graph, so they become ordinary inputs of the fused op; the graph signature keeps
its inputs, and outputs that were replaced are renamed to their getitem nodes. Chains inside the
branches and bodies of torch.cond / while_loop / map are fused too, in rewritten copies of those
subgraphs (subgraph_fusion.py). The result saves with ``torch.export.save`` and, after ``import
fxfuse`` (which registers the op), loads and runs in a fresh process.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import operator
from typing import Any

import torch
import torch.fx
from torch.export import ExportedProgram

from .apply_plan import apply_plan
from .pass_driver import Options, _mark_skipped, _refuse_rewrites, plan_for_graph, run_on_graph
from .report import FusionReport
from .subgraph_fusion import fuse_subgraphs

log = logging.getLogger("fxfuse")

__all__ = ["rewrite", "report"]


def _renamed_signature(sig, gm: torch.fx.GraphModule, original: torch.fx.GraphModule):
    """The graph signature with each input spec naming its placeholder in `gm` (copying a graph
    module renames a placeholder that shadows a Python builtin: `input`, every nn.Sequential's
    argument, becomes `input_1`) and each output spec the node now in the output."""
    renamed = {old.name: new.name for old, new in zip(
        (n for n in original.graph.nodes if n.op == "placeholder"),
        (n for n in gm.graph.nodes if n.op == "placeholder")) if old.name != new.name}
    input_specs = []
    for spec in sig.input_specs:
        arg = spec.arg
        if hasattr(arg, "name") and arg.name in renamed:
            spec = dataclasses.replace(spec, arg=dataclasses.replace(arg, name=renamed[arg.name]))
        input_specs.append(spec)
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outs = out_node.args[0]
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    new_specs = []
    for spec, node in zip(sig.output_specs, outs):
        arg = spec.arg
        if isinstance(node, torch.fx.Node) and hasattr(arg, "name") and arg.name != node.name:
            arg = dataclasses.replace(arg, name=node.name)
            spec = dataclasses.replace(spec, arg=arg)
        new_specs.append(spec)
    return type(sig)(input_specs=input_specs, output_specs=new_specs)


def _signature_names(ep: ExportedProgram) -> frozenset[str]:
    """Names of the values the program's module call signatures name (the inputs and outputs of each
    submodule kept by ``preserve_module_call_signature``): the verifier wants each to stay a node, so
    a rewrite that would replace one is skipped (it raised SpecViolationError "Output linear does not
    exist in the graph" before session 50)."""
    names = set()
    for entry in getattr(ep, "module_call_graph", None) or []:
        sig = getattr(entry, "signature", None)
        for arg in (list(sig.inputs) + list(sig.outputs)) if sig is not None else []:
            name = getattr(arg, "name", None)
            if isinstance(name, str):
                names.add(name)
    return frozenset(names)


def program_known_values(ep: ExportedProgram) -> dict[str, torch.Tensor]:
    """Placeholder name -> the integer buffer or constant it is bound to: the IR states small ones' contents and a
    k-group index's rule (ir_export.known_values_text), on which the pass folds GPTQ's int32 storage; the fused op
    checks them again at each call (a buffer may be loaded with other values after the rewrite)."""
    bound: dict[str, torch.Tensor] = {}
    for spec in ep.graph_signature.input_specs:
        target, name = getattr(spec, "target", None), getattr(spec.arg, "name", None)
        if target is None or name is None:
            continue
        t = ep.state_dict.get(target) if target in ep.state_dict else ep.constants.get(target)
        if isinstance(t, torch.Tensor) and not t.is_floating_point() and not t.is_complex():
            bound[name] = t
    return bound


def _options(options: Options | None, option_kwargs: dict[str, Any]) -> Options:
    """``options=`` or keyword options, not both (the keywords were ignored beside ``options``)."""
    if options is not None and option_kwargs:
        raise TypeError(f"fxfuse: give options= or keyword options, not both (got {sorted(option_kwargs)})")
    return Options.given(options, "fxfuse") if options is not None else Options.from_kwargs(**option_kwargs)


def _new_program(ep: ExportedProgram, gm: torch.fx.GraphModule, sig) -> ExportedProgram:
    if hasattr(ep, "_update"):
        return ep._update(gm, sig)
    return ExportedProgram(  # pragma: no cover - releases without _update
        root=gm, graph=gm.graph, graph_signature=sig, state_dict=ep.state_dict,
        range_constraints=copy.deepcopy(ep.range_constraints),
        module_call_graph=copy.deepcopy(ep.module_call_graph), example_inputs=ep.example_inputs,
        constants=ep.constants, verifiers=ep.verifiers)


# Meta entries a program's graph module may hold that are not the graph's: torch.export.unflatten(ep) leaves the
# module it built there, which cannot be deep-copied (its tensors are not graph leaves; rewrite raised, bug hunt
# of session 54) and would be a stale back-reference in the new program.
_NOT_COPIED_META = ("unflattened_module",)


def _graph_module_copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A deep copy of ``gm`` without the meta entries of _NOT_COPIED_META."""
    memo: dict[int, Any] = {id(gm.meta[key]): None for key in _NOT_COPIED_META if key in gm.meta}
    new = copy.deepcopy(gm, memo)
    for key in _NOT_COPIED_META:
        new.meta.pop(key, None)
    return new


def rewrite(ep: ExportedProgram, dump_dir: str | None = None, options: Options | None = None,
            **option_kwargs: Any) -> ExportedProgram:
    """A new ExportedProgram with every fusable chain replaced by ``fxfuse.gemm_chain``, those inside
    control-flow subgraphs too. ``ep`` itself is not changed. Options as in :class:`fxfuse.pass_driver.Options`."""
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"fxfuse.rewrite expects a torch.export.ExportedProgram, got {type(ep).__name__}")
    opts = _options(options, option_kwargs)
    if dump_dir is not None:
        opts = dataclasses.replace(opts, dump_dir=dump_dir)
    gm = _graph_module_copy(ep.graph_module)
    result = run_on_graph(gm.graph, opts, "export", keep=_signature_names(ep), subgraphs="fuse",
                          known_values=program_known_values(ep))
    gm.recompile()
    if result is None or not (result.applied.applied or any(sub.applied.applied for sub in result.subgraphs)):
        log.info("fxfuse: nothing to rewrite in the exported program")
    return _new_program(ep, gm, _renamed_signature(ep.graph_signature, gm, ep.graph_module))


_TORCH_LEVEL_GEMMS = (operator.matmul, torch.matmul, torch.mm, torch.bmm, torch.addmm, torch.baddbmm,
                      torch.nn.functional.linear, torch.linalg.matmul)


def _opaque_gemm_call(node: torch.fx.Node, module: Any) -> bool:
    """A call that may hold a GEMM the pass cannot see: a submodule with parameters, or a torch-level GEMM."""
    if node.op == "call_module" and module is not None:
        try:
            sub = module.get_submodule(str(node.target))
        except AttributeError:
            return True
        return any(True for _ in sub.parameters())
    return node.op == "call_function" and node.target in _TORCH_LEVEL_GEMMS


def report(obj: Any = None, *example_args: Any, options: Options | None = None, **option_kwargs: Any) -> FusionReport:
    """What fxfuse fuses and why not, without changing anything:

    - ``report(ep)``: for an ExportedProgram;
    - ``report(module, *example_args)``: exports the module first (``torch.export.export``);
    - ``report()``: the graphs compiled with ``backend="fxfuse"`` (or rewritten) since
      the last ``fxfuse.reset_stats()``.
    """
    from .stats import recent_plans, stats

    rep = FusionReport()
    if obj is None:
        for title, plan, skipped in recent_plans():
            rep.add(title, plan, skipped)
        rep.cached_graphs = int(stats().get("graphs_from_inductor_cache", 0))
        return rep
    opts = _options(options, option_kwargs)
    if isinstance(obj, torch.nn.Module) and not isinstance(obj, torch.fx.GraphModule):
        obj = torch.export.export(obj, tuple(example_args))
    keep = _signature_names(obj) if isinstance(obj, ExportedProgram) else frozenset()
    if isinstance(obj, (ExportedProgram, torch.fx.GraphModule)):
        source = obj.graph
    elif isinstance(obj, torch.fx.Graph):
        source = obj
    else:
        raise TypeError(f"fxfuse.report: cannot report on {type(obj).__name__}")
    # torch.fx.symbolic_trace's graphs call layers as modules and GEMMs as torch functions, which the pass cannot
    # see: their GEMMs went unreported under "(no GEMM in this graph)" (hunt B, session 53). A module without
    # parameters (an exported program's module calls torch's _guards_fn) hides no GEMM of its own weights.
    module = getattr(source, "owning_module", None)
    opaque = sorted({f"{n.op} {n.target}" for n in source.nodes if _opaque_gemm_call(n, module)})
    if opaque:
        raise TypeError(f"fxfuse.report: the graph calls layers or GEMMs the pass cannot see into ({', '.join(opaque[:5])}"
                        f"{', ...' if len(opaque) > 5 else ''}), as torch.fx.symbolic_trace's do; the pass reads "
                        "ATen graphs: give the module and example inputs, report(model, *args), or a torch.export "
                        "program")
    # Planned and applied to a copy of the graph, as rewrite() does: a rewrite apply_plan refuses is
    # reported as not fused (apply_rejected), not as "fused" (it was, before session 49).
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(source, {}))
    known = program_known_values(obj) if isinstance(obj, ExportedProgram) else None
    _, plan = plan_for_graph(graph, opts, module, subgraphs="fuse", known_values=known)
    # a program rewritten before: its chains are fused ops now, not GEMMs ("no GEMM in this graph"; hunt D), in its
    # control-flow branches too (session 59's hunt)
    plan["fused_before"] = _fused_ops(source, module)
    applied = apply_plan(graph, plan, keep)
    _mark_skipped(plan, applied.skipped)
    # each subgraph is planned and applied on a copy: the program's own subgraph modules stay as they are
    fuse_subgraphs(graph, module, opts, plan, install=False, known_values=known)
    if not opts.enabled:  # what rewrite() does then: nothing (session 59's hunt: the report had said "fused")
        _refuse_rewrites(plan, "disabled", "enabled=False: fxfuse rewrites nothing")
    rep.add("export", plan, applied.skipped if opts.enabled else {})
    return rep


def _fused_ops(graph: torch.fx.Graph, module: torch.nn.Module | None) -> int:
    """The fxfuse.gemm_chain calls of ``graph`` and of the control-flow subgraphs it holds, nested ones too."""
    from .subgraphs import subgraph_modules

    own = sum(n.target == torch.ops.fxfuse.gemm_chain.default for n in graph.nodes)
    return own + sum(_fused_ops(sub.graph, sub) for _, sub in subgraph_modules(graph, module))

