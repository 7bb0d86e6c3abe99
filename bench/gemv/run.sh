#!/usr/bin/env bash
# Build and run the gemv harness on a GPU machine.
#   bench/gemv/run.sh --build-only     build bench/gemv/build/harness (about 3 min: 26 kernel instances)
#   bench/gemv/run.sh [results.md]     run (builds first if no binary), table on stdout (+ markdown file)
set -u
cd "$(dirname "$0")"
build() {
  mkdir -p build && nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -lineinfo -o build/harness harness.cu -ldl
}
if [ "${1:-}" = "--build-only" ]; then build; exit $?; fi
[ -x build/harness ] || build || exit 1
if [ -z "${CUBLAS_LIB:-}" ]; then
  CUBLAS_LIB=$(python3 -c 'import nvidia.cu13, os; print(os.path.join(list(nvidia.cu13.__path__)[0], "lib", "libcublas.so.13"))' 2>/dev/null)
  [ -f "${CUBLAS_LIB:-/nonexistent}" ] || CUBLAS_LIB=$(find / -name 'libcublas.so.1[0-9]*' 2>/dev/null | head -1)
fi
export CUBLAS_LIB
export LD_LIBRARY_PATH="$(dirname "$CUBLAS_LIB"):${LD_LIBRARY_PATH:-}"
echo "cublas: $CUBLAS_LIB"
./build/harness "$@"
