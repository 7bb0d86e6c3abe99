#!/usr/bin/env bash
# One device call for the gemv's product by wgmma at 64 columns per CTA (kernels/gemv.cuh FX_GEMV_NT; knob
# FXFUSE_GEMV_NT), from the repository root of the device's copy (no git there): build; the GPU tests of
# every product forced at every row tile (wgmma at 128 and 64 columns, mma.sync; both layouts) beside the
# bit-exact int8 dequantization with wgmma and 64 columns forced; then in alternating processes
# (bench/gemv/sweep_inflight.py)
#   A: M = 24 / 33 / 64, w8 and w8_linear: the rule (128 columns) against 64 columns with the rule's
#      pipeline and split-K, with split-K 8, and with a ~50 KB pipeline and split-K 8;
#   B: M = 16, the rule (mma.sync) against wgmma forced at 64 columns.
# Leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/wgmma_nt64_check.sh   (~450 s on a fresh H200 machine)
set -u
source "$(dirname "$0")/device_call.sh"
device_build
device_w8_tests FXFUSE_GEMV_WGMMA=1 FXFUSE_GEMV_NT=64
device_sweep a 24,33,64 w8,w8_linear 0:0,0:0:FXFUSE_GEMV_NT=64,0:8:FXFUSE_GEMV_NT=64,50:8:FXFUSE_GEMV_NT=64 170
device_sweep b 16 w8,w8_linear 0:0,0:0:FXFUSE_GEMV_WGMMA=1+FXFUSE_GEMV_NT=64 50
device_pack
tail -n 26 "$L/sweep_a.txt"; tail -n 12 "$L/sweep_b.txt"
