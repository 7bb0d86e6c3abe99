"""Which kernel cuBLAS runs for `x @ w` (bf16, w as [K, N]) at each shape, with its launch grid, the
output tile its name gives and the rounds of tiles that makes: the unfused path's own tiling, which
the work-share refusal (codegen/config_table.cpp) leaves out when it weighs the fused kernel's
rounds against cuBLAS + the epilogue kernel (docs/STATUS.md "Next session" item 0).

    python3 bench/cublas_tiles.py --mkn 3072x14336x3072,2048x14336x4864 [--json OUT.json]   (GPU)
    PYTHONPATH=python python3 bench/cublas_tiles.py --check bench/data/run_av_call*_cublas_tiles.json

--check (no GPU): for each stored row, the share of the tile cuBLAS ran, counted over all the SMs
(idle SMs of a smaller grid are slots it leaves empty), beside fxfuse._C.cublas_work_share's count
(codegen/cublas_share.cpp), and how many agree within 0.01 (split-K kernels aside).

The kernel name and grid come from torch.profiler's trace (one call after warm-up); nvjet kernel
names carry the tile as `_<BM>x<BN>_<BK>x<stages>_` (e.g. nvjet_tst_256x128_64x4_2x1_v_bz_coopA_NNN).
A persistent kernel's grid is its CTA count, not its tile count: rounds = ceil(tiles / CTAs), and
share = tiles / (rounds x CTAs) (the slots of its last round that hold a tile). The time is the
median of 50 calls by CUDA events, cuBLAS alone.
"""
import argparse
import json
import math
import os
import re
import tempfile

import torch


def parse_mkn(text):
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",") if s]


def tile_from_name(name):
    m = re.search(r"_(\d+)x(\d+)_(\d+)x(\d+)_", name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def tiles_rounds_share(M, N, rows, cols, slots):
    """A rows x cols output tile over M x N on `slots` CTAs: its tile count, rounds, and the real
    outputs' share of its rounds' slots (codegen/cublas_share.cpp's measure)."""
    tiles = math.ceil(M / rows) * math.ceil(N / cols)
    rounds = math.ceil(tiles / slots)
    return tiles, rounds, M * N / (rounds * slots * rows * cols)


def gemm_kernel_events(trace_path):
    """The trace's kernel events, longest first (the GEMM, not a memset or a cast)."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    return sorted(kernels, key=lambda e: -e.get("dur", 0))


def median_ms(fn, calls=50):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    for s, e in zip(starts, ends):
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return times[len(times) // 2]


def describe(M, K, N, num_sms):
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        torch.mm(x, w)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        torch.mm(x, w)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        kernels = gemm_kernel_events(path)
    if not kernels:
        return {"M": M, "K": K, "N": N, "kernel": None}
    k = kernels[0]
    args = k.get("args", {})
    grid = args.get("grid", [0, 0, 0])
    ctas = grid[0] * grid[1] * grid[2]
    row = {"M": M, "K": K, "N": N, "kernel": k["name"], "grid": grid, "block": args.get("block"),
           "ctas": ctas, "ms": median_ms(lambda: torch.mm(x, w))}
    tile = tile_from_name(k["name"])
    if tile and ctas:
        # nvjet names the tile in cuBLAS's column-major problem (w^T x^T: N x M), so "256x128" covers
        # 128 rows by 256 columns of the row-major output (checked where the tile count equals the
        # grid: 896 x 4096 on 112 CTAs, 704 x 4096 on 128). The share counts outputs, as
        # codegen/cublas_share.cpp does: real outputs over its rounds' slots' area.
        cols, rows = tile
        slots = ctas if ctas <= 2 * num_sms else num_sms  # a persistent grid: its CTAs
        tiles, rounds, share = tiles_rounds_share(M, N, rows, cols, slots)
        row.update(tile=f"{cols}x{rows}", tile_rows=rows, tile_cols=cols, tiles=tiles, rounds=rounds, share=share)
    return row


def check(paths, num_sms=132):
    """Stored rows against the library's count of cuBLAS's share (no GPU)."""
    import fxfuse._C as C
    agree = total = 0
    for path in paths:
        for r in json.load(open(path)):
            tile = tile_from_name(r.get("kernel") or "")
            if not tile or "splitK" in r["kernel"]:
                continue
            cols, rows = tile  # N-extent x M-extent, as in describe()
            M, N = r["M"], r["N"]
            ran = tiles_rounds_share(M, N, rows, cols, num_sms)[2]
            counted = C.cublas_work_share(M, N, num_sms)
            total += 1
            agree += abs(ran - counted) < 0.01
            flag = "" if abs(ran - counted) < 0.01 else "  <- differs"
            print(f"{M}x{r['K']}x{N:<6} cuBLAS ran {rows} x {cols}: {ran:.3f}, counted {counted:.3f}{flag}")
    print(f"within 0.01 at {agree} of {total} shapes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkn", help="shapes M x K x N, comma separated")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--check", nargs="+", metavar="JSON", help="stored rows against cublas_work_share (no GPU)")
    args = ap.parse_args()
    if args.check:
        check(args.check)
        return
    if not args.mkn:
        ap.error("--mkn or --check is required")
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = [describe(M, K, N, num_sms) for (M, K, N) in parse_mkn(args.mkn)]
    print(f"{'shape':>18} {'ms':>7} {'ctas':>5} {'tile':>8} {'tiles':>6} {'rnd':>3} {'share':>5}  kernel")
    for r in rows:
        if not r.get("kernel"):
            print(f"{r['M']}x{r['K']}x{r['N']:>6}  no kernel in the trace")
            continue
        shape = f"{r['M']}x{r['K']}x{r['N']}"
        print(f"{shape:>18} {r['ms']:7.4f} {r['ctas']:5d} {r.get('tile', '-'):>8} {r.get('tiles', 0):6d} "
              f"{r.get('rounds', 0):3d} {r.get('share', 0):5.3f}  {r['kernel'][:90]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
