"""Runs the fxfuse pass on one fx.Graph: graph → IR text → ``_C.run_pass`` → plan → apply.
Counts into ``fxfuse.stats()``, logs under ``logging.getLogger("fxfuse")``, writes dumps."""
from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import warnings

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from . import stats as _stats
from .apply_plan import ApplyResult, apply_plan
from .dump import dump_root, write_graph_dump
from .ir_export import format_dim, graph_to_ir
from .precompile import precompile, row_dims, size_hint
from .report import format_report
from .subgraphs import subgraph_gemm_entries, wrapped_gemm_entries

log = logging.getLogger("fxfuse")

__all__ = ["Options", "PassResult", "run_on_graph", "plan_for_graph"]


@dataclass(frozen=True)
class Options:
    """What the pass may do. Everything here goes into ``FxfusePass.uuid()``."""
    enabled: bool = True
    dump_dir: str | None = None          # else $FXFUSE_DUMP; None: no dump
    min_m: int = 1                       # GEMMs smaller than this are left to cuBLAS/Inductor
    min_n: int = 1
    min_k: int = 1
    allow_fp32: bool = True              # fuse fp32 GEMMs (the CPU tests need it)
    extra_outputs: bool = True           # keep a region value used outside as an extra output
    prologue: bool = True                # fuse ops before the GEMM (dequant, casts)
    epilogue: bool = True                # fuse ops after the GEMM
    arch: str | None = None              # "sm_90"; None: the current device's, else sm_90
    precompile: bool = True              # compile CUDA kernels while the model compiles
    # Row counts M (tokens: batch x sequence) a fused chain with a symbolic M will run at, e.g. the
    # batch sizes a server sees: their kernels compile with the model too, not at the first call of
    # each size (the op picks its kernel by M at run time: gemv, tiles). Where M is c x one symbol,
    # that symbol takes M / c (sizes it does not divide, or outside the symbol's range, are
    # skipped); other symbols stay at their hints.
    precompile_sizes: tuple[int, ...] = ()
    autotune: bool = False               # time every candidate kernel and ATen per chain (autotune.py); also FXFUSE_AUTOTUNE=1
    only_profitable: bool = True         # leave CUDA chains unfused where no fast kernel exists (symbolic M at its hint)
    # What runs a chain left unfused, which a fused kernel must beat: "inductor" (the
    # torch.compile backend sets it) or "eager" (fxfuse.rewrite's programs); None: "eager".
    baseline: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()  # passed to run_pass verbatim (forward compat)

    def __post_init__(self) -> None:
        if self.baseline not in (None, "eager", "inductor"):
            raise ValueError(f"fxfuse option baseline={self.baseline!r}: must be 'eager', 'inductor' or None")
        sizes = self.precompile_sizes
        try:
            sizes = tuple(sizes) if not isinstance(sizes, (str, bytes)) else None
        except TypeError:
            sizes = None
        if sizes is None or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in sizes):
            raise ValueError(f"fxfuse option precompile_sizes={self.precompile_sizes!r}: must be positive integers")
        object.__setattr__(self, "precompile_sizes", tuple(sorted(set(sizes))))  # frozen: a list becomes a key

    @staticmethod
    def from_kwargs(**kw: Any) -> "Options":
        names = {f.name for f in dataclasses.fields(Options)}
        unknown = set(kw) - names
        if unknown:
            raise TypeError(f"unknown fxfuse option(s) {sorted(unknown)}; known: {sorted(names)}")
        return Options(**kw)

    @staticmethod
    def given(options: Any, where: str) -> "Options":
        """`options` as an argument of `where` takes it: an Options, or None for the defaults. A dict had
        failed inside with "'dict' object has no attribute 'enabled'" (hunt B, session 53)."""
        if options is None:
            return Options()
        if not isinstance(options, Options):
            raise TypeError(f"{where}: options must be fxfuse.Options, got {type(options).__name__}; "
                            "give Options(**...) or the options as keywords")
        return options

    def resolved_arch(self) -> str:
        if self.arch:
            return self.arch
        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}"
        return "sm_90"

    def pass_options_json(self) -> str:
        opts: dict[str, Any] = {"min_k": self.min_k, "allow_fp32": self.allow_fp32,
                                "arch": self.resolved_arch(), "extra_outputs": self.extra_outputs}
        if self.min_m != 1:
            opts["min_m"] = self.min_m
        if self.min_n != 1:
            opts["min_n"] = self.min_n
        if not self.prologue:
            opts["prologue"] = False
        if not self.epilogue:
            opts["epilogue"] = False
        if self.baseline:  # also what runs the graph's other nodes: Inductor keeps a shared 16-bit value a buffer
            opts["baseline"] = self.baseline  # only where the pass leaves it one (pass/operand_prologue.cpp)
        if self.only_profitable:
            opts["only_profitable"] = True
            opts["baseline"] = self.baseline or "eager"
        if not nvrtc_available():
            opts["nvrtc"] = False
        opts.update(dict(self.extra))
        return json.dumps(opts, sort_keys=True)

    def key(self) -> str:
        """Stable text of everything that changes the pass's output (dump_dir does not)."""
        d = dataclasses.asdict(self)
        d.pop("dump_dir")
        d["arch"] = self.resolved_arch()
        d["nvrtc"] = nvrtc_available()  # a graph rewritten without NVRTC differs
        from .autotune import enabled

        d["autotune"] = enabled(self.autotune)  # with FXFUSE_AUTOTUNE: else a cached graph skips tuning
        # the benchmark knob that changes which chains codegen calls profitable
        d["sm90_all_epilogues"] = os.environ.get("FXFUSE_SM90_ALL_EPILOGUES", "")
        return json.dumps(d, sort_keys=True, default=str)


