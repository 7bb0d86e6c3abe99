"""The measured kernel choice (python/fxfuse/autotune.py): candidates, random inputs, the
output check and the measure-once logic on the CPU; on the GPU, that every candidate computes
the chain right and really launches, and that a choice measured in one process is run by the
next one without measuring (runtime/kernel_choice.h keeps it in the disk cache)."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest
import torch

import fxfuse._C as C
import testlib
from fxfuse import autotune

HEAD = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
BIAS_GELU = HEAD + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\noutput %5\n"


def test_candidates_put_the_heuristic_first():
    c = C.kernel_candidates_for_size(BIAS_GELU, 4096, 4096, 4096)
    assert c[0].split()[0] == C.kernel_variant(BIAS_GELU, 4096, 4096, 4096)[0]
    # the heuristic's tile (at 4096^3 the overlapped 128x256 with the shared last tile: overlapRule), the five
    # Hopper tiles, the two cooperative 128-row ones again with the overlapped epilogue, and those two with
    # the shared last tile (the heuristic's among them)
    assert c[0] == "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared"
    assert len(set(c)) == len(c) and sum(x.startswith("sm90_wgmma") for x in c) == 9
    assert "sm90_wgmma 128x128x64 s5 t384 epioverlap lastshared" in c
    assert C.kernel_candidates_for_size(BIAS_GELU, 8, 4096, 4096)[0].startswith("gemv")


def test_choice_api_wants_cuda_inputs():
    x = [torch.ones(4, 4, dtype=torch.bfloat16), torch.ones(4, 4, dtype=torch.bfloat16),
         torch.ones(4, dtype=torch.bfloat16)]
    for call in (lambda: C.kernel_candidates(x, BIAS_GELU), lambda: C.kernel_choice(x, BIAS_GELU),
                 lambda: C.set_kernel_choice(x, BIAS_GELU, "aten")):
        with pytest.raises(RuntimeError, match="must be CUDA tensors"):
            call()


def test_random_inputs_keep_shape_stride_offset_dtype():
    base = torch.empty(4, 1, dtype=torch.bfloat16).expand(4, 6)           # stride 0
    t = torch.empty(6, 4, dtype=torch.float16).t()                        # transposed
    q = torch.empty(3, 5, dtype=torch.int8)
    b = torch.empty(2, 2, dtype=torch.bool)
    sliced = torch.empty(8, 24, dtype=torch.bfloat16)[:, 8:16]            # storage offset 8
    likes = [base, t, q, b, sliced]
    out = autotune.random_inputs(likes)
    for like, got in zip(likes, out):
        assert (got.shape, got.stride(), got.dtype, got.storage_offset()) == (
            like.shape, like.stride(), like.dtype, like.storage_offset())
    assert out[1].abs().sum() > 0 and out[2].abs().sum() > 0  # not zeros


def test_disagreement_catches_wrong_outputs():
    ref = [torch.randn(64, 64, dtype=torch.bfloat16), torch.rand(64, 64) > 0.5]
    assert autotune.disagreement([r.clone() for r in ref], ref) is None
    wrong = [ref[0] * 1.1, ref[1].clone()]
    assert "relative error" in autotune.disagreement(wrong, ref)
    nan = [ref[0].clone(), ref[1].clone()]
    nan[0][3, 3] = float("nan")
    assert "NaN" in autotune.disagreement(nan, ref)
    inf = [ref[0].clone(), ref[1].clone()]
    inf[0][5, 5] = float("inf")
    assert "Inf" in autotune.disagreement(inf, ref)
    flips = [ref[0].clone(), ~ref[1]]
    assert "elements differ" in autotune.disagreement(flips, ref)
    assert "ATen gives" in autotune.disagreement([ref[0].float(), ref[1]], ref)


def test_tune_measures_once_then_uses_the_stored_choice(monkeypatch):
    stored: dict[str, str] = {}
    calls = []
    monkeypatch.setattr(C, "kernel_choice", lambda inputs, spec: stored.get(spec, ""))
    monkeypatch.setattr(C, "set_kernel_choice",
                        lambda inputs, spec, choice, persist=False: stored.__setitem__(spec, choice) if persist else None)
    monkeypatch.setattr(autotune, "measure", lambda inputs, spec: calls.append(spec) or
                        {"choice": "sm90_wgmma 64x256x64 s5 t384 pingpong", "times_ms": {}, "errors": {}})
    like = [torch.empty(64, 32, dtype=torch.bfloat16), torch.empty(32, 16, dtype=torch.bfloat16),
            torch.empty(16, dtype=torch.bfloat16)]
    first = autotune.tune(like, BIAS_GELU)
    second = autotune.tune(like, BIAS_GELU)
    assert (first["source"], second["source"]) == ("measured", "cache")
    assert calls == [BIAS_GELU] and second["choice"] == first["choice"] == stored[BIAS_GELU]


def _measure_without_gpu(monkeypatch, op, timer, now, launches):
    """measure's collaborators replaced: the op, the timer, the ATen reference (every output
    agrees), two candidates k1 and k2, the choice kept in now[0], the launch counter."""
    monkeypatch.setattr(torch.ops.fxfuse, "gemm_chain", op)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)  # no GPU here: nothing to wait for
    monkeypatch.setattr(autotune, "_aten_reference", lambda op, inputs, spec: ["out"])
    monkeypatch.setattr(autotune, "disagreement", lambda outs, ref: None)
    monkeypatch.setattr(autotune, "time_interleaved", timer)
    monkeypatch.setattr(C, "kernel_candidates", lambda inputs, spec: ["k1", "k2"])
    monkeypatch.setattr(C, "set_kernel_choice", lambda inputs, spec, choice, persist=False: now.__setitem__(0, choice))
    monkeypatch.setattr(C, "stats", lambda: {"launches": launches[0]})


def test_measure_compiles_every_candidate_before_timing_any(monkeypatch):
    """A candidate timed right after its own compile (the GPU idle meanwhile) met a faster clock
    than one timed after others ran (bench/RESULTS.md Run AO), and candidates timed in blocks met
    different clocks (Run AP): measure compiles and checks every candidate first, then times all
    of them and the calls beside them together, interleaved, after an untimed warm-up; each call runs
    the candidate it is timed as."""
    events, now, launches, timings = [], [""], [0], []

    def op(inputs, spec):
        events.append(("call", now[0]))
        launches[0] += 1
        return ["out"]

    def timer(fns, reps, prepare=None, failures=None):
        timings.append((sorted(fns), reps))
        events.append(("time", None))
        for name, fn in fns.items():
            prepare(name)
            fn()
        return {name: [float(len(timings) * 10 + i)] * reps for i, name in enumerate(fns)}

    _measure_without_gpu(monkeypatch, op, timer, now, launches)
    monkeypatch.setattr(C, "precompile", lambda inputs, spec: events.append(("precompile", now[0])))
    beside_calls = []
    result = autotune.measure([], "spec", reps=7, beside={"mm": lambda: beside_calls.append(now[0])})
    first_timed = events.index(("time", None))
    compiled = {c for kind, c in events[:first_timed] if kind == "call"}
    assert compiled == {autotune.ATEN, "k1", "k2"}, events
    everything = sorted([autotune.ATEN, "k1", "k2", autotune.BESIDE + "mm"])
    # the warm-up (SLOW_WARMUP_REPS interleaved calls, not kept), then the kept repetitions
    assert timings == [(everything, autotune.SLOW_WARMUP_REPS), (everything, 7)]
    # each timed call ran the candidate it was timed as, its call site planned again before
    # (setting a choice clears the op's call cache): a precompile, which launches nothing
    assert [(kind, c) for kind, c in events[first_timed:] if kind != "time"] == \
        [(kind, c) for c in (autotune.ATEN, "k1", "k2") for kind in ("precompile", "call")] * 2
    assert len(beside_calls) == 2
    assert result["times_ms"] == {autotune.ATEN: 20.0, "k1": 21.0, "k2": 22.0}
    assert result["beside_ms"] == {"mm": 23.0}
    assert result["choice"] == autotune.ATEN and result["errors"] == {}


class _FakeCuda:
    """torch.cuda's events, flush buffer and synchronize, without a GPU."""

    def __init__(self, monkeypatch, order):
        class Buf:
            def zero_(self):
                order.append("flush")

        class Event:
            def __init__(self, enable_timing):
                pass

            def record(self):
                pass

            def elapsed_time(self, end):
                return 1.0

        monkeypatch.setattr(torch, "empty", lambda *a, **k: Buf())
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "Event", Event)
        monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)


