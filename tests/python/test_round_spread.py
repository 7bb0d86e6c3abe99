"""bench/round_spread.py reads both files that keep rounds (compare_tiles' rounds_ms / mm_rounds_ms,
bench_chains' samples) and prints each variant's first round over its median and its spread: on a
stored bench_chains file (Run AO call 5) and a small compare_tiles row written here (no GPU)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "round_spread.py")


def run(*paths: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "python"), os.path.join(ROOT, "bench")])}
    return subprocess.run([sys.executable, SCRIPT, *paths], env=env, capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_bench_chains_samples():
    lines = run(os.path.join(ROOT, "bench", "data", "run_ao_call5_issue6_e2e.json"))
    first = next(line for line in lines if line.split()[:2] == ["4096x4096x4096", "bias_gelu"])
    # mm's rounds there: 0.1748, 0.1952, 0.1973 ms: the first 0.896 of the median, max/min 1.129
    assert "mm: 0.896 1.129" in first, first


def test_compare_tiles_rounds(tmp_path):
    row = {"shape": "64x64x64", "chain": "silu", "mm": 1.0, "times_ms": {}, "errors": {},
           "rounds_ms": [{"aten": 2.0, "sm90_wgmma 64x256x64 s5 t384 pingpong": 1.0},
                         {"aten": 4.0, "sm90_wgmma 64x256x64 s5 t384 pingpong": None},
                         {"aten": 3.0, "sm90_wgmma 64x256x64 s5 t384 pingpong": 2.0}],
           "mm_rounds_ms": [1.0, 2.0, 4.0]}
    path = tmp_path / "compare_tiles.json"
    path.write_text(json.dumps([row]))
    (line,) = [line for line in run(str(path)) if line.lstrip().startswith("64x64x64")]
    assert "mm: 0.500 4.000" in line and "aten: 0.667 2.000" in line, line
    assert "64x256 pp: 0.667 2.000" in line, line  # a rejected round (None) is left out
