"""Process-wide counters: ``fxfuse.stats()`` and ``fxfuse.reset_stats()``.

Python counts what the pass saw and what was applied; the extension counts kernels and cache
hits (``_C.stats()``), merged in under their own names.
"""
from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from typing import Any

log = logging.getLogger("fxfuse")

__all__ = ["stats", "reset_stats", "record_pass", "record_plan", "record_cached_graph", "recent_plans"]

_lock = threading.Lock()
_counters: Counter = Counter()
_rejections: Counter = Counter()
# (label, plan, skipped) of the graphs run since the last reset (bounded): ``fxfuse.report()``.
_plans: list[tuple[str, dict[str, Any], dict[int, str]]] = []
_MAX_PLANS = 256


def record_plan(label: str, plan: dict[str, Any], skipped: dict[int, str]) -> None:
    with _lock:
        _plans.append((label, plan, dict(skipped)))
        del _plans[:-_MAX_PLANS]


def recent_plans() -> list[tuple[str, dict[str, Any], dict[int, str]]]:
    with _lock:
        return list(_plans)


def record_pass(counters: dict[str, int], applied: int, skipped: int) -> None:
    """Adds one pass run: the pass's counters (``gemms_seen``, ``chains_for_unfused_path``,
    ``reject.<reason>``) and how many rewrites were applied / skipped by ``apply_plan``."""
    with _lock:
        _counters["graphs_seen"] += 1
        _counters["gemms_seen"] += int(counters.get("gemms_seen", 0))
        # planned, of them: chains no fused kernel runs faster than eager, kept for the op's
        # unfused path (cuBLAS + one epilogue kernel; pass/profitability.h)
        _counters["chains_for_unfused_path"] += int(counters.get("chains_for_unfused_path", 0))
        _counters["chains_fused"] += applied
        _counters["rewrites_skipped"] += skipped
        for key, value in counters.items():
            if key.startswith("reject."):
                _rejections[key[len("reject."):]] += int(value)


def record_cached_graph() -> None:
    """One graph compiled by ``backend="fxfuse"`` came from Inductor's cache: the pass did not
    run on it (``graphs_from_inductor_cache``; ``fxfuse.report()`` says so)."""
    with _lock:
        _counters["graphs_from_inductor_cache"] += 1


def _native_stats() -> dict[str, Any]:
    from . import _C

    fn = getattr(_C, "stats", None)
    if fn is None:
        return {}
    try:
        raw = fn()
    except Exception as e:  # noqa: BLE001 - stats must never break the caller
        log.debug("fxfuse: _C.stats() failed: %s", e)
        return {}
    if isinstance(raw, str):
        raw = json.loads(raw) if raw.strip() else {}
    return dict(raw)


def stats() -> dict[str, Any]:
    """``{"graphs_seen", "gemms_seen", "chains_fused", "chains_for_unfused_path", "rewrites_skipped",
    "graphs_from_inductor_cache", "rejections": {reason: n}, "kernels_compiled", "cache_hits",
    ...}``: the Python counters plus every counter of ``_C.stats()`` (kernel compiles,
    memory/disk cache hits). A graph from Inductor's cache is not in the pass's counters."""
    with _lock:
        out: dict[str, Any] = {k: 0 for k in ("graphs_seen", "gemms_seen", "chains_fused", "chains_for_unfused_path",
                                              "rewrites_skipped", "graphs_from_inductor_cache")}
        out.update(_counters)
        out["rejections"] = dict(_rejections)
    native = _native_stats()
    out.setdefault("kernels_compiled", 0)
    out.setdefault("cache_hits", 0)
    for key, value in native.items():
        if key in ("gemms_seen", "chains_fused", "graphs_seen", "rejections"):
            out["native." + key] = value
        else:
            out[key] = value
    if "cache_hits" not in native:
        # memory_hits + disk_hits: kernels served from a cache instead of compiled
        out["cache_hits"] = sum(v for k, v in native.items()
                                if k.endswith("_hits") and isinstance(v, (int, float)))
    return out


def reset_stats() -> None:
    with _lock:
        _counters.clear()
        _rejections.clear()
        _plans.clear()
    from . import _C

    fn = getattr(_C, "reset_stats", None)
    if fn is not None:
        fn()
