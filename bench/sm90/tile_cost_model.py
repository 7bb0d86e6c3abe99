"""A single cost model of the Hopper tiles, fitted to compare_tiles' measurements: a prototype for
replacing sm90::chooseConfig's list of measured special cases (slot area, then the 128x256 /
64x256 / 64x128 exceptions, equal rounds, unaligned N) with one formula (docs/SESSIONS.md, "the
single tile cost model"). Prints how often the model's tile and the library's heuristic are the
fastest measured tile or within 2 %, in sample and with the shapes in eight folds, each left out
of its fit.

Model, per tile t (128x256 cooperative, 64x256 / 128x128 / 64x128 ping-pong, 128x128
cooperative): time = steps_t x (K x a_t x rows_t + b_t), where steps_t counts the slowest CTA's
tiles (a ping-pong CTA's in pairs, a last one alone costing single_t; a last round's tile weighted
alpha_t + (1 - alpha_t) x the share of CTAs that take it: effective_rounds) and rows_t = 1 + p_t
where the rows of B and the output are 16-byte but not 32-byte aligned (N % 16 == 8), 1 + q_t
where they are 32-byte but not whole 128-byte lines. Only the ratios between tiles of one cell are
fitted (each cell's own level is free): the model orders tiles, it does not predict the unfused
path.

    PYTHONPATH=.:..:../../python python3 tile_cost_model.py [files...] [--test held-out files...]
                                                             [--test-run AC]

Out of sample (session 23: fitted to the default runs, then choosing the tiles of Run AL's 29 new
shapes with --test) it did not beat the heuristic, 82 of 116 cells against 86 (bench/sm90/NOTES.md
session 23): kept as the tool that judges a next form, not as the planner.

Needs no GPU: the times come from the files (default: the runs after the box skip, Run AH call 5
on, where the kernel's edge-tile cost is the present one).
"""
import argparse
import glob
import json
import math
import os

import numpy as np
from scipy.optimize import least_squares

from compare_tiles import short
from tile_rule_check import BARE_MM, heuristic_tile

SMS = 132
TILES = {"128x256 coop": (128, 256), "64x256 pp": (64, 256), "128x128 pp": (128, 128),
         "64x128 pp": (64, 128), "128x128 coop": (128, 128)}
NAMES = list(TILES)
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = ["run_ah_call5", "run_ah_call6", "run_ah_call7", "run_ah_call8", "run_ai_call2", "run_ai_call3_tree",
           "run_aj_", "run_ak_"]


def default_files():
    files = sorted(glob.glob(os.path.join(HERE, "data", "run_a*_compare_tiles.json")))
    return [f for f in files if any(os.path.basename(f).startswith(p) for p in DEFAULT)]


def load(files, min_rows):
    """Cells: (file, shape, chain) -> {tile: ms}, the whole-tile Hopper candidates only."""
    cells = []
    for path in files:
        for r in json.load(open(path)):
            M, K, N = (int(v) for v in r["shape"].split("x"))
            if M < min_rows:
                continue
            t = {short(c): v for c, v in r["times_ms"].items() if v}
            t = {c: v for c, v in t.items() if c in TILES}
            if len(t) >= 3:
                cells.append({"M": M, "K": K, "N": N, "chain": r["chain"], "times": t, "file": path})
    return cells


NP = 6  # parameters per tile


