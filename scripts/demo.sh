#!/usr/bin/env bash
# The README's main job: set-up, then rewrite real models with fxfuse and show what fused
# (on the GPU when there is one, on the CPU reference kernel otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec "${PYTHON:-python3}" -m fxfuse.demo "$@"
