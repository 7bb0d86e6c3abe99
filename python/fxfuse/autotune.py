"""Measured kernel choice for one fused chain and its problem (issue 6's optional autotune).

The op picks a kernel by a heuristic (codegen/config_table.cpp). With autotune on
(``Options(autotune=True)``, ``fxfuse.compile(model, autotune=True)``, or FXFUSE_AUTOTUNE=1),
the pass instead measures, while the model compiles, every kernel the op may run for the chain
(``_C.kernel_candidates``: the heuristic's choice, for an 8-bit-weight gemv on sm_90 its other
products, widths and stages, and the other Hopper tiles, whatever the epilogue) and the unfused path
(what the op runs when no kernel is faster: cuBLAS plus the generated epilogue kernel, or ATen
ops), on random inputs of the real shapes, strides and
dtypes. A candidate counts only if it really launched its kernel and its outputs agree with the
chain evaluated by ATen ops alone (no generated code). The fastest becomes the
op's choice for that problem (``_C.set_kernel_choice``), kept in the disk kernel cache
(runtime/kernel_choice.h): every later process runs it without measuring, also one that loads
the compiled graph from Inductor's cache or a rewritten .pt2 and never runs this pass.
"""
from __future__ import annotations

import contextlib
import logging
import os
import statistics
from typing import Any

import torch

from .env_flags import env_flag
from .spec_expects import fill_expects

log = logging.getLogger("fxfuse")

ATEN = "aten"       # the unfused path: cuBLAS + the epilogue kernel where it applies, else ATen ops
ATEN_OPS = "aten-ops"  # ATen ops alone (the reference; never chosen)
WARMUP, REPS = 3, 20
BESIDE = "beside:"  # measure's names for the calls timed beside the candidates
# A candidate whose fastest warm-up call (of SLOW_WARMUP_REPS) took more than this many times the
# fastest candidate's is not timed among the others (measure): the sm80 fallback among Hopper tiles
# runs 12-18x cuBLAS mm, and its long calls let the GPU's clock recover under the power limit, which moved the others' times
# (bench/RESULTS.md Run AQ: at 4096 x 14336 x 4096 in the same call, 64x256 ping-pong ran 1.076-1.089x
# cuBLAS mm alone in compare_tiles rows with the sm80 kernel among the candidates, 1.003-1.031x in rows
# without it). The unfused path runs at most ~2x the fastest tile measured.
SLOW_FACTOR = 4.0
# Interleaved warm-up repetitions that judge SLOW_FACTOR, each candidate by its fastest one: judged by one call,
# the unfused path for SiLU at 512 x 4096 x 4096 read 5.4x cuBLAS mm in three rounds of compare_tiles (session 57)
# where it runs at 1.26x (session 58, bench/sm90/unfused_path_check.py), and was left out of the timing.
SLOW_WARMUP_REPS = 3


def enabled(option: bool) -> bool:
    return option or env_flag("FXFUSE_AUTOTUNE")


def storage_elements(shape: list[int], stride: list[int], offset: int) -> int:
    """Elements of storage a tensor of this shape, strides and storage offset needs."""
    return offset + (1 + sum((d - 1) * s for d, s in zip(shape, stride)) if all(shape) else 0)


def random_inputs(like: list[Any]) -> list[torch.Tensor]:
    """Random tensors with the shapes, strides, storage offsets (so the same base alignment),
    dtypes and devices of ``like`` (real tensors or the stand-ins precompile makes)."""
    out = []
    for v in like:
        numel = storage_elements([int(d) for d in v.shape], [int(s) for s in v.stride()], int(v.storage_offset()))
        if v.dtype.is_floating_point:
            base = (torch.randn(numel, device=v.device) * 0.5).to(v.dtype)
        elif v.dtype == torch.bool:
            base = torch.rand(numel, device=v.device) < 0.5
        else:
            base = torch.randint(-100, 100, (numel,), device=v.device).to(v.dtype)
        out.append(base.as_strided(v.shape, v.stride(), v.storage_offset()))
    return out


# Bytes written between two timed calls so that each call finds its operands out of L2 (50 MB on
# the H100/H200), as a model's layer does after the layers before it. Without it, at decode shapes
# whose weights fit in L2, this timer and triton's do_bench (which flushes) disagreed: the fused
# kernel 0.85x cuBLAS mm here against 1.19-1.28x there at M = 128, K = N = 4096 (bench/RESULTS.md
# Run AA; cuBLAS itself read slower here, so L2 is not the whole difference: not yet re-run).
L2_FLUSH_BYTES = 256 << 20


