"""The pass on the graphs inside a graph: the branches and bodies of torch.cond, while_loop and map
(subgraphs.py finds them). Each subgraph, nested ones too, is planned and rewritten like a graph of its
own; its report entries and counters join the enclosing graph's plan, each GEMM named by its path
(``true_graph_0.mm``, ``true_graph_0.false_graph_0.mm``), so the report names every GEMM once.

Used by ``fxfuse.rewrite`` and ``fxfuse.report``, not by the torch.compile backend (pass_driver.py's
``subgraphs``). A subgraph is rewritten on a copy that replaces it only once the whole rewrite
succeeded: one that fails in any way stays as it was, unfused, and its GEMMs are reported with reason
``subgraph_rewrite_failed``; the user's program never fails for it."""
from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from .apply_plan import ApplyResult, apply_plan
from .pass_driver import Options, _mark_skipped, plan_for_graph
from .subgraphs import _hop_name, not_fused_entries, subgraph_gemms, subgraph_modules

__all__ = ["SubgraphResult", "fuse_subgraphs"]

FAILED = "subgraph_rewrite_failed"


@dataclass
class SubgraphResult:
    path: str                       # "true_graph_0", "true_graph_0.false_graph_0": where in the program
    module: torch.fx.GraphModule    # the rewritten copy (installed in its owner where fuse_subgraphs installs)
    plan: dict[str, Any]            # its own rewrites; entries and counters of its nested subgraphs merged in
    applied: ApplyResult
    before_code: str = ""           # the subgraph's code and IR before the rewrite (for the dump folder)
    before_ir: str = ""


def fuse_subgraphs(graph: torch.fx.Graph, module: torch.nn.Module | None, options: Options, plan: dict[str, Any],
                   install: bool = True, path: str = "",
                   known_values: dict[str, Any] | None = None) -> list[SubgraphResult]:
    """Runs the pass on each subgraph of ``graph`` (owned by ``module``) and merges its report entries and
    counters into ``plan``, ``graph``'s plan. ``install``: put each rewritten subgraph in place of the original
    in ``module``; else the originals are left untouched (``fxfuse.report``). ``path``: where ``graph`` is,
    for messages. Returns every rewritten subgraph, nested ones too."""
    results: list[SubgraphResult] = []
    known_values = known_values or {}
    for name, sub in subgraph_modules(graph, module):
        if not subgraph_gemms(name, sub):
            continue  # nothing to fuse (a while_loop's condition): its graph stays the program's own
        where = path + name
        try:
            result, nested = _fuse_copy(sub, options, where, _branch_known_values(graph, name, sub, known_values))
        except Exception as e:  # noqa: BLE001 - any failure: the subgraph stays as it was, and the report says why
            why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            warnings.warn(f"fxfuse: the rewrite of subgraph {where} failed, which is left unfused: {why}",
                          RuntimeWarning, stacklevel=2)
            entries = not_fused_entries(name, sub, FAILED, f"the rewrite of subgraph {where} failed ({why}); "
                                                          "it is left as it was")
            _add(plan, entries, {f"reject.{FAILED}": len(entries), "gemms_seen": len(entries)})
            continue
        if install:
            _install(module, name, result.module)
        _add(plan, _named_from(name, result.plan.get("report") or []), result.plan.get("counters") or {})
        results += [result] + nested
    return results


def _branch_known_values(graph: torch.fx.Graph, name: str, sub: torch.fx.GraphModule,
                         known: dict[str, Any]) -> dict[str, Any]:
    """``sub``'s placeholder name -> the stated tensor every torch.cond reading ``sub`` binds it to (a cond's
    operands are its branches' inputs, in order: GPTQ's buffers reach a branch so; session 64's hunt). A loop's
    carried values change from one iteration to the next, so a subgraph any while_loop / map / scan reads binds
    nothing."""
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    bound: dict[str, Any] | None = None
    for node in graph.nodes:
        if not known or node.op != "get_attr" or str(node.target) != name:
            continue
        for user in node.users:
            operands = user.args[3] if _hop_name(user) == "cond" and len(user.args) >= 4 else None
            if not isinstance(operands, (list, tuple)) or len(operands) != len(placeholders):
                return {}
            here = {p.name: known[o.name] for p, o in zip(placeholders, operands)
                    if isinstance(o, torch.fx.Node) and o.name in known}
            bound = here if bound is None else {k: v for k, v in bound.items() if here.get(k) is v}
    return bound or {}


def _fuse_copy(sub: torch.fx.GraphModule, options: Options, where: str,
               known_values: dict[str, Any]) -> tuple[SubgraphResult, list[SubgraphResult]]:
    """The pass on a copy of ``sub`` (at ``where``) and its nested subgraphs: (its result, the nested
    results). Raises where anything fails."""
    # The copy shares the nodes' meta values (FakeTensors of the program's one fake mode), which
    # apply_plan's fake-kernel check needs; it never changes them.
    rewritten = copy.deepcopy(sub)
    before_ir, plan = plan_for_graph(rewritten.graph, options, rewritten, subgraphs="fuse", warn_on_error=False,
                                     known_values=known_values)
    if plan.get("error"):
        raise RuntimeError(f"the pass failed on the graph: {plan['error']}")
    # No names to keep: a module call signature names values of the top graph only.
    applied = apply_plan(rewritten.graph, plan)
    _mark_skipped(plan, applied.skipped)
    nested = fuse_subgraphs(rewritten.graph, rewritten, options, plan, install=True, path=where + ".",
                            known_values=known_values)
    rewritten.recompile()
    return SubgraphResult(where, rewritten, plan, applied, sub.code, before_ir), nested


def _named_from(name: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A subgraph's report entries as its enclosing graph names them: GEMM names and rewrite ids prefixed with
    ``name.`` (rewrite ids count per graph, so they are only unique with their graph's path)."""
    named = []
    for entry in entries:
        entry = {**entry, "gemm": f"{name}.{entry.get('gemm', '?')}"}
        if "rewrite" in entry:
            entry["rewrite"] = f"{name}.{entry['rewrite']}"
        named.append(entry)
    return named


def _add(plan: dict[str, Any], entries: list[dict[str, Any]], counters: dict[str, Any]) -> None:
    plan.setdefault("report", []).extend(entries)
    total = plan.setdefault("counters", {})
    for key, value in counters.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value


def _install(module: torch.nn.Module, name: str, rewritten: torch.fx.GraphModule) -> None:
    owner_path, _, attr = name.rpartition(".")
    owner = module.get_submodule(owner_path) if owner_path else module
    setattr(owner, attr, rewritten)
