"""The gemv's work in flight per SM (issue 7, bench/gemv/NOTES.md session 36): bench_decode.py's
rows under several (pipeline budget, split-K) variants, side by side.

Both knobs (FXFUSE_GEMV_STAGE_KB, FXFUSE_GEMV_SPLIT_K) are read once per process, so each variant
runs bench_decode.py in its own process; the variants cannot be interleaved batch by batch as
bench_decode interleaves mm, eager and fxfuse. To keep a clock or thermal drift between processes
visible, every process also times cuBLAS mm on the same rows: the table reports each variant's
fxfuse / mm (a ratio within one process) beside its ms, and the variants run in rounds whose order
alternates (round 2 reversed), medians over the rounds.

    PYTHONPATH=python python3 bench/gemv/sweep_inflight.py --variants 100:0,60:0,60:3 [--rounds 2]
        [--m 1,16,64] [--kn 4096x14336,...] [--chains w8_bias,...] [--budget-s 500]
    (variant KB:S: pipeline of about KB KB, split-K S; 0 = the library's choice; writes
     $OUT/sweep_inflight.json, one file)

A variant may also set other gemv knobs of an A/B patch, KB:S:NAME=VALUE[+NAME=VALUE...], NAME one
of FXFUSE_GEMV_* or FXFUSE_PDL (e.g. bench/gemv/ab/cols_once.patch's `0:0:FXFUSE_GEMV_COLS_MIN_PAIRS=100000,0:0`:
the old path against the new, in alternating rounds). Every such knob of the caller is
dropped, so a variant runs with its own knobs only.
"""
import argparse
import dataclasses
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_DECODE = os.path.join(HERE, "..", "bench_decode.py")


@dataclasses.dataclass(frozen=True)
class Variant:
    """One variant: its name as given, the pipeline budget KB and split-K S (0: the library's),
    and the other FXFUSE_GEMV_* knobs it sets."""
    name: str
    kb: int
    s: int
    knobs: dict


def run_variant(v, args, tmp):
    """One bench_decode.py process under the variant: its rows, keyed by (M, K, N, dtype, chain)."""
    out = os.path.join(tmp, "v" + "".join(c if c.isalnum() else "_" for c in v.name))
    cmd = [sys.executable, BENCH_DECODE, "--m", args.m, "--chains", args.chains]
    if args.kn:
        cmd += ["--kn", args.kn]
    if v.s:
        cmd += ["--split-k", str(v.s)]
    if v.kb:
        cmd += ["--stage-kb", str(v.kb)]
    # the variant's knobs, not the caller's
    env = {k: val for k, val in os.environ.items() if not KNOB.fullmatch(k)}
    env.update(v.knobs, OUT=out)
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    secs = time.time() - t0
    if p.returncode != 0:
        print(f"variant {v.name} failed (rc {p.returncode}):\n{p.stderr[-3000:]}", flush=True)
        return None, secs
    files = [f for f in os.listdir(out) if f.startswith("bench_decode") and f.endswith(".json")]
    if not files:
        print(f"variant {v.name}: no bench_decode JSON written", flush=True)
        return None, secs
    with open(os.path.join(out, files[0])) as f:
        rows = json.load(f)["rows"]
    return {(r["M"], r["K"], r["N"], r["dtype"], r["chain"]): r for r in rows}, secs


KNOB = re.compile(r"FXFUSE_GEMV_[A-Z0-9_]+|FXFUSE_PDL")  # FXFUSE_PDL=0: no programmatic launch


