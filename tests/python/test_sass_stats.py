"""bench/sm90/sass_stats.py: NVRTC's phase times for the generated Hopper kernel (bench/RESULTS.md
section 4), and its --without-edge-epilogue option, which must still find the kernel's per-element
edge epilogue in the generated source (it exits with an error otherwise). Needs the built extension
and the pip NVRTC (as the CompileSpec.ToCubin CTests do), no GPU."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SM90 = os.path.join(ROOT, "bench", "sm90")


def phase_seconds(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SM90, os.path.join(ROOT, "bench"), os.path.join(ROOT, "python")])}
    out = subprocess.run([sys.executable, "sass_stats.py", "--shape", "4096x4096x4096", "--chain", "silu", *args],
                         cwd=SM90, env=env, capture_output=True, text=True, check=True).stdout
    row = [line.split() for line in out.splitlines() if line.split()[:1] == ["silu"]]
    assert len(row) == 1 and row[0][1] == "sm90_wgmma", out
    return [float(v) for v in row[0][2:5]]  # front end, NVVM optimizer, ptxas


def test_phase_times_with_and_without_the_edge_epilogue():
    import fxfuse._C as C
    assert C.nvrtc_available(), "NVRTC (the pip package) is needed here, as for the ToCubin CTests"
    for seconds in (phase_seconds(), phase_seconds("--without-edge-epilogue")):
        assert all(s > 0 for s in seconds), seconds


def test_gemv_stage_tool_reports_the_kernel_the_library_builds():
    """bench/gemv/sass_stage.py (bench/gemv/NOTES.md session 35): the gemv at M = 16 with its launch
    bounds' registers and no spills; a dense M = 64 row is the Hopper kernel's, which it names."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SM90, os.path.join(ROOT, "python")])}
    env.pop("FXFUSE_NVDISASM", None)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gemv", "sass_stage.py"), "--form",
                          "int8_kn,bf16_kn", "--m", "16,64"], env=env, capture_output=True, text=True, check=True).stdout
    rows = {tuple(line.split()[:2]): line.split() for line in out.splitlines()[1:]}
    int8 = rows[("int8_kn", "16")]
    assert int8[2] == "gemv" and int(int8[3]) > 96 and int8[4] == "0" and float(int8[5]) > 0, out
    assert rows[("bf16_kn", "64")][2] == "sm90_wgmma" and "not the gemv" in out, out