def test_time_interleaved_drops_a_function_that_raises(monkeypatch):
    """With `failures`, a function that raises is dropped from the later repetitions and the
    result, its reason kept; the others are timed in full. Without, it raises."""
    order = []
    _FakeCuda(monkeypatch, order)

    def flaky():
        order.append("b")
        if order.count("b") == 2:
            raise RuntimeError("launch failed")

    fns = {"a": lambda: order.append("a"), "b": flaky, "c": lambda: order.append("c")}
    failures = {}
    times = autotune.time_interleaved(fns, 4, failures=failures)
    assert set(times) == {"a", "c"} and all(len(v) == 4 for v in times.values())
    assert failures == {"b": "RuntimeError: launch failed"}
    assert order.count("b") == 2  # not called after it failed
    order.clear()
    with pytest.raises(RuntimeError):
        autotune.time_interleaved(fns, 4)


def test_measure_keeps_the_others_when_one_candidate_fails_in_timing(monkeypatch):
    """A candidate (or a call beside them) that raises while the candidates are timed is rejected
    alone, under its name; the others keep their times."""
    now, launches = [""], [0]

    def op(inputs, spec):
        launches[0] += 1
        return ["out"]

    def timer(fns, reps, prepare=None, failures=None):
        failures["k1"] = "RuntimeError: boom"
        failures[autotune.BESIDE + "mm"] = "RuntimeError: mm failed"
        return {n: [1.0] * reps for n in fns if n not in failures}

    _measure_without_gpu(monkeypatch, op, timer, now, launches)
    monkeypatch.setattr(C, "precompile", lambda inputs, spec: None)
    result = autotune.measure([], "spec", beside={"mm": lambda: None})
    assert result["times_ms"] == {autotune.ATEN: 1.0, "k1": None, "k2": 1.0}
    assert result["errors"] == {"k1": "RuntimeError: boom", autotune.BESIDE + "mm": "RuntimeError: mm failed"}
    assert result["beside_ms"] == {}


