#!/bin/bash
# Build + check + time the sm90 template against cuBLAS on the GPU machine.
#   bash bench/sm90/run.sh [quick]       (from the repo root; results also under $OUT if set)
# Each variant: "VID BF16 B_KMAJOR BN STAGES EPI"  (EPI: 0 store, 1 bias+gelu tanh.approx,
# 2 bias+gelu tanhf, 3 +residual).  Compiled in parallel, linked with harness.cu + tma_desc.cpp.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUTD="${OUT:-/tmp/fxsm90_out}"
BUILD="${BUILD:-/tmp/fxsm90_build}"
mkdir -p "$BUILD" "$OUTD"
ARGS=("$@")
FLAGS="-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a"
# "VID BF16 B_KMAJOR BN STAGES EPI CLUSTER_M GROUP_M"
VARIANTS=(
  "0 1 0 256 4 1 1 16"
  "1 1 1 256 4 1 1 16"
  "2 1 0 256 4 1 2 16"
  "3 1 1 256 4 1 2 16"
  "4 1 0 256 4 4 1 16"
  "5 1 0 256 4 4 2 16"
  "6 1 0 256 4 0 2 16"
  "7 1 0 256 4 1 2 8"
  "8 1 0 256 4 1 2 32"
  "9 0 0 256 4 1 2 16"
  "10 1 0 128 6 1 2 16"
  "11 1 1 128 6 1 2 16"
  "12 1 0 128 6 1 1 16"
  "13 1 0 256 4 3 2 16"
  "14 0 1 256 4 1 2 16"
)
# timed sets (variant names) per shape group, passed to the harness at compile time
T_4K="v0 v1 v2 v3 v4 v5 v6 v7 v8 v9 v14 v13"
T_BIG="v0 v2 v3 v7 v8"
T_SMALL="v12 v10 v11 v2"
T_MID="v0 v2 v10 v3"
: > "$BUILD/variants_gen.h"
t0=$(date +%s)
pids=()
for v in "${VARIANTS[@]}"; do
  set -- $v
  echo "FXV($1)" >> "$BUILD/variants_gen.h"
  nvcc $FLAGS -Xptxas -v -c "$HERE/variant.cu" -o "$BUILD/v$1.o" -DVID=$1 -DFXV_BF16=$2 -DFX_B_KMAJOR=$3 \
       -DFX_BN=$4 -DFX_STAGES=$5 -DFXV_EPI=$6 -DFX_CLUSTER_M=$7 -DFX_GROUP_M=$8 > "$BUILD/ptxas_v$1.txt" 2>&1 &
  pids+=($!)
done
nvcc $FLAGS -I/tmp/stub -I"$BUILD" -DFXV_T_4K="\"$T_4K\"" -DFXV_T_BIG="\"$T_BIG\"" -DFXV_T_SMALL="\"$T_SMALL\"" \
     -DFXV_T_MID="\"$T_MID\"" -c "$HERE/harness.cu" -o "$BUILD/harness.o" || exit 1
g++ -std=c++17 -O2 -c "$ROOT/codegen/tma_desc.cpp" -o "$BUILD/tma_desc.o" || exit 1
for p in "${pids[@]}"; do wait $p || { cat "$BUILD"/ptxas_v*.txt; exit 1; }; done
echo LINK-SKIPPED; exit 0
echo "build $(( $(date +%s) - t0 )) s"
for v in "${VARIANTS[@]}"; do
  set -- $v
  echo "v$1 ($v): $(grep -E 'Used|spill' "$BUILD/ptxas_v$1.txt" | tr -s ' ' | tr '\n' ' ')"
  grep -iE 'warning' "$BUILD/ptxas_v$1.txt" || true
done | tee "$OUTD/ptxas.txt"
if command -v cuobjdump > /dev/null; then
  for id in 0 2 3; do
    cuobjdump --dump-sass "$BUILD/v$id.o" > "$OUTD/sass_v$id.txt" || true
    echo "v$id SASS: HGMMA $(grep -c HGMMA "$OUTD/sass_v$id.txt") | LDL/STL $(grep -cE '\b(LDL|STL)\b' "$OUTD/sass_v$id.txt") | WARPSYNC/BAR $(grep -cE 'BAR\.' "$OUTD/sass_v$id.txt")"
  done
  grep -m3 HGMMA "$OUTD/sass_v0.txt" || true
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader || true
# correctness first, one process per variant (a hang or fault stays contained)
for v in "${VARIANTS[@]}"; do
  set -- $v
  timeout 12 "$BUILD/harness" check v$1 > "$OUTD/check_v$1.txt" 2>&1; rc=$?
  echo "check v$1 rc=$rc: $(grep -c ' OK' "$OUTD/check_v$1.txt") OK, $(grep -c FAIL "$OUTD/check_v$1.txt") FAIL $(grep -m1 -iE 'error|CUDA|FAIL' "$OUTD/check_v$1.txt" || true)"
done 2>&1 | tee "$OUTD/checks.txt"
MODE="${ARGS[0]:-time}"
timeout 110 "$BUILD/harness" "$MODE" "${ARGS[@]:1}" 2>&1 | tee "$OUTD/harness.txt"
