#!/usr/bin/env bash
# CTA pairs that share B by TMA multicast (FXFUSE_SM90_CLUSTER_PAIRS=1, KernelConfig::cluster_m; session 58), on
# the GPU machine from the repository root, sourced after the build (source bench/gemv/device_call.sh;
# device_build; source bench/sm90/cluster_pairs_check.sh: it writes to $L). (1) The Hopper GPU tests with every
# cooperative tile paired (the overlapped epilogue off, so that the heuristic's 128-row tiles all pair): the
# pairs' answers against eager; a test that asserts the tile's name fails by design and is listed. (2) The A/B
# end to end (knob_ab.sh), the tile forced with and without pairs at issue 6's farthest rows.
export FXFUSE_TEST_CHILD_TIMEOUT=200
FXFUSE_SM90_CLUSTER_PAIRS=1 FXFUSE_SM90_EPILOGUE_OVERLAP=0 timeout "${PAIRS_TEST_S:-170}" python3 -m pytest -q \
  -p no:cacheprovider -m "gpu and not slow" -n 16 tests/runtime/test_gemm_chain_cuda.py > "$L/pytest_pairs.log" 2>&1
echo "pytest pairs rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_pairs.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_pairs.log" | head -20
tile() { echo "FXFUSE_SM90_COOPERATIVE_TILE=$1,FXFUSE_SM90_EPILOGUE_OVERLAP=0"; }
VARIANTS="c128:$(tile 128x128) c128pairs:$(tile 128x128),FXFUSE_SM90_CLUSTER_PAIRS=1 c256:$(tile 128x256) \
c256pairs:$(tile 128x256),FXFUSE_SM90_CLUSTER_PAIRS=1" SHAPES="${PAIRS_SHAPES:-512x4096x4096,2048x4096x4096}" \
  CHAINS="${PAIRS_CHAINS:-silu,bias_gelu,bias_relu_cast}" source bench/sm90/knob_ab.sh
