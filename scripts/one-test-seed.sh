#!/usr/bin/env bash
# Sourced by the GPU scripts (gpu-check.sh, gpu-differential.sh, gpu-suite-in-parts.sh): one test seed for every
# pytest run of the script (tests/testlib.py draws fresh inputs from it), printed first so that a run cut short
# by its timeout can still be repeated with it. An FXFUSE_TEST_SEED already set is kept.
export FXFUSE_TEST_SEED=${FXFUSE_TEST_SEED:-$(python3 -c 'import os; print(int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF)')}
echo "FXFUSE_TEST_SEED=$FXFUSE_TEST_SEED"
