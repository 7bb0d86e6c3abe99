"""The heuristic's Hopper tile against compare_tiles' measurement: for every cell of one or more
compare_tiles.json files, the tile sm90::chooseConfig takes for that size (asked of the built
library, fxfuse._C.kernel_candidates_for_size, so this checks the code, not a copy of the rule),
its time / cuBLAS mm alone, the fastest measured Hopper tile and the ratio between the two; where
the heuristic refuses the Hopper kernel (asked with the cell's bench chain's spec, chain_specs.py,
so its epilogue refusals count too; a bare mm for other chains), the unfused path ("aten") against
the fastest Hopper tile. SiLU alone is refused against eager's own SiLU kernel, cheaper than the
op's epilogue kernel (cuBLAS + that kernel ran 0.92-0.96x eager with SiLU, bench/RESULTS.md Run
AQ call 4), which compare_tiles does not time: those cells are listed but not counted (the chain's
end-to-end bench, bench_chains.py --all-epilogues, measures them). With
--before, also the rule before bd3b40d (64x256 ping-pong from 257 rows), to show what a rule
change gains or loses cell by cell. With --share, instead, one line per shape from 257 rows: the
heuristic's tile for an epilogue without a residual (the binding takes no spec), its work share
and the shares the kernel is refused at or under (fxfuse._C.hopper_work_share, codegen/
config_table.cpp's work-share refusal), and over the file's chains the heuristic tile's and the
best Hopper tile's time / cuBLAS + the epilogue kernel: the figures behind that rule's comment
(bench/RESULTS.md Run AH).

    python3 bench/sm90/tile_rule_check.py [--before | --share] compare_tiles.json [...]

Needs no GPU: the times come from the files.
"""
import argparse
import json
import os

import fxfuse._C as C
from compare_tiles import short  # its column labels

BARE_MM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "codegen", "specs",
                       "bare_bf16_mm.spec")


def chain_spec(chain, cache={}):  # noqa: B006 (the specs, read once)
    """The spec the planner sees for a bench chain (chain_specs.py: the tile choice weighs a residual
    read), a bare mm for any other chain name."""
    if not cache:
        from chain_specs import chains
        cache.update(chains())
        cache[None] = open(BARE_MM).read()
    return cache.get(chain, cache[None])


def heuristic_tile(spec, M, K, N):
    """The Hopper tile the heuristic takes for a plain bf16 mm of this size, or None."""
    first = C.kernel_candidates_for_size(spec, M, N, K)[0]
    return short(first) if first.startswith("sm90_wgmma") else None


def tile_before(M, N):
    """The rule before bd3b40d: 64x128 ping-pong up to 256 rows or N <= 128, else 64x256."""
    return "64x128 pp" if M <= 256 or N <= 128 else "64x256 pp"


def share_table(files):
    """Per shape from 257 rows: the heuristic's tile (the Hopper kernel's, refusals lifted), its
    work share, the refusal thresholds, and the ranges over chains of that tile's and the best
    Hopper tile's time / the unfused path's."""
    os.environ["FXFUSE_SM90_ALL_EPILOGUES"] = "1"  # read once: before the first planner call
    spec = open(BARE_MM).read()
    cells = {}
    for path in files:
        for r in json.load(open(path)):
            M, K, N = (int(v) for v in r["shape"].split("x"))
            t = {short(c): v for c, v in r["times_ms"].items() if v}
            if M <= 256 or "aten" not in t:
                continue
            hopper = {c: v for c, v in t.items() if c.endswith((" pp", " coop")) or " sk" in c}
            rule = heuristic_tile(spec, M, K, N)
            c = cells.setdefault((M, K, N), {"rule": rule, "heur": [], "best": []})
            if rule in t:
                c["heur"].append(t[rule] / t["aten"])
            if hopper:
                c["best"].append(min(hopper.values()) / t["aten"])
    span = lambda v: f"{min(v):.2f}-{max(v):.2f}" if v else "-"  # noqa: E731
    print(f"{'shape':>16} {'tile':>14} {'share':>6} {'least':>6} {'silu':>6}  heur/aten   best/aten")
    for (M, K, N), c in sorted(cells.items(), key=lambda kv: C.hopper_work_share(kv[0][0], kv[0][2], kv[0][1])["share"]):
        w = C.hopper_work_share(M, N, K)
        print(f"{M:>6}x{K:>5}x{N:>5} {str(c['rule']):>14} {w['share']:6.3f} {w['least']:6.3f} {w['least_silu']:6.3f}"
              f"  {span(c['heur']):>9}   {span(c['best']):>9}")
    print("share: the tile's real work over its rounds' slots, times its throughput; least / silu: refused at or "
          "under (0: outside the rule's range); times over the unfused path (cuBLAS + the epilogue kernel)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--before", action="store_true")
    ap.add_argument("--share", action="store_true")
    a = ap.parse_args()
    if a.share:
        share_table(a.files)
        return
    within = total = refused = refused_right = against_eager = 0
    for path in a.files:
        for r in json.load(open(path)):
            M, K, N = (int(v) for v in r["shape"].split("x"))
            t = {short(c): v for c, v in r["times_ms"].items() if v}
            hopper = {c: v for c, v in t.items() if c.endswith((" pp", " coop")) or " sk" in c}
            rule = heuristic_tile(chain_spec(r["chain"]), M, K, N)
            if rule is None and hopper and "aten" in t:
                # the heuristic refuses the Hopper kernel here: the unfused path against the best tile
                best = min(hopper, key=hopper.get)
                ratio = t["aten"] / hopper[best]
                line = (f"{r['shape']:>16} {r['chain']:>16}  refused: aten {t['aten'] / r['mm']:.3f}  "
                        f"best {best:>12} {hopper[best] / r['mm']:.3f}  aten/best {ratio:.3f}")
                if r["chain"] == "silu":
                    against_eager += 1
                    print(line + "  (against eager's SiLU: not counted)")
                    continue
                refused += 1
                refused_right += ratio <= 1.02
                print(line)
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
    if against_eager:
        print(f"{against_eager} refused cells of SiLU alone, judged against eager's SiLU kernel, which these files "
              f"do not time")


if __name__ == "__main__":
    main()
