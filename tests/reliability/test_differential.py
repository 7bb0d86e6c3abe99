"""Differential testing: random prologue → GEMM → epilogue chains, fxfuse vs eager.

Each case is a random plain-PyTorch function (chain_generator.py), run through fxfuse
(export → fxfuse.rewrite → run; half of them after run_decompositions) and compared with eager
in its own dtype and in float64 (diff_harness.py says how). Failures are minimized and printed
with a JSON literal to paste into test_regressions.py.

    FXFUSE_DIFF_SEED=<first case seed>   (printed; on the CPU new each run, from FXFUSE_TEST_SEED; the GPU
                                         run numbers its chunks from 20261201)
    FXFUSE_DIFF_CASES=<number of cases>  (default 500 on CPU; the GPU run has 10,000)
    FXFUSE_DIFF_SHRINK=0                 (skip minimization of failures)
    FXFUSE_DIFF_MIN_FUSED=<fraction>     (default 0.5)
    FXFUSE_DIFF_SPELLINGS=0              (no spelled-out SiLU/GELU: the runs before session 10)

One case again: FXFUSE_DIFF_SEED=<case seed> FXFUSE_DIFF_CASES=1 pytest ... -k cpu -s
"""
from __future__ import annotations

import collections
import json
import os
import time

import pytest
import torch

import testlib
from chain_generator import (GenConfig, activations_from_env, foreign_operands_from_env, generate, gpu_config,
                             spellings_from_env)
from diff_harness import check_case, describe, same_failure, shrink

fxfuse = pytest.importorskip("fxfuse", reason="fxfuse._C is not built")

# fresh cases each run (tests/testlib.py); FXFUSE_TEST_SEED or FXFUSE_DIFF_SEED repeats a run's
SEED = int(os.environ.get("FXFUSE_DIFF_SEED") or testlib.seed_for("differential") % 100_000_000)
# The GPU run's cases are numbered by chunk from one fixed base, so that a campaign of device calls covers
# disjoint chunks and DIFFERENTIAL.md's chunk numbers name the cases run; new chunks are new cases.
GPU_SEED = int(os.environ.get("FXFUSE_DIFF_SEED") or 20261201)
CASES = int(os.environ.get("FXFUSE_DIFF_CASES", "500"))
SHRINK = os.environ.get("FXFUSE_DIFF_SHRINK", "1") != "0"
MIN_FUSED = float(os.environ.get("FXFUSE_DIFF_MIN_FUSED", "0.7"))


# Failures of open bugs (issue-8 report; regression cases in test_regressions.py). They are
# counted and printed, not failed, so that CI stays green for unrelated work; delete a line
# when its bug is fixed. Anything else fails the test.
KNOWN_BUG_SIGNATURES: dict[str, str] = {
    # BUG-1 (size-1 problem dims labelled '1') and BUG-2 (partial-M prologue inputs): fixed.
}


def _known_bug(detail: str) -> str | None:
    return next((bug for sig, bug in KNOWN_BUG_SIGNATURES.items() if sig in detail), None)


def _route(seed: int) -> str:
    """Mostly the fast make_fx route; every 8th case through export, every 20th after
    run_decompositions as well (both are slow: ~0.3 s and ~1 s a case)."""
    if seed % 20 == 7:
        return "decomp"
    if seed % 8 == 3:
        return "export"
    return "fx"


def run_cases(seeds, device: str, cfg: GenConfig, max_shrunk: int = 3, options: dict | None = None):
    results = collections.Counter()
    known = collections.Counter()
    reasons = collections.Counter()
    failures = []
    fused_cases = flips = reordered = 0
    worst_ratio = 0.0
    t0 = time.time()
    for seed in seeds:
        case = generate(seed, cfg)
        route = _route(seed)
        o = check_case(case, route, device, options)
        results[o.status] += 1
        fused_cases += o.fused > 0
        flips += o.flips
        reordered += o.reordered
        reasons.update(o.reasons)
        for ef, ee, bound in o.errors:
            worst_ratio = max(worst_ratio, ef / bound if bound else 0.0)
        if not o.ok:
            bug = _known_bug(o.detail)
            if bug:
                known[bug] += 1
            else:
                failures.append((case, o, route))
    n = len(seeds)
    print(f"\nfxfuse differential: seeds {seeds[0]}..{seeds[-1]} ({n} cases, device {device}) in "
          f"{time.time() - t0:.1f}s: {dict(results)}; fused {fused_cases}/{n}; excused flips {flips}; "
          f"outputs judged in other orders of K {reordered}; worst fused-error/bound {worst_ratio:.3f}")
    print(f"not-fused reasons: {dict(reasons.most_common())}")
    if known:
        print(f"failures of known open bugs (not counted): {dict(known)}")
    report = []
    for i, (case, o, route) in enumerate(failures):
        text = describe(case, o, route)
        if SHRINK and i < max_shrunk and not o.status.startswith("error:eager"):
            small = shrink(case, same_failure(route, device, options)(case, o))
            so = check_case(small, route, device, options)
            text += "  minimized:\n" + describe(small, so, route)
        report.append(text)
    return results, fused_cases, failures, "\n".join(report)


