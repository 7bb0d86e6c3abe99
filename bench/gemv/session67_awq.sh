# One device call (session 67): the gemv on AWQ's words (kernels/gemv.cuh FX_B_NWORDS, on with FXFUSE_GEMV_NWORDS=1
# while its GPU tests are owed) and session 66's owed GPU tests. CTest (the NVRTC compiles, codegen.GemvNWordsKnob.On
# among them); the AWQ, int4 and GPTQ GPU tests (AWQ's words bit for bit through the gemv at each product and row tile,
# against float64 through the fast and the element-wise loader; the int8 zero point forms over -128..127; GPTQ's exact
# rows with wgmma forced); then the AWQ layer beside the GPTQ layer (zero points, symmetric) and cuBLAS mm.
# From the device copy's root: `bash bench/gemv/session67_awq.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
device_ctest
FXFUSE_TEST_CHILD_TIMEOUT=200 timeout "${TESTS_LIMIT_S:-260}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 14 \
  tests/python/test_awq_storage.py tests/python/test_packed_int4.py tests/python/test_gptq_storage.py \
  > "$L/pytest.log" 2>&1
echo "pytest awq + int4 + gptq rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -14
FXFUSE_GEMV_NWORDS=1 OUT="$L/storage" timeout "${BENCH_LIMIT_S:-150}" python3 bench/bench_gptq_storage.py --m 1,16,64 \
  --kn 4096x14336,14336x4096 --forms awq,zeros,sym > "$L/storage.txt" 2>&1
echo "bench_gptq_storage rc $? ($(( $(date +%s) - t0 )) s)"; grep -A19 "^     M " "$L/storage.txt" | cut -c1-190
device_pack
