"""Summary of bench/sm90/knob_ab.sh: per shape and chain, each variant's fxfuse / cuBLAS mm (bench_chains.py
in one process per variant and round) as the median over the rounds, and its ratio to the first variant's.

    python3 bench/sm90/knob_ab_summary.py LOG_DIR BASE [VARIANT ...]"""
import collections
import glob
import json
import os
import statistics
import sys


def main(log_dir, variants):
    cells = {}  # (shape, chain) -> variant -> [fx/mm per round]
    paths = {v: collections.Counter() for v in variants}  # what the op ran (bench/op_path.py), per variant
    for v in variants:
        for path in sorted(glob.glob(os.path.join(log_dir, f"ab_{v}[0-9]", "bench_chains.json"))):
            for r in json.load(open(path)):
                paths[v][r.get("path", "?")] += 1
                if r.get("fxfuse") and r.get("mm"):
                    cells.setdefault((r["shape"], r["chain"]), {}).setdefault(v, []).append(r["fxfuse"] / r["mm"])
    base = variants[0]
    print(f"{'shape':>16} {'chain':>16} " + " ".join(f"{v:>9}" for v in variants) + "   "
          + " ".join(f"{v + '/' + base:>14}" for v in variants[1:]))
    for (shape, chain), by in sorted(cells.items()):
        med = {v: statistics.median(by[v]) for v in variants if by.get(v)}
        b = med.get(base)
        print(f"{shape:>16} {chain:>16} " + " ".join(f"{med[v]:9.3f}" if v in med else f"{'-':>9}" for v in variants)
              + "   " + " ".join(f"{med[v] / b:14.3f}" if v in med and b else f"{'-':>14}" for v in variants[1:]))
    spread = {v: max((max(by[v]) - min(by[v]) for by in cells.values() if by.get(v)), default=0.0) for v in variants}
    print("cells: fxfuse / cuBLAS mm in the same process, median over the rounds; the widest spread between "
          "rounds of one cell: " + ", ".join(f"{v} {d:.3f}" for v, d in spread.items()))
    # a knob that did not apply shows here (e.g. no "kernel (overlapped epilogue)" under the overlap knob)
    print("paths (rows per path): " + "; ".join(f"{v} {dict(c)}" for v, c in paths.items()))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
