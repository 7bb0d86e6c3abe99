#!/usr/bin/env bash
# Everything one GPU lease should do, in one call: build + CTest + GPU tests (gpu-check.sh),
# the per-variant smoke check, host overhead, and the benchmarks. Short summaries on stdout,
# all logs in one archive under $OUT (the device tool returns at most 8 files).
#   scripts/gpu-session.sh [--no-bench]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 FXFUSE_CACHE_DIR=${FXFUSE_CACHE_DIR:-/tmp/fxfuse-cache}
OUTDIR=${OUT:-gpu-logs}; LOGS=$OUTDIR/logs; mkdir -p "$LOGS"
OUT=$LOGS scripts/gpu-check.sh --timeout=300 -p no:cacheprovider -q -m "gpu and not slow" > "$LOGS/gpu-check.txt" 2>&1
tail -n 8 "$LOGS/gpu-check.txt"
grep -E "^(FAILED|ERROR)" "$LOGS/pytest_gpu.log" | head -n 25
{ FXFUSE_POISON_OUTPUTS=1 python3 scripts/gpu_smoke.py; echo "-- forced generic kernels";
  FXFUSE_POISON_OUTPUTS=1 FXFUSE_FORCE_KERNEL=1 python3 scripts/gpu_smoke.py;
  echo "-- Hopper kernel on every epilogue"
  FXFUSE_POISON_OUTPUTS=1 FXFUSE_SM90_ALL_EPILOGUES=1 python3 scripts/gpu_smoke.py; } > "$LOGS/smoke.txt" 2>&1
echo "smoke: $(grep -c '^ok' "$LOGS/smoke.txt") ok, $(grep -c '^BAD' "$LOGS/smoke.txt") bad"; grep '^BAD' "$LOGS/smoke.txt"
if [ "${1:-}" != "--no-bench" ]; then
  python3 bench/host_overhead.py > "$LOGS/host_overhead.txt" 2>&1; tail -n 6 "$LOGS/host_overhead.txt"
  OUT=$LOGS python3 bench/bench_chains.py > "$LOGS/bench_large.txt" 2>&1; mv "$LOGS/bench_chains.json" "$LOGS/bench_large.json" 2>/dev/null
  OUT=$LOGS python3 bench/bench_chains.py --decode > "$LOGS/bench_decode.txt" 2>&1
  grep -A40 "^ *shape" "$LOGS/bench_large.txt" | head -n 30; grep -A20 "^ *shape" "$LOGS/bench_decode.txt"
fi
tar czf "$OUTDIR/gpu-logs.tgz" -C "$OUTDIR" logs && rm -rf "$LOGS"
