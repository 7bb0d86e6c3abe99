#!/usr/bin/env bash
# A/B of L2 hints for the epilogue's bytes (session 45; bench/sm90/NOTES.md): the residual's loads
# (FXFUSE_SM90_RESID_EVICT_FIRST) and the staged output's stores (FXFUSE_SM90_STORE_EVICT_FIRST) marked
# evict-first, and the residual's lines prefetched into L2 at each epilogue's start
# (FXFUSE_SM90_RESID_L2_PREFETCH), alone and with the residual's hint, on the
# GPU machine from the repository root, sourced after device_build (bench/gemv/device_call.sh: $L, $t0).
# First the Hopper residual / staged-path GPU tests with every knob on, then bench_chains.py at issue 6's
# K = 4096 shapes (4096^3, 2048 x 4096 x 4096), one process per variant (the knobs are read once per process) in two rounds, the
# second reversed; each process times cuBLAS mm beside the chain, so fx/mm compares across processes.
# Summary: bench/sm90/evict_first_summary.py.
FXFUSE_SM90_RESID_EVICT_FIRST=1 FXFUSE_SM90_STORE_EVICT_FIRST=1 FXFUSE_SM90_RESID_L2_PREFETCH=1 timeout 150 python3 -m pytest -q -p no:cacheprovider \
  -m gpu -n 8 tests/runtime/test_gemm_chain_cuda.py -k "hopper_residual or staged_paths or column_edges or residual_dispatch" \
  > "$L/pytest_evict_first.log" 2>&1
echo "pytest rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_evict_first.log"
run() {  # run NAME [KNOB=1 ...]
  local name=$1; shift
  env "$@" OUT="$L/ab_$name$round" timeout 120 python3 bench/bench_chains.py --rounds 3 \
    --mkn 4096x4096x4096,2048x4096x4096 --chains bias_gelu_resid,bias_relu_cast \
    > "$L/ab_$name$round.txt" 2>&1
  echo "$name$round rc $? ($(( $(date +%s) - t0 )) s)"
}
R=FXFUSE_SM90_RESID_EVICT_FIRST=1 S=FXFUSE_SM90_STORE_EVICT_FIRST=1 P=FXFUSE_SM90_RESID_L2_PREFETCH=1
round=1; run base; run resid $R; run store $S; run both $R $S; run pf $P; run pfresid $P $R
round=2; run pfresid $P $R; run pf $P; run both $R $S; run store $S; run resid $R; run base
python3 bench/sm90/evict_first_summary.py "$L"
