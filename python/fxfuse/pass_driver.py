"""Runs the fxfuse pass on one fx.Graph: graph → IR text → ``_C.run_pass`` → plan → apply.
Counts into ``fxfuse.stats()``, logs under ``logging.getLogger("fxfuse")``, writes dumps."""
from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import json
import logging
import os
import warnings

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx

from . import stats as _stats
from .apply_plan import ApplyResult, apply_plan
from .dump import dump_root, write_graph_dump
from .ir_export import format_dim, graph_to_ir
from .report import format_report

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


def plan_for_graph(graph: torch.fx.Graph, options: Options) -> tuple[str, dict[str, Any]]:
    """Runs the C++ pass on ``graph`` without changing it: (IR text, plan)."""
    from . import _C

    ir_text = graph_to_ir(graph)
    opts = options.pass_options_json()
    hints = size_hints(graph)
    if hints and options.only_profitable:
        opts = json.dumps({**json.loads(opts), "size_hints": hints}, sort_keys=True)
    plan = json.loads(_C.run_pass(ir_text, opts))
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


def _hint(d: Any, default: int = 1024) -> int:
    """A concrete size for a (possibly symbolic) dim: its hint, else ``default``."""
    if isinstance(d, torch.SymInt):
        hint = getattr(d.node, "hint", None)
        return int(hint) if hint is not None else default
    return int(d)


def _expr(d: Any) -> Any:
    """The sympy expression of a symbolic size, or None (a plain int, or a SymInt without one)."""
    return getattr(d.node, "expr", None) if isinstance(d, torch.SymInt) else None


def _sized(d: Any, values: dict[Any, int] | None, default: int = 1024) -> int:
    """A concrete value for a (possibly symbolic) size, stride or offset: with ``values``, its
    symbols set to them (a stride such as s0 * 4096 follows its dim), others at their hints;
    without, its hint."""
    expr = _expr(d)
    if values is None or expr is None:
        return _hint(d, default)
    env = getattr(d.node, "shape_env", None)
    hints = getattr(env, "backed_var_to_val", None) or getattr(env, "var_to_val", None) or {} if env else {}
    return int(expr.xreplace({sym: values.get(sym, hints.get(sym, default)) for sym in expr.free_symbols}))


def _m_values(spec: str, out: Any, sizes: tuple[int, ...]) -> list[dict[Any, int]]:
    """For each size of Options.precompile_sizes that M (the product of the output's row dims:
    all but the last, and the batch dim of a bmm) can take: the value of M's one symbol there.
    None of them where M has no symbol, several, or is not c x symbol; a size c does not divide
    or outside the symbol's range is skipped."""
    import sympy

    if not sizes or not isinstance(out, torch.Tensor):
        return []
    dims = out.shape[1:-1] if "\ngemm bmm" in spec else out.shape[:-1]
    m = sympy.Integer(1)
    for d in dims:
        e = _expr(d)
        if isinstance(d, torch.SymInt) and e is None:
            return []
        m *= e if e is not None else int(d)
    if len(m.free_symbols) != 1:
        return []
    (sym,) = m.free_symbols
    c = sympy.sympify(m.xreplace({sym: sympy.Integer(1)}))
    if not (c.is_Integer and int(c) >= 1 and sympy.simplify(m - c * sym) == 0):
        return []
    c = int(c)
    env = next((getattr(d.node, "shape_env", None) for d in dims if _expr(d) is not None), None)
    bounds = getattr(env, "var_to_range", {}).get(sym) if env is not None else None
    out_values = []
    for size in sizes:
        v = size // c
        if size % c or v < 1:
            continue
        if bounds is not None and ((bounds.lower.is_finite and v < int(bounds.lower)) or
                                   (bounds.upper.is_finite and v > int(bounds.upper))):
            continue
        out_values.append({sym: v})
    return out_values


