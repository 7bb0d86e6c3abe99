"""fxfuse against what a user has today, side by side in one process.

Per shape and chain: cuBLAS mm alone, the eager chain, cuBLASLt's fused GELU epilogue where
one exists, torch.compile default (with --compile), and fxfuse. fxfuse is timed on the graph the
pass rewrote (make_fx → fxfuse pass → GraphModule), so the number is the fused kernel plus
the op's host path. With --compile also torch.compile(backend="fxfuse") ("backend"): what a user
gets by switching the backend, the planner deciding against Inductor (a chain it leaves unfused
runs as Inductor compiles it).
Prints times (ms: cuBLAS mm alone, eager, cuBLASLt and fxfuse of a chain timed together, their
calls interleaved, for --rounds rounds after one not kept, the median over the rounds of each
round's median; torch.compile and the backend, each compiled afresh per sample, on their own,
with do_bench)
and ratios; writes $OUT/bench_chains.json.

  python bench/bench_chains.py [--decode] [--quick] [--compile [SAMPLES]] [--op-unfused] [--shapes N | --which 2,8,9 | --mkn MxKxN,..]
                               [--chains bias_gelu,linear_gelu,...]
Decode shapes against the memory limit, every weight format of issue 7: bench/bench_decode.py.
"""
import argparse
import json
import os
import re
import statistics
import time

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxfuse
from fxfuse.autotune import time_interleaved
from fxfuse.pass_driver import Options, run_on_graph
from bench_out import out_dir
from chain_fns import CHAINS, chain_args, float64_reference
from op_path import counters, path_of, path_of_call


def ms(fn, rep=100):
    """do_bench's median (torch.compile's samples); triton imported when called, so that the module
    loads where triton is not installed (the CPU tests)"""
    from triton.testing import do_bench
    return do_bench(fn, warmup=25, rep=rep, return_mode="median")


def round_robin(fns: dict, rounds: int, reps: int = 20, failures: dict | None = None) -> tuple[dict, dict]:
    """Every variant of fns timed in the same rounds, their calls interleaved (fxfuse.autotune.
    time_interleaved: each repetition calls each variant once, L2 flushed before each call), for
    `rounds` rounds after one not kept: (median over the rounds of each round's median, the
    rounds' medians) per name. Timed one variant after another instead, a variant met the GPU at
    another clock than the others: cuBLAS mm alone, timed once per shape before the chains until
    session 26, read 9-13 % off its round-robin time (bench/RESULTS.md Run AO); timed in blocks of
    do_bench until session 27, the fused kernel read 0.73 ms where compare_tiles had 0.64 (Run AP).
    With `failures` (time_interleaved's), a variant that raises is left out, its reason kept there."""
    samples = {name: [] for name in fns}
    for r in range(rounds + 1):
        for name, times in time_interleaved(fns, reps, failures=failures).items():
            if r:
                samples[name].append(statistics.median(times))
    samples = {name: v for name, v in samples.items() if v and name not in (failures or {})}
    return {name: statistics.median(v) for name, v in samples.items()}, samples


CUBLASLT = {"bias_gelu": lambda x, w, b, r, wq, s, wt: torch._addmm_activation(b, x, w, use_gelu=True)}

# (M, K, N, dtype). K = 1024 rows: transformer projections at d_model 1024, where the
# epilogue is a large share of the time.
LARGE = [(4096, 4096, 4096, torch.bfloat16), (4096, 1024, 4096, torch.bfloat16),
         (16384, 1024, 4096, torch.bfloat16), (4096, 4096, 1024, torch.bfloat16),
         (4096, 14336, 4096, torch.bfloat16), (512, 4096, 4096, torch.bfloat16),
         (2048, 4096, 4096, torch.bfloat16), (8192, 8192, 8192, torch.bfloat16),
         (4096, 4096, 4096, torch.float16),
         # issue 6's 4096x14336 with K = 4096 (an MLP's up-projection; index 5 is its down-projection)
         (4096, 4096, 14336, torch.bfloat16)]
DECODE = [(m, k, n, torch.bfloat16) for m in (1, 16, 64) for (k, n) in ((4096, 4096), (4096, 14336))]


def relerr(got, ref):
    return ((got.double() - ref.double()).norm() / ref.double().norm()).item()


def fused_module(fn, args, options=None):
    """The chain's graph rewritten by fxfuse (the same pass the backend runs)."""
    gm = make_fx(fn)(*args)
    res = run_on_graph(gm.graph, options or Options(), "bench")
    gm.recompile()
    n = sum(1 for nd in gm.graph.nodes if "gemm_chain" in str(nd.target))
    return gm, n, res


