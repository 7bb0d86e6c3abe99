# One device call (session 67, last): its changes after call 1 through the GPU: CTest (AWQ's words now the rule, on
# mma.sync at every row count: codegen.Gemv.PackedInt4AwqWords, the knob-off process), the AWQ and GPTQ GPU tests (the
# 17-32-row AWQ default on mma.sync, bit for bit; both layers under the torch.compile backend on CUDA), the demo's.
# From the device copy's root: `bash bench/gemv/session67_final.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
[ -n "${SKIP_CTEST:-}" ] || device_ctest  # (SKIP_CTEST=1: the tests alone, ~150 s on a fresh machine)
FXFUSE_TEST_CHILD_TIMEOUT=200 timeout "${TESTS_LIMIT_S:-240}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 14 \
  tests/python/test_awq_storage.py tests/python/test_gptq_storage.py tests/python/test_demo.py > "$L/pytest.log" 2>&1
echo "pytest awq + gptq + demo rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -14
device_pack