def gemm_sizes(spec: str, vals: list[Any], out: Any) -> tuple[int, int, int, int] | None:
    """(M, N, K, B) of a chain from its spec, its inputs' values and its first output's value
    (symbolic dims at their hints); None when the meta is missing or K cannot be read."""
    if not isinstance(out, torch.Tensor):
        return None
    bmm = "\ngemm bmm" in spec
    out_shape = [_hint(d) for d in out.shape]
    n, b = out_shape[-1], (out_shape[0] if bmm else 1)
    m = 1
    for d in (out_shape[1:-1] if bmm else out_shape[:-1]):
        m *= d
    for line in spec.splitlines():
        tok = line.split()
        if len(tok) >= 6 and tok[2] == "input" and "k" in tok[5]:
            dims = tok[5].strip("[]").split(",")
            val = vals[int(tok[3])] if int(tok[3]) < len(vals) else None
            if isinstance(val, torch.Tensor) and len(dims) == val.dim():
                return m, n, _hint(val.shape[dims.index("k")]), b
    return None


def problem_shape(node: torch.fx.Node) -> tuple[int, int, int, int] | None:
    """(M, N, K, B) of a fused node (for dumps and precompile)."""
    vals = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in node.args[0]]
    outs = node.meta.get("val")
    return gemm_sizes(node.args[1], vals, outs[0] if outs else None)


def _kernels(result: ApplyResult) -> list[tuple[int, str, tuple[int, int, int, int] | None]]:
    return [(rid, node.args[1], problem_shape(node)) for rid, node in sorted(result.fused_nodes.items())]


def _precompile(result: ApplyResult, options: Options, plan: dict[str, Any]) -> None:
    """Compile CUDA kernels now (model compile time), so the first call, and CUDA graph
    capture, never JIT: ``_C.precompile(inputs, spec)`` on empty tensors of the inputs'
    shapes and strides (symbolic dims at their hints). With autotune, first the measured
    kernel choice per chain (autotune.py; recorded in ``plan["autotune"]``)."""
    from . import _C, autotune

    fn = getattr(_C, "precompile", None)
    tuning = autotune.enabled(options.autotune)
    if fn is None or not (options.precompile or tuning):  # measuring compiles anyway
        return
    try:
        at_hints, sized = precompile_jobs(result, options.precompile_sizes if options.precompile else ())
    except Exception as e:  # noqa: BLE001 - reading the metas must not fail the model's compile
        log.warning("fxfuse: precompile skipped: %s", e)
        return
    tuned = compile_chains(at_hints, _empty_like_meta, fn, autotune.tune if tuning else None)
    if tuned:
        plan["autotune"] = tuned
    # the other sizes compile only: the autotune measures at the hints
    compile_chains(sized, lambda job: _empty_like_meta(*job), fn, None)


def precompile_jobs(result: ApplyResult, sizes: tuple[int, ...], device_type: str = "cuda") -> tuple[
        list[tuple[int, str, list[torch.Tensor]]], list[tuple[int, str, tuple[list[torch.Tensor], dict[Any, int]]]]]:
    """The compile jobs of the fused chains whose inputs are on ``device_type``: (rewrite id,
    spec, input metas) at the symbolic dims' hints, and (rewrite id, spec, (metas, {M's symbol:
    value})) for each of ``sizes`` M can take (Options.precompile_sizes; _m_values), ordered by
    size, so that the compile threads take different chains' kernels at once."""
    at_hints, sized = [], []
    for rid, node in sorted(result.fused_nodes.items()):
        vals = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in node.args[0]]
        if vals and all(isinstance(v, torch.Tensor) for v in vals) and vals[0].device.type == device_type:
            at_hints.append((rid, node.args[1], vals))
            outs = node.meta.get("val")
            out = outs[0] if isinstance(outs, (list, tuple)) and outs else outs
            sized.extend((i, rid, node.args[1], (vals, values))
                         for i, values in enumerate(_m_values(node.args[1], out, sizes)))
    sized.sort(key=lambda job: (job[0], job[1]))
    return at_hints, [job[1:] for job in sized]


def _empty_like_meta(vals: list[torch.Tensor], values: dict[Any, int] | None = None) -> list[torch.Tensor]:
    """Stand-ins with the metas' shapes, strides and storage offsets (the op keys kernels and
    choices by base alignment too), symbolic dims at their hints, or at ``values``."""
    from .autotune import storage_elements

    out = []
    for v in vals:
        shape, stride = [_sized(d, values) for d in v.shape], [_sized(s, values, 1) for s in v.stride()]
        offset = _sized(v.storage_offset(), values, 0)
        base = torch.empty(storage_elements(shape, stride, offset), dtype=v.dtype, device=v.device)
        out.append(base.as_strided(shape, stride, offset))
    return out


