"""Where the backend's rule against Inductor (codegen::inductorRefusal) leaves a chain to
Inductor: torch.compile default, the fxfuse backend as it decides, and the fxfuse backend made to
fuse (option fxfuse.baseline="eager": judged against eager, which the kernel beats), compiled once
each (one Dynamo reset per chain: Dynamo keeps one compiled entry per backend side by side) and timed
in one process with their calls interleaved (fxfuse.autotune.time_interleaved: each repetition
calls every variant once, the L2 flushed before each call; one do_bench block per variant and
round until session 27, bench/RESULTS.md Run AP), so host noise and clock swings hit the three
alike. Prints per shape and chain the median and min over the rounds (ms), compile / forced,
the chains each fused, and the op path the forced one took (bench/op_path.py). With --graphs also
each variant captured in one CUDA graph and its replay timed the same way: a lower bound on the
device time without the host's share (mode="reduce-overhead" also copies inputs not marked static
into its graph's buffers on every call; this replay copies nothing). The medians without it are
host-bound under ~0.15 ms (Run AI). The op path the forced variant's capture recorded is printed
too (fxfuse captures ATen if its kernel were not compiled yet).

  python bench/backend_rule_check.py --mkn 1024x4096x14336,2048x4096x4096 [--chains ..] [--rounds 5]
Writes $OUT/backend_rule_check.json.
"""
import argparse
import json
import os
import traceback

import torch
import torch._inductor.config

import fxfuse
from bench_out import out_dir
from bench_chains import relerr, round_robin
from chain_fns import CHAINS, chain_args, float64_reference
from op_path import counters, path_of

def graphed(fn, args):
    """fn(*args) captured in one CUDA graph (after warm-up calls on a side stream, as torch's
    docs ask); returns the replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(*args)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn(*args)
    return g.replay


REPS = 30  # calls of each variant per round

VARIANTS = {"compile": {}, "backend": {"backend": "fxfuse"},
            "forced": {"backend": "fxfuse", "options": {"fxfuse.baseline": "eager"}}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mkn", required=True, help="MxKxN[,...] (bfloat16)")
    ap.add_argument("--chains", default="bias_gelu,bias_gelu_resid,silu,bias_relu_cast")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--graphs", action="store_true", help="also time each variant replayed from a CUDA graph")
    a = ap.parse_args()
    # every compile runs the pass (a graph from the FX graph cache would not count its chains)
    torch._inductor.config.fx_graph_cache = False
    rows = []
    print(f"{'shape':>16} {'chain':>16} " + " ".join(f"{v + ' med':>12} {'min':>7}" for v in VARIANTS)
          + f" {'cmp/forced':>10} {'fused':>5}  backend fused  forced path")
    for mkn in a.mkn.split(","):
        M, K, N = map(int, mkn.split("x"))
        args = chain_args(M, K, N, torch.bfloat16)
        for name in a.chains.split(","):
            fn = CHAINS[name]
            ref = float64_reference(fn, args)
            compiled, fused = {}, {}
            torch._dynamo.reset()
            for v, kw in VARIANTS.items():
                fxfuse.reset_stats()
                c = torch.compile(fn, dynamic=False, **kw)
                got = c(*args)
                err = relerr(got, ref)
                assert err < 2e-2, f"{v} {mkn} {name}: relative error {err}"
                compiled[v], fused[v] = c, fxfuse.stats().get("chains_fused", 0)
            before = counters()
            compiled["forced"](*args)
            forced_path = path_of(before, counters())
            timed = dict(compiled)
            graph_errors, captured_path = {}, ""
            if a.graphs:
                for v, c in compiled.items():
                    before = counters()
                    try:
                        timed[v + " graph"] = graphed(c, args)
                    except Exception:  # a capture that fails costs its column, not the run
                        # (the whole chain: torch.cuda.graph's exit raises its own error over the cause)
                        graph_errors[v] = traceback.format_exc(limit=3)
                        print(f"  {v}: CUDA graph capture failed:\n{graph_errors[v]}", flush=True)
                    if v == "forced":
                        captured_path = path_of(before, counters())
            fns = {v: (c if v.endswith(" graph") else (lambda c=c: c(*args))) for v, c in timed.items()}
            # every variant in the same rounds, their calls interleaved (bench_chains.round_robin);
            # a graph replay that fails is dropped (its column lost), any other failure raises
            failed = {}
            med, samples = round_robin(fns, a.rounds, REPS, failures=failed)
            for v, why in failed.items():
                if not v.endswith(" graph"):
                    raise RuntimeError(f"{v} {mkn} {name}: {why}")
                graph_errors[v] = why
                print(f"  {v}: replay failed: {why}", flush=True)
            row = dict(shape=mkn, chain=name, samples=samples, fused=fused, forced_path=forced_path,
                       forced_captured_path=captured_path, graph_errors=graph_errors)
            rows.append(row)
            print(f"{mkn:>16} {name:>16} " + " ".join(f"{med[v]:12.4f} {min(samples[v]):7.4f}" for v in VARIANTS)
                  + f" {med['compile'] / med['forced']:10.2f} {fused['forced']:5d}  {fused['backend']:13d}  {forced_path}",
                  flush=True)
            if a.graphs:
                cell = lambda v: (f"{med[v]:12.4f} {min(samples[v]):7.4f}" if v in med  # noqa: E731
                                  else f"{'-':>12} {'-':>7}")
                ratio = (f"{med['compile graph'] / med['forced graph']:10.2f}"
                         if "compile graph" in med and "forced graph" in med else f"{'-':>10}")
                print(f"{'(CUDA graphs)':>33} " + " ".join(cell(v + " graph") for v in VARIANTS) + f" {ratio}"
                      + f"{'':>22}  {captured_path} (captured)", flush=True)
    with open(os.path.join(out_dir(), "backend_rule_check.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
