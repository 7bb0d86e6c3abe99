#!/usr/bin/env bash
# One-time (idempotent) set-up on a fresh machine: system packages, Python packages, build,
# and an editable install of fxfuse into the current Python environment.
# The README's two commands (scripts/demo.sh, scripts/test.sh) call this first.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

# System packages: GoogleTest, fmt, ninja (Debian/Ubuntu names). Skipped when already there.
need_apt=()
[ -e /usr/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)
[ -e /usr/include/fmt/format.h ] || need_apt+=(libfmt-dev)
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v cmake >/dev/null || need_apt+=(cmake)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "[setup] apt-get install ${need_apt[*]}"
  as_root apt-get install -y -q "${need_apt[@]}" >/dev/null 2>&1 || {
    as_root apt-get update -q >/dev/null && as_root apt-get install -y -q "${need_apt[@]}" >/dev/null; }
fi

# Python packages. torch is pinned to the release that installs from a file on disk here;
# a machine that already has torch (the GPU machine: 2.11+cu130) keeps its own.
pip_install() { "$PY" -m pip install -q --disable-pip-version-check "$@"; }
"$PY" -c "import torch" 2>/dev/null || { echo "[setup] pip install torch==2.13.0"; pip_install torch==2.13.0; }
"$PY" -c "import pybind11, pytest" 2>/dev/null || pip_install pybind11 pytest
# The editable install builds without isolation (against this torch), so its build tools must be here.
"$PY" -c "import wheel, setuptools, sys; sys.exit(int(setuptools.__version__.split('.')[0]) < 64)" 2>/dev/null \
  || pip_install "setuptools>=64" wheel
# NVRTC compiles CUDA without a GPU: the codegen tests compile every kernel with it. Use the
# CUDA toolkit's when present, else the pip package.
if ! ls /usr/local/cuda/lib64/libnvrtc.so* >/dev/null 2>&1 && \
   ! "$PY" -c "import nvidia.cu13, os, sys; sys.exit(0 if os.path.exists(os.path.join(nvidia.cu13.__path__[0],'lib','libnvrtc.so.13')) else 1)" 2>/dev/null; then
  echo "[setup] pip install nvidia-cuda-nvrtc==13.0.*"
  pip_install "nvidia-cuda-nvrtc==13.0.*" "nvidia-cuda-runtime==13.0.*"
fi

# A disassembler for the SASS tests (tests/runtime/test_hopper_sass.py: HGMMA, TMA, no local memory): the
# CUDA toolkit's cuobjdump where present (the GPU machine), else nvdisasm from pip.
if ! command -v cuobjdump >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/cuobjdump ] && \
   ! "$PY" -c "import nvidia.cu13, os, sys; sys.exit(0 if any(os.path.exists(os.path.join(p,'bin','nvdisasm')) for p in nvidia.cu13.__path__) else 1)" 2>/dev/null; then
  echo "[setup] pip install nvidia-cuda-nvdisasm==13.*"
  pip_install "nvidia-cuda-nvdisasm==13.*"
fi

# Build (CMake: C++ libraries, fxfuse-opt, unit tests, the extension) and install editable.
echo "[setup] building (log: build/setup.log)"
mkdir -p build
if ! "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e . >build/setup.log 2>&1; then
  tail -n 60 build/setup.log; echo "[setup] build failed"; exit 1
fi
echo "[setup] ok: $("$PY" -c 'import fxfuse, torch; print("fxfuse", fxfuse.__file__, "torch", torch.__version__)')"
