#!/usr/bin/env bash
# The overlapped epilogue's GPU check, on the GPU machine from the repository root, sourced after
# `source bench/gemv/device_call.sh; device_build` (it writes to $L and stamps with $t0):
#   source bench/sm90/overlap_check.sh; device_pack
# Correctness first: the overlapped tiles on every scenario of the tile tests, with the last tile's epilogue
# in the epilogue warps alone and shared with the consumers (FXFUSE_SM90_LAST_EPILOGUE_SHARED=1, session 48),
# the hand-off chains on the five tiles as they are, and the programmatic-launch layer stack on the overlapped
# tile (tests/runtime/test_gemm_chain_cuda.py, 15 cases, ~2 min). A hang shows as the timeout's rc 124 and
# stops the call there; only when they pass, the end-to-end A/B (bench/sm90/knob_ab.sh, ~4 min, its table
# last): the overlap everywhere it fits, the same with the shared last tile, and the plain tiles. Override
# with VARIANTS / SHAPES / CHAINS as knob_ab.sh takes them. (Session 47's first call ran the ring's 3 stages
# against 4 and the overlap against the rule's tile: bench/RESULTS.md Run BI.)
# (each test's child gets 200 s, so a hung kernel fails its test by name before the 300 s timeout)
FXFUSE_TEST_CHILD_TIMEOUT=200 timeout 300 python3 -m pytest -q -rA -p no:cacheprovider -m gpu -n 8 \
  tests/runtime/test_gemm_chain_cuda.py -k "overlapped_epilogue or handoff_chains or hopper_overlap" \
  > "$L/pytest_overlap.log" 2>&1
overlap_rc=$?
echo "pytest overlap rc $overlap_rc ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_overlap.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_overlap.log" | head -10
if [ "$overlap_rc" = 0 ]; then
  : "${VARIANTS:=ov:FXFUSE_SM90_EPILOGUE_OVERLAP=1 shared:FXFUSE_SM90_EPILOGUE_OVERLAP=1,FXFUSE_SM90_LAST_EPILOGUE_SHARED=1 plain:FXFUSE_SM90_EPILOGUE_OVERLAP=0}"
  : "${SHAPES:=4096x4096x4096,2048x4096x4096,8192x8192x8192}"
  : "${CHAINS:=bias_gelu_resid,bias_gelu,silu,bias_relu_cast}"
  source bench/sm90/knob_ab.sh
fi