def compile_chains(jobs: list[tuple[int, str, Any]], make_inputs: Callable[[Any], list[torch.Tensor]],
                   compile_fn: Callable[[list[torch.Tensor], str], None],
                   tune: Callable[[list[torch.Tensor], str], dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Compiles each (rewrite id, spec, input metas) job's kernel with ``compile_fn`` on inputs
    from ``make_inputs``. Without ``tune`` the compiles run in up to 4 threads (NVRTC is
    thread-safe and the op holds no Python lock while compiling; the same spec twice compiles
    once), so a model's cold compile takes about its slowest kernels instead of their sum; each
    thread holds one job's inputs at a time (they may be weight-sized). With ``tune``, each
    chain is first measured, one at a time: a measurement must have the GPU to itself.
    Failures are logged, never raised: the op still compiles at its first launch."""
    tuned: list[dict[str, Any]] = []

    def run(job):
        rid, spec, vals = job
        try:
            inputs = make_inputs(vals)
        except Exception as e:  # noqa: BLE001
            log.warning("fxfuse: precompile failed for rewrite %s: %s", rid, e)
            return
        if tune is not None:
            try:
                t = tune(inputs, spec)
                tuned.append({"rewrite": rid, **t})
                log.info("fxfuse: rewrite %s autotuned (%s): %s", rid, t["source"], t["choice"])
            except Exception as e:  # noqa: BLE001 - the heuristic still decides
                log.warning("fxfuse: autotune failed for rewrite %s: %s", rid, e)
        try:
            compile_fn(inputs, spec)
        except Exception as e:  # noqa: BLE001 - the op still JITs at its first launch
            log.warning("fxfuse: precompile failed for rewrite %s: %s", rid, e)

    workers = 1 if tune is not None else min(len({job[1] for job in jobs}), os.cpu_count() or 1, 4)
    if workers <= 1:
        for job in jobs:
            run(job)
    else:
        with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="fxfuse-compile") as pool:
            list(pool.map(run, jobs))
    return tuned


def _mark_skipped(plan: dict[str, Any], skipped: dict[int, str]) -> None:
    """A rewrite apply_plan refused makes its GEMM "not_fused" with reason ``apply_rejected``."""
    if not skipped:
        return
    counters = plan.setdefault("counters", {})
    for entry in plan.get("report") or []:
        if entry.get("status") == "fused" and entry.get("rewrite") in skipped:
            entry.update(status="not_fused", reason="apply_rejected", detail=skipped[entry["rewrite"]])
            counters["reject.apply_rejected"] = counters.get("reject.apply_rejected", 0) + 1


def run_on_graph(graph: torch.fx.Graph, options: Options, label: str = "graph") -> PassResult | None:
    """The pass on ``graph`` in place. Returns None when disabled."""
    if not options.enabled:
        return None
    root = dump_root(options.dump_dir)
    before_fx = _graph_text(graph) if root else ""
    ir_text, plan = plan_for_graph(graph, options)
    _warn_if_no_nvrtc(plan)
    applied = apply_plan(graph, plan)
    _mark_skipped(plan, applied.skipped)
    if graph.owning_module is not None:
        graph.owning_module.recompile()
    _stats.record_pass(plan.get("counters") or {}, len(applied.applied), len(applied.skipped))
    report_text = format_report(plan, applied.skipped, label)
    for entry in plan.get("report") or []:
        if entry.get("status") == "fused":
            log.info("fxfuse: %s fused: %s", entry.get("gemm"), entry.get("chain", ""))
        else:
            log.info("fxfuse: %s not fused: %s %s", entry.get("gemm"), entry.get("reason"), entry.get("detail", ""))
    _precompile(applied, options, plan)
    folder = None
    if root:
        folder = write_graph_dump(root, label, before_fx=before_fx, after_fx=_graph_text(graph),
                                  before_ir=ir_text, after_ir=graph_to_ir(graph), plan=plan,
                                  skipped=applied.skipped, report_text=report_text,
                                  kernels=_kernels(applied), arch=options.resolved_arch())
    _stats.record_plan(label, plan, applied.skipped)
    return PassResult(plan, applied, report_text, folder, [rw["spec"] for rw in plan.get("rewrites") or []])
