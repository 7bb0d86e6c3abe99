"""What the planner decides over a grid of GEMM sizes, for the four bench chains: the check a
tile-rule change gets beside stored_cells.py, which sees only the measured shapes. A rule change
reaches far more shapes than were measured; this lists every grid point whose decision changed,
and above all those that moved between the fused kernel and the unfused path (a work-share
threshold crossed by a tile's new share, a refusal lifted), which no stored cell may show.

A point's decision is the op's first candidate (`fxfuse._C.kernel_candidates_for_size`: the tile
the heuristic takes) where `fxfuse._C.kernel_variant` says the op fuses, else "unfused" (cuBLAS +
the epilogue kernel, or eager's ops for SiLU alone).

    PYTHONPATH=.:..:../../python python3 planner_grid.py --dump before.json   (library as built)
    ... rebuild with the change ...
    PYTHONPATH=.:..:../../python python3 planner_grid.py --dump after.json
    PYTHONPATH=.:..:../../python python3 planner_grid.py --diff before.json after.json

    PYTHONPATH=.:..:../../python python3 planner_grid.py --dump before.json --random 4000 [--seed 7]
                                          (random sizes from 1025 rows instead: random_sizes)

Needs no GPU. The default grid: 19 M x 15 N x 8 K (M 128-16384, N 1024-28672, K 768-14336) for each
bench chain, 9,120 points (bench/RESULTS.md Run AM).
"""
import argparse
import json
from collections import Counter

GRID_M = (128, 192, 256, 320, 384, 512, 640, 768, 896, 1024, 1088, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
          16384)
GRID_N = (1024, 1536, 2048, 2432, 3072, 4096, 4864, 5120, 6144, 8192, 11008, 12288, 14336, 16384, 28672)
GRID_K = (768, 1024, 1536, 2048, 3072, 4096, 8192, 14336)


def decision(C, spec, M, N, K):
    """The op's choice for this size: its first candidate where it fuses, else "unfused"."""
    if not C.kernel_variant(spec, M, N, K)[1]:
        return "unfused"
    return C.kernel_candidates_for_size(spec, M, N, K)[0]


def dump(grid=(GRID_M, GRID_N, GRID_K)):
    """{"chain MxKxN": decision} over the grid and the bench chains."""
    import fxfuse._C as C
    from chain_specs import chains
    return {f"{name} {M}x{K}x{N}": decision(C, spec, M, N, K)
            for name, spec in chains().items() for M in grid[0] for N in grid[1] for K in grid[2]}


def random_sizes(count, seed):
    """`count` random sizes (M, N, K) from 1025 rows: M in 1088-6144 (multiples of 64), N in
    1024-16384 (multiples of 128: partial 256-column tiles among them), K of five long values;
    the same draws for a given seed (bench/RESULTS.md Run AV call 6)."""
    import random
    rng = random.Random(seed)
    sizes = []
    for _ in range(count):
        M = rng.choice(range(1088, 6145, 64))
        N = rng.choice(range(1024, 16385, 128))
        K = rng.choice([4096, 6144, 8192, 11008, 14336])
        sizes.append((M, N, K))
    return sizes


def dump_sizes(sizes):
    """{"chain MxKxN": decision} at the given sizes, for the bench chains."""
    import fxfuse._C as C
    from chain_specs import chains
    return {f"{name} {M}x{K}x{N}": decision(C, spec, M, N, K) for name, spec in chains().items() for M, N, K in sizes}


def diff(before, after):
    """Lines: each (before -> after) transition with its count, then every point that moved between
    the kernel and the unfused path."""
    moved = {k: (before[k], after[k]) for k in before if k in after and before[k] != after[k]}
    lines = [f"{n:6} {b} -> {a}" for (b, a), n in Counter(moved.values()).most_common()]
    crossed = sorted(k for k, (b, a) in moved.items() if (b == "unfused") != (a == "unfused"))
    lines.append(f"{len(moved)} of {len(before)} points changed; {len(crossed)} between the kernel and the unfused path:")
    lines += [f"  {k}: {moved[k][0]} -> {moved[k][1]}" for k in crossed]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", help="write the built library's decision at every grid point")
    ap.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="the points whose decision changed")
    ap.add_argument("--random", type=int, metavar="COUNT", help="with --dump: COUNT random sizes from 1025 rows "
                    "(random_sizes) instead of the grid")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if args.dump:
        points = dump_sizes(random_sizes(args.random, args.seed)) if args.random else dump()
        json.dump(points, open(args.dump, "w"), indent=0)
        print(f"{len(points)} points -> {args.dump}")
    if args.diff:
        before, after = (json.load(open(p)) for p in args.diff)
        print("\n".join(diff(before, after)))


if __name__ == "__main__":
    main()