def time_interleaved(fns: dict[str, Any], reps: int, prepare=None,
                     failures: dict[str, str] | None = None) -> dict[str, list[float]]:
    """`reps` CUDA-event timings of each of `fns` (name -> callable), L2 flushed before each call,
    the calls interleaved: every repetition calls each function once, the order rotated by one
    each time; `prepare(name)`, where given, runs untimed before each call's flush. Timed in
    blocks instead (all of one function's calls, then the next's, as triton's do_bench and this
    timer did until session 27), two variants met the GPU at different clocks: the same fused
    kernel read 0.64 ms in compare_tiles and 0.73 ms in the project bench, cuBLAS mm 0.68
    against 0.71 (bench/RESULTS.md Run AP). Interleaved, a clock swing hits every variant alike.
    With `failures`, a function (or its `prepare`) that raises is dropped from the later
    repetitions and left out of the result, the reason in failures[name]; without, it raises.
    A change to how choices are measured bumps kChoiceMeasurement (runtime/kernel_choice.cpp),
    so that choices stored on disk before it are measured again."""
    names = list(fns)
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=torch.cuda.current_device())
    events = {n: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(reps)] for n in names}
    for i in range(reps):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            if failures is not None and name in failures:
                continue
            start, end = events[name][i]
            try:
                if prepare is not None:
                    prepare(name)
                flush.zero_()
                start.record()
                fns[name]()
                end.record()
            except Exception as e:  # noqa: BLE001 - the caller asked for failures by name
                if failures is None:
                    raise
                failures[name] = f"{type(e).__name__}: {e}"[:300]
    torch.cuda.synchronize()
    return {n: [s.elapsed_time(e) for s, e in events[n]] for n in names
            if failures is None or n not in failures}


def disagreement(outs: list[torch.Tensor], ref: list[torch.Tensor]) -> str | None:
    """Why ``outs`` are not the chain's result ``ref`` (the ATen evaluation), or None. Floating
    outputs: relative norm within the dtype's rounding (2e-2 for 16/8-bit, 1e-3 for fp32),
    NaN and ±Inf where ``ref`` has them; others: at most 0.2 % of the elements differ
    (comparison flips)."""
    for i, (o, r) in enumerate(zip(outs, ref)):
        if o.shape != r.shape or o.dtype != r.dtype:
            return f"output {i}: {tuple(o.shape)} {o.dtype}, ATen gives {tuple(r.shape)} {r.dtype}"
        if r.dtype.is_floating_point:
            if not torch.equal(o.isnan(), r.isnan()):
                return f"output {i}: NaN positions differ"
            if not torch.equal(torch.where(o.isinf(), o.sign(), 0), torch.where(r.isinf(), r.sign(), 0)):
                return f"output {i}: Inf positions or signs differ"
            fin = r.isfinite() & o.isfinite()
            d, n = (o[fin].double() - r[fin].double()).norm(), r[fin].double().norm()
            tol = 1e-3 if r.dtype in (torch.float32, torch.float64) else 2e-2
            if d > tol * max(n.item(), 1e-30):
                return f"output {i}: relative error {(d / max(n.item(), 1e-30)).item():.2e} > {tol}"
        elif (o != r).sum().item() > max(1, int(0.002 * r.numel())):
            return f"output {i}: {(o != r).sum().item()} elements differ"
    return None


def _aten_reference(op, inputs: list[torch.Tensor], spec: str) -> list[torch.Tensor]:
    """The chain evaluated with ATen ops alone (no generated code at all, not even the unfused
    path's epilogue kernel, whose hooks every candidate shares): what candidates must match."""
    from . import _C

    _C.set_kernel_choice(inputs, spec, ATEN_OPS)
    outs = [o.clone() for o in op(inputs, spec)]
    torch.cuda.synchronize()
    return outs


def measure(inputs: list[torch.Tensor], spec: str, reps: int = REPS,
            beside: dict[str, Any] | None = None) -> dict[str, Any]:
    """_measure on the inputs' GPU: its events, L2 flush buffer and synchronize are the current device's,
    which for a model on cuda:1 had been cuda:0, so every candidate timed next to nothing and the noise's
    winner was kept on disk (review, session 53)."""
    on_gpu = inputs and isinstance(inputs[0], torch.Tensor) and inputs[0].is_cuda
    with torch.cuda.device(inputs[0].device) if on_gpu else contextlib.nullcontext():
        return _measure(inputs, spec, reps, beside)