@functools.lru_cache(maxsize=1)
def nvrtc_available() -> bool:
    """Whether the op can compile CUDA kernels here (looked up once per process)."""
    from . import _C

    fn = getattr(_C, "nvrtc_available", None)
    return bool(fn()) if fn is not None else True


_warned_no_nvrtc = False


def _warn_if_no_nvrtc(plan: dict[str, Any]) -> None:
    """One warning per process when CUDA chains were left unfused for lack of NVRTC."""
    global _warned_no_nvrtc
    if _warned_no_nvrtc or not any(e.get("reason") == "nvrtc_unavailable" for e in plan.get("report") or []):
        return
    _warned_no_nvrtc = True
    warnings.warn("fxfuse: NVRTC was not found, so no CUDA kernel can be compiled: CUDA GEMM chains are "
                  "left to Inductor unfused (results are unchanged). Install the CUDA toolkit's NVRTC "
                  "(pip install nvidia-cuda-nvrtc) or set FXFUSE_NVRTC_PATH.", RuntimeWarning, stacklevel=2)


@dataclass
class PassResult:
    plan: dict[str, Any]
    applied: ApplyResult
    report_text: str
    dump_folder: str | None = None
    fused_specs: list[str] = field(default_factory=list)
    subgraphs: list[Any] = field(default_factory=list)  # subgraph_fusion.SubgraphResult, nested ones too


# What a pass run does with the control-flow subgraphs (torch.cond / while_loop / map branches and
# bodies) of its graph, which the C++ pass does not read:
#  - "report": each of their GEMMs is reported not fused, reason ``control_flow`` (a graph given by hand);
#  - "fuse": the pass runs on each of them too and rewrites it (subgraph_fusion.py: fxfuse.rewrite, report);
#  - "own_runs": nothing; the caller runs the pass on each subgraph as a graph of its own, which reports
#    its GEMMs (Inductor, for the torch.compile backend: backend.py).
SUBGRAPH_MODES = ("report", "fuse", "own_runs")


