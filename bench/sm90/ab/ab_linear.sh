#!/usr/bin/env bash
# A patch that changes F.linear's K-major B path (compare_tiles builds B as [K, N] and does not
# see it): the linear chains end to end with every epilogue on the Hopper kernel, on the tree and
# then with PATCH applied (rebuilt), plus the Hopper GPU tests with the patch; restores the tree.
#   bench/sm90/ab/ab_linear.sh PATCH [SHAPES]     (on the GPU machine; logs under $OUT or ab-logs)
set -uo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1 FXFUSE_CACHE_DIR=${FXFUSE_CACHE_DIR:-/tmp/fxfuse-cache} FXFUSE_BUILD_DIR=build-gpu
LOGS=${OUT:-ab-logs}; mkdir -p "$LOGS"
shapes=${2:-4096x4096x896,4096x4096x1152,4096x4096x4160,2048x4864x896,4096x4096x4096}
rebuild() { python3 -m pip install --no-build-isolation --no-deps --no-index -e . > "$LOGS/$1" 2>&1; }
chains() {  # chains NAME: the linear chains, every epilogue forced onto the Hopper kernel
  OUT=$LOGS/$1 timeout 150 python3 bench/bench_chains.py --all-epilogues --mkn "$shapes" \
    --chains linear_gelu,linear_relu_cast,linear_resid > "$LOGS/chains_$1.txt" 2>&1
  echo "== $1"; grep -A16 "^ *shape" "$LOGS/chains_$1.txt" | head -n 16
}
python3 -c "import fxfuse._C" 2>/dev/null || rebuild build.log || { tail -n 30 "$LOGS/build.log"; exit 1; }
chains tree
name=$(basename "$1" .patch)
git apply "$1" || { echo "$1 does not apply"; exit 1; }
if rebuild "build_$name.log"; then
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m "gpu and not slow" tests -n 14 \
    -k "hopper or sm90 or linear or staged or residual" > "$LOGS/tests_$name.txt" 2>&1
  echo "tests with $name: $(tail -n 1 "$LOGS/tests_$name.txt")"
  chains "$name"
else
  tail -n 30 "$LOGS/build_$name.log"
fi
git apply -R "$1"; rebuild build_restored.log
