"""Background compiles: the op's first call for a new kernel does not wait for NVRTC.

Off by default. When on, a call whose kernel is in neither the memory nor the disk cache queues
its compile on a worker thread (at most four at once) and answers with ATen ops, eager's own
result; later calls do the same until the kernel is built, and the first call after that launches
it (the worker also loads it, so a CUDA graph captured after ``wait_for_compiles`` records the
kernel; one captured while the kernel still compiles records ATen ops). This takes the 0.4-1 s
compile off the latency of a serving loop that meets a new size class
(a dynamic batch, issue 7) at the cost of ATen's speed for the calls in between. Kernels compiled
while the model compiles (``Options.precompile``, ``precompile_sizes``) are unaffected.

    fxfuse.set_background_compile(True)       # or FXFUSE_BACKGROUND_COMPILE=1
    ...                                       # serve; fxfuse.stats()["background_compile_calls"]
    fxfuse.wait_for_compiles(timeout_s=30)    # e.g. before capturing a CUDA graph
"""
from __future__ import annotations

import atexit

from . import _C


def set_background_compile(enabled: bool = True) -> None:
    """Process-wide switch (overrides FXFUSE_BACKGROUND_COMPILE). A bool: `bool("no")` had turned it on."""
    if not isinstance(enabled, (bool, int)):
        raise TypeError(f"set_background_compile: enabled must be a bool, got {type(enabled).__name__} {enabled!r}")
    _C.set_background_compile(bool(enabled))


def background_compile() -> bool:
    """Whether calls compile missing kernels in the background."""
    return _C.background_compile()


def wait_for_compiles(timeout_s: float | None = None) -> bool:
    """Blocks until no background compile is queued or running (True) or ``timeout_s`` seconds have
    passed (False). The kernels built load at their next call."""
    if timeout_s is not None and not timeout_s >= 0:  # NaN too
        raise ValueError(f"wait_for_compiles: timeout_s must be >= 0, got {timeout_s}")
    return _C.wait_for_compiles(timeout_s)


# A compile still running at exit would use NVRTC while the process unloads it: drop the queued
# ones and wait for the running ones (at most one compile's time) before Python finalizes.
atexit.register(_C.finish_background_compiles)
