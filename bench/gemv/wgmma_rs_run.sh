#!/usr/bin/env bash
# Builds and runs bench/gemv/wgmma_rs_int8.cu on the GPU machine, one process per configuration (a
# device fault in one must not lose the others), both modes; every line lands in $OUT/wgmma_rs.txt,
# the fastest correct rows per shape last. From the repository root:
#   bash bench/gemv/wgmma_rs_run.sh   (~60-90 s)
set -u
OUT=${OUT:-.}
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o /tmp/wgmma_rs_int8 bench/gemv/wgmma_rs_int8.cu \
  > "$OUT/wgmma_rs_build.txt" 2>&1 || { echo "build failed"; tail -5 "$OUT/wgmma_rs_build.txt"; exit 1; }
: > "$OUT/wgmma_rs.txt"
for mode in 1 0; do
  for cfg in "nb1 s4 wg1" "nb1 s6 wg1" "nb2 s4 wg1" "nb2 s6 wg1" "nb4 s3 wg1" "nb4 s4 wg1" \
             "nb1 s4 wg2" "nb1 s6 wg2" "nb2 s4 wg2"; do
    timeout 60 /tmp/wgmma_rs_int8 "m$mode $cfg ks" >> "$OUT/wgmma_rs.txt" 2>&1 || echo "m$mode $cfg: rc $?" >> "$OUT/wgmma_rs.txt"
  done
done
# every checked row with its error, then the fastest correct per shape (mode 1, rel err < 2e-2)
grep -E "^[0-9]+x[0-9]+ m1 " "$OUT/wgmma_rs.txt" | sort -k1,1 -k8,8g | awk '$NF < 2e-2' | awk '{c[$1]++} c[$1] <= 3'
grep -E "rc [0-9]+|FAIL|error" "$OUT/wgmma_rs.txt" | head -5
