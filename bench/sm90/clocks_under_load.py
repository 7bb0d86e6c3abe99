"""SM clock and power while cuBLAS mm and the fused Hopper kernel run back to back for a few
seconds each (4096^3 bf16, bias+ReLU+cast), sampled by nvidia-smi: does sustained load slow the
fused kernel more than cuBLAS? (bench/sm90/NOTES.md session 8: do_bench puts it at 1.20-1.24 x mm,
a single launch under ncu at 1.08.) With --tiles, every Hopper tile the autotune may choose
(the op's candidates, forced one at a time). Measured (bench/RESULTS.md Runs Q, R): the 128x256
cooperative tile runs at cuBLAS's clock, the 64x256 and 128x128 ping-pong tiles ~8 % lower in the
same time per call; not because of the bytes they move from L2 (cluster pairs halve them, no
clock gained). With --chains, the benchmark's epilogue chains (bench/sm90/chain_specs.py) on the
heuristic's tile at --shape, each beside cuBLAS mm: does a chain's extra time (the residual's, session
45) come with a lower clock, i.e. is it power, or at the same clock, i.e. stalls?

  python3 bench/sm90/clocks_under_load.py [--seconds 3] [--tiles]
  python3 bench/sm90/clocks_under_load.py --chains bias_relu_cast,bias_gelu,bias_gelu_resid [--shape MxKxN]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from profile_kernels import BIAS_RELU_CAST, dense_inputs, gemm_chain  # noqa: E402
import fxfuse._C as C  # noqa: E402
from compare_tiles import inputs_for, short  # noqa: E402  (the same tile names and inputs as its table)


def sustained(fn, seconds):
    """ms per call over `seconds` of back-to-back calls, and the nvidia-smi samples meanwhile."""
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                            "-lms", "100"], stdout=subprocess.PIPE, text=True)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls, t0 = 0, time.time()
    start.record()
    while time.time() - t0 < seconds:
        for _ in range(20):
            fn()
        calls += 20
        torch.cuda.synchronize()
    end.record()
    torch.cuda.synchronize()
    smi.terminate()
    rows = [line.split(",") for line in smi.communicate()[0].splitlines() if line.count(",") == 1]
    clocks = [float(c) for c, _ in rows[2:]]  # the first samples may predate the load
    power = [float(p) for _, p in rows[2:]]
    return start.elapsed_time(end) / calls, clocks, power


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--tiles", action="store_true", help="each Hopper tile candidate, not only the heuristic's")
    ap.add_argument("--chains", default="", help="chain_specs names, each on the heuristic's tile")
    ap.add_argument("--shape", default="4096x4096x4096", help="MxKxN (with --chains)")
    a = ap.parse_args()
    torch.manual_seed(0)
    M, K, N = (int(v) for v in a.shape.split("x")) if a.chains else (4096, 4096, 4096)
    ins = dense_inputs(M, K, N)
    x, w = ins[0], ins[1]
    cases = [("cuBLAS mm", None, lambda: torch.mm(x, w))]
    if a.chains:
        from chain_specs import chains  # noqa: E402 (runs the pass: only when asked)
        for name in a.chains.split(","):
            spec = chains()[name]
            chain_ins = inputs_for(spec, M, K, N)
            cases.append((f"{name} ({short(C.kernel_candidates(chain_ins, spec)[0])})", None,
                          lambda i=chain_ins, s=spec: gemm_chain(i, s)))
    else:
        fused = lambda: gemm_chain(ins, BIAS_RELU_CAST)  # noqa: E731
        choices = [c for c in C.kernel_candidates(ins, BIAS_RELU_CAST) if c.startswith("sm90_wgmma")] if a.tiles else [""]
        cases += [(f"fused {short(c) if c else 'bias+relu+cast'}", c, fused) for c in choices]
    cases.append(("cuBLAS mm (again)", None, cases[0][2]))  # brackets the fused rows: a drift shows
    print(f"{a.shape if a.chains else '4096x4096x4096'}")
    print(f"{'case':>32} {'ms/call':>8} {'SM MHz median':>14} {'min':>6} {'power W median':>15} {'max':>6} samples")
    for name, choice, fn in cases:
        if choice:
            C.set_kernel_choice(ins, BIAS_RELU_CAST, choice)
        fn()  # plan, compile, load
        torch.cuda.synchronize()
        ms, clocks, power = sustained(fn, a.seconds)
        if not clocks:
            print(f"{name:>32} {ms:8.4f}  (no nvidia-smi samples)")
            continue
        print(f"{name:>32} {ms:8.4f} {statistics.median(clocks):14.0f} {min(clocks):6.0f} "
              f"{statistics.median(power):15.1f} {max(power):6.1f} {len(clocks)}")


if __name__ == "__main__":
    main()