def bench_shape(M, K, N, dt, chains, with_compile, op_unfused=False, rounds=3):
    args = chain_args(M, K, N, dt)
    x, w = args[0], args[1]
    rows = []
    for name in chains:
        fn = CHAINS[name]
        row = dict(shape=f"{M}x{K}x{N}", dtype=str(dt).split(".")[-1], chain=name)
        ref = float64_reference(fn, args)
        t0 = time.time()
        gm, nfused, _ = fused_module(fn, args)
        out = gm(*args)
        torch.cuda.synchronize()
        row["fxfuse_prepare_s"] = time.time() - t0
        row["fused_chains"] = nfused
        fns = {"mm": lambda: torch.mm(x, w), "eager": lambda: fn(*args)}
        if name in CUBLASLT:
            fns["cublaslt"] = lambda: CUBLASLT[name](*args)
        fns["fxfuse"] = lambda: gm(*args)
        row["path"] = path_of_call(lambda: gm(*args))
        row["fxfuse_relerr"] = relerr(out[0] if isinstance(out, (list, tuple)) else out, ref)
        row["eager_relerr"] = relerr(fn(*args), ref)
        if op_unfused and row["path"] == "not the op":
            # What the chain the planner left to eager's ops would run on the op's own unfused
            # path (cuBLAS, then one generated epilogue kernel): the rewrite without the
            # profitability rule, the op deciding per call. Eager is timed twice in each round,
            # so the row shows how far two timings of the same ops differ in this run.
            gm2, _, _ = fused_module(fn, args, Options(only_profitable=False))
            got = gm2(*args)
            row["op_unfused_path"] = path_of_call(lambda: gm2(*args))
            row["op_unfused_relerr"] = relerr(got[0] if isinstance(got, (list, tuple)) else got, ref)
            fns["op_unfused"] = lambda: gm2(*args)
            fns["eager_again"] = lambda: fn(*args)
        medians, row["samples"] = round_robin(fns, rounds)
        row.update(medians)
        if with_compile:
            # Each sample a fresh compile (Run S: two compiles of one chain differed by up to 1.27x),
            # the row's value their median; the samples go to the JSON.
            row["compile_samples"], row["backend_samples"], row["backend_paths"] = [], [], []
            for _ in range(with_compile):
                torch._dynamo.reset()
                c = torch.compile(fn, dynamic=False)
                c(*args)
                row["compile_samples"].append(ms(lambda: c(*args)))
                torch._dynamo.reset()
                fxfuse.reset_stats()
                cb = torch.compile(fn, backend="fxfuse", dynamic=False)
                got = cb(*args)
                before = counters()
                row["backend_samples"].append(ms(lambda: cb(*args)))
                # What ran: a second compile of the same graph comes from Inductor's FX graph
                # cache without running the pass, so chains_fused alone would read 0 there.
                row["backend_paths"].append(path_of(before, counters()))
                row["backend_fused"] = fxfuse.stats().get("chains_fused", 0)  # the last sample's
                row["backend_cached_graphs"] = fxfuse.stats().get("graphs_from_inductor_cache", 0)
                row["backend_relerr"] = relerr(got, ref)
            row["compile"] = statistics.median(row["compile_samples"])
            row["backend"] = statistics.median(row["backend_samples"])
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", action="store_true", help="small-M shapes, incl. int8 weights")
    ap.add_argument("--quick", action="store_true", help="first two shapes only")
    ap.add_argument("--compile", type=int, nargs="?", const=1, default=0, metavar="SAMPLES",
                    help="also torch.compile default and torch.compile(backend='fxfuse'), each compiled "
                         "SAMPLES times afresh (default 1; the median is shown)")
    ap.add_argument("--op-unfused", action="store_true",
                    help="for each chain the planner leaves to eager's ops, also time the op's own unfused path "
                         "(cuBLAS + one epilogue kernel) and eager again")
    ap.add_argument("--all-epilogues", action="store_true",
                    help="fuse every chain on Hopper, also those the planner leaves unfused (to re-measure its rule)")
    ap.add_argument("--rounds", type=int, default=3, help="round-robin rounds of every variant per chain, "
                    "after one not kept (the median is shown)")
    ap.add_argument("--shapes", type=int, default=0, help="only the first N shapes")
    ap.add_argument("--chains", default="", help="these chains (bench/chain_fns.py), e.g. linear_gelu,"
                    "linear_relu_cast (nn.Linear's weight layout); default: the four epilogues (--decode: its three)")
    ap.add_argument("--mkn", default="", help="these shapes instead, MxKxN[,...] (bfloat16), e.g. 128x4096x4096")
    ap.add_argument("--which", default="", help="only these shapes, 1-based indices into the whole list (LARGE "
                    "or DECODE), e.g. 2,8,9; not combined with --quick or --shapes")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds takes 1 or more")
    out = os.path.join(out_dir(), "bench_chains.json")  # created before the minutes of measuring
    if a.all_epilogues:  # read once by codegen's config table, before the first chain is planned
        os.environ["FXFUSE_SM90_ALL_EPILOGUES"] = "1"
    torch.manual_seed(0)
    shapes = DECODE if a.decode else LARGE
    chains = a.chains.split(",") if a.chains else ["bias_gelu", "w8_bias", "w8_linear"] if a.decode else \
        ["bias_gelu", "bias_gelu_resid", "silu", "bias_relu_cast"]
    if not all(c in CHAINS for c in chains):
        ap.error(f"--chains takes names from {sorted(CHAINS)}")
    if a.which:
        picked = [int(i) for i in a.which.split(",")]
        if a.quick or a.shapes or not all(1 <= i <= len(shapes) for i in picked):
            ap.error(f"--which takes indices 1..{len(shapes)} and no --quick / --shapes")
        shapes = [shapes[i - 1] for i in picked]
    if a.mkn:
        dims = [t.split("x") for t in a.mkn.split(",")]
        if a.which or a.quick or a.shapes or not all(len(d) == 3 and all(re.fullmatch(r"[1-9][0-9]*", v) for v in d)
                                                        for d in dims):
            ap.error("--mkn takes MxKxN[,MxKxN...] and no --which / --quick / --shapes")
        shapes = [tuple(int(v) for v in d) + (torch.bfloat16,) for d in dims]
    if a.quick:
        shapes = shapes[:2]
    if a.shapes:
        shapes = shapes[:a.shapes]
    rows = []
    for (M, K, N, dt) in shapes:
        rows += bench_shape(M, K, N, dt, chains, a.compile, a.op_unfused, a.rounds)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    print(f"{'shape':>16} {'dtype':>8} {'chain':>16} {'mm':>7} {'eager':>7} {'lt':>7} {'compile':>7} "
          f"{'fxfuse':>7} {'fx/mm':>6} {'eag/fx':>6} {'cmp/fx':>6} {'relerr':>8}  path")
    backend = any("backend" in r for r in rows)
    for r in rows:
        lt = f"{r['cublaslt']:7.4f}" if "cublaslt" in r else "      -"
        cp = f"{r['compile']:7.4f}" if "compile" in r else "      -"
        cr = f"{r['compile'] / r['fxfuse']:6.2f}" if "compile" in r else "     -"
        print(f"{r['shape']:>16} {r['dtype']:>8} {r['chain']:>16} {r['mm']:7.4f} {r['eager']:7.4f} {lt} {cp} "
              f"{r['fxfuse']:7.4f} {r['fxfuse'] / r['mm']:6.2f} {r['eager'] / r['fxfuse']:6.2f} {cr} "
              f"{r['fxfuse_relerr']:8.1e}  {r['path']}")
    unfused = [r for r in rows if "op_unfused" in r]
    if unfused:  # the chains left to eager: eager's ops against the op's unfused path
        print(f"{'shape':>16} {'dtype':>8} {'chain':>16} {'eager':>7} {'again':>7} {'op':>7} {'eag/op':>6} "
              f"{'relerr':>8}  op path")
        for r in unfused:
            print(f"{r['shape']:>16} {r['dtype']:>8} {r['chain']:>16} {r['eager']:7.4f} {r['eager_again']:7.4f} "
                  f"{r['op_unfused']:7.4f} {r['eager'] / r['op_unfused']:6.2f} {r['op_unfused_relerr']:8.1e}  "
                  f"{r['op_unfused_path']}")
    if backend:  # torch.compile(backend="fxfuse") against torch.compile default
        print(f"{'shape':>16} {'dtype':>8} {'chain':>16} {'compile':>7} {'backend':>7} {'cmp/bk':>6} {'fused':>5} "
              f"{'relerr':>8}  spread (max/min of the samples: compile, backend)  backend path(s)")
        for r in rows:
            spread = [max(v) / min(v) for v in (r["compile_samples"], r["backend_samples"])]
            print(f"{r['shape']:>16} {r['dtype']:>8} {r['chain']:>16} {r['compile']:7.4f} {r['backend']:7.4f} "
                  f"{r['compile'] / r['backend']:6.2f} {r['backend_fused']:>5} {r['backend_relerr']:8.1e}  "
                  f"{spread[0]:.2f} {spread[1]:.2f}  {' / '.join(sorted(set(r['backend_paths'])))}")


if __name__ == "__main__":
    main()
