#!/usr/bin/env bash
# The shared last tile (KernelConfig::last_epilogue_shared) where the rule (config_table.cpp overlapRule) has not
# measured it, on the GPU machine from the repository root, sourced after
# `source bench/gemv/device_call.sh; device_build` (session 51; bench/sm90/knob_ab.sh does the rounds):
#  1. above 4 tiles per SM, on the rule's overlapped 128x256 tile, the shared last tile forced on
#     (FXFUSE_SM90_LAST_EPILOGUE_SHARED=1 acts on the rule's config): 8192^3 and 4096 x 14336 x 4096 (the residual
#     chain overlaps there), 4096 x 4304 x 4096 (every chain);
#  2. where the rule keeps the plain tile: 132-255 tiles (1792 x 4096 x 4096: 224, 1280 x 5120 x 4096: 200; the heuristic's 128x256 plain) and 2048 rows at K > 4096, against the
#     overlap with the shared last tile forced.
# Each A/B prints its knob_ab_summary table; the variant names differ so the two summaries read their own logs.
VARIANTS="rule shared:FXFUSE_SM90_LAST_EPILOGUE_SHARED=1" SHAPES=8192x8192x8192,4096x14336x4096,4096x4304x4096 \
  CHAINS=bias_gelu_resid,bias_gelu,silu source bench/sm90/knob_ab.sh
VARIANTS="plain ovshared:FXFUSE_SM90_EPILOGUE_OVERLAP=1,FXFUSE_SM90_LAST_EPILOGUE_SHARED=1" \
  SHAPES=1792x4096x4096,1280x5120x4096,2048x4096x8192,2048x4096x14336 \
  CHAINS=bias_gelu_resid,bias_gelu,silu source bench/sm90/knob_ab.sh
