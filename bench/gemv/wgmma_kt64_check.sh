#!/usr/bin/env bash
# One device call for the product by wgmma at 64 k per stage (kernels/gemv.cuh FX_GEMV_KT, knob
# FXFUSE_GEMV_KT=64; 8-bit K x N weights at 128 columns: an 8 KB weight tile, twice the stages in the
# same shared memory; session 44), from the repository root of the device's copy (no git there): build;
# the GPU tests of every product forced at every row tile (64 k per stage among them) beside the
# bit-exact int8 dequantization with wgmma and 64 k forced; then in alternating processes
# (bench/gemv/sweep_inflight.py) the rule against 64 k at the rule's pipeline and at ~100 KB, 8-bit K x N
# chains at 24-64 rows (where the rule takes wgmma).
# Leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/wgmma_kt64_check.sh   (~350 s on a fresh H200 machine)
set -u
source "$(dirname "$0")/device_call.sh"
device_build
device_w8_tests FXFUSE_GEMV_WGMMA=1 FXFUSE_GEMV_KT=64
device_sweep a 24,33,64 w8,w8_bias_gelu,f8ch_bias 0:0,0:0:FXFUSE_GEMV_KT=64,100:0:FXFUSE_GEMV_KT=64 200
device_pack
tail -n 34 "$L/sweep_a.txt"
