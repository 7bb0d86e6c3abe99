#!/usr/bin/env bash
# Session 41, Run BC call 4 (the rest of the device budget after call 3 timed out): build, the 8
# programmatic-launch GPU cases, then the Hopper template rebuilt without its wait, where
# hopper-layer_before_overlapping must fail. run: bash bench/gemv/pdl_negative_hopper.sh
set -u; L="$OUT/logs"; mkdir -p "$L"; export FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=/tmp/fxfuse-cache PYTHONPATH=python
python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$L/build.log" 2>&1; echo "build rc $? at $SECONDS s"
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/runtime/test_gemm_chain_cuda.py -k programmatic > "$L/pytest_pdl.log" 2>&1
echo "programmatic rc $? at $SECONDS s"; tail -2 "$L/pytest_pdl.log"
f=codegen/kernels/sm90_wgmma_gemm.cuh
sed -i 's|^\( *\)fx_grid_dependency_wait();.*$|\1// negative check: the wait removed|' $f; echo "removed $(grep -c 'negative check: the wait removed' $f)"
python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$L/build_nowait.log" 2>&1; echo "build nowait rc $? at $SECONDS s"
timeout 90 python3 -m pytest -q -p no:cacheprovider -m gpu -n 3 tests/runtime/test_gemm_chain_cuda.py -k "programmatic and hopper" > "$L/pytest_nowait_hopper.log" 2>&1
echo "hopper without wait rc $? (must be non-zero) at $SECONDS s"; grep -E "^FAILED|passed|failed" "$L/pytest_nowait_hopper.log" | tail -4
