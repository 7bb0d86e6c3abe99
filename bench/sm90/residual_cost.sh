#!/usr/bin/env bash
# Where the residual chain's extra time goes (session 45; bench/sm90/NOTES.md): on the GPU machine, from
# the repository root, sourced after the build (source bench/gemv/device_call.sh; device_build; source
# bench/sm90/residual_cost.sh: it writes to $L, which a child bash would not see). (1) each
# benchmark chain on the heuristic's tile under sustained load beside cuBLAS mm, with the SM clock and
# power (clocks_under_load.py --chains); (2) one launch of each chain's kernel at 4096^3 under Nsight
# Compute (speed of light, warp states; --clock-control none) where ncu exists. Logs in $L.
export PYTHONPATH=python:bench/sm90:bench
chains=bias_relu_cast,bias_gelu,bias_gelu_resid
for shape in 4096x4096x4096 2048x4096x4096; do
  timeout 100 python3 bench/sm90/clocks_under_load.py --chains $chains --shape $shape --seconds 3
done > "$L/clocks.txt" 2>&1
echo "clocks rc $? ($(( $(date +%s) - t0 )) s)"
if command -v ncu > /dev/null; then
  for c in ${chains//,/ }; do
    timeout 120 ncu --clock-control none --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats -k regex:fxfuse_ --launch-skip 2 --launch-count 1 \
      python3 bench/sm90/clocks_under_load.py --chains $c --seconds 0.2 > "$L/ncu_$c.txt" 2>&1
    echo "ncu $c rc $? ($(( $(date +%s) - t0 )) s)"
  done
fi
