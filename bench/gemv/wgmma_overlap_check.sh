#!/usr/bin/env bash
# One device call for the product by wgmma with the conversion overlapped (kernels/gemv.cuh
# compute_stage_wgmma_overlapped, knob FXFUSE_GEMV_WGMMA_OVERLAP=1; written in session 43, compiled only),
# from the repository root of the device's copy (no git there): build; the GPU tests of every product forced
# at every row tile (the overlapped form among them) beside the bit-exact int8 dequantization with the
# overlapped form forced; then in alternating processes (bench/gemv/sweep_inflight.py) the rule against the
# overlapped form at 24-64 rows (where the rule takes wgmma), 8-bit chains of both layouts and fp8.
# Leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/wgmma_overlap_check.sh   (~450 s on a fresh H200 machine)
set -u
L="$OUT/logs"
mkdir -p "$L"
export FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=/tmp/fxfuse-cache PYTHONPATH=python
t0=$(date +%s)
python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$L/build.log" 2>&1
echo "build rc $? ($(( $(date +%s) - t0 )) s)"
(FXFUSE_GEMV_WGMMA=1 FXFUSE_GEMV_WGMMA_OVERLAP=1 timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
  tests/runtime/test_gemm_chain_cuda.py -k "bit_exact" > "$L/pytest_exact_overlap.log" 2>&1; \
  echo "rc $?" >> "$L/pytest_exact_overlap.log") &
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/runtime/test_gemm_chain_cuda.py \
  -k "both_products" > "$L/pytest_both.log" 2>&1
echo "pytest both rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_both.log"
wait
echo "pytest exact (wgmma overlapped, forced) ($(( $(date +%s) - t0 )) s)"; tail -2 "$L/pytest_exact_overlap.log"
grep -hE "^(FAILED|ERROR)" "$L"/pytest_*.log | head -10
OUT="$L/a" timeout 220 python3 bench/gemv/sweep_inflight.py --budget-s 170 --rounds 2 --m 24,33,64 \
  --chains w8,w8_linear,f8ch_bias --variants 0:0,0:0:FXFUSE_GEMV_WGMMA_OVERLAP=1 > "$L/sweep_a.txt" 2>&1
echo "sweep A rc $? ($(( $(date +%s) - t0 )) s)"
tar czf "$OUT/res.tgz" -C "$OUT" logs
tail -n 32 "$L/sweep_a.txt"
