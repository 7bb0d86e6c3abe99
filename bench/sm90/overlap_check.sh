#!/usr/bin/env bash
# The overlapped epilogue's first GPU call (FX_EPI_OVERLAP, written in session 46 without a GPU), on the
# GPU machine from the repository root, sourced after `source bench/gemv/device_call.sh; device_build`
# (it writes to $L and stamps with $t0):
#   source bench/sm90/overlap_check.sh; device_pack
# Correctness first: the overlapped tiles on every scenario of the tile tests and the hand-off chains on
# the five tiles as they are, and the programmatic-launch layer stack on the overlapped tile
# (tests/runtime/test_gemm_chain_cuda.py, ~2 min; the kernel's SASS is CI's, test_hopper_sass.py). A hang shows as the
# timeout's rc 124 and stops the call there; only when they pass, the end-to-end A/B of the rule's
# 4-stage 128x256, the same at 3 stages (what the ring costs) and the overlapped epilogue at 3 stages
# (bench/sm90/knob_ab.sh, ~3 min), its table last.
# (each test's child gets 200 s, so a hung kernel fails its test by name before the 300 s timeout)
FXFUSE_TEST_CHILD_TIMEOUT=200 timeout 300 python3 -m pytest -q -rA -p no:cacheprovider -m gpu -n 6 \
  tests/runtime/test_gemm_chain_cuda.py -k "overlapped_epilogue or handoff_chains or hopper_overlap" \
  > "$L/pytest_overlap.log" 2>&1
overlap_rc=$?
echo "pytest overlap rc $overlap_rc ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_overlap.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_overlap.log" | head -10
if [ "$overlap_rc" = 0 ]; then
  VARIANTS="base stages3:FXFUSE_SM90_STAGES=3 overlap:FXFUSE_SM90_EPILOGUE_OVERLAP=1" \
    CHAINS=bias_gelu_resid,bias_gelu,silu,bias_relu_cast source bench/sm90/knob_ab.sh
fi
# Where the rule takes a ping-pong tile (8192^3, K or N = 14336), the overlapped cooperative tile against
# it is a second call (~4 min):
#   VARIANTS="base coop_overlap:FXFUSE_SM90_COOPERATIVE_TILE=128x256,FXFUSE_SM90_EPILOGUE_OVERLAP=1" \
#     SHAPES=8192x8192x8192,4096x14336x4096,4096x4096x14336 source bench/sm90/knob_ab.sh
