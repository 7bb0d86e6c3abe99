"""Which path the fxfuse op took for the calls a benchmark timed, from fxfuse._C.stats().

A timed figure means little without it: the same chain may run a fused kernel, cuBLAS plus the
generated epilogue kernel (the op's unfused path), the op's ATen evaluation, or not go through
the op at all (the pass left it unfused).
"""
import fxfuse._C as C

COUNTERS = ("launches", "cluster_launches", "pointwise_launches", "aten_dispatch", "fallbacks",
            "call_cache_hits", "hopper_overlap_launches")


def counters():
    s = C.stats()
    return {k: s.get(k, 0) for k in COUNTERS}


def path_of(before, after, calls=None):
    """The path the op calls made between two counters() snapshots took. With `calls`, every
    one of that many calls must have taken it, else the path reads "mixed"."""
    d = {k: after[k] - before[k] for k in COUNTERS}
    launches, pointwise, cluster = d["launches"], d["pointwise_launches"], d["cluster_launches"]
    aten, fallbacks = d["aten_dispatch"], d["fallbacks"]
    if not (launches or aten or fallbacks):
        return "not the op"
    if launches and pointwise == launches and not (aten or fallbacks):
        path, n = "cuBLAS + epilogue kernel", launches
    elif launches and not (pointwise or aten or fallbacks) and cluster in (0, launches) and \
            d["hopper_overlap_launches"] in (0, launches):
        path, n = "kernel (split-K cluster)" if cluster else \
            "kernel (overlapped epilogue)" if d["hopper_overlap_launches"] else "kernel", launches
    elif aten and not (launches or fallbacks):
        path, n = "aten", aten
    elif fallbacks and not (launches or aten):
        path, n = "fallback", fallbacks
    else:
        return f"mixed {d}"
    return path if calls is None or n == calls else f"mixed {d}"


def path_of_call(fn):
    """The path one call of fn() takes (fn calls the op once, or not at all)."""
    before = counters()
    fn()
    return path_of(before, counters(), 1)