def test_time_interleaved_rotates_the_order_and_flushes_before_each_call(monkeypatch):
    """Each repetition calls every function once, the order rotated by one each time, the L2
    flush and `prepare` before each call: no variant always follows the same one."""
    order = []
    _FakeCuda(monkeypatch, order)
    fns = {n: (lambda n=n: order.append(n)) for n in ("a", "b", "c")}
    times = autotune.time_interleaved(fns, 3, prepare=lambda n: order.append("prep " + n))
    assert {n: len(v) for n, v in times.items()} == {"a": 3, "b": 3, "c": 3}
    calls = [o for o in order if o in fns]
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    for i, name in enumerate(order):
        if name in fns:
            assert order[i - 2:i] == ["prep " + name, "flush"]


def test_options_and_env_turn_it_on(monkeypatch):
    from fxfuse.pass_driver import Options

    monkeypatch.delenv("FXFUSE_AUTOTUNE", raising=False)
    assert not autotune.enabled(Options().autotune) and autotune.enabled(Options(autotune=True).autotune)
    for on in ("1", "true", "Yes", "on"):
        monkeypatch.setenv("FXFUSE_AUTOTUNE", on)
        assert autotune.enabled(False), on
    for off in ("0", "false", "off", ""):  # the spellings of codegen/env_flag.h (session 49)
        monkeypatch.setenv("FXFUSE_AUTOTUNE", off)
        assert not autotune.enabled(False), off


# ---- GPU -------------------------------------------------------------------------------------

def _gelu_inputs(m, k, n):
    g = testlib.generator("cuda", "autotune", m, k, n)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g) / k ** 0.5
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16, generator=g)
    ref = torch.nn.functional.gelu(x.double() @ w.double() + b.double(), approximate="tanh")
    return [x, w, b], ref


