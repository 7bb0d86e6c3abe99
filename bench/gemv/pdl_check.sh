#!/usr/bin/env bash
# One device call for the gemv's programmatic dependent launch (docs/STATUS.md "Next session" 0), run
# from the repository root of the device's copy (no git there): builds, runs the gemv GPU tests (the
# landed form and the reworked test have not run on a GPU), issue 7's table, the gemv timed after an
# RMS norm with and without the programmatic launch, and last a negative check: with the kernel's
# griddepcontrol.wait removed, the test's overlapping case must fail. Leaves $OUT/res.tgz (the device
# returns at most 8 files).
#   run: bash bench/gemv/pdl_check.sh   (~450-550 s on a fresh H200 machine, within one call's 600 s)
set -u
L="$OUT/logs"
mkdir -p "$L"
export FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=/tmp/fxfuse-cache
build() { python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$L/$1.log" 2>&1; echo "$1 rc $?"; }
build build
export PYTHONPATH=python
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/runtime/test_gemm_chain_cuda.py \
  -k "programmatic or gemv or split_k or graph or dense or int8 or fp8 or decode or small" > "$L/pytest.log" 2>&1
echo "pytest rc $?"; tail -2 "$L/pytest.log"
# issue 7's table, every gemv launched as a programmatic dependent
timeout 150 python3 bench/bench_decode.py --m 1,4,16,64 > "$L/decode.txt" 2>&1
echo "decode rc $?"
# a gemv after an RMS norm (the case in a model), without and with the programmatic launch
for pdl in 0 1; do
  FXFUSE_GEMV_PDL=$pdl PYTHONPATH=python:bench timeout 90 python3 bench/gemv/after_norm.py \
    --json "$L/after_norm_pdl$pdl.json" > "$L/after_norm_pdl$pdl.txt" 2>&1
  echo "after_norm pdl=$pdl rc $?"
done
# negative check (last: it rebuilds the copy without the wait): the overlapping case must now fail
sed -i 's|^  grid_dependency_wait();$|  // negative check: the wait removed|' codegen/kernels/gemv.cuh
echo "wait removed at $(grep -c 'negative check: the wait removed' codegen/kernels/gemv.cuh) place(s) (expect 1)"
build build_nowait
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/runtime/test_gemm_chain_cuda.py \
  -k "programmatic" > "$L/pytest_nowait.log" 2>&1
echo "pytest without the wait rc $? (must be non-zero: layer_before_overlapping failing)"; tail -3 "$L/pytest_nowait.log"
tar czf "$OUT/res.tgz" -C "$OUT" logs
cat "$L/after_norm_pdl0.txt" "$L/after_norm_pdl1.txt"; tail -n 25 "$L/decode.txt"
