#!/usr/bin/env bash
# Builds fxfuse on the GPU machine from the copied source tree with what is installed there
# (torch 2.11+cu130, pybind11, fmt/gtest, CUDA 13.0, cmake, ninja; no network), runs CTest and
# the GPU-marked tests, and prints a short summary last. Logs go to $OUT (or ./gpu-logs).
# Usage: scripts/gpu-check.sh [extra pytest args]
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOG=${OUT:-gpu-logs}; mkdir -p "$LOG"
export FXFUSE_BUILD_DIR=${FXFUSE_BUILD_DIR:-build-gpu}
export FXFUSE_CACHE_DIR=${FXFUSE_CACHE_DIR:-/tmp/fxfuse-cache}
source scripts/one-test-seed.sh
summary=()
step() { local name=$1; shift; local t0=$SECONDS
  if "$@" >"$LOG/$name.log" 2>&1; then summary+=("PASS $name ($((SECONDS-t0)) s)");
  else summary+=("FAIL $name ($((SECONDS-t0)) s): see $LOG/$name.log"); tail -n 40 "$LOG/$name.log"; fi; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$LOG/gpu.txt" 2>&1
# FXFUSE_SKIP_BUILD=1: the caller built it already (scripts/gpu-session.sh runs other work beside this)
[ "${FXFUSE_SKIP_BUILD:-0}" = 1 ] || step build "$PY" -m pip install --no-build-isolation --no-deps --no-index -e .
step ctest ctest --test-dir "$FXFUSE_BUILD_DIR" --output-on-failure -j 16 --timeout 300
# this machine's compiler links libstdc++ statically: check _C keeps that copy private
step linkage "$PY" -m pytest -q -p no:cacheprovider tests/python/test_extension_linkage.py
step pytest_gpu "$PY" -m pytest -q -m gpu tests "$@"
# The CPU suite runs in CI; here only on request (it is slow: Inductor compiles C++ for CPU graphs).
[ "${FXFUSE_GPU_CHECK_CPU:-0}" = 1 ] && step pytest_cpu "$PY" -m pytest -q -m "not gpu" tests
echo "== summary ($(date -u +%F) $(git rev-parse --short HEAD 2>/dev/null) on $(cat "$LOG/gpu.txt"))"
for s in "${summary[@]}"; do echo "$s"; done
grep -hE "passed|failed|error" "$LOG"/pytest_*.log | tail -n 4
[[ "${summary[*]}" != *FAIL* ]]
