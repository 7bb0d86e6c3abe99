#!/usr/bin/env bash
# The README's test command: set-up, then every C++ test (CTest) and every Python test
# (pytest). GPU-marked tests run only where a CUDA GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
scripts/setup.sh
echo "== ctest"
ctest --test-dir build --output-on-failure -j "$(nproc)"
echo "== pytest"
if "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  "$PY" -m pytest -q tests "$@"
else
  "$PY" -m pytest -q -m "not gpu" tests "$@"
fi
