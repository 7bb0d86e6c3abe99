"""How far the rounds of one measurement spread: per row of a compare_tiles or bench_chains JSON,
each variant's first round over the median of its rounds, and its largest round over its least.

The H200's clock moves between rounds (bench/RESULTS.md Run AO: cuBLAS mm alone up to 18 % faster
in a first round after the GPU idled), so a figure kept from one round, or a variant always
timed first, can be off by more than the effects the rules decide on.

  python bench/round_spread.py FILE.json [FILE.json ...]   (compare_tiles.json: rounds_ms and
                                                            mm_rounds_ms; bench_chains.json: samples)
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "sm90"))
from compare_tiles import short  # noqa: E402  (the tile names of compare_tiles' table)


def rounds_of(row: dict) -> dict:
    """Each variant's times over the rounds: {name: [ms, ...]} (empty for files without them)."""
    if "samples" in row:  # bench_chains
        return row["samples"]
    per = {"mm": row.get("mm_rounds_ms", [])}
    for r in row.get("rounds_ms", []):  # compare_tiles: one {candidate: ms or None} per round
        for name, t in r.items():
            if t is not None:
                per.setdefault(name, []).append(t)
    return {n: v for n, v in per.items() if v}


def main(paths: list[str]) -> None:
    print(f"{'shape':>16} {'chain':>16}  variant: first/median max/min")
    for path in paths:
        for row in json.load(open(path)):
            per = rounds_of(row)
            if not per:
                continue
            cells = [f"{short(n)}: {v[0] / statistics.median(v):.3f} {max(v) / min(v):.3f}" for n, v in per.items()]
            print(f"{row['shape']:>16} {row['chain']:>16}  " + "  ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