def plan_for_graph(graph: torch.fx.Graph, options: Options, module: torch.nn.Module | None = None,
                   subgraphs: str = "report", warn_on_error: bool = True,
                   known_values: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """Runs the C++ pass on ``graph`` without changing it: (IR text, plan). ``module``: what owns the
    graph's subgraphs (default its owning module). ``subgraphs``: what the plan says of the GEMMs in
    them (SUBGRAPH_MODES; with "fuse" the caller runs the pass on them itself). ``warn_on_error``: False
    where the caller names the failure itself (a subgraph's: subgraph_fusion.py), so it is said once.
    ``known_values``: placeholder name -> the tensor bound to it (ir_export.graph_to_ir)."""
    if subgraphs not in SUBGRAPH_MODES:
        raise ValueError(f"fxfuse: subgraphs must be one of {SUBGRAPH_MODES}, not {subgraphs!r}")
    from . import _C

    ir_text = graph_to_ir(graph, known_values)
    opts = options.pass_options_json()
    hints = size_hints(graph)
    if hints and options.only_profitable:
        opts = json.dumps({**json.loads(opts), "size_hints": hints}, sort_keys=True)
    plan = json.loads(_C.run_pass(ir_text, opts))
    error = plan.get("error")
    if error and plan.get("error_kind") == "options":
        raise ValueError(f"fxfuse: invalid option: {error}")
    if error and warn_on_error:
        # the graph is left as it is (no rewrite); say why instead of reporting "no GEMM"
        warnings.warn(f"fxfuse: the pass failed on this graph, which is left unfused: {error}",
                      RuntimeWarning, stacklevel=2)
    for message in plan.get("warnings", []):
        warnings.warn(f"fxfuse: {message}", RuntimeWarning, stacklevel=2)
    owner = module if module is not None else graph.owning_module
    # "fuse" searches the control-flow subgraphs, not the other operators' (an autocast region's body)
    unseen = (subgraph_gemm_entries(graph, owner) if subgraphs == "report"
              else wrapped_gemm_entries(graph, owner) if subgraphs == "fuse" else [])
    if unseen:
        plan.setdefault("report", []).extend(unseen)
        counters = plan.setdefault("counters", {})
        for entry in unseen:
            key = f"reject.{entry['reason']}"
            counters[key] = counters.get(key, 0) + 1
    return ir_text, plan


def size_hints(graph: torch.fx.Graph) -> str:
    """``"s0=128;(s0*4096)=524288"``: every symbolic dim of the graph's values, written as the IR
    writes it, at the size it had when the graph was traced (the pass judges a symbolic M there;
    the op still picks a kernel per call)."""
    hints: dict[str, int] = {}
    for node in graph.nodes:
        val = node.meta.get("val")
        for v in (val if isinstance(val, (list, tuple)) else [val]):
            if not isinstance(v, torch.Tensor):
                continue
            for d in v.shape:
                hint = getattr(d.node, "hint", None) if isinstance(d, torch.SymInt) else None
                if hint is not None:
                    hints[format_dim(d)] = int(hint)
    return ";".join(f"{k}={v}" for k, v in sorted(hints.items()))


def _graph_text(graph: torch.fx.Graph) -> str:
    gm = graph.owning_module
    if gm is not None and hasattr(gm, "print_readable"):
        try:
            return gm.print_readable(print_output=False, include_stride=True, include_device=True)
        except TypeError:  # older print_readable without those keywords
            return gm.print_readable(print_output=False)
        except Exception:  # noqa: BLE001 - a graph mid-rewrite may not codegen; str() always works
            pass
    return str(graph)


def gemm_sizes(spec: str, vals: list[Any], out: Any) -> tuple[int, int, int, int] | None:
    """(M, N, K, B) of a chain from its spec, its inputs' values and its first output's value
    (symbolic dims at their hints); None when the meta is missing or K cannot be read."""
    if not isinstance(out, torch.Tensor):
        return None
    n, b = size_hint(out.shape[-1]), (size_hint(out.shape[0]) if "\ngemm bmm" in spec else 1)
    m = 1
    for d in row_dims(spec, out):
        m *= size_hint(d)
    for line in spec.splitlines():
        tok = line.split()
        if len(tok) >= 6 and tok[2] == "input" and "k" in tok[5]:
            dims = tok[5].strip("[]").split(",")
            val = vals[int(tok[3])] if int(tok[3]) < len(vals) else None
            if isinstance(val, torch.Tensor) and len(dims) == val.dim():
                return m, n, size_hint(val.shape[dims.index("k")]), b
    return None


def problem_shape(node: torch.fx.Node) -> tuple[int, int, int, int] | None:
    """(M, N, K, B) of a fused node (for dumps and precompile)."""
    vals = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in node.args[0]]
    outs = node.meta.get("val")
    return gemm_sizes(node.args[1], vals, outs[0] if outs else None)


def _kernels(result: ApplyResult) -> list[tuple[int, str, tuple[int, int, int, int] | None]]:
    return [(rid, node.args[1], problem_shape(node)) for rid, node in sorted(result.fused_nodes.items())]


def _mark_skipped(plan: dict[str, Any], skipped: dict[int, str], reason: str = "apply_rejected") -> None:
    """Each rewrite of ``skipped`` (its id: why) leaves its GEMM "not_fused" with ``reason``: apply_plan
    refused it, or the caller knows the graph's compiler cannot call the op (_refuse_rewrites)."""
    if not skipped:
        return
    counters = plan.setdefault("counters", {})
    for entry in plan.get("report") or []:
        if entry.get("status") == "fused" and entry.get("rewrite") in skipped:
            entry.update(status="not_fused", reason=reason, detail=skipped[entry["rewrite"]])
            counters[f"reject.{reason}"] = counters.get(f"reject.{reason}", 0) + 1
            # the pass counted it fused: the report's counters line had 3 chains beside 2 ops (hunt D, session 53)
            counters["chains_fused"] = max(0, counters.get("chains_fused", 0) - 1)