@pytest.mark.gpu
@pytest.mark.parametrize("m,k,n,split_k", [(1000, 776, 520, True), (4096, 1024, 4096, False)])
def test_gpu_every_candidate_computes_the_chain(m, k, n, split_k, monkeypatch):
    """Each kernel the autotune may pick (Hopper tiles on every epilogue, edge tiles at 1000 x
    520, and there the split-K tiles: 80 tiles of 64x128, fewer than 100, with K = 776 not a
    multiple of 64; the two cooperative tiles with the overlapped epilogue, bias+GELU having a 16-bit
    hand-off, each also with its last tile's epilogue shared) matches float64, outputs poisoned first, and is really the one launched."""
    monkeypatch.setenv("FXFUSE_POISON_OUTPUTS", "1")
    inputs, ref = _gelu_inputs(m, k, n)
    candidates = C.kernel_candidates(inputs, BIAS_GELU)
    assert {c for c in candidates if c.startswith("sm90_wgmma")} == {
        "sm90_wgmma 64x256x64 s5 t384 pingpong", "sm90_wgmma 64x128x64 s8 t384 pingpong",
        "sm90_wgmma 128x128x64 s6 t384 pingpong", "sm90_wgmma 128x256x64 s4 t384",
        "sm90_wgmma 128x128x64 s6 t384", "sm90_wgmma 128x256x64 s3 t384 epioverlap",
        "sm90_wgmma 128x128x64 s5 t384 epioverlap", "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared",
        "sm90_wgmma 128x128x64 s5 t384 epioverlap lastshared"} | ({"sm90_wgmma 64x128x64 s7 t256 splitk2",
                                             "sm90_wgmma 64x128x64 s7 t256 splitk4"} if split_k else set()), candidates
    try:
        for choice in candidates + ["aten"]:
            C.set_kernel_choice(inputs, BIAS_GELU, choice)
            assert C.kernel_choice(inputs, BIAS_GELU) == choice
            before = C.stats()
            y = torch.ops.fxfuse.gemm_chain(inputs, BIAS_GELU)[0]
            torch.cuda.synchronize()
            after = C.stats()
            err = ((y.double() - ref).norm() / ref.norm()).item()
            assert err < 2e-2 and not torch.isnan(y).any(), (choice, err)
            # "aten" = the unfused path: cuBLAS plus the epilogue kernel (a pointwise launch),
            # never a fused kernel; a kernel choice is one fused launch.
            launched = after["launches"] - before["launches"]
            pointwise = after["pointwise_launches"] - before["pointwise_launches"]
            expected = (1, 1) if choice == "aten" else (1, 0)
            assert (launched, pointwise) == expected, (choice, before, after)
            split = after["hopper_split_k_launches"] - before["hopper_split_k_launches"]
            assert split == ("splitk" in choice), (choice, before, after)
            overlap = after["hopper_overlap_launches"] - before["hopper_overlap_launches"]
            assert overlap == ("epioverlap" in choice), (choice, before, after)
        C.set_kernel_choice(inputs, BIAS_GELU, "aten-ops")  # autotune's reference: no generated code
        before = C.stats()
        y = torch.ops.fxfuse.gemm_chain(inputs, BIAS_GELU)[0]
        torch.cuda.synchronize()
        assert C.stats()["launches"] == before["launches"], "aten-ops launched a kernel"
        assert ((y.double() - ref).norm() / ref.norm()).item() < 2e-2
        with pytest.raises(RuntimeError, match="not a kernel candidate"):
            C.set_kernel_choice(inputs, BIAS_GELU, "sm90_wgmma 1x1x1 s1 t1")
    finally:
        C.set_kernel_choice(inputs, BIAS_GELU, "")


# A fresh process: the chain's inputs (the same problem in both), then the script's own part.
_PROCESS = """
import json, sys, torch, fxfuse._C as C
from fxfuse import autotune
spec = {spec!r}
g = torch.Generator(device="cuda").manual_seed({seed})  # the same in each process, fresh each run
inputs = [torch.randn(2048, 1024, device="cuda", dtype=torch.bfloat16, generator=g),
          torch.randn(1024, 2048, device="cuda", dtype=torch.bfloat16, generator=g) / 32,
          torch.randn(2048, device="cuda", dtype=torch.bfloat16, generator=g)]
"""
_TUNE = "print('TUNED=' + json.dumps(autotune.tune(inputs, spec)))"
_RUN = """
print("CHOICE=" + C.kernel_choice(inputs, spec))
before = C.stats().get("launches", 0)
torch.ops.fxfuse.gemm_chain(inputs, spec); torch.cuda.synchronize()
print("LAUNCHED=%d" % (C.stats().get("launches", 0) - before))
"""


