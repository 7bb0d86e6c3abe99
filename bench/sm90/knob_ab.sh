#!/usr/bin/env bash
# A/B of generator knobs end to end (bench_chains.py), on the GPU machine from the repository root, sourced
# after `source bench/gemv/device_call.sh; device_build` (it writes to $L and stamps with $t0):
#   VARIANTS="base stages3:FXFUSE_SM90_STAGES=3" SHAPES=4096x4096x4096,2048x4096x4096 \
#     CHAINS=bias_gelu_resid,bias_gelu,bias_relu_cast source bench/sm90/knob_ab.sh
# Each variant NAME[:KNOB=VALUE[,KNOB=VALUE...]] runs in its own process (the knobs are read once per
# process), in two rounds, the second reversed; each process times cuBLAS mm beside the chains, so
# fxfuse / mm compares across processes (bench/sm90/knob_ab_summary.py prints the table, the first
# variant as the base). Session 45's L2-hint A/B (bench/sm90/ab/l2_hints.patch) had its own copy of this.
: "${VARIANTS:?VARIANTS=\"base NAME:KNOB=V ...\"}" "${SHAPES:=4096x4096x4096,2048x4096x4096}"
: "${CHAINS:=bias_gelu_resid,bias_gelu,bias_relu_cast}"
knob_ab_run() {  # knob_ab_run ROUND NAME[:KNOB=V,...]
  local name=${2%%:*} knobs=() kv
  [[ $2 == *:* ]] && IFS=, read -ra knobs <<< "${2#*:}"
  env "${knobs[@]}" OUT="$L/ab_$name$1" timeout 150 python3 bench/bench_chains.py --rounds 3 --mkn "$SHAPES" \
    --chains "$CHAINS" > "$L/ab_$name$1.txt" 2>&1
  echo "$name$1 rc $? ($(( $(date +%s) - t0 )) s)"
}
read -ra knob_ab_variants <<< "$VARIANTS"
for v in "${knob_ab_variants[@]}"; do knob_ab_run 1 "$v"; done
for (( i=${#knob_ab_variants[@]}-1; i>=0; i-- )); do knob_ab_run 2 "${knob_ab_variants[i]}"; done
python3 bench/sm90/knob_ab_summary.py "$L" "${knob_ab_variants[@]%%:*}"
