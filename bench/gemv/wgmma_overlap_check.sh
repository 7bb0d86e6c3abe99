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
device_sweep a 24,33,64 w8,w8_linear,f8ch_bias 0:0,0:0:FXFUSE_GEMV_WGMMA_OVERLAP=1 170
device_sweep b 16 w8,w8_linear 0:0,0:0:FXFUSE_GEMV_WGMMA=1+FXFUSE_GEMV_WGMMA_OVERLAP=1 50
device_pack
tail -n 32 "$L/sweep_a.txt"; tail -n 12 "$L/sweep_b.txt"
