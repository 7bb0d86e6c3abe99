# One lean device call (session 65): session 64's owed checks (session 63's int4 zero point tensors and ragged-K
# padding with FXFUSE_GEMV_ZERO_TENSOR=1, session 64's GPTQ storage fold and expect lines) and session 65's gemv on
# GPTQ's int32 words (FX_B_WORDS: tests/python/test_gptq_storage.py's bit-exact and float64 checks), then the GPTQ
# layer's timing with the words on the gemv (bench/bench_gptq_storage.py, the knob on). From the device copy's root:
# `bash bench/gemv/session65_check.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
FXFUSE_GEMV_ZERO_TENSOR=1 timeout "${TESTS_LIMIT_S:-240}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 14 \
  tests/python/test_packed_int4.py tests/python/test_gptq_storage.py tests/python/test_expect_lines.py \
  > "$L/pytest.log" 2>&1
echo "pytest int4 (zero tensor knob on) + gptq words + expect rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -14
FXFUSE_GEMV_ZERO_TENSOR=1 OUT="$L/gptq" timeout "${BENCH_LIMIT_S:-130}" python3 bench/bench_gptq_storage.py \
  --m 1,16,64 --kn 4096x14336,14336x4096 > "$L/gptq.txt" 2>&1
echo "bench_gptq_storage (words on the gemv) rc $? ($(( $(date +%s) - t0 )) s)"; grep -A8 "^     M " "$L/gptq.txt" | cut -c1-150
device_pack
