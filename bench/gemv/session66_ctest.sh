# One device call (session 66, after session66_check.sh): CTest on the GPU (NVRTC compiles and the runtime tests) and
# the demo's GPU tests on the session's final gemv rule. From the device copy's root: `bash bench/gemv/session66_ctest.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
device_ctest
timeout "${TESTS_LIMIT_S:-200}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 \
  "tests/python/test_gpu.py::test_demo_fuses_int8_decode_on_gpu" "tests/python/test_gpu.py::test_demo_times_every_model_on_gpu" \
  > "$L/pytest_demo.log" 2>&1
echo "pytest demo rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_demo.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_demo.log" | head -8
device_pack
