"""How far the planner's choice (its Hopper tile, or the unfused path where it refuses the kernel)
sits from the fastest measured candidate, over stored compare_tiles cells: the check of a refusal
change, which stored_cells.py --diff (tile changes only) does not see. Run it once per library (the
one on PYTHONPATH decides) and compare the summaries.

    PYTHONPATH=.:..:../../python python3 stored_cells.py --dump cells.json
    PYTHONPATH=.:..:<library>/python python3 choice_vs_best.py cells.json [--source SUBSTRING] [--each]

A cell counts where the unfused path ("aten") was timed; SiLU alone is left out (the planner weighs
it against eager's SiLU, which compare_tiles does not time). Per band of rows and K: the cells, the
choice's mean distance from the fastest candidate (time / fastest - 1) and the cells more than 2 %
behind. --source keeps the cells of files whose name contains SUBSTRING (e.g. run_av_call2: the
out-of-sample cells of a rule); --each prints each cell. Needs no GPU.
"""
import argparse
import collections
import json

import fxfuse._C as C
from stored_cells import hopper_times
from tile_rule_check import chain_spec, heuristic_tile

CHAINS = ("bias_gelu", "bias_relu_cast", "bias_gelu_resid")


def choice(chain, M, K, N):
    """The planner's choice as a compare_tiles label: its Hopper tile, or "aten" (the unfused path)."""
    spec = chain_spec(chain)
    variant, fast = C.kernel_variant(spec, M, N, K)
    return heuristic_tile(spec, M, K, N) if variant == "sm90_wgmma" and fast else "aten"


def band(c):
    rows = "<=256" if c["M"] <= 256 else ("257-1024" if c["M"] <= 1024 else "1025+")
    k = "K<=3072" if c["K"] <= 3072 else ("K=4096" if c["K"] <= 4096 else "K>4096")
    return rows, k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cells")
    ap.add_argument("--source", default="")
    ap.add_argument("--each", action="store_true")
    args = ap.parse_args()
    bands = collections.defaultdict(lambda: [0, 0.0, 0])
    for c in json.load(open(args.cells)):
        t = c["times"]
        if c["chain"] not in CHAINS or "aten" not in t or args.source not in c["source"]:
            continue
        picked = choice(c["chain"], c["M"], c["K"], c["N"])
        if picked not in t:
            continue  # a tile this cell did not time
        best = min([t["aten"], *hopper_times(t).values()])
        behind = t[picked] / best - 1
        b = bands[band(c)]
        b[0] += 1
        b[1] += behind
        b[2] += behind > 0.02
        if args.each:
            print(f"  {c['M']}x{c['K']}x{c['N']:<6} {c['chain']:>16} {picked:>13} {100 * behind:5.1f} % behind")
    total = [sum(b[i] for b in bands.values()) for i in range(3)]
    for key, b in sorted(bands.items()):
        print(f"{key[0]:>9} {key[1]:>8}: {b[0]:4d} cells, {100 * b[1] / b[0]:5.2f} % behind the fastest on average, "
              f"{b[2]} over 2 %")
    if total[0]:
        print(f"      all: {total[0]:4d} cells, {100 * total[1] / total[0]:5.2f} % behind on average, {total[2]} over 2 %")


if __name__ == "__main__":
    main()