def parse_variant(item):
    """"KB:S[:NAME=VALUE+...]" -> Variant: KB 0 (the library's pipeline) or 16-200
    (FXFUSE_GEMV_STAGE_KB's range), S 0 (the library's split-K) or 1-8, NAME an FXFUSE_GEMV_* knob
    other than those two (set through KB and S)."""
    parts = item.split(":", 2)
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise SystemExit(f"variant {item!r}: expected KB:S[:NAME=VALUE+...], e.g. 60:0")
    kb, s = int(parts[0]), int(parts[1])
    if not (kb == 0 or 16 <= kb <= 200) or not 0 <= s <= 8:
        raise SystemExit(f"variant {item!r}: KB must be 0 or 16-200, S 0-8")
    knobs = {}
    for kv in parts[2].split("+") if len(parts) == 3 else []:
        name, eq, value = kv.partition("=")
        if not eq or not KNOB.fullmatch(name) or name in ("FXFUSE_GEMV_STAGE_KB", "FXFUSE_GEMV_SPLIT_K"):
            raise SystemExit(f"variant {item!r}: {kv!r} is not NAME=VALUE with NAME an FXFUSE_GEMV_* knob "
                             "(the pipeline and split-K are KB:S)")
        knobs[name] = value
    return Variant(item, kb, s, knobs)


def table_of(runs):
    """Per row (M, K, N, dtype, chain): each variant's median ms, median fx/mm, runs and path."""
    keys = sorted({k for rs in runs.values() for rows in rs for k in rows}, key=lambda k: (k[1], k[2], k[4], k[3], k[0]))
    table = []
    for k in keys:
        entry = {"M": k[0], "K": k[1], "N": k[2], "dtype": k[3], "chain": k[4], "variants": {}}
        for v, rs in runs.items():
            got = [rows[k] for rows in rs if k in rows]
            if got:
                entry["variants"][v] = {
                    "fxfuse_ms": statistics.median(r["fxfuse"] for r in got),
                    "fx_over_mm": statistics.median(r["fxfuse"] / r["mm"] for r in got),
                    "runs_ms": [r["fxfuse"] for r in got], "path": got[0]["path"],
                    "relerr": max(r["fxfuse_relerr"] for r in got)}
        table.append(entry)
    return table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", required=True,
                    help="comma-separated KB:S[:NAME=VALUE+...] (0 = the library's choice; NAME an FXFUSE_GEMV_* knob)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--m", default="1,16,64")
    ap.add_argument("--kn", default="")
    ap.add_argument("--chains", default="w8_bias,w8_linear_bias,f8ch_bias,bias")
    ap.add_argument("--budget-s", type=float, default=1e9, help="start no process after this many seconds")
    a = ap.parse_args()
    variants = [parse_variant(item) for item in a.variants.split(",")]
    out_dir = os.environ.get("OUT") or "."
    os.makedirs(out_dir, exist_ok=True)
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise SystemExit("a variant is named twice")
    runs = {n: [] for n in names}  # variant name -> [rows of one process]
    t_start = time.time()
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(a.rounds):
            for v in variants if rnd % 2 == 0 else variants[::-1]:
                if time.time() - t_start > a.budget_s:
                    print(f"budget reached: variant {v.name} round {rnd + 1} not run", flush=True)
                    continue
                rows, secs = run_variant(v, a, os.path.join(tmp, f"r{rnd}"))
                print(f"round {rnd + 1} variant {v.name}: {secs:.0f} s", flush=True)
                if rows:
                    runs[v.name].append(rows)
                    # written after every process: a sweep cut short keeps what it measured
                    table = table_of(runs)
                    with open(os.path.join(out_dir, "sweep_inflight.json"), "w") as f:
                        json.dump({"variants": names, "rows": table}, f, indent=1)
    base = names[0]
    print(f"fxfuse ms (median of rounds) and, per variant, its ratio to variant {base}; [fx/mm]")
    for i, n in enumerate(names):
        print(f"  v{i} = {n}")
    print(f"{'M':>3} {'K x N':>11} {'dtype':>8} {'chain':>15} " + " ".join(f"{'v%d' % i:>19}" for i in range(len(names))))
    for e in table:
        cells = []
        b = e["variants"].get(base)
        for n in names:
            c = e["variants"].get(n)
            if not c:
                cells.append(f"{'-':>19}")
                continue
            ratio = c["fxfuse_ms"] / b["fxfuse_ms"] if b else float("nan")
            cells.append(f"{c['fxfuse_ms']:.4f} {ratio:5.3f} [{c['fx_over_mm']:4.2f}]")
        print(f"{e['M']:>3} {e['K']:>5}x{e['N']:<5} {e['dtype']:>8} {e['chain']:>15} " + " ".join(cells))


if __name__ == "__main__":
    main()
