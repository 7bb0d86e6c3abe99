# One device call (session 71, STATUS 0b): Nsight Compute, full set, on issue 7's 16-bit gemv at 4096 x 4096 beside
# cuBLAS mm at 1, 16 and 64 rows (bench/profile_kernels.py's "M=... 4096x4096" cases): what keeps the gemv 1.02-1.04x
# cuBLAS mm at 1 row and 1.16x at 64 rows (the 64-column gemv at split-K 2), where cuBLAS mm takes less time at 64 rows
# than at 16. Per case: the details page's duration, DRAM / L2 throughput, occupancy, stalls; the gemv's SASS opcode
# counts. Before it, 1-4 rows at 64 columns a CTA (128 CTAs) against the rule's 64 CTAs.
# From the device copy's root: `bash bench/gemv/session71_profile.sh` (call 2 of session 71); the 64-row gemv alone
# (its op case takes the 16-bit product since 00703ea, so the gemv's rule applies):
# `SWEEP_LIMIT_S=0 PROFILE_ROWS=64 bash bench/gemv/session71_profile.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
# 1-4 rows: the rule (128 columns, mma.sync, S = 2 on the H100: 64 CTAs at N = 4096) against the product by wgmma at
# 128 columns (the same 64 CTAs) and at 64 columns (S = 2: 128 CTAs; S = 4: 256), two rounds in alternating processes
W=FXFUSE_GEMV_WGMMA=1
if [[ "${SWEEP_LIMIT_S:-120}" != 0 ]]; then  # (SWEEP_LIMIT_S: the sweep's budget in seconds)
  device_sweep wide 1,4 bias "0:0,0:2:$W,0:2:$W+FXFUSE_GEMV_NT=64,0:4:$W+FXFUSE_GEMV_NT=64" "${SWEEP_LIMIT_S:-120}" \
    4096x4096,14336x4096
  tail -12 "$L/sweep_wide.txt" | cut -c1-200
fi
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
# PROFILE_ROWS: the row counts profiled (default 1 16 64); SWEEP_LIMIT_S=0 leaves out the sweep
for m in ${PROFILE_ROWS:-1 16 64}; do for c in "cuBLAS mm M=$m 4096x4096" "op bf16 bias M=$m 4096x4096"; do
  tag=${c// /_}; tag=${tag//=/}
  timeout 100 "$ncu" --clock-control none --profile-from-start off --set full --import-source no -o "$L/prof_$tag" \
    python3 bench/profile_kernels.py --only "$c" > "$L/ncu_$tag.log" 2>&1
  echo "ncu $c rc $? ($(( $(date +%s) - t0 )) s)"; grep profiled "$L/ncu_$tag.log"
  "$ncu" -i "$L/prof_$tag.ncu-rep" --page details > "$L/details_$tag.txt" 2>&1
  "$ncu" -i "$L/prof_$tag.ncu-rep" --page source --csv --print-source sass > "$L/sass_$tag.csv" 2>&1
  rm -f "$L/prof_$tag.ncu-rep"
  python3 bench/sass_opcode_counts.py "$L/sass_$tag.csv" --top 14 > "$L/ops_$tag.txt" 2>&1
  grep -E "^  [a-zA-Z_0-9]+.*\(|^\s+(Duration|Elapsed Cycles|SM Active Cycles|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Achieved Occupancy|Registers Per Thread|Grid Size|Block Size|Cluster Size|Warp Cycles Per Issued Instruction|Issue Slots Busy|Executed Ipc Active) " \
    "$L/details_$tag.txt" | head -24 | cut -c1-120
done; done
device_pack
