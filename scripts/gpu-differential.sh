#!/usr/bin/env bash
# The issue-8 GPU differential run, in parts that fit one device call: chunks [FIRST, FIRST+COUNT)
# of tests/reliability/test_differential.py::test_differential_gpu (100 cases each). The first
# half runs with the planner's kernel choice, the second half with the Hopper kernel on every
# epilogue (FXFUSE_SM90_ALL_EPILOGUES=1, a per-process switch), both with poisoned outputs; the
# test forces kernels (FXFUSE_FORCE_KERNEL) and logs the op's launches per chunk.
# Each finished chunk appends one JSON line to $FXFUSE_DIFF_LOG, so a part cut short by SECONDS
# still counts what it finished; the summary at the end reads that file.
#   scripts/gpu-differential.sh FIRST COUNT WORKERS SECONDS
set -uo pipefail
cd "$(dirname "$0")/.."
first=$1 count=$2 workers=$3 secs=$4
half=$((count / 2))
LOG=${OUT:-gpu-logs}; mkdir -p "$LOG"
export FXFUSE_DIFF_LOG=${FXFUSE_DIFF_LOG:-$LOG/differential.jsonl} FXFUSE_POISON_OUTPUTS=1 PYTHONUNBUFFERED=1
# One CPU thread per process: 16 workers with 16 intra-op threads each ran over 100x slower
# (2026-11-29: one 100-case chunk in 270 s against 4,000 cases in 59 s; DIFFERENTIAL.md).
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
source scripts/one-test-seed.sh
part() {  # part FIRST_CHUNK CHUNKS LOGNAME
  FXFUSE_DIFF_GPU_FIRST_CHUNK=$1 FXFUSE_DIFF_GPU_CASES=$(($2 * 100)) timeout -k 10 "$secs" \
    python3 -m pytest -q -p no:cacheprovider -m "gpu and slow" -n $((workers / 2)) \
    tests/reliability/test_differential.py -k test_differential_gpu > "$LOG/$3" 2>&1
}
part "$first" "$half" differential_planner.log &
FXFUSE_SM90_ALL_EPILOGUES=1 part $((first + half)) $((count - half)) differential_sm90_all.log &
wait
python3 - "$FXFUSE_DIFF_LOG" <<'PY'
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])] if sys.argv[1] else []
res = collections.Counter()
for r in rows:
    res.update(r["results"])
chunks = sorted((r["seeds"][0], r["sm90_all_epilogues"]) for r in rows)
print(f"differential: {len(rows)} chunks, {sum(r['cases'] for r in rows)} cases, results {dict(res)}, "
      f"fused {sum(r['fused'] for r in rows)}, failing cases {sum(r['failures'] for r in rows)}, "
      f"kernel launches {sum(r.get('op', {}).get('launches', 0) for r in rows)} "
      f"(of them cuBLAS + epilogue kernel {sum(r.get('op', {}).get('pointwise_launches', 0) for r in rows)}), "
      f"ATen evaluations {sum(r.get('op', {}).get('aten_dispatch', 0) for r in rows)}")
print("first seeds:", [c[0] for c in chunks][:3], "...", [c[0] for c in chunks][-3:])
for r in rows:
    if r["failures"]:
        print(r["seeds"], r["report"][:1500])
PY
