"""The heuristic's Hopper tile against compare_tiles' measurement: for every cell of one or more
compare_tiles.json files, the tile sm90::chooseConfig takes for that size (asked of the built
library, fxfuse._C.kernel_candidates_for_size, so this checks the code, not a copy of the rule),
its time / cuBLAS mm alone, the fastest measured Hopper tile and the ratio between the two; where
the heuristic refuses the Hopper kernel (a bare mm: only its shape refusals), the unfused path
("aten") against the fastest Hopper tile. With
--before, also the rule before bd3b40d (64x256 ping-pong from 257 rows), to show what a rule
change gains or loses cell by cell.

    python3 bench/sm90/tile_rule_check.py [--before] compare_tiles.json [...]

Needs no GPU: the times come from the files.
"""
import argparse
import json
import os

import fxfuse._C as C
from compare_tiles import short  # its column labels

BARE_MM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "codegen", "specs",
                       "bare_bf16_mm.spec")


def heuristic_tile(spec, M, K, N):
    """The Hopper tile the heuristic takes for a plain bf16 mm of this size, or None."""
    first = C.kernel_candidates_for_size(spec, M, N, K)[0]
    return short(first) if first.startswith("sm90_wgmma") else None


def tile_before(M, N):
    """The rule before bd3b40d: 64x128 ping-pong up to 256 rows or N <= 128, else 64x256."""
    return "64x128 pp" if M <= 256 or N <= 128 else "64x256 pp"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--before", action="store_true")
    a = ap.parse_args()
    spec = open(BARE_MM).read()
    within = total = refused = refused_right = 0
    for path in a.files:
        for r in json.load(open(path)):
            M, K, N = (int(v) for v in r["shape"].split("x"))
            t = {short(c): v for c, v in r["times_ms"].items() if v}
            hopper = {c: v for c, v in t.items() if c.endswith((" pp", " coop")) or " sk" in c}
            rule = heuristic_tile(spec, M, K, N)
            if rule is None and hopper and "aten" in t:
                # the heuristic refuses the Hopper kernel here: the unfused path against the best tile
                best = min(hopper, key=hopper.get)
                ratio = t["aten"] / hopper[best]
                refused += 1
                refused_right += ratio <= 1.02
                print(f"{r['shape']:>16} {r['chain']:>16}  refused: aten {t['aten'] / r['mm']:.3f}  "
                      f"best {best:>12} {hopper[best] / r['mm']:.3f}  aten/best {ratio:.3f}")
                continue
            if not hopper or rule not in t:
                print(f"{r['shape']:>16} {r['chain']:>16}  heuristic tile {rule} not measured")
                continue
            best = min(hopper, key=hopper.get)
            ratio = t[rule] / hopper[best]
            total += 1
            within += ratio <= 1.02
            line = (f"{r['shape']:>16} {r['chain']:>16}  rule {rule:>12} {t[rule] / r['mm']:.3f}  "
                    f"best {best:>12} {hopper[best] / r['mm']:.3f}  rule/best {ratio:.3f}")
            if a.before:
                line += f"  before {t[tile_before(M, N)] / r['mm']:.3f}"
            if "aten" in t:
                line += f"  aten {t['aten'] / r['mm']:.3f}"
            print(line)
    print(f"the heuristic's tile is the fastest Hopper tile or within 2 % in {within} of {total} cells")
    if refused:
        print(f"where it refuses the Hopper kernel, the unfused path is faster than the best Hopper tile or "
              f"within 2 % in {refused_right} of {refused} cells")


if __name__ == "__main__":
    main()
