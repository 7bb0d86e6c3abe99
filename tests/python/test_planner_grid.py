"""bench/sm90/planner_grid.py: the planner's decision over a grid of sizes, and the diff of two
dumps that a tile-rule change is checked with (bench/RESULTS.md Run AM). No GPU: the decisions
come from the built library."""
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SM90 = os.path.join(ROOT, "bench", "sm90")


def load():
    sys.path[:0] = [SM90, os.path.join(ROOT, "bench")]
    try:
        import chain_specs
        import planner_grid
    finally:
        del sys.path[:2]
    return planner_grid, chain_specs


def test_decisions_name_the_tile_or_the_unfused_path(monkeypatch):
    monkeypatch.delenv("FXFUSE_SM90_ALL_EPILOGUES", raising=False)
    import fxfuse._C as C
    planner_grid, chain_specs = load()
    spec = chain_specs.chains()["bias_gelu"]
    # K = 1024 from 1025 rows: 128x128 ping-pong (session 24); one 128-row tile at a long K: unfused
    assert planner_grid.decision(C, spec, 4096, 4096, 1024) == "sm90_wgmma 128x128x64 s6 t384 pingpong"
    assert planner_grid.decision(C, spec, 128, 12288, 14336) == "unfused"
    points = planner_grid.dump(((4096, 128), (4096,), (1024, 14336)))
    assert len(points) == 4 * 2 * 1 * 2 and points["bias_gelu 128x14336x4096"] in (
        "unfused", C.kernel_candidates_for_size(spec, 128, 4096, 14336)[0])


def test_diff_counts_changes_and_lists_the_points_that_cross_to_or_from_the_kernel():
    planner_grid, _ = load()
    before = {"a 1x1x1": "tile A", "a 2x2x2": "tile A", "b 1x1x1": "unfused", "b 2x2x2": "tile B"}
    after = {"a 1x1x1": "tile C", "a 2x2x2": "tile C", "b 1x1x1": "tile B", "b 2x2x2": "tile B"}
    lines = planner_grid.diff(before, after)
    assert lines[0] == "     2 tile A -> tile C", lines
    assert "3 of 4 points changed; 1 between the kernel and the unfused path:" in lines, lines
    assert lines[-1] == "  b 1x1x1: unfused -> tile B", lines
