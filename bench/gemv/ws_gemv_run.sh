#!/usr/bin/env bash
# Builds and runs bench/gemv/ws_gemv_int8.cu (the warp-specialized int8 gemv probe, session 44) on the GPU
# machine, one process per shape (a hang or fault in one must not lose the others); every line lands in
# $OUT/ws_gemv.txt, the fastest correct rows per shape last. From the repository root:
#   bash bench/gemv/ws_gemv_run.sh   (~30-90 s after the build)
set -u
OUT=${OUT:-.}
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o /tmp/ws_gemv_int8 bench/gemv/ws_gemv_int8.cu \
  > "$OUT/ws_gemv_build.txt" 2>&1 || { echo "build failed"; tail -5 "$OUT/ws_gemv_build.txt"; exit 1; }
: > "$OUT/ws_gemv.txt"
for shape in 4096x14336 14336x4096 4096x4096; do
  timeout 90 /tmp/ws_gemv_int8 "$shape" >> "$OUT/ws_gemv.txt" 2>&1 || echo "$shape: rc $?" >> "$OUT/ws_gemv.txt"
done
sed -n "/^fastest/,/^copy/p" "$OUT/ws_gemv.txt" | grep -v "^copy"
# the timed reductions (split-K sums and a bias epilogue inside the kernel, as the gemv times them): the
# fastest correct row per shape and kind
for m in 16 32 64; do
  for kind in dsmem+bias global+bias; do
    for shape in 4096x14336 14336x4096 4096x4096; do
      grep "^$shape m$m " "$OUT/ws_gemv.txt" | grep -F " $kind " | awk '$NF < 2e-2' | sort -k7,7g | head -1
    done
  done
done
grep -E "rc [0-9]+|FAIL|error|inf" "$OUT/ws_gemv.txt" | head -8
