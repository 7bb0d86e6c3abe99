# One device call (session 66): the packed int4 gemv's two changes of this session through its GPU tests and the bench.
# (1) A zero point tensor or GPTQ's words at 1-16 rows take four CTAs per SM (config_table.cpp gemvPipelineCtasPerSm);
# (2) an 8-bit integer zero point tensor is subtracted in the packed conversion's one fma (FX_B_ZERO_INT). The tests:
# the int4 file (its bit-exact one-hot tests: the gemv's dequantized weight against eager's, bit for bit), GPTQ's
# storage (the words, bit for bit and against float64) and the group-wise file. Then the GPTQ layer's table (zero points
# and symmetric) and the u8 byte chains (w4g constant zero point, w4z zero point tensor) beside session 66's first call.
# From the device copy's root: `bash bench/gemv/session66_check.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
timeout "${TESTS_LIMIT_S:-240}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 14 tests/python/test_packed_int4.py \
  tests/python/test_gptq_storage.py tests/python/test_group_wise_quant.py > "$L/pytest.log" 2>&1
echo "pytest int4 + gptq + group-wise rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -14
OUT="$L/gptq" timeout "${BENCH_LIMIT_S:-130}" python3 bench/bench_gptq_storage.py --m 1,16,64 \
  --kn 4096x14336,14336x4096 --forms zeros,sym > "$L/gptq.txt" 2>&1
echo "bench_gptq_storage rc $? ($(( $(date +%s) - t0 )) s)"; grep -A13 "^     M " "$L/gptq.txt" | cut -c1-170
OUT="$L/decode" timeout "${DECODE_LIMIT_S:-110}" python3 bench/bench_decode.py --m 1,16 --kn 4096x14336,14336x4096 \
  --chains w4g_bias,w4z_bias > "$L/decode.txt" 2>&1
echo "bench_decode w4g / w4z rc $? ($(( $(date +%s) - t0 )) s)"; grep -A9 "^  M " "$L/decode.txt" | cut -c1-150
device_pack
