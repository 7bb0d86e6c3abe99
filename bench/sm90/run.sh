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
# "VID BF16 B_KMAJOR BN STAGES EPI CLUSTER_M GROUP_M SPLIT_N EPI_LAG"
VARIANTS=(
  "0 1 0 256 4 1 1 16 0 2"
  "1 1 1 256 4 1 1 16 0 2"
  "2 1 0 256 4 1 2 16 0 2"
  "3 1 1 256 4 1 2 16 0 2"
  "4 1 0 256 4 4 1 16 0 2"
  "5 1 0 256 4 4 2 16 0 2"
  "6 1 0 256 4 0 2 16 0 2"
  "7 1 0 256 4 1 2 8 0 2"
  "8 1 0 256 4 1 2 32 0 2"
  "9 0 0 256 4 1 2 16 0 2"
  "10 1 0 128 6 1 2 16 0 2"
  "11 1 1 128 6 1 2 16 0 2"
  "12 1 0 128 6 1 1 16 0 2"
  "13 1 0 256 4 3 2 16 0 2"
  "14 0 1 256 4 1 2 16 0 2"
  "15 1 0 256 4 1 2 16 1 2"
  "16 1 0 256 4 1 2 16 1 1"
  "17 1 1 256 4 1 2 16 1 2"
  "18 1 0 256 4 4 2 16 1 2"
  "19 1 0 256 4 1 1 16 1 2"
  "20 0 0 256 4 1 2 16 1 2"
  "21 1 0 256 4 3 2 16 1 2"
  "22 1 0 256 4 0 2 16 1 2"
  "23 1 0 256 4 0 1 16 0 2"
  "24 1 1 128 6 1 1 16 0 2"
)
# timed sets (variant names) per shape group, passed to the harness at compile time
T_4K="v0 v1 v2 v3 v4 v5 v6 v23 v7 v8 v9 v14 v13 v15 v16 v17 v18 v19 v20 v21 v22 v10 v12"
T_BIG="v0 v1 v2 v3 v8 v15 v17"
T_SMALL="v12 v24 v10 v11 v2 v15"
T_MID="v0 v2 v3 v10 v15 v17"
: > "$BUILD/variants_gen.h"
t0=$(date +%s)
pids=()
for v in "${VARIANTS[@]}"; do
  set -- $v
  echo "FXV($1)" >> "$BUILD/variants_gen.h"
  nvcc $FLAGS -Xptxas -v -c "$HERE/variant.cu" -o "$BUILD/v$1.o" -DVID=$1 -DFXV_BF16=$2 -DFX_B_KMAJOR=$3 \
       -DFX_BN=$4 -DFX_STAGES=$5 -DFXV_EPI=$6 -DFX_CLUSTER_M=$7 -DFX_GROUP_M=$8 -DFX_SPLIT_N=$9 -DFX_EPI_LAG=${10} > "$BUILD/ptxas_v$1.txt" 2>&1 &
  pids+=($!)
done
nvcc $FLAGS -I"$BUILD" -DFXV_T_4K="\"$T_4K\"" -DFXV_T_BIG="\"$T_BIG\"" -DFXV_T_SMALL="\"$T_SMALL\"" \
     -DFXV_T_MID="\"$T_MID\"" -c "$HERE/harness.cu" -o "$BUILD/harness.o" || exit 1
g++ -std=c++17 -O2 -c "$ROOT/codegen/tma_desc.cpp" -o "$BUILD/tma_desc.o" || exit 1
for p in "${pids[@]}"; do wait $p || { cat "$BUILD"/ptxas_v*.txt; exit 1; }; done
nvcc $FLAGS "$BUILD"/harness.o "$BUILD"/tma_desc.o "$BUILD"/v*.o -lcuda -lcublas -o "$BUILD/harness" || exit 1
echo "build $(( $(date +%s) - t0 )) s"
for v in "${VARIANTS[@]}"; do
  set -- $v
  echo "v$1 ($v): $(grep -E 'Used|spill' "$BUILD/ptxas_v$1.txt" | tr -s ' ' | tr '\n' ' ')"
  grep -iE 'warning' "$BUILD/ptxas_v$1.txt" || true
done > "$OUTD/ptxas.txt"
grep -ciE 'warning' "$OUTD/ptxas.txt" | sed 's/^/ptxas warnings: /'; grep -m3 -E 'v0 |v15 ' "$OUTD/ptxas.txt"
if command -v cuobjdump > /dev/null; then
  for id in 2 15; do
    cuobjdump --dump-sass "$BUILD/v$id.o" > "$BUILD/sass_v$id.txt" || true
    echo "v$id SASS: HGMMA $(grep -c HGMMA "$BUILD/sass_v$id.txt") | LDL/STL $(grep -cE '\b(LDL|STL)\b' "$BUILD/sass_v$id.txt") | BAR $(grep -cE 'BAR\.' "$BUILD/sass_v$id.txt") | UTMALDG $(grep -c UTMALDG "$BUILD/sass_v$id.txt")"
    grep -m2 -E "HGMMA|UTMALDG" "$BUILD/sass_v$id.txt" || true
  done 2>&1 | tee "$OUTD/sass_summary.txt"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader || true
# correctness first, one process per variant (a hang or fault stays contained); only variants
# that pass go on to the timed run
OKV=()
for v in "${VARIANTS[@]}"; do
  set -- $v
  timeout 10 "$BUILD/harness" check v$1 > "$BUILD/check_v$1.txt" 2>&1; rc=$?
  cat "$BUILD/check_v$1.txt" >> "$OUTD/checks_full.txt"
  echo "check v$1 rc=$rc: $(grep -c ' OK' "$BUILD/check_v$1.txt") OK, $(grep -c FAIL "$BUILD/check_v$1.txt") FAIL $(grep -m1 -iE 'error|CUDA|FAIL' "$BUILD/check_v$1.txt" || true)" | tee -a "$OUTD/checks.txt"
  [ $rc -eq 0 ] && OKV+=("v$1")
done
MODE="${ARGS[0]:-time}"
if [ ${#ARGS[@]} -gt 1 ]; then SEL=("${ARGS[@]:1}"); else SEL=("${OKV[@]}"); fi
timeout 110 "$BUILD/harness" "$MODE" "${SEL[@]}" 2>&1 | tee "$OUTD/harness.txt"