@pytest.mark.gpu
def test_gpu_tune_measures_once_and_later_processes_run_the_choice(tmp_path, monkeypatch):
    """Measured in one process, kept on disk; a fresh process (no pass, no autotune: as after
    an Inductor cache hit or a .pt2 load) finds the same choice for the same problem and runs it."""
    from helpers import run_python

    monkeypatch.setenv("FXFUSE_CACHE_DIR", str(tmp_path))  # run_python passes the environment on

    def run(part):
        r = run_python(_PROCESS.format(spec=BIAS_GELU, seed=testlib.seed_for("measure_once")) + part)
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stdout

    tuned = json.loads(run(_TUNE).split("TUNED=")[1].splitlines()[0])
    assert tuned["source"] == "measured" and tuned["choice"], tuned
    valid = {c: t for c, t in tuned["times_ms"].items() if t is not None}
    assert valid[tuned["choice"]] == min(valid.values()) and "aten" in valid, tuned
    out = run(_RUN)
    assert f"CHOICE={tuned['choice']}" in out, out
    assert ("LAUNCHED=0" if tuned["choice"] == "aten" else "LAUNCHED=1") in out, out
    again = json.loads(run(_TUNE).split("TUNED=")[1].splitlines()[0])
    assert again == {"choice": tuned["choice"], "source": "cache"}, again


