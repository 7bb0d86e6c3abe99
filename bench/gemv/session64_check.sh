# One lean device call (session 64, a budget cut to ~650 s by refused starts): the GPU tests of session 63's int4
# zero point tensors (FXFUSE_GEMV_ZERO_TENSOR=1) and ragged-K padding and of session 64's GPTQ storage fold and
# expect lines, then the GPTQ layer's first timing (bench/bench_gptq_storage.py, two shapes). The int4 harness and
# the decode table stay in bench/gemv/int4_zero_tensor_check.sh. From the device copy's root:
# `bash bench/gemv/session64_check.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
FXFUSE_GEMV_ZERO_TENSOR=1 timeout "${TESTS_LIMIT_S:-230}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 14 \
  tests/python/test_packed_int4.py tests/python/test_gptq_storage.py tests/python/test_expect_lines.py \
  > "$L/pytest.log" 2>&1
echo "pytest int4 (zero tensor knob on) + gptq + expect rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -14
OUT="$L/gptq" timeout "${BENCH_LIMIT_S:-120}" python3 bench/bench_gptq_storage.py --m 1,16,256 \
  --kn 4096x14336,14336x4096 > "$L/gptq.txt" 2>&1
echo "bench_gptq_storage rc $? ($(( $(date +%s) - t0 )) s)"; grep -A8 "^     M " "$L/gptq.txt" | cut -c1-140
device_pack
