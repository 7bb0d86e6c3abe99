# One device call (session 61): packed int4 weights on the gemv (FX_B_NIBBLES), from the repository root of the
# device's copy: `bash bench/gemv/int4_gemv_check.sh`. CTest, the int4 / group-wise / demo GPU tests, the gemv's
# forced products and bit-exact dequantization (the template changed), then issue 7's decode shapes: the int4 chains
# as the default rewrite runs them beside the group-wise int8 ones (BENCH_FLAGS=--force-fuse: every chain fused and
# the kernel forced, the generic kernel's figure where the gemv does not take it; session 61's call 3 ran that form).
# Logs in $OUT/res.tgz.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
device_ctest
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/python/test_packed_int4.py \
  tests/python/test_group_wise_quant.py "tests/python/test_gpu.py::test_demo_fuses_int8_decode_on_gpu" \
  "tests/python/test_gpu.py::test_demo_times_every_model_on_gpu" > "$L/pytest_int4.log" 2>&1
echo "pytest int4 + groupwise + demo rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_int4.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_int4.log" | head -12
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -n 10 tests/runtime/test_gemm_chain_cuda.py \
  -k "both_products or bit_exact or gemv" > "$L/pytest_gemv.log" 2>&1
echo "pytest gemv rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_gemv.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_gemv.log" | head -12
OUT="$L/decode" timeout "${BENCH_LIMIT_S:-150}" python3 bench/bench_decode.py ${BENCH_FLAGS:-} --m 1,16,64 \
  --kn 4096x14336,14336x4096 --chains w8g_bias,w8g_linear_bias,w4g_bias,w4g_linear_bias > "$L/decode.txt" 2>&1
echo "bench_decode rc $? ($(( $(date +%s) - t0 )) s)"
grep -A26 "^  M " "$L/decode.txt" | cut -c1-165
device_pack
