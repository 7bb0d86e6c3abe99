"""Every stored compare_tiles cell, and what the heuristic's tile choice makes of them: the check a
tile-rule change gets before it goes to the GPU (which cells change tile, and whether the new tile
was measured faster).

A cell is one shape and bench chain of one run, with each Hopper tile's time (and the unfused
path's, "aten", where the file has it). The cells come from the JSON files under data/ and from the
compare_tiles tables printed in bench/RESULTS.md (runs before the JSON files were kept, e.g. Run
AC's 257-1024-row shapes); a table's times are ratios to cuBLAS mm alone, which orders tiles as
well as the times do.

    PYTHONPATH=.:..:../../python python3 stored_cells.py --dump before.json   (library as built)
    ... rebuild with the change ...
    PYTHONPATH=.:..:../../python python3 stored_cells.py --dump after.json
    PYTHONPATH=.:..:../../python python3 stored_cells.py --diff before.json after.json
    PYTHONPATH=.:..:../../python python3 stored_cells.py --misses after.json   (the wrong calls left)
    PYTHONPATH=.:..:../../python python3 stored_cells.py --ratio after.json "64x256 pp" "128x128 pp" \
        --rows 1025 1000000 --k-at-most 2048      (where the library takes one tile: another's time)

Needs no GPU: the tile is asked of the built library (tile_rule_check.heuristic_tile), with the
cell's bench chain's spec (chain_specs.py; a bare mm for other chains).

Each cell says how it was timed ("timer"): "interleaved" (every candidate's calls interleaved,
medians of rounds: compare_tiles from session 27, bench/RESULTS.md Run AP call 4 on) or "block"
(each candidate in a block of its own calls, best of rounds: every earlier run, whose figures the
block timer moved by up to ~10 %). `--timer interleaved` keeps only the former for --diff,
--misses, --ratio and --vs-aten.
"""
import argparse
import glob
import json
import os
import re
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "RESULTS.md")
# Run AP's files timed interleaved before compare_tiles wrote its "timer" field
INTERLEAVED_BEFORE_THE_FIELD = ("run_ap_call4_", "run_ap_call5_", "run_ap_call6_", "run_ap_call9_")
# compare_tiles' table columns after "mm aten sm80_mma", in the order it prints them
TABLE_TILES = ("128x128 coop", "128x128 pp", "128x256 coop", "64x128 pp", "64x256 pp")
TABLE_ROW = re.compile(r"\s+(\d+)x(\d+)x(\d+)\s+(\w+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)"
                       r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+[\d.]+ \(")


def json_cells(files=None):
    """The cells of the stored compare_tiles JSON files (default: all of data/)."""
    from compare_tiles import short
    cells = []
    for path in files or sorted(glob.glob(os.path.join(HERE, "data", "run_a*_compare_tiles.json"))):
        for r in json.load(open(path)):
            M, K, N = (int(v) for v in r["shape"].split("x"))
            times = {short(c): v for c, v in r["times_ms"].items() if v}
            name = os.path.basename(path)
            interleaved = r.get("timer", "").startswith("interleaved") or name.startswith(INTERLEAVED_BEFORE_THE_FIELD)
            cells.append({"M": M, "K": K, "N": N, "chain": r["chain"], "times": times, "source": name,
                          "timer": "interleaved" if interleaved else "block"})
    return cells


def has_json(run):
    """Whether data/ keeps run `run`'s compare_tiles files (then its tables repeat them)."""
    return bool(glob.glob(os.path.join(HERE, "data", f"run_{run.lower()}_*compare_tiles.json")))


def results_cells(run=None):
    """The cells of the compare_tiles tables in bench/RESULTS.md (the five-tile layout only) of the
    runs whose JSON files were not kept (has_json), or those under one run's heading (run="AC": from
    "### Run AC" to the next "### Run")."""
    cells, current = [], None
    for line in open(RESULTS):
        heading = re.match(r"### Run (\w+)", line)
        if heading:
            current = heading.group(1)
        if (run is not None and current != run) or (run is None and (current is None or has_json(current))):
            continue
        m = TABLE_ROW.match(line)
        if m:
            times = {t: float(v) for t, v in zip(TABLE_TILES, m.group(8, 9, 10, 11, 12))}
            times["aten"] = float(m.group(6))
            cells.append({"M": int(m.group(1)), "K": int(m.group(2)), "N": int(m.group(3)), "chain": m.group(4),
                          "times": times, "source": f"RESULTS.md Run {current}", "timer": "block"})
    return cells


def keyed(cells):
    """Each cell under (M, K, N, chain, source, n), n counting repeats within one source."""
    seen, out = Counter(), {}
    for c in cells:
        k = (c["M"], c["K"], c["N"], c["chain"], c["source"])
        seen[k] += 1
        out[k + (seen[k],)] = c
    return out


def within(tile, times, tol=1.02):
    return tile in times and times[tile] <= hopper_best(times) * tol


def hopper_times(times):
    """The cell's Hopper tiles' times (not the unfused path's nor the sm80 kernel's)."""
    return {t: v for t, v in times.items() if t != "aten" and not t.startswith("sm80")}


def hopper_best(times):
    return min(hopper_times(times).values())


def ratio_table(cells, tile, other, rows, k_at_most):
    """Per shape where the library takes `tile` (rows[0] <= M <= rows[1], K <= k_at_most): `tile`'s
    time over `other`'s and `other`'s over the fastest Hopper tile, ranges over the shape's cells."""
    shapes = {}
    for c in cells:
        t = c["times"]
        if c["tile"] == tile and other in t and rows[0] <= c["M"] <= rows[1] and c["K"] <= k_at_most:
            shapes.setdefault((c["K"], c["M"], c["N"]), []).append((t[tile] / t[other], t[other] / hopper_best(t)))
    span = lambda v: f"{min(v):.3f}-{max(v):.3f}"  # noqa: E731
    for (K, M, N), r in sorted(shapes.items()):
        print(f"  K = {K:<6} {M} x {N:<6} {tile} / {other} {span([a for a, _ in r])}, "
              f"{other} / best {span([b for _, b in r])} ({len(r)} cells, {sum(a > 1 for a, _ in r)} over 1)")
    r = [x for v in shapes.values() for x in v]
    print(f"{len(shapes)} shapes, {len(r)} cells: {tile} slower than {other} in {sum(a > 1 for a, _ in r)}, "
          f"{other} the fastest or within 0.5 % in {sum(b <= 1.005 for _, b in r)}")


def misses(cells, tol=1.02):
    """Per shape (and source), the cells where the dump's tile is more than `tol` behind the fastest
    Hopper tile: the heuristic's remaining wrong calls (tiles shown with the refusals lifted, so a
    refused shape appears with the tile it would take)."""
    shapes = {}
    for c in cells:
        t = c["times"]
        if c["tile"] in t and t[c["tile"]] > hopper_best(t) * tol:
            hopper = hopper_times(t)
            best = min(hopper, key=hopper.get)
            shapes.setdefault((c["M"], c["K"], c["N"], c["tile"], c["source"]), []).append((t[c["tile"]] / t[best], best))
    for (M, K, N, tile, source), r in sorted(shapes.items()):
        print(f"  {M}x{K}x{N:<6} {tile:>13} {min(a for a, _ in r):.3f}-{max(a for a, _ in r):.3f} behind "
              f"{', '.join(sorted({b for _, b in r}))} ({len(r)} cells, {source[:34]})")
    print(f"{sum(len(r) for r in shapes.values())} of {len(cells)} cells more than {100 * (tol - 1):.0f} % behind "
          f"the fastest Hopper tile, at {len(shapes)} shapes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", help="write every stored cell with the built library's tile for it")
    ap.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="the cells whose tile changed")
    ap.add_argument("--ratio", nargs=3, metavar=("DUMP", "TILE", "OTHER"),
                    help="per shape where the dump's tile is TILE: TILE's time over OTHER's")
    ap.add_argument("--rows", nargs=2, type=int, default=(0, 1 << 40), metavar=("LEAST", "MOST"))
    ap.add_argument("--k-at-most", type=int, default=1 << 40)
    ap.add_argument("--vs-aten", nargs=2, metavar=("DUMP", "SHAPES"),
                    help="at these shapes (MxKxN,...) the dump's tile over the unfused path, per cell")
    ap.add_argument("--misses", metavar="DUMP", help="the cells where the dump's tile is over 2 % behind the fastest")
    ap.add_argument("--timer", choices=("all", "interleaved", "block"), default="all",
                    help="only the cells timed this way (dumps before session 27 have no timer: block)")
    args = ap.parse_args()

    def load(path):  # a dump's cells, those of the --timer asked for
        return [c for c in json.load(open(path)) if args.timer in ("all", c.get("timer", "block"))]
    if args.dump:
        os.environ["FXFUSE_SM90_ALL_EPILOGUES"] = "1"  # the tile, refusals lifted (read once)
        from tile_rule_check import chain_spec, heuristic_tile
        cells = json_cells() + results_cells()
        for c in cells:
            c["tile"] = heuristic_tile(chain_spec(c["chain"]), c["M"], c["K"], c["N"])
        json.dump(cells, open(args.dump, "w"))
        print(f"{len(cells)} cells -> {args.dump}")
    if args.diff:
        before, after = (keyed(load(p)) for p in args.diff)
        changed = [(k, c, after[k]) for k, c in before.items() if k in after and after[k]["tile"] != c["tile"]]
        for k, b, a in changed:
            best = hopper_best(b["times"])
            rel = lambda t: b["times"][t] / best if t in b["times"] else float("nan")  # noqa: E731
            print(f"  {b['M']}x{b['K']}x{b['N']:<6} {b['chain']:>16} {b['source'][:34]:34} "
                  f"{str(b['tile']):>13} {rel(b['tile']):.3f} -> {str(a['tile']):>13} {rel(a['tile']):.3f}")
        ok_b = sum(within(b["tile"], b["times"]) for _, b, _ in changed)
        ok_a = sum(within(a["tile"], b["times"]) for _, b, a in changed)
        print(f"{len(changed)} of {len(before)} cells changed tile; the fastest Hopper tile or within 2 %: "
              f"{ok_b} before, {ok_a} after")
    if args.vs_aten:
        shapes = {tuple(int(v) for v in s.split("x")) for s in args.vs_aten[1].split(",")}
        for c in load(args.vs_aten[0]):
            t = c["times"]
            if (c["M"], c["K"], c["N"]) in shapes and "aten" in t and c["tile"] in t:
                print(f"  {c['M']}x{c['K']}x{c['N']:<6} {c['chain']:>16} {c['source'][:34]:34} "
                      f"{c['tile']:>13} / aten {t[c['tile']] / t['aten']:.3f}")
    if args.misses:
        misses(load(args.misses))
    if args.ratio:
        ratio_table(load(args.ratio[0]), args.ratio[1], args.ratio[2], args.rows, args.k_at_most)


if __name__ == "__main__":
    main()
