"""Human-readable fusion report: every GEMM the pass saw, fused with its chain or the reason
it was not (docs/interfaces.md, ``report`` entries)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FusionReport", "format_report"]


def _line(entry: dict[str, Any]) -> str:
    gemm = entry.get("gemm", "?")
    if entry.get("status") == "fused":
        chain = entry.get("chain", "")
        # a prologue op the chain left outside: why the weight is read dequantized from memory
        stops = entry.get("prologue_stops") or []
        return f"  {gemm}: fused (rewrite {entry.get('rewrite', '?')}): {chain}" + "".join(f"; {n}" for n in stops)
    reason = entry.get("reason", "unknown")
    detail = entry.get("detail")
    return f"  {gemm}: not fused: {reason}" + (f" ({detail})" if detail else "")


def format_report(plan: dict[str, Any], skipped: dict[int, str] | None = None, title: str = "") -> str:
    lines = [f"fxfuse report{': ' + title if title else ''}"]
    entries = plan.get("report") or []
    if plan.get("fused_before"):
        lines.append(f"  {plan['fused_before']} chain(s) fused before: the graph holds fxfuse.gemm_chain ops")
    if not entries:
        lines.append("  (no GEMM in this graph)" if not plan.get("fused_before") else "  (nothing left to fuse)")
    lines += [_line(e) for e in entries]
    for rid, why in sorted((skipped or {}).items()):
        lines.append(f"  rewrite {rid}: NOT applied: {why}")
    counters = plan.get("counters") or {}
    if counters:
        lines.append("  counters: " + ", ".join(f"{k}={v}" for k, v in sorted(counters.items())))
    return "\n".join(lines) + "\n"


@dataclass
class FusionReport:
    """What the pass did (or would do) on one or more graphs."""
    graphs: list[tuple[str, dict[str, Any], dict[int, str]]] = field(default_factory=list)
    # graphs compiled with backend="fxfuse" that Inductor served from its cache (the pass did
    # not run on them, so they have no entries here)
    cached_graphs: int = 0

    def add(self, title: str, plan: dict[str, Any], skipped: dict[int, str] | None = None) -> None:
        self.graphs.append((title, plan, dict(skipped or {})))

    @property
    def entries(self) -> list[dict[str, Any]]:
        return [e for _, plan, _ in self.graphs for e in plan.get("report") or []]

    @property
    def fused(self) -> list[dict[str, Any]]:
        return [e for e in self.entries if e.get("status") == "fused"]

    @property
    def rejected(self) -> list[dict[str, Any]]:
        return [e for e in self.entries if e.get("status") != "fused"]

    def __str__(self) -> str:
        cached = ""
        if self.cached_graphs:
            cached = (f"fxfuse report: {self.cached_graphs} graph(s) came from Inductor's cache, compiled "
                      "earlier with the same fxfuse version and options; the pass did not run on them, "
                      "so their chains are not listed (torch._inductor.config.force_disable_caches = True, "
                      "or TORCHINDUCTOR_FX_GRAPH_CACHE=0 and TORCHINDUCTOR_AUTOGRAD_CACHE=0 set before "
                      "torch is imported, list them)\n")
        if not self.graphs:
            return cached or "fxfuse report: no graph was compiled\n"
        return "".join(format_report(plan, skipped, title) for title, plan, skipped in self.graphs) + cached
