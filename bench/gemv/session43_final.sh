#!/usr/bin/env bash
# Session 43's last device call, from the repository root of the device's copy (no git there): build; the GPU
# suite without the slow tests (the N x K wgmma rule, the 64-column product, the autotune's gemv candidates
# among them); then issue 7's 8-bit rows at 33 and 64 rows (bench/bench_decode.py) for the record.
# Leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/session43_final.sh   (~500 s on a fresh H200 machine)
set -u
source "$(dirname "$0")/device_call.sh"
device_build
timeout 340 python3 -m pytest -q -p no:cacheprovider -m "gpu and not slow" -n 14 tests > "$L/pytest_gpu.log" 2>&1
echo "GPU suite rc $? ($(( $(date +%s) - t0 )) s)"; grep -E "^(FAILED|ERROR)" "$L/pytest_gpu.log" | head -10
tail -1 "$L/pytest_gpu.log"
OUT="$L/decode" timeout 150 python3 bench/bench_decode.py --m 33,64 \
  --chains w8,w8_bias_gelu,w8_linear,w8_linear_bias,w8_linear_bias_gelu,f8ch_bias > "$L/decode.txt" 2>&1
echo "decode rc $? ($(( $(date +%s) - t0 )) s)"
device_pack
tail -n 45 "$L/decode.txt"
