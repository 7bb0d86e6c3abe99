# One device call (session 67): the whole GPU suite on session 67's code (not run whole since session 60's): CTest,
# the forced gemv products and autotune, the rest of the GPU tests (slow ones aside), the host overhead per call.
# From the device copy's root: `bash bench/gemv/session67_suite.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
REST_LIMIT_S="${REST_LIMIT_S:-380}" source scripts/gpu-suite-in-parts.sh
grep -hE "^(FAILED|ERROR)" "$L"/pytest_*.log | head -20
device_pack
