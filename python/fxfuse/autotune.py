"""Measured kernel choice for one fused chain at one problem size, cached on disk (issue 6).

The op picks a kernel by a heuristic (codegen/config_table.cpp). With autotune on
(``Options(autotune=True)``, ``fxfuse.compile(model, autotune=True)``, or FXFUSE_AUTOTUNE=1),
the pass instead times, while the model compiles, every kernel the op may run for the chain
(``_C.kernel_candidates``: the heuristic's choice and the other Hopper tiles) and the chain
evaluated with ATen (what the op runs when no kernel is faster), on random inputs of the real
shapes, strides and dtypes, and makes the op run the fastest (``_C.set_kernel_choice``).

Results live in ``<kernel cache dir>/autotune/<key>.json``; the key covers the library
version, the GPU's name, the spec and every input's shape, strides, dtype and 16-byte
alignment, so a later process (or another model with the same chain) only reads them. A
missing, unreadable or corrupt entry is measured again; a cache that cannot be written only
costs the next process a measurement.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import statistics
import tempfile
from typing import Any

import torch

log = logging.getLogger("fxfuse")

FORMAT = 1          # bump when the file layout or the meaning of a choice changes
ATEN = "aten"       # the op evaluates the chain with ATen ops
WARMUP, REPS = 3, 20


def enabled(option: bool) -> bool:
    return option or os.environ.get("FXFUSE_AUTOTUNE", "") == "1"


def cache_key(inputs: list[torch.Tensor], spec: str) -> str:
    from . import _C

    desc = [FORMAT, _C.library_version(), torch.cuda.get_device_name(inputs[0].device), spec,
            [(list(t.shape), list(t.stride()), str(t.dtype), t.data_ptr() % 16) for t in inputs]]
    return hashlib.sha256(json.dumps(desc).encode()).hexdigest()


def _path(key: str) -> str:
    from . import _C

    return os.path.join(_C.cache_dir(), "autotune", key[:40] + ".json")


def load(key: str) -> dict[str, Any] | None:
    """A stored result, or None when there is none or it cannot be trusted."""
    try:
        with open(_path(key)) as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("choice"), str):
        return None
    return entry


def store(key: str, entry: dict[str, Any]) -> None:
    """Written whole or not at all (temporary file, then rename): readers never see half."""
    path = _path(key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({**entry, "key": key}, f, indent=1)
        os.replace(tmp, path)
    except OSError as e:
        log.warning("fxfuse: autotune result not stored (%s); the next process measures again", e)


def random_inputs(like: list[Any]) -> list[torch.Tensor]:
    """Random tensors with the shapes, strides, dtypes and devices of ``like`` (real tensors or
    fake ones from FX meta), over storage just large enough for the strides."""
    out = []
    for v in like:
        shape, stride = [int(d) for d in v.shape], [int(s) for s in v.stride()]
        numel = 1 + sum((d - 1) * s for d, s in zip(shape, stride)) if all(shape) else 0
        if v.dtype.is_floating_point:
            base = (torch.randn(numel, device=v.device) * 0.5).to(v.dtype)
        elif v.dtype == torch.bool:
            base = torch.rand(numel, device=v.device) < 0.5
        else:
            base = torch.randint(-100, 100, (numel,), device=v.device).to(v.dtype)
        out.append(base.as_strided(shape, stride))
    return out


def _time_ms(fn, reps: int) -> float:
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def measure(inputs: list[torch.Tensor], spec: str, sizes: tuple[int, int, int, int],
            reps: int = REPS) -> dict[str, Any]:
    """Times each candidate and the ATen evaluation; leaves the op set to the fastest."""
    from . import _C

    m, n, k, b = sizes
    major, minor = torch.cuda.get_device_capability(inputs[0].device)
    times: dict[str, float | None] = {}
    errors: dict[str, str] = {}
    for choice in _C.kernel_candidates(spec, m, n, k, b, f"sm_{major}{minor}") + [ATEN]:
        _C.set_kernel_choice(spec, b, m, n, k, choice)
        try:
            for _ in range(WARMUP):  # the first call compiles (or reads the disk cache) and loads
                torch.ops.fxfuse.gemm_chain(inputs, spec)
            torch.cuda.synchronize()
            times[choice] = _time_ms(lambda: torch.ops.fxfuse.gemm_chain(inputs, spec), reps)
        except Exception as e:  # noqa: BLE001 - a candidate that fails is not chosen
            times[choice] = None
            errors[choice] = f"{type(e).__name__}: {e}"[:300]
    timed = {c: t for c, t in times.items() if t is not None}
    best = min(timed, key=timed.get) if timed else ""
    _C.set_kernel_choice(spec, b, m, n, k, best)
    return {"choice": best, "times_ms": times, "errors": errors, "sizes": list(sizes)}


def tune(like: list[Any], spec: str, sizes: tuple[int, int, int, int]) -> dict[str, Any]:
    """The stored choice for this chain and problem, else a measurement (stored); the op is set
    to run the choice. ``like``: the op's inputs or their FX meta values (CUDA)."""
    from . import _C

    inputs = random_inputs(like)
    key = cache_key(inputs, spec)
    entry = load(key)
    if entry is not None:
        m, n, k, b = sizes
        _C.set_kernel_choice(spec, b, m, n, k, entry["choice"])
        return {**entry, "source": "disk"}
    entry = measure(inputs, spec, sizes)
    store(key, entry)
    return {**entry, "source": "measured"}
