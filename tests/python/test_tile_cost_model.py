"""bench/sm90/tile_cost_model.py fits one cost formula of the Hopper tiles to compare_tiles'
measurements and counts its choices against the heuristic's (a prototype for replacing
sm90::chooseConfig's special cases; bench/sm90/NOTES.md session 22). Run on a stored
measurement (no GPU)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SM90 = os.path.join(ROOT, "bench", "sm90")
# Run AK call 4: six shapes at 8192 / 12288 rows, 128x256 cooperative the fastest tile in all 24 cells
ROWS = os.path.join(SM90, "data", "run_ak_call4_rules_compare_tiles.json")


def test_the_fit_chooses_the_measured_fastest_tile_and_counts_both_rules():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SM90, os.path.join(ROOT, "bench"), os.path.join(ROOT, "python")])}
    env.pop("FXFUSE_SM90_ALL_EPILOGUES", None)
    out = subprocess.run([sys.executable, "tile_cost_model.py", ROWS], cwd=SM90, env=env, capture_output=True,
                         text=True, check=True).stdout
    assert "24 cells, 6 shapes, from 257 rows" in out, out
    counts = dict(re.findall(r"  the (heuristic|model, in sample|model, shapes left out)(?: \(sm90::chooseConfig\)| \(8 folds\))?\s+(\d+) of 24", out))
    assert counts["heuristic"] == "24" and counts["model, in sample"] == "24", out
    assert 0 <= int(counts["model, shapes left out"]) <= 24, out  # six folds of one shape each
    # one coefficient line per tile, each with a positive cost per unit of K
    per_k = [float(v) for v in re.findall(r"^\s*\S+ (?:pp|coop):\s+([\d.]+) ns per tile", out, re.M)]
    assert len(per_k) == 5 and all(v > 0 for v in per_k), out