def test_differential_cpu():
    seeds = list(range(SEED, SEED + CASES))
    print(f"FXFUSE_DIFF_SEED={SEED} FXFUSE_DIFF_CASES={CASES}")
    cfg = GenConfig(spellings=spellings_from_env(), foreign_operand_prob=foreign_operands_from_env(),
                    composite_activations=activations_from_env())
    results, fused, failures, report = run_cases(seeds, "cpu", cfg)
    assert not failures, f"{len(failures)} of {len(seeds)} cases failed:\n{report}"
    assert fused >= MIN_FUSED * len(seeds), (
        f"only {fused} of {len(seeds)} cases fused anything: the test would pass without fxfuse")


@pytest.mark.parametrize("k", range(6))
def test_differential_torch_compile_sample(k):
    """The backend path on a few cases (torch.compile is slow)."""
    seed = SEED + 7_000_000 + k
    case = generate(seed, GenConfig(max_epilogue_ops=4))
    o = check_case(case, "compile", "cpu")
    print(f"seed {seed}: {o.status} fused={o.fused} {o.reasons}")
    assert o.ok, describe(case, o, "compile")


@pytest.mark.parametrize("seed", [50262521, 50262628])
def test_compile_route_is_judged_against_torch_compile_where_it_departs_from_eager(seed):
    """Session 10's compile-route hunt: F.gelu of +inf on the CPU (torch.compile +inf, eager NaN)
    and a bf16 GELU(tanh) written out (torch.compile skips eager's intermediate roundings): the
    backend gives torch.compile's answer, which is the one to match there."""
    case = generate(seed, GenConfig(max_epilogue_ops=4))
    o = check_case(case, "compile", "cpu")
    print(f"seed {seed}: {o.status} {o.detail}")
    assert o.ok, describe(case, o, "compile")


GPU_CHUNK = 100
GPU_CASES = int(os.environ.get("FXFUSE_DIFF_GPU_CASES", "10000"))
GPU_FIRST_CHUNK = int(os.environ.get("FXFUSE_DIFF_GPU_FIRST_CHUNK", "0"))
# One JSON line per chunk goes here when set: the record of a long GPU run that is split over
# several processes (pytest-xdist) and several device calls.
DIFF_LOG = os.environ.get("FXFUSE_DIFF_LOG")
# The first 12,000-case GPU run (2026-11-29, tests/reliability/DIFFERENTIAL.md) drew random
# sizes only; set 0 to repeat it. Later runs give a third of the cases Hopper-kernel shapes.
HOPPER_SHAPE_PROB = float(os.environ.get("FXFUSE_DIFF_HOPPER_SHAPES", "0.3"))
# Cases the Hopper kernel takes as they are (plain bf16/f16 operands, its shapes; only the
# epilogue random): 0 keeps the earlier runs' cases; scripts/gpu-session.sh hopper sets 0.5.
HOPPER_PLAIN_PROB = float(os.environ.get("FXFUSE_DIFF_HOPPER_PLAIN", "0"))
# Of the Hopper-plain cases, decode sizes with a long K, which run the split-K tile (session 14;
# 0 keeps the earlier runs' cases).
HOPPER_DECODE_PROB = float(os.environ.get("FXFUSE_DIFF_HOPPER_DECODE", "0"))
# Of those, two row tiles (96-128 rows: session 15's split-K on two row tiles, which session 16
# removed; 0 keeps the earlier runs' cases).
HOPPER_DECODE_TWO_TILES_PROB = float(os.environ.get("FXFUSE_DIFF_HOPPER_DECODE_TWO_TILES", "0"))
# The decode cases at N of 32-66 column tiles, where split-K runs since session 17 ("0" keeps the
# earlier runs' cases; scripts/gpu-session.sh hopper sets "1").
HOPPER_DECODE_WIDE_N = os.environ.get("FXFUSE_DIFF_HOPPER_DECODE_WIDE_N", "0") == "1"
FORCE_KERNELS = os.environ.get("FXFUSE_DIFF_FORCE", "1") != "0"


