"""bench/gemv/cluster_residency.py --dry-run (no GPU): the int8 gemv recompiled with each pipeline
depth, its shared memory and the CTAs per SM that memory allows as the generator counts them (three
20 KB stages at M = 16: 60 KB, three per SM; five: 100 KB, two). Needs the built extension and the
pip NVRTC, as the CompileSpec.ToCubin CTests do."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_dry_run_compiles_each_depth_with_its_shared_memory():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "bench", "sm90"), os.path.join(ROOT, "python")])}
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gemv", "cluster_residency.py"), "--dry-run",
                          "--m", "16", "--stages", "3,5"], env=env, capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.split()[:1] == ["16"]]
    assert [r[:4] for r in rows] == [["16", "3", "60.0", "3"], ["16", "5", "100.0", "2"]], out
    assert all("cubin)" in " ".join(r) for r in rows), out
