"""bench/gemv/sweep_inflight.py (bench/RESULTS.md Run AX): each variant's process gets its own knobs
and none of the caller's, rounds alternate their order, the table takes medians per (M, K, N,
dtype, chain) and is written after every process. A stand-in bench_decode.py (it reports the knobs
it saw as its times) replaces the GPU benchmark, so no GPU is needed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "bench", "gemv", "sweep_inflight.py")

# Writes $OUT/bench_decode.json with two rows (bf16 and fp16 of one shape): fxfuse's "ms" encodes
# the knobs it was given, and each call appends them to calls.txt beside the sweep's output.
STAND_IN = r'''
import json, os, sys
# bench_decode.py sets the knobs from its own arguments; the caller's must not reach it
assert "FXFUSE_GEMV_STAGE_KB" not in os.environ and "FXFUSE_GEMV_SPLIT_K" not in os.environ
argv = sys.argv[1:]
kb = argv[argv.index("--stage-kb") + 1] if "--stage-kb" in argv else "0"
s = argv[argv.index("--split-k") + 1] if "--split-k" in argv else "0"
knobs = "+".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("FXFUSE_GEMV_"))
with open(os.environ["CALLS"], "a") as f:
    f.write(f"{kb}:{s}" + (":" + knobs if knobs else "") + "\n")
ms = 1 + int(kb) / 1000 + int(s) / 10
rows = [dict(M=1, K=4096, N=4096, dtype=dt, chain="bias", fxfuse=ms * k, mm=2.0, path="kernel",
             fxfuse_relerr=1e-3) for dt, k in (("bfloat16", 1.0), ("float16", 2.0))]
os.makedirs(os.environ["OUT"], exist_ok=True)
json.dump({"rows": rows}, open(os.path.join(os.environ["OUT"], "bench_decode.json"), "w"))
'''


def run_sweep(tmp_path, variants, **env):
    bench = tmp_path / "bench"
    (bench / "gemv").mkdir(parents=True)
    (bench / "gemv" / "sweep_inflight.py").write_text(open(TOOL).read())
    (bench / "bench_decode.py").write_text(STAND_IN)
    out = tmp_path / "out"
    calls = tmp_path / "calls.txt"
    full = {**os.environ, "OUT": str(out), "CALLS": str(calls), **env}
    r = subprocess.run([sys.executable, str(bench / "gemv" / "sweep_inflight.py"), "--variants", variants,
                        "--rounds", "2", "--chains", "bias"], env=full, capture_output=True, text=True)
    return r, out, calls


def test_variants_get_their_own_knobs_in_alternating_rounds(tmp_path):
    # the caller's knobs must not leak into a "library's choice" (0) variant
    r, out, calls = run_sweep(tmp_path, "0:0,60:0,100:8", FXFUSE_GEMV_STAGE_KB="40", FXFUSE_GEMV_SPLIT_K="2")
    assert r.returncode == 0, r.stderr
    assert calls.read_text().split() == ["0:0", "60:0", "100:8", "100:8", "60:0", "0:0"]
    table = json.load(open(out / "sweep_inflight.json"))
    assert table["variants"] == ["0:0", "60:0", "100:8"]
    rows = {(row["dtype"], row["chain"]): row for row in table["rows"]}
    assert set(rows) == {("bfloat16", "bias"), ("float16", "bias")}
    v = rows[("float16", "bias")]["variants"]
    assert v["100:8"]["fxfuse_ms"] == 2 * (1 + 0.1 + 0.8)
    assert v["60:0"]["fx_over_mm"] == (1 + 0.06) * 2 / 2.0
    assert len(v["0:0"]["runs_ms"]) == 2
    # both dtypes are printed, each on its own line
    assert sum(1 for line in r.stdout.splitlines() if " bias " in line) == 2, r.stdout


def test_a_variant_sets_other_gemv_knobs_and_only_its_own(tmp_path):
    # an A/B patch's knob (bench/gemv/ab/cols_once.patch) reaches its variant's process alone; the
    # caller's FXFUSE_GEMV_* knobs reach none
    r, out, calls = run_sweep(tmp_path, "0:0:FXFUSE_GEMV_COLS_MIN_PAIRS=100000+FXFUSE_GEMV_X=1,0:0",
                              FXFUSE_GEMV_COLS_MIN_PAIRS="7", FXFUSE_GEMV_LEAVE_OUT="1")
    assert r.returncode == 0, r.stderr
    ab = "0:0:FXFUSE_GEMV_COLS_MIN_PAIRS=100000+FXFUSE_GEMV_X=1"
    assert calls.read_text().split() == [ab, "0:0", "0:0", ab]
    table = json.load(open(out / "sweep_inflight.json"))
    assert table["variants"] == [ab, "0:0"]
    assert set(table["rows"][0]["variants"]) == {ab, "0:0"}
    assert f"v0 = {ab}" in r.stdout


def test_a_malformed_variant_is_refused(tmp_path):
    for bad in ("60", "300:0", "60:9", "a:b", "0:0:FXFUSE_GEMV_SPLIT_K=2", "0:0:OTHER=1", "0:0:FXFUSE_GEMV_X",
                "0:0,0:0"):
        r, out, calls = run_sweep(tmp_path / "".join(c if c.isalnum() else "_" for c in bad), bad)
        assert r.returncode != 0 and "variant" in (r.stdout + r.stderr), bad
        assert not calls.exists()
