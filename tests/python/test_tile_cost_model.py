"""bench/sm90/tile_cost_model.py fits one cost formula of the Hopper tiles to compare_tiles'
measurements and counts its choices against the heuristic's (a prototype for replacing
sm90::chooseConfig's special cases, not better out of sample; bench/sm90/NOTES.md sessions 22-23);
bench/sm90/stored_cells.py reads every stored cell for checking a tile-rule change. Run on stored
measurements (no GPU)."""
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


def test_stored_cells_reads_the_results_tables_and_diffs_two_dumps(tmp_path):
    """bench/sm90/stored_cells.py: Run AC's compare_tiles tables (kept only in bench/RESULTS.md) parse
    into cells with the five tiles and the unfused path, and --diff counts the cells whose tile
    changed and whether the new tile was measured faster."""
    sys.path.insert(0, SM90)
    try:
        import stored_cells
    finally:
        sys.path.remove(SM90)
    ac = stored_cells.results_cells("AC")
    row = [c for c in ac if (c["M"], c["K"], c["N"], c["chain"]) == (768, 4096, 4096, "bias_gelu")]
    assert row, "Run AC's 768 x 4096 x 4096 row is missing"
    assert row[0]["times"]["64x128 pp"] == 1.165 and row[0]["times"]["aten"] == 1.353, row[0]
    assert set(row[0]["times"]) == {"aten", *stored_cells.TABLE_TILES}
    assert all(c["source"] == "RESULTS.md Run AC" for c in ac) and len(ac) >= 96
    # a made-up pair of dumps: one cell moved to its fastest tile, one unchanged
    cells = [dict(row[0], tile="128x256 coop"), dict(ac[0], tile=None)]
    (tmp_path / "b.json").write_text(__import__("json").dumps(cells))
    (tmp_path / "a.json").write_text(__import__("json").dumps([dict(cells[0], tile="64x128 pp"), cells[1]]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SM90, os.path.join(ROOT, "bench"), os.path.join(ROOT, "python")])}
    out = subprocess.run([sys.executable, "stored_cells.py", "--diff", str(tmp_path / "b.json"), str(tmp_path / "a.json")],
                         cwd=SM90, env=env, capture_output=True, text=True, check=True).stdout
    assert "1 of 2 cells changed tile; the fastest Hopper tile or within 2 %: 0 before, 1 after" in out, out
    # --ratio: where the dump's tile is 64x128 (the 768-row cell), 64x128's time over 128x256's
    # (1.165 / 1.304) and 128x256's over the fastest Hopper tile (1.304 / 1.165)
    out = subprocess.run([sys.executable, "stored_cells.py", "--ratio", str(tmp_path / "a.json"), "64x128 pp",
                          "128x256 coop", "--rows", "700", "800"],
                         cwd=SM90, env=env, capture_output=True, text=True, check=True).stdout
    assert "64x128 pp / 128x256 coop 0.893-0.893, 128x256 coop / best 1.119-1.119 (1 cells, 0 over 1)" in out, out
    assert "1 shapes, 1 cells: 64x128 pp slower than 128x256 coop in 0, 128x256 coop the fastest or within 0.5 % in 0" \
        in out, out
    # --misses: the before dump's 128x256 is 12 % behind 64x128 there (1.304 / 1.165); the other cell
    # has no tile
    out = subprocess.run([sys.executable, "stored_cells.py", "--misses", str(tmp_path / "b.json")],
                         cwd=SM90, env=env, capture_output=True, text=True, check=True).stdout
    assert "768x4096x4096    128x256 coop 1.119-1.119 behind 64x128 pp (1 cells, RESULTS.md Run AC)" in out, out
    assert "1 of 2 cells more than 2 % behind the fastest Hopper tile, at 1 shapes" in out, out
    out = subprocess.run([sys.executable, "stored_cells.py", "--vs-aten", str(tmp_path / "a.json"), "768x4096x4096"],
                         cwd=SM90, env=env, capture_output=True, text=True, check=True).stdout
    assert "64x128 pp / aten 0.861" in out, out  # 1.165 / 1.353
