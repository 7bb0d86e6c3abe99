#!/usr/bin/env bash
# One device call for the gemv's product by wgmma on 8-bit N x K weights (the F.linear form; kernels/gemv.cuh
# w8_nk_fragments), from the repository root of the device's copy (no git there):
#   build; NVRTC's version and path; CTest (the compile tests now bypass NVRTC's driver cache) beside the
#   GPU tests of both products forced at every row tile (both layouts) and the bit-exact int8 dequantization
#   on N x K weights with wgmma forced; then in alternating processes (bench/gemv/sweep_inflight.py) the rule
#   (mma.sync for N x K) against wgmma forced, M = 16-64, w8_linear and w8_linear_bias_gelu, issue 7's shapes.
# Leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/wgmma_nk_check.sh   (~450 s on a fresh H200 machine)
set -u
source "$(dirname "$0")/device_call.sh"
device_build
python3 -c "import fxfuse._C as C; print('nvrtc', C.nvrtc_path())" 2>&1 | tee "$L/nvrtc.txt"
(timeout 200 ctest --test-dir build-gpu --output-on-failure -j 8 --timeout 150 > "$L/ctest.log" 2>&1; echo "ctest rc $?" >> "$L/ctest.log") &
timeout 230 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/runtime/test_gemm_chain_cuda.py \
  -k "both_products" > "$L/pytest_both.log" 2>&1
echo "pytest both rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_both.log"
FXFUSE_GEMV_WGMMA=1 timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 tests/runtime/test_gemm_chain_cuda.py \
  -k "bit_exact and nk" > "$L/pytest_exact_nk.log" 2>&1
echo "pytest exact nk (wgmma forced) rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_exact_nk.log"
wait
echo "ctest done ($(( $(date +%s) - t0 )) s)"; tail -4 "$L/ctest.log"; grep -E "\(Failed\)|\*\*\*Failed" "$L/ctest.log" | head
grep -hE "^(FAILED|ERROR)" "$L"/pytest_*.log | head -10
OUT="$L/a" timeout 200 python3 bench/gemv/sweep_inflight.py --budget-s 150 --rounds 2 --m 16,24,33,48,64 \
  --chains w8_linear,w8_linear_bias_gelu --variants 0:0,0:0:FXFUSE_GEMV_WGMMA=1 > "$L/sweep_a.txt" 2>&1
echo "sweep A rc $? ($(( $(date +%s) - t0 )) s)"
device_pack
tail -n 40 "$L/sweep_a.txt"
