"""Executed warp instructions per SASS opcode from Nsight Compute's source page, to see where a
kernel's instructions go (bench/sm90/NOTES.md session 8: the fused Hopper kernel executes 2.1x
cuBLAS's instructions and, power-bound, runs at lower clocks).

  ncu --set full --import-source no -o rep python3 bench/profile_kernels.py --only "op bias+relu+cast 4096^3"
  ncu -i rep.ncu-rep --page source --csv --print-source sass > sass.csv
  python3 bench/sass_opcode_counts.py sass.csv [--top 25] [--blocks]

Prints the opcodes by executed warp instructions (share of the kernel's total) and the stall
samples on them, plus two groups that matter for the ping-pong kernel: barrier waits
(SYNCS.PHASECHK* try_wait and the branches that loop on them) and the rest.
"""
import argparse
import collections
import csv
import re
import sys


def column(header, *needles):
    """Index of the first column whose name contains every needle (case-insensitive)."""
    for i, name in enumerate(header):
        if all(n.lower() in name.lower() for n in needles):
            return i
    return None


def number(text):
    text = text.replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return 0.0


def opcode(sass):
    """'@!P0 BRA `(.L_x_3)' -> 'BRA'; 'SYNCS.PHASECHK.TRANS64.TRYWAIT P0, ...' -> 'SYNCS.PHASECHK.TRANS64.TRYWAIT'."""
    text = re.sub(r"^@!?U?P\w+\s+", "", sass.strip())
    return text.split(" ")[0].rstrip(";") if text else ""


def report(title, header, body, top):
    src, execd = column(header, "source"), column(header, "instructions executed")
    stall = column(header, "stall sampling (all")
    per_op, stalls = collections.Counter(), collections.Counter()
    prev_wait, waits = False, 0.0
    for r in body:
        if len(r) <= max(src, execd):
            continue
        op = opcode(r[src])
        n = number(r[execd])
        per_op[op] += n
        if stall is not None and len(r) > stall:
            stalls[op] += number(r[stall])
        # a try_wait and the branch right after it (the retry loop) are the barrier wait
        if "TRYWAIT" in op or (prev_wait and op == "BRA"):
            waits += n
        prev_wait = "TRYWAIT" in op
    total = sum(per_op.values()) or 1.0
    total_stall = sum(stalls.values()) or 1.0
    print(f"== {title}: {total:,.0f} executed warp instructions")
    print(f"{'opcode':>36} {'executed':>14} {'share':>7} {'stall samples':>14}")
    for op, n in per_op.most_common(top):
        print(f"{op:>36} {n:14,.0f} {100 * n / total:6.1f}% {100 * stalls[op] / total_stall:13.1f}%")
    print(f"barrier waits (try_wait and its retry branch): {waits:,.0f} ({100 * waits / total:.1f}%)")


def blocks(header, body, top):
    """The largest runs of consecutive instructions executed the same number of times (a loop
    body, or straight-line code between branches): where in the kernel the instructions go."""
    src, execd = column(header, "source"), column(header, "instructions executed")
    rows = [(r[src].strip(), number(r[execd])) for r in body if len(r) > max(src, execd)]
    runs, start = [], 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i][1] != rows[start][1]:
            runs.append((start, i - start, rows[start][1]))
            start = i
    total = sum(n for _, n in rows) or 1.0
    print(f"{'first instruction':>10} {'length':>7} {'executions':>11} {'share':>7}  (runs by executed instructions)")
    for first, length, n in sorted(runs, key=lambda r: -r[1] * r[2])[:top]:
        print(f"{first:>10} {length:>7} {n:>11,.0f} {100 * length * n / total:6.1f}%  {rows[first][0][:60]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--blocks", action="store_true",
                    help="also the largest runs of instructions with one execution count (the loops)")
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    # one header row per profiled kernel; the row before it (if any) names the kernel
    starts = [i for i, r in enumerate(rows)
              if column(r, "source") is not None and column(r, "instructions executed") is not None]
    if not starts:
        sys.exit("no header with 'Source' and 'Instructions Executed' columns: not ncu's source page CSV?")
    for k, i in enumerate(starts):
        end = starts[k + 1] - 1 if k + 1 < len(starts) else len(rows)
        title = " ".join(rows[i - 1]) if i > 0 else f"kernel {k}"
        report(title, rows[i], rows[i + 1:end], a.top)
        if a.blocks:
            blocks(rows[i], rows[i + 1:end], a.top)


if __name__ == "__main__":
    main()
