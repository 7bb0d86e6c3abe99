# One device call (session 68, second): where the group-wise scales' shuffles go in the stage. FXFUSE_GEMV_SCALE_SHFL=1
# shares the next stage's values at the end of the stage (call 1: 0.76-0.81x the time at one row on the AWQ / GPTQ
# layers, 1.07-1.10x on u8 bytes with a zero point tensor at 1-16 rows), 2 shares them at the start of their stage
# (before its compute), 0 reads every column in every lane. The group-wise GPU tests with 2, then two rounds of the
# three in alternating processes: the AWQ / GPTQ layers and the w4z / w4g / w8g chains.
# From the device copy's root: `bash bench/gemv/session68_shfl2.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
[ "${TESTS_LIMIT_S:-150}" = 0 ] || FXFUSE_GEMV_SCALE_SHFL=2 FXFUSE_TEST_CHILD_TIMEOUT=200 timeout "${TESTS_LIMIT_S:-150}" python3 -m pytest -q \
  -p no:cacheprovider -m gpu -n 14 tests/python/test_awq_storage.py tests/python/test_gptq_storage.py \
  tests/python/test_packed_int4.py tests/python/test_group_wise_quant.py > "$L/pytest.log" 2>&1
echo "pytest (knob 2) rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -14
for round in ${ROUNDS:-1 2}; do
  for knob in 1 2 0; do
    FXFUSE_GEMV_SCALE_SHFL=$knob OUT="$L/storage_${knob}_$round" timeout "${BENCH_LIMIT_S:-40}" \
      python3 bench/bench_gptq_storage.py --m 1,16,64 --kn 4096x14336,14336x4096 --forms awq,zeros \
      > "$L/storage_${knob}_$round.txt" 2>&1
    FXFUSE_GEMV_SCALE_SHFL=$knob OUT="$L/decode_${knob}_$round" timeout "${DECODE_LIMIT_S:-35}" \
      python3 bench/bench_decode.py --m 1,16,64 --kn 4096x14336 --chains w4z_bias,w4g_bias,w8g_bias \
      > "$L/decode_${knob}_$round.txt" 2>&1
    echo "shfl=$knob round $round ($(( $(date +%s) - t0 )) s)"
  done
  python3 bench/gemv/shfl_ab_table.py "$L" > "$L/table.txt"; device_pack  # (each round's table kept if the call is cut)
done
cat "$L/table.txt"
