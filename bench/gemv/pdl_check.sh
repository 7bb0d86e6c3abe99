#!/usr/bin/env bash
# One device call for the programmatic dependent launch of every kernel (gemv, Hopper, epilogue-alone;
# runtime/cuda_launch.cpp launchesAsProgrammaticDependent), run from the repository root of the
# device's copy (no git there): scripts/gpu-check.sh (build, CTest, the whole GPU suite, which holds
# test_programmatic_launch_waits_for_the_kernel_before), then a negative check per template that
# waits: with its fx_grid_dependency_wait() calls removed and the copy rebuilt, that template's
# layer_before_overlapping case must fail, or the test proves nothing. Leaves $OUT/res.tgz (the
# device returns at most 8 files).
#   run: bash bench/gemv/pdl_check.sh   (~500 s on a fresh H200 machine, within one call's 600 s)
set -u
L="$OUT/logs"
mkdir -p "$L"
export FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=/tmp/fxfuse-cache
OUT="$L" bash scripts/gpu-check.sh -n 12 -p no:cacheprovider > "$L/gpu_check.txt" 2>&1
echo "gpu-check rc $?"; tail -n 7 "$L/gpu_check.txt"
export PYTHONPATH=python
for pair in sm90_wgmma_gemm.cuh:hopper gemv.cuh:gemv; do
  file=codegen/kernels/${pair%%:*} path=${pair##*:}
  cp "$file" /tmp/kept.cuh
  sed -i 's|^\( *\)fx_grid_dependency_wait();.*$|\1// negative check: the wait removed|' "$file"
  echo "$path: wait removed at $(grep -c 'negative check: the wait removed' "$file") place(s)"
  python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$L/build_nowait_$path.log" 2>&1
  echo "build without the wait rc $?"
  timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/runtime/test_gemm_chain_cuda.py \
    -k "programmatic and $path" > "$L/pytest_nowait_$path.log" 2>&1
  echo "pytest without the $path wait rc $? (must be non-zero: $path-layer_before_overlapping failing)"
  grep -E "^(FAILED|ERROR)|passed|failed" "$L/pytest_nowait_$path.log" | tail -4
  cp /tmp/kept.cuh "$file"
done
tar czf "$OUT/res.tgz" -C "$OUT" logs
