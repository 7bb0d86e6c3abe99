# One device call (session 66, after session66_gptq_apart.sh): Nsight Compute, full set, on the GPTQ layer's gemv at one
# row, 4096 x 14336, with its zero points (a zero point tensor: 0.0465 ms) and in GPTQ's symmetric form (the words
# alone: 0.0310 ms), and at 16 rows with its zero points (0.0354 ms): where the zero point's 50 % at one row goes
# (executed instructions and stall samples per opcode, bench/sass_opcode_counts.py; the details page's occupancy and
# memory figures). From the device copy's root: `bash bench/gemv/session66_gptq_profile.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
for c in "zeros M=1" "sym M=1" "zeros M=16"; do
  tag=${c// /_}; tag=${tag//=/}
  timeout 150 "$ncu" --clock-control none --profile-from-start off --set full --import-source no -o "$L/prof_$tag" \
    python3 bench/profile_kernels.py --only "op gptq $c " > "$L/ncu_$tag.log" 2>&1
  echo "ncu $c rc $? ($(( $(date +%s) - t0 )) s)"; grep profiled "$L/ncu_$tag.log"
  "$ncu" -i "$L/prof_$tag.ncu-rep" --page source --csv --print-source sass > "$L/sass_$tag.csv" 2>&1
  "$ncu" -i "$L/prof_$tag.ncu-rep" --page details > "$L/details_$tag.txt" 2>&1
  rm -f "$L/prof_$tag.ncu-rep"
  python3 bench/sass_opcode_counts.py "$L/sass_$tag.csv" --top 14 > "$L/ops_$tag.txt" 2>&1
  grep -E "^\s+(Duration|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput|Executed Ipc A|Block Limit Registers|Block Limit Shared Mem|Dynamic Shared Memory Per Block|Grid Size|Block Size|Warp Cycles Per Issued Instruction|Issue Slots Busy|Memory Throughput) " \
    "$L/details_$tag.txt" | head -20
  head -24 "$L/ops_$tag.txt" | cut -c1-110
done
device_pack
