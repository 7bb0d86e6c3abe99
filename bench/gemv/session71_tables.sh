# One device call (session 71), best on a warm machine after session70_final.sh: the two issues' tables on the code
# as it stands. (1) issue 6's table (`bench_chains.py`, as session 69 call 2: torch.compile not run); (2) issue 7's
# whole table (`bench_decode.py --m 1,4,16,64`, every chain and shape, 300 s: it timed out at 220 s on the H100 in
# session 69); (3) on an H200 only: S = 2 against the bandwidth rule's S = 4 for 16-bit weights at 1-16 rows
# (`sweep_inflight.py`, two rounds; unmeasured on the H200 since session 5).
# From the device copy's root: `bash bench/gemv/session71_tables.sh`.
source bench/gemv/device_call.sh
device_build
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
OUT="$L/chains" timeout "${CHAINS_LIMIT_S:-120}" python3 bench/bench_chains.py --which 1,5,6,7,8,9,10 --rounds 3 \
  > "$L/issue6_table.txt" 2>&1
echo "chains rc $? ($(( $(date +%s) - t0 )) s)"
OUT="$L/decode" timeout "${DECODE_LIMIT_S:-300}" python3 bench/bench_decode.py --m 1,4,16,64 > "$L/decode.txt" 2>&1
echo "decode rc $? ($(( $(date +%s) - t0 )) s)"
if [[ "$gpu" == *H200* ]]; then
  device_sweep split 1,4,16 bias 0:0,0:2 "${SWEEP_LIMIT_S:-100}" 4096x4096,14336x4096
fi
device_pack
grep -E "x4096|x14336|x8192" "$L/issue6_table.txt" | cut -c1-120
grep -vE '^\{' "$L/decode.txt" | grep -E "targets met|copy" | tail -4
[[ -f "$L/sweep_split.txt" ]] && tail -14 "$L/sweep_split.txt" | cut -c1-160
