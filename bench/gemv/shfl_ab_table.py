"""The A/B table of bench/gemv/session68_shfl.sh: the fxfuse time of each row (the JSON lines bench_gptq_storage.py
and bench_decode.py print) with the group-wise scale shuffle on (FXFUSE_GEMV_SCALE_SHFL=1) and off (0), each
process's rows read from $L/storage_<knob>_<round>.txt and $L/decode_<knob>.txt; the ratio on / off of the fastest
of each side. Rows a process did not reach (its timeout) are left out.

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
    times = {}  # (M, K, N, form) -> {knob: [ms...]}, mm ms
    mm = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "storage_*_*.txt")) + glob.glob(os.path.join(log_dir, "decode_*.txt"))):
        knob = re.search(r"_(\d)(_\d)?\.txt$", path).group(1)
        for r in rows_of(path):
            key = (r["M"], r["K"], r["N"], r.get("form") or r.get("chain"))
            times.setdefault(key, {}).setdefault(knob, []).append(r["fxfuse"])
            mm.setdefault(key, []).append(r["mm"])
    print(f"{'M':>3} {'K':>6} {'N':>6} {'form':>9}  {'shfl=1 ms':>17}  {'shfl=0 ms':>17}  {'on/off':>6}  {'mm ms':>7}")
    for key in sorted(times):
        on, off = times[key].get("1", []), times[key].get("0", [])
        ratio = f"{min(on) / min(off):6.3f}" if on and off else "     -"
        fmt = lambda v: " ".join(f"{x:.4f}" for x in v) or "-"
        print(f"{key[0]:>3} {key[1]:>6} {key[2]:>6} {key[3]:>9}  {fmt(on):>17}  {fmt(off):>17}  {ratio}  {min(mm[key]):7.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
