"""bench/op_path.py's reading of the op's counters: what a timed benchmark row says ran. An A/B of
the overlapped epilogue (bench/sm90/knob_ab.sh) is read by it: a knob that silently failed to apply
must not read as the overlapped kernel."""
from __future__ import annotations

import pytest


@pytest.fixture
def op_path(bench_module):
    return bench_module("op_path")


def snapshot(op_path, **counts):
    return {k: counts.get(k, 0) for k in op_path.COUNTERS}


@pytest.mark.parametrize("delta,calls,path", [
    ({"launches": 2}, 2, "kernel"),
    ({"launches": 2, "hopper_overlap_launches": 2}, 2, "kernel (overlapped epilogue)"),
    ({"launches": 2, "hopper_overlap_launches": 1}, 2, "mixed"),
    ({"launches": 1, "cluster_launches": 1}, 1, "kernel (split-K cluster)"),
    ({"launches": 1, "pointwise_launches": 1}, 1, "cuBLAS + epilogue kernel"),
    ({"aten_dispatch": 1}, 1, "aten"),
    ({"launches": 1}, 2, "mixed"),
    ({}, 1, "not the op"),
])
def test_path_of_names_what_ran(op_path, delta, calls, path):
    before = snapshot(op_path, launches=5, hopper_overlap_launches=3, aten_dispatch=1)
    after = {k: before[k] + delta.get(k, 0) for k in before}
    got = op_path.path_of(before, after, calls)
    assert got == path or (path == "mixed" and got.startswith("mixed ")), got
