"""fxfuse against what a user has today, side by side in one process.

Per shape and epilogue: cuBLAS mm alone, the eager chain, cuBLASLt's fused epilogue where one
exists, torch.compile default, and torch.compile(backend="fxfuse"). Prints times (ms, median of
do_bench) and ratios; writes JSON to $OUT/bench_chains.json (or ./bench_chains.json).

  python bench/bench_chains.py [--quick] [--decode] [--shapes MxKxN,...]
"""
import argparse
import json
import os
import time

import torch
import torch.nn.functional as F

import fxfuse

try:
    from triton.testing import do_bench
except ImportError:  # pragma: no cover - CUDA events fallback
    def do_bench(fn, warmup=50, rep=200, return_mode="median"):
        for _ in range(10):
            fn()
        times = []
        for _ in range(50):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        return sorted(times)[len(times) // 2]


def ms(fn):
    return do_bench(fn, warmup=50, rep=200, return_mode="median")


# The chains, as users write them. Each takes (x, w, b, r) and uses what it needs.
CHAINS = {
    "bias_gelu": lambda x, w, b, r: F.gelu(torch.mm(x, w) + b, approximate="tanh"),
    "bias_gelu_resid": lambda x, w, b, r: F.gelu(torch.mm(x, w) + b, approximate="tanh") * 0.5 + r,
    "silu": lambda x, w, b, r: F.silu(torch.mm(x, w)),
    "bias_relu_cast": lambda x, w, b, r: torch.relu(torch.mm(x, w) + b).to(torch.float16),
}
LT_GELU = {"bias_gelu": lambda x, w, b, r: torch._addmm_activation(b, x, w, use_gelu=True)}

LARGE = [(4096, 4096, 4096, torch.float16), (4096, 4096, 4096, torch.bfloat16),
         (8192, 8192, 8192, torch.bfloat16), (4096, 4096, 14336, torch.bfloat16),
         (4096, 14336, 4096, torch.bfloat16), (512, 4096, 4096, torch.bfloat16),
         (2048, 4096, 4096, torch.bfloat16)]
DECODE = [(m, k, n, torch.bfloat16) for m in (1, 4, 16, 64)
          for (k, n) in ((4096, 4096), (4096, 14336), (14336, 4096))]


def relerr(got, ref):
    return ((got.double() - ref.double()).norm() / ref.double().norm()).item()


def bench_shape(M, K, N, dt, chains):
    x = torch.randn(M, K, device="cuda", dtype=dt)
    w = torch.randn(K, N, device="cuda", dtype=dt) / K ** 0.5
    b = torch.randn(N, device="cuda", dtype=dt)
    r = torch.randn(M, N, device="cuda", dtype=dt)
    args = (x, w, b, r)
    rows = []
    t_mm = ms(lambda: torch.mm(x, w))
    for name in chains:
        fn = CHAINS[name]
        row = dict(shape=f"{M}x{K}x{N}", dtype=str(dt).split(".")[-1], chain=name, mm=t_mm)
        row["eager"] = ms(lambda: fn(*args))
        if name in LT_GELU:
            row["cublaslt"] = ms(lambda: LT_GELU[name](*args))
        for label, backend in (("compile", "inductor"), ("fxfuse", "fxfuse")):
            torch._dynamo.reset()
            c = torch.compile(fn, backend=backend, dynamic=False)
            t0 = time.time(); out = c(*args); torch.cuda.synchronize()
            row[f"{label}_compile_s"] = time.time() - t0
            row[label] = ms(lambda: c(*args))
            row[f"{label}_relerr"] = relerr(out, fn(*[a.double() if a.is_floating_point() else a for a in args]))
        row["fused_chains"] = fxfuse.stats().get("chains_fused", 0)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one large shape, two chains")
    ap.add_argument("--decode", action="store_true", help="small-M shapes")
    args = ap.parse_args()
    torch.manual_seed(0)
    shapes = DECODE if args.decode else LARGE
    chains = list(CHAINS)
    if args.quick:
        shapes, chains = shapes[1:2], chains[:2]
    rows = []
    for (M, K, N, dt) in shapes:
        rows += bench_shape(M, K, N, dt, chains)
    out = os.path.join(os.environ.get("OUT", "."), "bench_chains.json")
    json.dump(rows, open(out, "w"), indent=1)
    hdr = f"{'shape':>16} {'dtype':>8} {'chain':>16} {'mm':>7} {'eager':>7} {'lt':>7} {'compile':>7} {'fxfuse':>7} {'fx/mm':>6} {'eag/fx':>6} {'cmp/fx':>6} {'relerr':>8}"
    print(hdr)
    for r in rows:
        lt = f"{r['cublaslt']:7.4f}" if "cublaslt" in r else "      -"
        print(f"{r['shape']:>16} {r['dtype']:>8} {r['chain']:>16} {r['mm']:7.4f} {r['eager']:7.4f} {lt} "
              f"{r['compile']:7.4f} {r['fxfuse']:7.4f} {r['fxfuse']/r['mm']:6.2f} {r['eager']/r['fxfuse']:6.2f} "
              f"{r['compile']/r['fxfuse']:6.2f} {r['fxfuse_relerr']:8.1e}")


if __name__ == "__main__":
    main()