def _refuse_rewrites(plan: dict[str, Any], reason: str, detail: str) -> None:
    """Every chain of ``plan`` (its subgraphs' entries merged into it too) stays unfused, its GEMM "not_fused" with
    ``reason`` and ``detail``; the counters of fused chains go with them."""
    counters = plan.setdefault("counters", {})
    for entry in plan.get("report") or []:
        if entry.get("status") == "fused":
            entry.pop("rewrite", None)
            entry.update(status="not_fused", reason=reason, detail=detail)
            counters[f"reject.{reason}"] = counters.get(f"reject.{reason}", 0) + 1
    counters["chains_fused"] = 0
    for fused_only in ("extra_outputs", "chains_for_unfused_path"):
        counters.pop(fused_only, None)
    plan["rewrites"] = []


def run_on_graph(graph: torch.fx.Graph, options: Options, label: str = "graph",
                 keep: frozenset[str] = frozenset(), subgraphs: str = "report",
                 refusal: tuple[str, str] | None = None,
                 known_values: dict[str, Any] | None = None) -> PassResult | None:
    """The pass on ``graph`` in place. Returns None when disabled. ``keep``: node names no rewrite may
    replace (apply_plan); they name values of ``graph`` only. ``subgraphs``: what to do with the chains
    inside the graph's control-flow subgraphs (SUBGRAPH_MODES): "fuse" rewrites them, nested ones too,
    each replaced in the owning module by its rewritten copy (subgraph_fusion.py; ``fxfuse.rewrite``);
    "report" names their GEMMs ``control_flow``; "own_runs" leaves them to the caller's own runs (the
    torch.compile backend: backend.py says why). ``refusal``: (reason, detail) that leaves every chain
    unfused, its GEMM reported with them (the backend's, where Inductor cannot call the op). ``known_values``:
    placeholder name -> the tensor bound to it (an exported program's integer buffers: ir_export.graph_to_ir)."""
    if not options.enabled:
        return None
    root = dump_root(options.dump_dir)
    before_fx = _graph_text(graph) if root else ""
    ir_text, plan = plan_for_graph(graph, options, subgraphs=subgraphs, known_values=known_values)
    if refusal is not None:
        _refuse_rewrites(plan, *refusal)
    applied = apply_plan(graph, plan, keep)
    _mark_skipped(plan, applied.skipped)
    rewritten = []
    if subgraphs == "fuse":
        from .subgraph_fusion import fuse_subgraphs  # it builds on this module

        rewritten = fuse_subgraphs(graph, graph.owning_module, options, plan, known_values=known_values)
    _warn_if_no_nvrtc(plan)
    if graph.owning_module is not None:
        graph.owning_module.recompile()
    results = [applied] + [sub.applied for sub in rewritten]
    _stats.record_pass(plan.get("counters") or {}, sum(len(r.applied) for r in results),
                       sum(len(r.skipped) for r in results))
    report_text = format_report(plan, applied.skipped, label)
    for entry in plan.get("report") or []:
        if entry.get("status") == "fused":
            log.info("fxfuse: %s fused: %s", entry.get("gemm"), entry.get("chain", ""))
        else:
            log.info("fxfuse: %s not fused: %s %s", entry.get("gemm"), entry.get("reason"), entry.get("detail", ""))
    precompile(applied, options, plan)
    for sub in rewritten:
        precompile(sub.applied, options, sub.plan)
    folder = None
    if root:
        def dump(where: str, before: str, g: torch.fx.Graph, before_ir: str, p: dict[str, Any],
                 done: ApplyResult, text: str) -> str:
            return write_graph_dump(root, where, before_fx=before, after_fx=_graph_text(g), before_ir=before_ir,
                                    after_ir=graph_to_ir(g), plan=p, skipped=done.skipped, report_text=text,
                                    kernels=_kernels(done), arch=options.resolved_arch())

        try:
            folder = dump(label, before_fx, graph, ir_text, plan, applied, report_text)
            for sub in rewritten:  # each rewritten subgraph's own folder: its graphs, chains and kernels
                where = f"{label}.{sub.path}"
                dump(where, sub.before_code, sub.module.graph, sub.before_ir, sub.plan, sub.applied,
                     format_report(sub.plan, sub.applied.skipped, where))
        except OSError as e:
            # a debugging aid: a dump folder that cannot be written must not fail the user's compile
            warnings.warn(f"fxfuse: no dump written (FXFUSE_DUMP / dump_dir {root!r}): {e}", RuntimeWarning,
                          stacklevel=2)
    _stats.record_plan(label, plan, applied.skipped)
    specs = [rw["spec"] for p in [plan] + [s.plan for s in rewritten] for rw in p.get("rewrites") or []]
    return PassResult(plan, applied, report_text, folder, specs, rewritten)
