"""What compiling in the NVRTC worker process costs (codegen/nvrtc_worker.h): every compile runs in a
fresh fxfuse-nvrtc-worker so that a crash of NVRTC or ptxas fails one kernel, not the user's process.

In one process (NVRTC already loaded there), per kernel of bench/compile_time.py, alternating rounds
of the same compile (_C.compile_ptx: source to cubin and PTX) in the worker and in-process
(FXFUSE_COMPILE_IN_PROCESS=1, read at each compile); prints the medians and their difference. The
driver's compute cache is off (CUDA_CACHE_DISABLE=1), so every compile runs ptxas. No GPU needed.

  python bench/compile_worker_cost.py [--rounds 5]
"""
import argparse
import os
import statistics
import sys
import time

os.environ["CUDA_CACHE_DISABLE"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_time import KERNELS  # noqa: E402


def timed_compile(C, spec, M, K, N):
    t = time.perf_counter()
    C.compile_ptx(spec, M, N, K, "sm_90")
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import fxfuse._C as C
    C.compile_ptx(*(lambda s, M, K, N: (s, M, N, K, "sm_90"))(*next(iter(KERNELS.values()))))  # NVRTC loaded
    print(f"{'kernel':28} {'in-process s (min / median)':>28} {'worker s (min / median)':>24} "
          f"{'worker - in-process (min / median)':>36}")
    for name, (spec, M, K, N) in KERNELS.items():
        times = {"here": [], "worker": []}
        for _ in range(args.rounds):
            for where in ("worker", "here"):
                if where == "here":
                    os.environ["FXFUSE_COMPILE_IN_PROCESS"] = "1"
                else:
                    os.environ.pop("FXFUSE_COMPILE_IN_PROCESS", None)
                times[where].append(timed_compile(C, spec, M, K, N))
        h, w = times["here"], times["worker"]
        hm, wm = statistics.median(h), statistics.median(w)
        print(f"{name:28} {min(h):13.3f} / {hm:.3f} {min(w):13.3f} / {wm:.3f} "
              f"{min(w) - min(h):+23.3f} / {wm - hm:+.3f}")


if __name__ == "__main__":
    main()
