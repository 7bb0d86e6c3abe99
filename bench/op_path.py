"""Which path the fxfuse op took for the calls a benchmark timed, from fxfuse._C.stats().

A timed figure means little without it: the same chain may run a fused kernel, cuBLAS plus the
generated epilogue kernel (the op's unfused path), the op's ATen evaluation, or not go through
the op at all (the pass left it unfused).
"""
import fxfuse._C as C

COUNTERS = ("launches", "cluster_launches", "pointwise_launches", "aten_dispatch", "fallbacks",
            "call_cache_hits")


def counters():
    s = C.stats()
    return {k: s.get(k, 0) for k in COUNTERS}


def path_of(before, after, calls):
    """The path of `calls` op calls made between two counters() snapshots."""
    d = {k: after[k] - before[k] for k in COUNTERS}
    if not any(d[k] for k in ("launches", "aten_dispatch", "fallbacks")):
        return "not the op"
    if d["pointwise_launches"] == calls and d["launches"] == calls:
        return "cuBLAS + epilogue kernel"
    if d["launches"] == calls and d["pointwise_launches"] == 0:
        return "kernel (split-K cluster)" if d["cluster_launches"] == calls else "kernel"
    if d["aten_dispatch"] == calls:
        return "aten"
    if d["fallbacks"] == calls:
        return "fallback"
    return f"mixed {d}"


def path_of_call(fn):
    """The path one call of fn() takes (fn calls the op once, or not at all)."""
    before = counters()
    fn()
    return path_of(before, counters(), 1)