def _measure(inputs: list[torch.Tensor], spec: str, reps: int = REPS,
             beside: dict[str, Any] | None = None) -> dict[str, Any]:
    """Times the unfused path ("aten": cuBLAS plus the epilogue kernel, or ATen ops) and each
    candidate kernel on ``inputs``; every one must agree with the ATen evaluation. Returns the
    fastest valid choice with every time (None: rejected, reason in ``errors``). ``beside``:
    other calls (name -> callable, e.g. cuBLAS mm alone) timed among the candidates, their times
    in ``beside_ms``; ``warmup_only``: the candidates more than SLOW_FACTOR times slower than the
    fastest in the warm-up (each by its fastest of SLOW_WARMUP_REPS calls), whose time is that call's. Leaves the op on the heuristic; ``tune``
    sets the choice."""
    from . import _C

    op = torch.ops.fxfuse.gemm_chain
    # FXFUSE_FORCE_KERNEL (tests) would turn the "aten" candidate into a kernel: off meanwhile
    forced = os.environ.pop("FXFUSE_FORCE_KERNEL", None)
    times: dict[str, float | None] = {}
    errors: dict[str, str] = {}
    beside_ms: dict[str, float] = {}
    slow: dict[str, float] = {}  # candidates timed by their warm-up calls alone (SLOW_FACTOR)
    try:
        ref = _aten_reference(op, inputs, spec)
        # Every candidate compiled, loaded and checked first, then all timed together, their calls
        # interleaved (time_interleaved), after one untimed repetition of each: timed right after
        # its own compile (the GPU idle for a second or more), a candidate met the GPU at a higher
        # clock than one timed after others ran (bench/RESULTS.md Run AO: cuBLAS mm alone up to
        # 18 % faster in a first round after an idle GPU than in the next two).
        checked = []
        for choice in [ATEN] + _C.kernel_candidates(inputs, spec):
            _C.set_kernel_choice(inputs, spec, choice)
            times[choice] = None
            try:
                # with background compiles on (fxfuse.set_background_compile: ATen until built),
                # compiled and loaded before its first call, so that the call launches it
                if _C.background_compile():
                    _C.precompile(inputs, spec)
                before = _C.stats().get("launches", 0)
                outs = [op(inputs, spec) for _ in range(WARMUP)][-1]
                torch.cuda.synchronize()
                launched = _C.stats().get("launches", 0) - before
                if choice != ATEN and launched != WARMUP:
                    errors[choice] = "the op did not launch this kernel (it fell back to ATen)"
                    continue
                if (why := disagreement(outs, ref)) is not None:
                    errors[choice] = why
                    continue
                checked.append(choice)
            except Exception as e:  # noqa: BLE001 - a candidate that fails is not chosen
                errors[choice] = f"{type(e).__name__}: {e}"[:300]
        fns = {c: (lambda: op(inputs, spec)) for c in checked}
        fns.update({f"{BESIDE}{name}": fn for name, fn in (beside or {}).items()})

        def choose(name):  # the choice is per problem: set before each of its calls, untimed
            if not name.startswith(BESIDE):
                _C.set_kernel_choice(inputs, spec, name)
                # Setting a choice clears the op's call cache, so the next call would plan again on
                # the host inside the timed span (a decode-sized kernel runs for less than that
                # planning); precompile plans the call site and caches it, launching nothing.
                _C.precompile(inputs, spec)
        failed: dict[str, str] = {}  # a candidate (or a call beside them) that raises is not timed
        warm = time_interleaved(fns, SLOW_WARMUP_REPS, choose, failed)  # a warm-up (caches, launch paths)
        # Candidates many times slower than the fastest keep their fastest warm-up time and are not timed
        # among the others (SLOW_FACTOR): they cannot be chosen, and they moved the others' clocks.
        candidates = {n: min(s) for n, s in warm.items() if not n.startswith(BESIDE)}
        fastest = min(candidates.values(), default=0.0)
        slow.update({n: t for n, t in candidates.items() if fastest > 0 and t > SLOW_FACTOR * fastest})
        times.update(slow)
        for name, samples in time_interleaved({n: f for n, f in fns.items() if n not in slow}, reps, choose,
                                              failed).items():
            if name.startswith(BESIDE):
                beside_ms[name[len(BESIDE):]] = statistics.median(samples)
            else:
                times[name] = statistics.median(samples)
        for name, why in failed.items():
            errors[name] = why  # beside calls under their prefixed names
    finally:
        _C.set_kernel_choice(inputs, spec, "")
        if forced is not None:
            os.environ["FXFUSE_FORCE_KERNEL"] = forced
    timed = {c: t for c, t in times.items() if t is not None}
    return {"choice": min(timed, key=timed.get) if timed else "", "times_ms": times, "errors": errors,
            "beside_ms": beside_ms, "warmup_only": sorted(slow)}


def tune(like: list[Any], spec: str) -> dict[str, Any]:
    """The choice already made for this chain and problem (this process or the disk cache),
    else a measurement, kept on disk; the op is left running the choice. ``like``: tensors
    with the op's input shapes, strides, dtypes and device (CUDA)."""
    from . import _C

    # the op checks the spec's expect lines before it computes: their inputs hold the facts, not random numbers
    inputs = fill_expects(random_inputs(like), spec)
    existing = _C.kernel_choice(inputs, spec)
    if existing:
        return {"choice": existing, "source": "cache"}
    result = measure(inputs, spec)
    if result["choice"]:
        _C.set_kernel_choice(inputs, spec, result["choice"], persist=True)
    return {**result, "source": "measured"}
