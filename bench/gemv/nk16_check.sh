#!/usr/bin/env bash
# One device call for bench/gemv/ab/nk16_ldmatrix.patch (docs/STATUS.md "Next session" 0-1), run from
# the repository root of the device's copy (no git there): applies the patch, builds, runs the gemv
# GPU tests on it, then three sweeps, and leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/nk16_check.sh   (~450-550 s on a fresh H200 machine, within one call's 600 s;
#   the sweeps start no process after 120 s each)
set -u
L="$OUT/logs"
mkdir -p "$L"
patch -p1 < bench/gemv/ab/nk16_ldmatrix.patch > "$L/patch.log" 2>&1 || { echo "patch failed"; cat "$L/patch.log"; exit 1; }
FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=/tmp/fxfuse-cache \
  python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$L/build.log" 2>&1
echo "build rc $?"
export PYTHONPATH=python
# the N x K dense gemv runs in linear_gelu_tanh's cases at M = 1-16 and in the split-K sizes' child
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/runtime/test_gemm_chain_cuda.py \
  -k "gemv or split_k or int8 or fp8 or decode or small or test_chain_matches_eager or dense" > "$L/pytest.log" 2>&1
echo "pytest rc $?"; tail -2 "$L/pytest.log"
sweep() {  # name, then sweep_inflight.py's arguments; each sweep writes its own JSON
  local name=$1; shift
  mkdir -p "$L/$name"
  OUT="$L/$name" timeout 170 python3 bench/gemv/sweep_inflight.py --rounds 2 --budget-s 120 "$@" > "$L/$name.log" 2>&1
  echo "$name rc $?"
}
# the patch against the old loads on N x K weights, and the gemv forced at 24-32 rows (the unfused
# chain is the first variant's path there)
sweep nk --variants 0:0:FXFUSE_GEMV_NK_LDMATRIX=0,0:0,0:0:FXFUSE_GEMV_DENSE_MAX_M=32 --m 1,16,24,32 \
  --chains linear_gelu --kn 4096x4096,4096x14336,14336x4096
# the unfused chain at M <= 16 on N x K weights (the knob at 1 leaves M = 4-16 unfused)
sweep nk_small --variants 0:0,0:0:FXFUSE_GEMV_DENSE_MAX_M=1 --m 4,16 --chains linear_gelu,linear_bias_gelu \
  --kn 4096x4096,4096x14336
# two 32-row blocks at M = 33-64
sweep blocks --variants 0:0,0:0:FXFUSE_GEMV_DENSE_MAX_M=64,0:0:FXFUSE_GEMV_DENSE_MAX_M=64+FXFUSE_GEMV_MAX_MTILES=4 \
  --m 48,64 --chains bias,w8_bias --kn 4096x4096,4096x14336
tar czf "$OUT/res.tgz" -C "$OUT" logs
for f in nk nk_small blocks; do tail -n 20 "$L/$f.log"; done
