"""Where one kernel's NVRTC compile goes (issue 6's cold-compile target, 0.5 s): the kernel's source
as the op generates it (fxfuse._C.generate_cuda), compiled to a cubin with the op's options and
NVRTC's `--fdevice-time-trace`, then the trace's phases summed (front end, NVVM, ptxas). Best of
--repeats compiles; no GPU needed (the dev machine has no driver, so NVRTC's own compile cache
is off there).

--without-edge-epilogue compiles the Hopper kernel with its per-element edge epilogue (the path for
unaligned outputs) replaced by a trap: how much of the compile that path costs (bench/RESULTS.md
section 4, session 24: 8 %).

    PYTHONPATH=python python3 bench/compile_trace.py ["sm90 bias+relu 4096^3"] [--without-edge-epilogue]
"""
import argparse
import ctypes
import glob
import json
import os
import re
import tempfile
import time

import fxfuse._C as C
from compile_time import KERNELS

# The Hopper kernel's per-element edge epilogue, as kernels/sm90_wgmma_gemm.cuh writes it.
EDGE_LOOP = re.compile(r"      \{\n#pragma unroll\n        for \(int sub = 0; sub < SUB; \+\+sub\)\n#pragma unroll\n"
                       r"          for \(int jn = 0; jn < BN / 8; \+\+jn\) \{\n            fx_sm90_edge_pair.*?\n"
                       r"          \}\n      \}\n", re.S)


def nvrtc():
    """libnvrtc as the op loads it, its builtins preloaded from the same directory, and the CUDA
    include directory beside it."""
    path = C.nvrtc_path()
    lib_dir = os.path.dirname(path)
    for builtins in glob.glob(os.path.join(lib_dir, "libnvrtc-builtins.so.*")):
        ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(path), os.path.join(os.path.dirname(lib_dir), "include")


def compile_once(lib, include, source, trace):
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernel.cu", 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    opts = [b"--gpu-architecture=sm_90a", b"-std=c++17", b"--ptxas-options=-v", b"-DNDEBUG",
            b"--include-path=" + include.encode(), b"--fdevice-time-trace=" + trace.encode()]
    t = time.perf_counter()
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    seconds = time.perf_counter() - t
    size = ctypes.c_size_t()
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    if rc:
        raise RuntimeError(f"NVRTC error {rc}")
    return seconds, size.value


def phases(trace):
    """Seconds per named phase of NVRTC's time trace (complete events summed)."""
    events = json.load(open(trace))
    events = events["traceEvents"] if isinstance(events, dict) else events
    total = {}
    for e in events:
        if e.get("ph") == "X":
            total[e["name"]] = total.get(e["name"], 0.0) + e.get("dur", 0) / 1e6
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel", nargs="?", default="sm90 bias+relu 4096^3", choices=sorted(KERNELS))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--without-edge-epilogue", action="store_true")
    args = ap.parse_args()
    spec, M, K, N = KERNELS[args.kernel]
    _, source = C.generate_cuda(spec, M, N, K)
    if args.without_edge_epilogue:
        source, n = EDGE_LOOP.subn("      { __trap(); }\n", source)
        if n != 1:
            raise SystemExit("the edge epilogue's loop was not found in the generated source")
    lib, include = nvrtc()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            # NVRTC appends ".json" to the name it is given
            trace = os.path.join(tmp, f"trace{i}")
            seconds, cubin = compile_once(lib, include, source, trace)
            runs.append((seconds, cubin, phases(trace + ".json")))
    seconds, cubin, p = min(runs, key=lambda r: r[0])
    print(f"{args.kernel}{' (edge epilogue trapped)' if args.without_edge_epilogue else ''}: best of "
          f"{args.repeats} {seconds:.2f} s, cubin {cubin} bytes")
    for name in ("CUDA C++ Front-End", "LibNVVM", "NVVM Optimizer", "NVVM CodeGen", "Total PTXAS Time"):
        print(f"  {name:22} {p.get(name, 0.0):.2f} s")


if __name__ == "__main__":
    main()
