"""Compiling the fused chains' kernels while the model compiles (Options.precompile), so that the
first call, and CUDA graph capture, never JIT: one job per fused chain at its symbolic dims'
hints, and one per row count M of Options.precompile_sizes that M can take; empty stand-in inputs
of the metas' shapes, strides and offsets; the jobs compiled in threads (``_C.precompile`` plans
the call site and compiles its kernel, launching nothing)."""
from __future__ import annotations

import concurrent.futures
import functools
import logging
import os
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.fx

from .apply_plan import ApplyResult

if TYPE_CHECKING:
    from .pass_driver import Options

log = logging.getLogger("fxfuse")

__all__ = ["precompile", "precompile_jobs", "empty_like_meta", "compile_chains", "size_hint", "row_dims"]


def size_hint(d: Any, default: int = 1024) -> int:
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
        return size_hint(d, default)
    env = getattr(d.node, "shape_env", None)
    hints = getattr(env, "backed_var_to_val", None) or getattr(env, "var_to_val", None) or {} if env else {}
    return int(expr.xreplace({sym: values.get(sym, hints.get(sym, default)) for sym in expr.free_symbols}))


def row_dims(spec: str, out: torch.Tensor) -> tuple[Any, ...]:
    """The dims of a chain's output whose product is M: all but the last (columns), and not a
    bmm's leading batch dim."""
    return tuple(out.shape[1:-1] if "\ngemm bmm" in spec else out.shape[:-1])


def _m_values(spec: str, out: Any, sizes: tuple[int, ...]) -> list[dict[Any, int]]:
    """For each size of Options.precompile_sizes that M (the product of the output's row dims:
    all but the last, and the batch dim of a bmm) can take: the value of M's one symbol there.
    None of them where M has no symbol, several, or is not c x symbol; a size c does not divide
    or outside the symbol's range is skipped."""
    import sympy

    if not sizes or not isinstance(out, torch.Tensor):
        return []
    dims = row_dims(spec, out)
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
        # compared in sympy: an unbounded dim's upper bound is torch's int_oo, which says is_finite and
        # cannot be converted to an int (int() raised, and every size was skipped: session 52)
        if bounds is not None and bool(sympy.Integer(v) < bounds.lower or sympy.Integer(v) > bounds.upper):
            continue
        out_values.append({sym: v})
    return out_values


def precompile(result: ApplyResult, options: "Options", plan: dict[str, Any]) -> None:
    """Compile CUDA kernels now (model compile time), so the first call, and CUDA graph
    capture, never JIT: ``_C.precompile(inputs, spec)`` on empty tensors of the inputs'
    shapes and strides (symbolic dims at their hints, then at each of Options.precompile_sizes
    M can take; those queued for a background compile where background compiles are on). With
    autotune, first the measured kernel choice per chain at the hints (autotune.py; recorded in
    ``plan["autotune"]``)."""
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
    tuned = compile_chains(at_hints, empty_like_meta, fn, autotune.tune if tuning else None)
    if tuned:
        plan["autotune"] = tuned
    # the other sizes compile only: the autotune measures at the hints. With background compiles
    # on (fxfuse.set_background_compile) they are queued and the model's compile does not wait for
    # them; the hints' kernels are compiled before it returns, as a CUDA graph capture needs them.
    if _C.background_compile():
        fn = functools.partial(fn, background=True)
    compile_chains(sized, lambda job: empty_like_meta(*job), fn, None)


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


def empty_like_meta(vals: list[torch.Tensor], values: dict[Any, int] | None = None) -> list[torch.Tensor]:
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
