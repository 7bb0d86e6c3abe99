"""Summary of bench/sm90/evict_first_ab.sh (variants: none, the residual's evict-first hint, the stores',
both, the residual's L2 prefetch at the epilogue, the prefetch with the residual's hint): per shape and chain, each variant's fxfuse / cuBLAS mm
(bench_chains.py in one process per variant and round) as the median over the rounds, and its ratio
to the base variant's.

    python3 bench/sm90/evict_first_summary.py LOG_DIR"""
import glob
import json
import os
import statistics
import sys

VARIANTS = ("base", "resid", "store", "both", "pf", "pfresid")


def main(log_dir):
    cells = {}  # (shape, chain) -> variant -> [fx/mm per round]
    for v in VARIANTS:
        for path in sorted(glob.glob(os.path.join(log_dir, f"ab_{v}[0-9]", "bench_chains.json"))):
            for r in json.load(open(path)):
                if r.get("fxfuse") and r.get("mm"):
                    cells.setdefault((r["shape"], r["chain"]), {}).setdefault(v, []).append(r["fxfuse"] / r["mm"])
    print(f"{'shape':>16} {'chain':>16} " + " ".join(f"{v:>7}" for v in VARIANTS) + "   "
          + " ".join(f"{v + '/base':>11}" for v in VARIANTS[1:]))
    for (shape, chain), by in sorted(cells.items()):
        med = {v: statistics.median(by[v]) for v in VARIANTS if by.get(v)}
        base = med.get("base")
        print(f"{shape:>16} {chain:>16} " + " ".join(f"{med[v]:7.3f}" if v in med else f"{'-':>7}" for v in VARIANTS)
              + "   " + " ".join(f"{med[v] / base:11.3f}" if v in med and base else f"{'-':>11}" for v in VARIANTS[1:]))
    print("cells: fxfuse / cuBLAS mm in the same process, median over the rounds")


if __name__ == "__main__":
    main(sys.argv[1])