def _log_chunk(seeds, results, fused, failures, report, seconds, op_stats) -> None:
    if not DIFF_LOG:
        return
    line = {"seeds": [seeds[0], seeds[-1]], "cases": len(seeds), "results": dict(results),
            "fused": fused, "failures": len(failures), "report": report[:4000], "seconds": round(seconds, 1),
            "op": op_stats,
            "sm90_all_epilogues": os.environ.get("FXFUSE_SM90_ALL_EPILOGUES", ""),
            "hopper_plain": HOPPER_PLAIN_PROB,
            "hopper_decode": HOPPER_DECODE_PROB,
            "hopper_decode_two_tiles": HOPPER_DECODE_TWO_TILES_PROB,
            "hopper_decode_wide_n": HOPPER_DECODE_WIDE_N,
            "poison": os.environ.get("FXFUSE_POISON_OUTPUTS", "")}
    with open(DIFF_LOG, "a") as f:  # one short write per line: safe for concurrent appenders
        f.write(json.dumps(line) + "\n")


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(GPU_FIRST_CHUNK, GPU_FIRST_CHUNK + (GPU_CASES + GPU_CHUNK - 1) // GPU_CHUNK))
def test_differential_gpu(chunk, monkeypatch):
    """≥ 10,000 cases on CUDA tensors, in chunks of 100, with larger shapes than on CPU.

    Every chain the pass can fuse is fused (``only_profitable=False``) and the op runs a fused
    kernel for it (FXFUSE_FORCE_KERNEL: also the generic kernels, which it would otherwise
    replace by the ATen evaluation): the point is to run the kernels, not to judge their speed.
    Run with FXFUSE_POISON_OUTPUTS=1 (unwritten outputs show as NaN) and, in a second process,
    FXFUSE_SM90_ALL_EPILOGUES=1 (the Hopper kernel on every epilogue, not only the cheap ones).
    The first run (2026-11-29) lacked FXFUSE_FORCE_KERNEL and ran almost no kernel.
    FXFUSE_DIFF_FORCE=0: the op decides as in production, so chains without a fast kernel take
    the unfused path (cuBLAS + the generated epilogue kernel: `pointwise_launches`)."""
    assert torch.cuda.is_available()
    if FORCE_KERNELS:
        monkeypatch.setenv("FXFUSE_FORCE_KERNEL", "1")
    from fxfuse import _C

    before = _C.stats()
    start = GPU_SEED + 10_000_000 + chunk * GPU_CHUNK
    seeds = list(range(start, start + GPU_CHUNK))
    cfg = gpu_config(HOPPER_SHAPE_PROB, HOPPER_PLAIN_PROB, HOPPER_DECODE_PROB, HOPPER_DECODE_TWO_TILES_PROB,
                     HOPPER_DECODE_WIDE_N)
    t0 = time.time()
    results, fused, failures, report = run_cases(seeds, "cuda", cfg, options={"only_profitable": False})
    after = _C.stats()
    op_stats = {k: after.get(k, 0) - before.get(k, 0)
                for k in ("launches", "pointwise_launches", "hopper_split_k_launches", "aten_dispatch", "fallbacks")}
    op_stats["forced"] = int(FORCE_KERNELS)
    _log_chunk(seeds, results, fused, failures, report, time.time() - t0, op_stats)
    assert not failures, f"{len(failures)} of {len(seeds)} cases failed:\n{report}"
    assert fused >= MIN_FUSED * len(seeds)
    # the kernels ran: at least one launch per two fused cases (a few fall back, with a reason)
    assert not FORCE_KERNELS or op_stats["launches"] >= fused // 2, op_stats
