# One device call (session 70, after call 2): dense 16-bit weights on the gemv at 24-64 rows with the split-K the
# H100's bandwidth halving leaves off (call 2 forced the gemv there at S = 2: 64 of 132 SMs at N = 4096). Forced S = 4
# and 8, mma.sync and wgmma, against the rule (S = 2 at 24 rows, eager's ops or the Hopper kernel at 33-64), two
# rounds in alternating processes (bench/gemv/sweep_inflight.py).
# From the device copy's root: `bash bench/gemv/session70_split.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
D=FXFUSE_GEMV_DENSE_MAX_M=64
OUT="$L/sweep" timeout "${SWEEP_LIMIT_S:-200}" python3 bench/gemv/sweep_inflight.py --budget-s 190 --rounds 2 \
  --m "${SWEEP_M:-24,33,64}" --kn "${SWEEP_KN:-4096x4096,14336x4096}" --chains bias \
  --variants "0:0,0:4:$D,0:4:$D+FXFUSE_GEMV_WGMMA=1,0:8:$D+FXFUSE_GEMV_WGMMA=1" > "$L/sweep.txt" 2>&1
echo "sweep rc $? ($(( $(date +%s) - t0 )) s)"
device_pack
tail -20 "$L/sweep.txt" | cut -c1-200
