"""Every kernel the autotune may choose for a chain, side by side in one process: the op's
unfused path ("aten": cuBLAS plus the generated epilogue kernel), the heuristic's kernel and
each Hopper tile (config_table.cpp kHopperTiles; below 100 tiles of 64x128 also the split-K
tiles, "64x128 sk2" / "sk4"), with cuBLAS mm alone beside them.

A tile's effect of 5-10 % is below the spread between two bench runs (bench/RESULTS.md Run J),
so this times the candidates and cuBLAS mm alone together in rounds, their calls interleaved
(fxfuse.autotune.measure, which also checks each candidate's outputs against ATen before timing
it), and keeps each one's median over the rounds (the best round until session 27). A candidate
many times slower than the fastest (the sm80 fallback where the heuristic refuses the Hopper
kernel) shows its fastest warm-up call's time (of autotune.SLOW_WARMUP_REPS; one call until
session 58) and is not timed among the others ("warmup_only"; before session 28 it was, and
moved their times: bench/RESULTS.md Run AQ). Each
timed call starts with L2 flushed (fxfuse.autotune.time_interleaved; before session 13's change it did
not, which flattered every kernel whose operands fit in L2, bench/RESULTS.md Run AA).
Every epilogue may take the Hopper kernel here (the autotune asks as if its epilogue were cheap).

  python bench/sm90/compare_tiles.py [--shapes 4096x4096x4096,4096x1024x4096] [--chains bias_gelu,silu]
                                     [--rounds 3]                        (GPU machine; MxKxN)
"""
import argparse
import json
import os
import statistics
import sys

import torch

import fxfuse._C  # noqa: F401  (registers the op)
from fxfuse.autotune import measure

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench_out import out_dir  # noqa: E402
from chain_specs import EPILOGUE_CHAINS, chains  # noqa: E402

SHAPES = "4096x4096x4096,4096x1024x4096,16384x1024x4096,4096x4096x1024,4096x14336x4096,512x4096x4096,2048x4096x4096"


def inputs_for(spec, M, K, N):
    ins = [torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
           torch.randn(K, N, device="cuda", dtype=torch.bfloat16) / K ** 0.5]
    if "input 2 bf16 [n]" in spec:
        ins.append(torch.randn(N, device="cuda", dtype=torch.bfloat16))
    if "input 3 bf16 [m,n]" in spec:
        ins.append(torch.randn(M, N, device="cuda", dtype=torch.bfloat16))
    return ins


def short(choice):
    """"sm90_wgmma 64x256x64 s5 t384 pingpong" -> "64x256 pp", "... t256 splitk4" -> "64x128 sk4";
    others as they are."""
    parts = choice.split()
    if parts[0] != "sm90_wgmma":
        return " ".join(parts[:2])
    split = [p for p in parts if p.startswith("splitk")]
    kind = " sk" + split[0][len("splitk"):] if split else " pp" if "pingpong" in parts else " coop"
    return parts[1].rsplit("x", 1)[0] + kind


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--chains", default=",".join(EPILOGUE_CHAINS))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    out = os.path.join(out_dir(), "compare_tiles.json")  # created before the minutes of measuring
    torch.manual_seed(0)
    rows = []
    for shape in a.shapes.split(","):
        M, K, N = (int(v) for v in shape.split("x"))
        for chain in a.chains.split(","):
            spec = chains()[chain]
            ins = inputs_for(spec, M, K, N)
            x, w = ins[0], ins[1]
            errors, mm, rounds, warmup_only = {}, [], [], set()
            for _ in range(a.rounds):
                r = measure(ins, spec, reps=30, beside={"mm": lambda: torch.mm(x, w)})
                rounds.append(r["times_ms"])
                errors.update(r["errors"])
                warmup_only.update(r["warmup_only"])  # far slower: one untimed-among-the-others call
                if "mm" in r["beside_ms"]:  # (a failure is in errors under "beside:mm")
                    mm.append(r["beside_ms"]["mm"])
            kept = {c: statistics.median(t[c] for t in rounds) for c in rounds[0]
                    if all(t.get(c) is not None for t in rounds)}
            for rejected in errors:  # rejected in any round: no time shown
                kept.pop(rejected, None)
            row = {"shape": shape, "chain": chain, "mm": statistics.median(mm) if mm else float("nan"),
                   "times_ms": kept, "errors": errors, "timer": "interleaved, median of rounds",
                   "warmup_only": sorted(warmup_only),  # timed apart since session 28 (autotune.SLOW_FACTOR)
                   "rounds_ms": rounds, "mm_rounds_ms": mm}  # each round's times, to see the spread
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(out, "w") as f:  # after every row: a run cut short keeps what it measured
                json.dump(rows, f, indent=1)
    names = sorted({c for r in rows for c in r["times_ms"]}, key=lambda c: (c != "aten", c))
    print(f"{'shape':>16} {'chain':>16} {'mm':>7} " + " ".join(f"{short(c):>12}" for c in names) + "   best/mm")
    for r in rows:
        cells = " ".join(f"{r['times_ms'][c] / r['mm']:12.3f}" if c in r["times_ms"] else f"{'-':>12}" for c in names)
        fastest = min(r["times_ms"], key=r["times_ms"].get) if r["times_ms"] else "-"
        ratio = r["times_ms"][fastest] / r["mm"] if r["times_ms"] else float("nan")
        print(f"{r['shape']:>16} {r['chain']:>16} {r['mm']:7.4f} {cells}   {ratio:.3f} ({short(fastest)})")
        for c, why in r["errors"].items():
            print(f"{'':>16} rejected {short(c)}: {why}")
    print("cells: time / cuBLAS mm alone (medians over the rounds, timed interleaved); aten = cuBLAS + the epilogue kernel")


if __name__ == "__main__":
    main()
