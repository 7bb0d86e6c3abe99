#!/usr/bin/env bash
# session 33, call 3 (untracked; deleted after): the GPU check's build, CTest and GPU tests, then the
# rules at the shapes 5c4eb82 newly takes (out of sample)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUTDIR=${OUT:-gpu-logs}
OUT=$OUTDIR/logs/check timeout 330 scripts/gpu-check.sh -n 14 --timeout=200 -p no:cacheprovider -m "gpu and not slow" \
  > "$OUTDIR/gpu-check.txt" 2>&1
tail -n 8 "$OUTDIR/gpu-check.txt"; grep -hE "^(FAILED|ERROR)" "$OUTDIR/logs/check/pytest_gpu.log" | head -n 25
tar czf "$OUTDIR/check-logs.tgz" -C "$OUTDIR" logs gpu-check.txt && rm -rf "$OUTDIR/logs"
OUT=$OUTDIR timeout 250 bash scripts/gpu-session.sh rules \
  1088x14336x11008,3072x14336x3072,2048x14336x4864,768x14336x12288,896x14336x4096,256x14336x6656,256x12288x7680
