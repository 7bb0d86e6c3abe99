# One device call (session 68): group-wise scales and zero points read one column a lane and shared across the MMA
# thread group by shuffles (kernels/gemv.cuh FX_GEMV_SCALE_SHFL, on by default in this tree; FXFUSE_GEMV_SCALE_SHFL=0
# reads every column in every lane, as before). The GPU tests of every group-wise form (AWQ, GPTQ, packed int4,
# group-wise int8: bit for bit through the gemv where they assert it), then an A/B in alternating processes: the AWQ and
# GPTQ layers (bench_gptq_storage.py) and the group-wise int4 / int8 chains (bench_decode.py) with the knob 1 and 0.
# From the device copy's root: `bash bench/gemv/session68_shfl.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
FXFUSE_TEST_CHILD_TIMEOUT=200 timeout "${TESTS_LIMIT_S:-220}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 14 \
  tests/python/test_awq_storage.py tests/python/test_gptq_storage.py tests/python/test_packed_int4.py \
  tests/python/test_group_wise_quant.py > "$L/pytest.log" 2>&1
echo "pytest awq + gptq + int4 + group-wise rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -14
for round in 1 2; do
  for knob in 1 0; do
    FXFUSE_GEMV_SCALE_SHFL=$knob OUT="$L/storage_${knob}_$round" timeout "${BENCH_LIMIT_S:-70}" \
      python3 bench/bench_gptq_storage.py --m 1,16,64 --kn 4096x14336,14336x4096 --forms awq,zeros \
      > "$L/storage_${knob}_$round.txt" 2>&1
    echo "storage shfl=$knob round $round rc $? ($(( $(date +%s) - t0 )) s)"
  done
done
for knob in 1 0; do
  FXFUSE_GEMV_SCALE_SHFL=$knob OUT="$L/decode_$knob" timeout "${DECODE_LIMIT_S:-60}" python3 bench/bench_decode.py \
    --m 1,16,64 --kn 4096x14336 --chains w4g_bias,w4z_bias,w8g_bias > "$L/decode_$knob.txt" 2>&1
  echo "decode shfl=$knob rc $? ($(( $(date +%s) - t0 )) s)"
done
python3 bench/gemv/shfl_ab_table.py "$L"
device_pack
