"""bench/compile_trace.py: NVRTC's time trace of one generated kernel, summed per phase (the
cold-compile breakdown of bench/RESULTS.md section 4). Needs the built extension and the pip NVRTC
(as the CompileSpec.ToCubin CTests do), no GPU."""
from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT, "python"), os.path.join(ROOT, "bench")])}
    return subprocess.run([sys.executable, os.path.join(ROOT, "bench", "compile_trace.py"), *args], env=env,
                          capture_output=True, text=True, check=True).stdout


def seconds(out, phase):
    return float(re.search(rf"  {re.escape(phase)}\s+([\d.]+) s", out).group(1))


def test_the_trace_splits_a_compile_into_nvvm_and_ptxas():
    import fxfuse._C as C
    assert C.nvrtc_available(), "NVRTC (the pip package) is needed here, as for the ToCubin CTests"
    out = run("gemv bias+gelu M=16", "--repeats", "1")
    total = float(re.search(r"best of 1 ([\d.]+) s, cubin (\d+) bytes", out).group(1))
    assert seconds(out, "Total PTXAS Time") > 0 and seconds(out, "LibNVVM") > 0, out
    assert seconds(out, "Total PTXAS Time") + seconds(out, "LibNVVM") <= total * 1.05, out


def test_the_hopper_kernels_edge_epilogue_is_found_and_trapped():
    """The edge-epilogue pattern still matches the generated Hopper kernel (else the option errors
    out), and trapping the path makes the cubin smaller."""
    full = run("sm90 bias+relu 4096^3", "--repeats", "1")
    trapped = run("sm90 bias+relu 4096^3", "--repeats", "1", "--without-edge-epilogue")
    size = lambda out: int(re.search(r"cubin (\d+) bytes", out).group(1))  # noqa: E731
    assert "(edge epilogue trapped)" in trapped and size(trapped) < size(full), (full, trapped)
