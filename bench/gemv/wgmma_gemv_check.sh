#!/usr/bin/env bash
# One device call for the gemv's product by wgmma (8-bit K x N weights, then at 33-64 rows, now 17-64; kernels/gemv.cuh,
# config_table.cpp gemvTakesWgmma), from the repository root of the device's copy (no git there):
# build; the gemv's GPU tests (both products forced at every row tile, the bit-exact dequantization,
# split-K, the programmatic launch); then in alternating processes (bench/gemv/sweep_inflight.py)
#   A: M = 33 / 48 / 64, mma.sync (FXFUSE_GEMV_WGMMA=0) against the rule (wgmma) and wgmma with
#      ~60 / ~100 KB pipelines;
#   B: M = 16 / 24, the rule (mma.sync) against wgmma forced.
# Leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/wgmma_gemv_check.sh   (~500 s on a fresh H200 machine)
set -u
source "$(dirname "$0")/device_call.sh"
device_build
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/runtime/test_gemm_chain_cuda.py \
  -k "both_products or bit_exact or gemv or int8 or fp8 or programmatic or decode" > "$L/pytest.log" 2>&1
echo "pytest rc $? ($(( $(date +%s) - t0 )) s)"; grep -E "^(FAILED|ERROR)" "$L/pytest.log" | head -10; tail -1 "$L/pytest.log"
OUT="$L/a" timeout 220 python3 bench/gemv/sweep_inflight.py --budget-s 150 --rounds 2 --m 33,48,64 \
  --chains w8,w8_bias_gelu,f8ch_bias \
  --variants 0:0:FXFUSE_GEMV_WGMMA=0,0:0,60:0,100:0 > "$L/sweep_a.txt" 2>&1
echo "sweep A rc $? ($(( $(date +%s) - t0 )) s)"
OUT="$L/b" timeout 100 python3 bench/gemv/sweep_inflight.py --budget-s 60 --rounds 2 --m 16,24 \
  --chains w8,f8ch_bias --variants 0:0,0:0:FXFUSE_GEMV_WGMMA=1 > "$L/sweep_b.txt" 2>&1
echo "sweep B rc $? ($(( $(date +%s) - t0 )) s)"
device_pack
tail -n 45 "$L/sweep_a.txt"; tail -n 20 "$L/sweep_b.txt"
