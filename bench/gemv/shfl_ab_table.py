"""The A/B table of bench/gemv/session68_shfl*.sh: the fxfuse time of each row (the JSON lines bench_gptq_storage.py
and bench_decode.py print) under each FXFUSE_GEMV_SCALE_SHFL value (0: every column read in every lane; 1: shared
by shuffles at the end of the stage before; 2: at the start of their stage), each process's rows read from
$L/storage_<knob>_<round>.txt and $L/decode_<knob>[_<round>].txt; the ratio of the fastest of each knob to knob 0's.
Rows a process did not reach (its timeout) are left out.

    python3 bench/gemv/shfl_ab_table.py LOG_DIR
"""
import glob
import json
import os
import re
import sys


def rows_of(path):
    for line in open(path, errors="replace"):
        if line.startswith("{"):
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                pass


def main(log_dir):
    times, mm = {}, {}  # (M, K, N, form) -> {knob: [ms...]}; -> [mm ms...]
    paths = glob.glob(os.path.join(log_dir, "storage_*.txt")) + glob.glob(os.path.join(log_dir, "decode_*.txt"))
    for path in sorted(paths):
        knob = re.search(r"(?:storage|decode)_(\d)", os.path.basename(path)).group(1)
        for r in rows_of(path):
            key = (r["M"], r["K"], r["N"], r.get("form") or r.get("chain"))
            times.setdefault(key, {}).setdefault(knob, []).append(r["fxfuse"])
            mm.setdefault(key, []).append(r["mm"])
    knobs = sorted({k for t in times.values() for k in t}, key=lambda k: (k == "0", k))
    head = f"{'M':>3} {'K':>6} {'N':>6} {'form':>9}"
    head += "".join(f"  {'shfl=' + k + ' ms':>17}" for k in knobs)
    head += "".join(f"  {k + '/0':>6}" for k in knobs if k != "0") + f"  {'mm ms':>7}"
    print(head)
    for key in sorted(times):
        t = times[key]
        line = f"{key[0]:>3} {key[1]:>6} {key[2]:>6} {key[3]:>9}"
        line += "".join(f"  {' '.join(f'{x:.4f}' for x in t.get(k, [])) or '-':>17}" for k in knobs)
        for k in knobs:
            if k != "0":
                line += f"  {min(t[k]) / min(t['0']):6.3f}" if t.get(k) and t.get("0") else "       -"
        print(line + f"  {min(mm[key]):7.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