# 8-bit weights (issue 7), both layouts: `x @ (w.to(bf16) * s) + b` and F.linear's N x K form.
def candidates_in_child(spec, size, env):
    """The planner's candidates for `spec` at `size` (M, N, K) in a fresh process with the knobs in `env`
    set and every other FXFUSE_GEMV_ / FXFUSE_SM90_ knob unset (they are read once per process): the
    list, or "error: ..." where planning raised."""
    code = ("from fxfuse import _C as C\n"
            f"spec = {spec!r}\n"
            "try:\n    print(repr(C.kernel_candidates_for_size(spec, " + ", ".join(map(str, size)) + ")))\n"
            "except Exception as e:\n    print(repr('error: ' + str(e)))\n")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("FXFUSE_GEMV_", "FXFUSE_SM90_"))}
    full.update(env)
    full["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(C.__file__)))  # this fxfuse
    out = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


W8_BIAS = {layout: ("fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n"
                    f"%1 = input 1 i8 [{'k,n' if layout == 'kn' else 'n,k'}]\n"
                    f"%2 = input 2 bf16 [{'n' if layout == 'kn' else 'n,1'}]\n"
                    "%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n"
                    "%6 = input 3 bf16 [n]\n%7 = add %5 %6 : bf16\noutput %7\n")
           for layout in ("kn", "nk")}


@pytest.mark.parametrize("knob,value,planned", [("FXFUSE_GEMV_NT", "64", "gemv 64x64x128"),
                                                 ("FXFUSE_GEMV_KT", "64", "gemv 64x128x64"),
                                                 ("FXFUSE_GEMV_NT", "96", "must be 64 or 128, not '96'"),
                                                 ("FXFUSE_GEMV_KT", "32", "must be 64 or 128, not '32'")])
def test_gemv_width_and_stage_knobs_plan_or_refuse(knob, value, planned):
    """The gemv's measurement knobs (config_table.cpp gemvColumnsKnob, gemvKPerStageKnob; read once per
    process, so a child each) change the planned wgmma gemv of 8-bit K x N weights at 64 rows, or name
    a bad value in the error; a silent fallback to the rule would make an A/B run measure nothing."""
    got = candidates_in_child(W8_BIAS["kn"], (64, 4096, 4096), {knob: value})
    if "must be" in planned:
        assert isinstance(got, str) and got.startswith("error:") and knob in got and planned in got, got
    else:
        assert got[0].startswith(planned) and got[0].endswith(" wgmma"), got


@pytest.mark.parametrize("value,planned", [("3", "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared"),
                                           ("2", "sm90_wgmma 128x256x64 s2 t384 epioverlap lastshared"),
                                           ("5", "FXFUSE_SM90_STAGES=5 does not fit the 128x256 tile in 227 KB"),
                                           ("9", "FXFUSE_SM90_STAGES must be 2 to 8, not '9'")])
def test_hopper_stages_knob_plans_or_refuses(value, planned):
    """FXFUSE_SM90_STAGES (config_table.cpp sm90StagesKnob; read once per process, so a child each) gives
    the heuristic's Hopper tile at 4096^3 (128x256 cooperative with the overlapped epilogue and the shared last tile,
    3 stages) that many ring stages, or names
    a bad or too deep value in the error: an A/B run must not measure the rule's depth unawares."""
    got = candidates_in_child(BIAS_GELU, (4096, 4096, 4096), {"FXFUSE_SM90_STAGES": value})
    assert (got if isinstance(got, str) else got[0]) == (f"error: {planned}" if planned.startswith("FXFUSE") else planned)


SILU_F32_PRODUCT = HEAD + "%3 = silu %2 : bf16\noutput %3\n"  # SiLU before the first rounding: no hand-off


@pytest.mark.parametrize("spec,size,stages,planned,overlapped", [
    (BIAS_GELU, (4096, 4096, 4096), "", "sm90_wgmma 128x256x64 s3 t384 epioverlap", 4),
    (BIAS_GELU, (4096, 4096, 4096), "2", "sm90_wgmma 128x256x64 s2 t384 epioverlap", 5),
    (BIAS_GELU, (4096, 4096, 4096), "4", "FXFUSE_SM90_STAGES=4 does not fit the 128x256 tile in 227 KB", 0),
    (SILU_F32_PRODUCT, (4096, 4096, 4096), "", "sm90_wgmma 128x256x64 s4 t384", 0),
    (BIAS_GELU, (64, 4096, 14336), "", "sm90_wgmma 64x128x64 s7 t256 splitk2", 4)],
    ids=["rule", "stages2", "stages4", "no_handoff", "split_k"])
def test_hopper_epilogue_overlap_knob_plans_where_a_handoff_exists(spec, size, stages, planned, overlapped):
    """FXFUSE_SM90_EPILOGUE_OVERLAP=1 (config_table.cpp epilogueOverlapKnob; read once per process, so
    a child each) gives the heuristic's cooperative 128-row tile the overlapped epilogue at the deepest
    ring that fits (three 48 KB stages beside the hand-off), or FXFUSE_SM90_STAGES' depth, or names a
    depth that does not fit; a chain without a 16-bit hand-off (hooks.h epilogueHandoff) and a split-K
    tile keep theirs. The autotune's candidates then hold the two overlapped cooperative tiles (at
    their deepest rings, each also with the shared last tile; the rule's at the knob's depth besides)."""
    env = {"FXFUSE_SM90_EPILOGUE_OVERLAP": "1", **({"FXFUSE_SM90_STAGES": stages} if stages else {})}
    got = candidates_in_child(spec, size, env)
    if planned.startswith("FXFUSE"):
        assert got == f"error: {planned}", got
    else:
        assert got[0] == planned and sum("epioverlap" in c for c in got) == overlapped, got


@pytest.mark.parametrize("size,planned", [
    ((4096, 4096, 4096), "sm90_wgmma 128x256x64 s4 t384"),
    ((8192, 8192, 8192), "sm90_wgmma 128x128x64 s6 t384 pingpong")])
def test_hopper_epilogue_overlap_knob_zero_keeps_the_plain_tile(size, planned):
    """FXFUSE_SM90_EPILOGUE_OVERLAP=0 (the A/B's other side) takes the overlapped epilogue out of the plan
    and the autotune's candidates: the residual chain at 8192^3 keeps 128x128 ping-pong, where the rule
    (config_table.cpp overlapRule) takes the overlapped 128x256 cooperative tile."""
    resid = BIAS_GELU.replace("output %5\n", "%6 = input 3 bf16 [m,n]\n%7 = add %5 %6 : bf16\noutput %7\n")
    got = candidates_in_child(resid, size, {"FXFUSE_SM90_EPILOGUE_OVERLAP": "0"})
    assert got[0] == planned and not any("epioverlap" in c for c in got), got


@pytest.mark.parametrize("env,planned", [
    ({"FXFUSE_SM90_COOPERATIVE_TILE": "128x256"}, "sm90_wgmma 128x256x64 s4 t384"),
    ({"FXFUSE_SM90_COOPERATIVE_TILE": "128x256", "FXFUSE_SM90_EPILOGUE_OVERLAP": "1"},
     "sm90_wgmma 128x256x64 s3 t384 epioverlap"),
    ({"FXFUSE_SM90_COOPERATIVE_TILE": "128x128", "FXFUSE_SM90_EPILOGUE_OVERLAP": "1"},
     "sm90_wgmma 128x128x64 s5 t384 epioverlap"),
    ({"FXFUSE_SM90_PINGPONG_TILE": "64x128", "FXFUSE_SM90_EPILOGUE_OVERLAP": "1"}, "sm90_wgmma 64x128x64 s8 t384 pingpong"),
    ({"FXFUSE_SM90_COOPERATIVE_TILE": "64x256"},
     "error: FXFUSE_SM90_COOPERATIVE_TILE must be 128x256 or 128x128, not '64x256'"),
    ({"FXFUSE_SM90_COOPERATIVE_TILE": "128x128", "FXFUSE_SM90_PINGPONG_TILE": "64x256"},
     "error: FXFUSE_SM90_PINGPONG_TILE and FXFUSE_SM90_COOPERATIVE_TILE are both set")],
    ids=["coop", "coop_overlap", "coop128_overlap", "pingpong_keeps", "bad_tile", "both"])
def test_hopper_tile_knobs_force_the_tile_or_name_the_mistake(env, planned):
    """FXFUSE_SM90_COOPERATIVE_TILE / FXFUSE_SM90_PINGPONG_TILE (config_table.cpp forcedTileKnob) run every
    Hopper launch on that tile, at 8192^3 where the rule takes 64x256 ping-pong: with the overlap knob a
    cooperative tile takes the overlapped epilogue (the A/B of the overlap where the rule is ping-pong), a
    ping-pong tile keeps its own; a tile not in the list, or both knobs, is an error naming them."""
    got = candidates_in_child(BIAS_GELU, (8192, 8192, 8192), env)
    assert (got if isinstance(got, str) else got[0]) == planned, got


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["kn", "nk"])
@pytest.mark.parametrize("M", [16, 40])
def test_gpu_tune_measures_every_gemv_product_of_8bit_weights(layout, M):
    """On sm_90 the autotune offers the rule's gemv and its other products, widths and stages
    (mma.sync, wgmma at 128 and at 64 columns per CTA, and for K x N weights wgmma at 64 k a stage:
    config_table.cpp gemvAlternatives); each must launch and agree with the ATen evaluation
    (autotune.measure's check), so each gets a time."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the gemv's wgmma product is sm_90's")
    K, N = 4096, 2048
    g = testlib.generator("cuda", "autotune-gemv", layout, M)
    wq = torch.randint(-128, 128, (K, N) if layout == "kn" else (N, K), dtype=torch.int8, device="cuda", generator=g)
    scale = (torch.rand(N, device="cuda", generator=g) + 0.5) / (64 * K ** 0.5)
    inputs = [torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g), wq,
              scale.to(torch.bfloat16).view(N) if layout == "kn" else scale.to(torch.bfloat16).view(N, 1),
              torch.randn(N, device="cuda", dtype=torch.bfloat16, generator=g)]
    spec = W8_BIAS[layout]
    gemvs = [c for c in C.kernel_candidates(inputs, spec) if c.startswith("gemv")]
    k64 = layout == "kn"  # 64 k a stage: K x N weights only
    assert len(gemvs) == 3 + k64 and sum(c.endswith(" wgmma") for c in gemvs) == 2 + k64, gemvs
    assert any(c.split()[1].split("x")[1] == "64" for c in gemvs), gemvs
    assert any(c.split()[1].split("x")[2] == "64" for c in gemvs) == k64, gemvs
    result = autotune.measure(inputs, spec, reps=3)
    for c in gemvs:
        assert result["times_ms"].get(c) is not None, (c, result["errors"].get(c), result)


@pytest.mark.gpu
def test_gpu_compile_with_autotune_records_the_choice(tmp_path):
    import fxfuse
    from helpers import MLP

    old = C.cache_dir()
    C.set_cache_dir(str(tmp_path))  # measured here, not read from an earlier run
    try:
        model = MLP(256, 1024, "gelu_tanh").to("cuda", torch.bfloat16).eval()
        compiled = fxfuse.compile(model, autotune=True, only_profitable=False, dump_dir=str(tmp_path / "dump"))
        x = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            y, ref = compiled(x), model(x)
    finally:
        C.set_cache_dir(old)
    assert ((y.double() - ref.double()).norm() / ref.double().norm()).item() < 2e-2
    plans = [json.loads(p.read_text()) for p in (tmp_path / "dump").rglob("report.json")]
    tuned = [t for p in plans for t in p.get("autotune", [])]
    assert tuned and all(t["choice"] for t in tuned), plans


def test_measure_times_a_far_slower_candidate_apart(monkeypatch):
    """A candidate far slower than the fastest in the warm-up (the sm80 fallback among Hopper
    tiles: its long calls let the clock recover and moved the others' times, bench/RESULTS.md Run
    AQ) keeps its warm-up time and is left out of the timed repetitions; calls beside the
    candidates are always timed, however slow."""
    now, launches, timings = [""], [0], []
    warm = {autotune.ATEN: 2.0, "k1": 1.0, "k2": 1.0 * autotune.SLOW_FACTOR + 0.5, autotune.BESIDE + "mm": 9.0}

    def op(inputs, spec):
        launches[0] += 1
        return ["out"]

    def timer(fns, reps, prepare=None, failures=None):
        timings.append(sorted(fns))
        if len(timings) == 1:  # the warm-up
            assert reps == autotune.SLOW_WARMUP_REPS
            return {n: [warm[n] * 3, warm[n], warm[n] * 2][:reps] for n in fns}
        return {n: [0.5] * reps for n in fns}

    _measure_without_gpu(monkeypatch, op, timer, now, launches)
    monkeypatch.setattr(C, "precompile", lambda inputs, spec: None)
    result = autotune.measure([], "spec", reps=5, beside={"mm": lambda: None})
    assert timings[1] == sorted([autotune.ATEN, "k1", autotune.BESIDE + "mm"])  # k2 not timed with them
    assert result["times_ms"] == {autotune.ATEN: 0.5, "k1": 0.5, "k2": warm["k2"]}  # k2: its fastest warm-up
    assert result["warmup_only"] == ["k2"] and result["beside_ms"] == {"mm": 0.5}
    assert result["choice"] in (autotune.ATEN, "k1")


def test_measure_judges_slow_by_the_fastest_warm_up_call(monkeypatch):
    """One slow warm-up call does not leave a candidate out of the timing: judged by its one warm-up call, the
    unfused path for SiLU at 512 x 4096 x 4096 read 5.4x cuBLAS mm in compare_tiles (session 57) where it runs
    at 1.26x (session 58). A candidate slow in every warm-up call still is left out."""
    now, launches, timings = [""], [0], []
    first_slow = {autotune.ATEN: [9.0, 1.2, 1.3], "k1": [1.0, 1.0, 1.1], "k2": [6.0, 5.0, 5.5]}

    def op(inputs, spec):
        launches[0] += 1
        return ["out"]

    def timer(fns, reps, prepare=None, failures=None):
        timings.append(sorted(fns))
        if len(timings) == 1:
            return {n: first_slow[n][:reps] for n in fns}
        return {n: [0.5 if n == autotune.ATEN else 0.7] * reps for n in fns}

    _measure_without_gpu(monkeypatch, op, timer, now, launches)
    monkeypatch.setattr(C, "precompile", lambda inputs, spec: None)
    result = autotune.measure([], "spec", reps=5)
    assert timings[1] == sorted([autotune.ATEN, "k1"])
    assert result["warmup_only"] == ["k2"] and result["times_ms"]["k2"] == 5.0
    assert result["choice"] == autotune.ATEN  # timed, and the fastest


def test_measure_runs_on_the_inputs_gpu(monkeypatch):
    """Its events, flush buffer and synchronize are the current device's: for inputs on cuda:1 with cuda:0
    current, every candidate had timed next to nothing and the noise's winner was stored on disk (review,
    session 53). Fake CUDA tensors: the two-GPU run itself needs a two-GPU machine."""
    import contextlib

    from torch._subclasses.fake_tensor import FakeTensorMode

    entered = []

    @contextlib.contextmanager
    def device(d):
        entered.append(str(d))
        yield

    monkeypatch.setattr(torch.cuda, "device", device)
    monkeypatch.setattr(autotune, "_measure", lambda inputs, spec, reps, beside: list(entered))
    with FakeTensorMode():
        x = torch.empty(4, 4, device="cuda:1")
    assert autotune.measure([x], "spec") == ["cuda:1"]