def tile_steps(n, tile, single):
    """The time of one CTA's n tiles in units of one tile's time: a ping-pong CTA runs its tiles in
    pairs, the two consumers alternating; a last tile alone takes `single` (1: as fast as in a
    pair, 2: its partner's half of the SM idles). Cooperative tiles: n."""
    return 2 * (n // 2) + single * (n % 2) if tile.endswith(" pp") else n


def effective_rounds(M, N, tile, alpha, single):
    """The slowest CTA's tiles in tile times; where only some CTAs take the last tile, its cost is
    weighted alpha + (1 - alpha) x the share of CTAs that take it (fewer busy SMs: more memory
    bandwidth per tile)."""
    bm, bn = TILES[tile]
    tiles = math.ceil(M / bm) * math.ceil(N / bn)
    full, last = divmod(tiles, SMS)
    base = tile_steps(full, tile, single)
    if not last:
        return base
    return base + (alpha + (1 - alpha) * last / SMS) * (tile_steps(full + 1, tile, single) - base)


def predict(params, M, K, N, tile):
    i = NAMES.index(tile)
    a, b, p, q, alpha, single = params[NP * i:NP * i + NP]
    rows = 1 + (p if N % 16 else q if N % 64 else 0)
    return effective_rounds(M, N, tile, alpha, single) * (K * a * rows + b)


def residuals(params, cells):
    out = []
    for c in cells:
        tiles = list(c["times"])
        pred = np.log([max(predict(params, c["M"], c["K"], c["N"], t), 1e-9) for t in tiles])
        meas = np.log([c["times"][t] for t in tiles])
        d = pred - meas
        out.extend(d - d.mean())  # each cell's own level is free
    return np.array(out)


def fit(cells, start=None):
    x0 = []
    for t in NAMES:
        bm, bn = TILES[t]
        x0 += [bm * bn / 32768 * 3e-6, 1e-3, 0.1, 0.05, 0.7, 1.5]
    lo = [1e-9, 0.0, 0.0, 0.0, 0.0, 1.0] * len(NAMES)  # unaligned rows never faster
    hi = [1.0, 1.0, 2.0, 2.0, 1.0, 2.0] * len(NAMES)
    if start is not None:
        x0 = list(start)
    return least_squares(residuals, x0, args=(cells,), bounds=(lo, hi)).x


def within(choice, times, tol=1.02):
    return choice in times and times[choice] <= min(times.values()) * tol


def model_choice(params, c):
    return min(c["times"], key=lambda t: predict(params, c["M"], c["K"], c["N"], t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--min-rows", type=int, default=257, help="cells from this many rows (default 257)")
    ap.add_argument("--no-loo", action="store_true", help="skip the cross-validation (eight more fits)")
    ap.add_argument("--test", nargs="+", default=[],
                    help="measurements kept out of the fit: the model fitted to the others chooses their tiles "
                         "(a run measured after the fit: the honest out-of-sample count)")
    ap.add_argument("--test-run", metavar="RUN",
                    help="also hold out the compare_tiles tables of one run in bench/RESULTS.md (e.g. AC: its "
                         "257-1024-row shapes, kept only as tables; stored_cells.results_cells)")
    ap.add_argument("--disagree", action="store_true",
                    help="list the shapes of a grid (1024-16384 rows, K 1024-14336, N 512-14336) where the "
                         "model's tile and the heuristic's differ: what to measure next")
    args = ap.parse_args()
    os.environ["FXFUSE_SM90_ALL_EPILOGUES"] = "1"  # the heuristic's tile, its refusals lifted (read once)
    test = load(args.test, args.min_rows)
    if args.test_run:
        from stored_cells import has_json, results_cells
        if has_json(args.test_run):
            ap.error(f"Run {args.test_run}'s compare_tiles files are in data/: hold them out with --test")
        test += [c for c in results_cells(args.test_run) if c["M"] >= args.min_rows and
                 len({t: v for t, v in c["times"].items() if t in TILES}) >= 3]
        for c in test:
            c["times"] = {t: v for t, v in c["times"].items() if t in TILES}
    cells = load([f for f in (args.files or default_files()) if os.path.abspath(f) not in
                  {os.path.abspath(t) for t in args.test}], args.min_rows)
    spec = open(BARE_MM).read()
    params = fit(cells)
    for i, t in enumerate(NAMES):
        a, b, p, q, alpha, single = params[NP * i:NP * i + NP]
        alone = f", a tile alone {single:.2f}" if t.endswith(" pp") else ""
        print(f"{t:>13}: {a * 1e6:7.3f} ns per tile and unit of K, fixed {b * 1e3:6.2f} us per tile, "
              f"16-byte rows {100 * p:+5.1f} %, 32/64-byte rows {100 * q:+5.1f} %, last round {alpha:.2f} + share{alone}")
    heur_tiles = [heuristic_tile(spec, c["M"], c["K"], c["N"]) for c in cells]
    heur = sum(within(t, c["times"]) for t, c in zip(heur_tiles, cells))
    insample = sum(within(model_choice(params, c), c["times"]) for c in cells)
    # cross-validation by shape: eight folds, each fitted without its shapes (from the full fit's
    # parameters), then choosing their tiles
    shapes = sorted({(c["M"], c["K"], c["N"]) for c in cells})
    loo = 0
    for fold in [] if args.no_loo else range(min(8, len(shapes))):
        out = set(shapes[fold::8])
        p = fit([c for c in cells if (c["M"], c["K"], c["N"]) not in out], params)
        loo += sum(within(model_choice(p, c), c["times"]) for c in cells if (c["M"], c["K"], c["N"]) in out)
    n = len(cells)

    def slowdown(choices, among=cells):
        r = [c["times"][t] / min(c["times"].values()) for t, c in zip(choices, among) if t in c["times"]]
        return f"mean {100 * (math.exp(sum(map(math.log, r)) / len(r)) - 1):.1f} %, worst {100 * (max(r) - 1):.1f} % behind the best"
    print(f"{n} cells, {len(shapes)} shapes, from {args.min_rows} rows: the fastest Hopper tile or within 2 %:")
    print(f"  the heuristic (sm90::chooseConfig)   {heur} of {n}   ({slowdown(heur_tiles)})")
    print(f"  the model, in sample                 {insample} of {n}   "
          f"({slowdown([model_choice(params, c) for c in cells])})")
    if not args.no_loo:
        print(f"  the model, shapes left out (8 folds) {loo} of {n}")
    if test:
        th = [heuristic_tile(spec, c["M"], c["K"], c["N"]) for c in test]
        tm = [model_choice(params, c) for c in test]
        print(f"{len(test)} held-out cells ({len({(c['M'], c['K'], c['N']) for c in test})} shapes, not in the fit): "
              f"the fastest Hopper tile or within 2 %:")
        print(f"  the heuristic   {sum(within(t, c['times']) for t, c in zip(th, test))} of {len(test)}   "
              f"({slowdown(th, test)})")
        print(f"  the model       {sum(within(t, c['times']) for t, c in zip(tm, test))} of {len(test)}   "
              f"({slowdown(tm, test)})")
    if args.disagree:
        grid = [(M, K, N) for M in (1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
                for K in (1024, 2048, 4096, 8192, 14336) for N in (512, 768, 1024, 1536, 2048, 2560, 3072, 4096,
                                                                    5120, 6144, 8192, 11008, 14336)]
        print("grid shapes where the model and the heuristic choose differently (model's predicted gain):")
        for M, K, N in grid:
            h = heuristic_tile(spec, M, K, N)
            if h not in TILES:
                continue
            m = min(TILES, key=lambda t: predict(params, M, K, N, t))
            if m != h:
                gain = predict(params, M, K, N, h) / predict(params, M, K, N, m) - 1
                print(f"  {M}x{K}x{N:<6} heuristic {h:>13}  model {m:>13}  {100 * gain:4.1f} %")
    worst = sorted(cells, key=lambda c: -c["times"][model_choice(params, c)] / min(c["times"].values()))[:10]
    print("the model's worst cells (in sample): shape chain model tile / best")
    for c in worst:
        m = model_choice(params, c)
        best = min(c["times"], key=c["times"].get)
        print(f"  {c['M']}x{c['K']}x{c['N']:<6} {c['chain']:>16} {m:>13} / {best:<13} "
              f"{c['times'][m] / c['times'][best]:.3f}  heuristic {heuristic_tile(spec, c['M'], c['K'], c['N'])}")


if __name__ == "__main__":
    main()
