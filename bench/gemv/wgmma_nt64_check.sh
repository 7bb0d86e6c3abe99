#!/usr/bin/env bash
# One device call for the gemv's product by wgmma at 64 columns per CTA (kernels/gemv.cuh FX_GEMV_NT; knob
# FXFUSE_GEMV_NT), from the repository root of the device's copy (no git there): build; the GPU tests of
# every product forced at every row tile (wgmma at 128 and 64 columns, mma.sync; both layouts) beside the
# bit-exact int8 dequantization with wgmma and 64 columns forced; then in alternating processes
# (bench/gemv/sweep_inflight.py)
#   A: M = 24 / 33 / 64, w8 and w8_linear: the rule (128 columns) against 64 columns with the rule's
#      pipeline and split-K, with split-K 8, and with a ~50 KB pipeline and split-K 8;
#   B: M = 16, the rule (mma.sync) against wgmma forced at 64 columns.
# Leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/wgmma_nt64_check.sh   (~450 s on a fresh H200 machine)
set -u
L="$OUT/logs"
mkdir -p "$L"
export FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=/tmp/fxfuse-cache PYTHONPATH=python
t0=$(date +%s)
python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$L/build.log" 2>&1
echo "build rc $? ($(( $(date +%s) - t0 )) s)"
(FXFUSE_GEMV_WGMMA=1 FXFUSE_GEMV_NT=64 timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
  tests/runtime/test_gemm_chain_cuda.py -k "bit_exact" > "$L/pytest_exact_nt64.log" 2>&1; \
  echo "rc $?" >> "$L/pytest_exact_nt64.log") &
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu -n 3 tests/runtime/test_gemm_chain_cuda.py \
  -k "both_products" > "$L/pytest_both.log" 2>&1
echo "pytest both rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_both.log"
wait
echo "pytest exact (wgmma, 64 columns forced) ($(( $(date +%s) - t0 )) s)"; tail -2 "$L/pytest_exact_nt64.log"
grep -hE "^(FAILED|ERROR)" "$L"/pytest_*.log | head -10
OUT="$L/a" timeout 220 python3 bench/gemv/sweep_inflight.py --budget-s 170 --rounds 2 --m 24,33,64 \
  --chains w8,w8_linear \
  --variants 0:0,0:0:FXFUSE_GEMV_NT=64,0:8:FXFUSE_GEMV_NT=64,50:8:FXFUSE_GEMV_NT=64 > "$L/sweep_a.txt" 2>&1
echo "sweep A rc $? ($(( $(date +%s) - t0 )) s)"
OUT="$L/b" timeout 80 python3 bench/gemv/sweep_inflight.py --budget-s 50 --rounds 2 --m 16 \
  --chains w8,w8_linear --variants 0:0,0:0:FXFUSE_GEMV_WGMMA=1+FXFUSE_GEMV_NT=64 > "$L/sweep_b.txt" 2>&1
echo "sweep B rc $? ($(( $(date +%s) - t0 )) s)"
tar czf "$OUT/res.tgz" -C "$OUT" logs
tail -n 26 "$L/sweep_a.txt"; tail -n 12 "$L/sweep_b.txt"
