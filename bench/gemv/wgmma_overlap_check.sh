#!/usr/bin/env bash
# One device call for the product by wgmma with the conversion overlapped (kernels/gemv.cuh
# compute_stage_wgmma_overlapped, knob FXFUSE_GEMV_WGMMA_OVERLAP=1; written in session 43, compiled only),
# from the repository root of the device's copy (no git there): build; the GPU tests of every product forced
# at every row tile (the overlapped form among them) beside the bit-exact int8 dequantization with the
# overlapped form forced; then in alternating processes (bench/gemv/sweep_inflight.py) the rule against the
# overlapped form at 24-64 rows (where the rule takes wgmma), 8-bit chains of both layouts and fp8; and at
# 16 rows (the rule: mma.sync) the overlapped wgmma forced.
# Leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/wgmma_overlap_check.sh   (~450 s on a fresh H200 machine)
set -u
source "$(dirname "$0")/device_call.sh"
device_build
device_w8_tests FXFUSE_GEMV_WGMMA=1 FXFUSE_GEMV_WGMMA_OVERLAP=1
OUT="$L/a" timeout 220 python3 bench/gemv/sweep_inflight.py --budget-s 170 --rounds 2 --m 24,33,64 \
  --chains w8,w8_linear,f8ch_bias --variants 0:0,0:0:FXFUSE_GEMV_WGMMA_OVERLAP=1 > "$L/sweep_a.txt" 2>&1
echo "sweep A rc $? ($(( $(date +%s) - t0 )) s)"
OUT="$L/b" timeout 80 python3 bench/gemv/sweep_inflight.py --budget-s 50 --rounds 2 --m 16 \
  --chains w8,w8_linear --variants 0:0,0:0:FXFUSE_GEMV_WGMMA=1+FXFUSE_GEMV_WGMMA_OVERLAP=1 > "$L/sweep_b.txt" 2>&1
echo "sweep B rc $? ($(( $(date +%s) - t0 )) s)"
device_pack
tail -n 32 "$L/sweep_a.txt"; tail -n 12 "$L/sweep_b.txt"
