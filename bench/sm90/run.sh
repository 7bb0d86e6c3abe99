#!/bin/bash
# Build + check + time the sm90 template against cuBLAS on the GPU machine.
#   bash bench/sm90/run.sh [quick]       (from the repo root; results also under $OUT if set)
# Each variant: see VARIANTS below  (EPI: 0 store, 1 bias+gelu tanh.approx, 2 bias+gelu tanhf,
# 3 +residual, 4 diagnostic no-store).  Compiled in parallel, linked with harness.cu + tma_desc.cpp.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUTD="${OUT:-/tmp/fxsm90_out}"
BUILD="${BUILD:-/tmp/fxsm90_build}"
mkdir -p "$BUILD" "$OUTD"
ARGS=("$@")
FLAGS="-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a"
# "VID BF16 B_KMAJOR BM BN STAGES EPI CLUSTER_M GROUP_M PINGPONG LDG"
# consumer warpgroups: BM/64 cooperative (PINGPONG 0), 2 ping-pong (each owns whole BMxBN tiles);
# LDG 1: epilogue inputs read with __ldg (ld.global.nc)
VARIANTS=(
  "0 1 1 128 256 4 1 1 16 0 0"
  "1 1 1 128 256 4 1 1 16 0 1"
  "2 1 1 128 256 4 0 1 16 0 0"
  "3 1 1 128 256 4 4 1 16 0 0"
  "4 1 1 128 256 4 3 1 16 0 0"
  "5 1 1 128 256 4 3 1 16 0 1"
  "6 1 1 64 256 5 1 1 16 1 1"
  "7 1 0 128 256 4 1 1 16 0 1"
  "8 1 1 128 128 6 1 1 16 0 1"
)
# timed sets (variant names) per shape group, passed to the harness at compile time
T_4K="v0 v1 v2 v3 v4 v5 v6"
T_BIG=""
T_SMALL=""
T_MID=""
T_SHORT="v0 v1 v2 v3 v4 v5 v6"
: > "$BUILD/variants_gen.h"
t0=$(date +%s)
pids=()
for v in "${VARIANTS[@]}"; do
  set -- $v
  echo "FXV($1)" >> "$BUILD/variants_gen.h"
  nvcc $FLAGS -Xptxas -v -c "$HERE/variant.cu" -o "$BUILD/v$1.o" -DVID=$1 -DFXV_BF16=$2 -DFX_B_KMAJOR=$3 \
       -DFX_BM=$4 -DFX_CONSUMERS=$(( ${10} ? 2 : $4 / 64 )) -DFX_BN=$5 -DFX_STAGES=$6 -DFXV_EPI=$7 -DFX_CLUSTER_M=$8 -DFX_GROUP_M=$9 -DFX_PINGPONG=${10} -DFXV_LDG=${11} > "$BUILD/ptxas_v$1.txt" 2>&1 &
  pids+=($!)
done
nvcc $FLAGS -I"$BUILD" -DFXV_T_4K="\"$T_4K\"" -DFXV_T_BIG="\"$T_BIG\"" -DFXV_T_SMALL="\"$T_SMALL\"" \
     -DFXV_T_MID="\"$T_MID\"" -DFXV_T_SHORT="\"$T_SHORT\"" -c "$HERE/harness.cu" -o "$BUILD/harness.o" || exit 1
g++ -std=c++17 -O2 -c "$ROOT/codegen/tma_desc.cpp" -o "$BUILD/tma_desc.o" || exit 1
for p in "${pids[@]}"; do wait $p || { cat "$BUILD"/ptxas_v*.txt; exit 1; }; done
nvcc $FLAGS "$BUILD"/harness.o "$BUILD"/tma_desc.o "$BUILD"/v*.o -lcuda -lcublas -o "$BUILD/harness" || exit 1
echo "build $(( $(date +%s) - t0 )) s"
for v in "${VARIANTS[@]}"; do
  set -- $v
  echo "v$1 ($v): $(grep -E 'Used|spill' "$BUILD/ptxas_v$1.txt" | tr -s ' ' | tr '\n' ' ')"
  grep -iE 'warning' "$BUILD/ptxas_v$1.txt" || true
done > "$OUTD/ptxas.txt"
grep -ciE 'warning' "$OUTD/ptxas.txt" | sed 's/^/ptxas warnings: /'; grep -m2 -E 'v0 |v1 ' "$OUTD/ptxas.txt"
if command -v cuobjdump > /dev/null; then
  for id in 0 1; do
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
timeout 170 "$BUILD/harness" "$MODE" "${SEL[@]}" 2>&1 | tee "$OUTD/harness.txt"
