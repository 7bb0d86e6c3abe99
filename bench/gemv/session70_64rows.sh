# One device call (session 70): dense 16-bit weights at 33-64 rows, where issue 7's table has the fused chain behind
# cuBLAS mm alone (4096 x 4096 at 64 rows: the bias chain left to eager, 1.27x mm; bias+GELU on cuBLAS + the
# epilogue kernel, 1.17x; session 70 call 1). (1) every kernel the autotune may choose there, interleaved with
# cuBLAS mm (bench/sm90/compare_tiles.py: the unfused path, sm80_mma, each Hopper tile and its split-K 2 / 4);
# (2) the gemv forced to 64 rows (FXFUSE_GEMV_DENSE_MAX_M=64, the mma.sync product) against the rule, two rounds in
# alternating processes (bench/gemv/sweep_inflight.py).
# From the device copy's root: `bash bench/gemv/session70_64rows.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
OUT="$L/tiles" timeout "${TILES_LIMIT_S:-200}" python3 bench/sm90/compare_tiles.py --rounds 3 \
  --shapes "${TILE_SHAPES:-64x4096x4096,48x4096x4096,64x4096x14336}" --chains bias_gelu,bias_relu_cast \
  > "$L/tiles.txt" 2>&1
echo "tiles rc $? ($(( $(date +%s) - t0 )) s)"
OUT="$L/sweep" timeout "${SWEEP_LIMIT_S:-160}" python3 bench/gemv/sweep_inflight.py --budget-s 150 --rounds 2 \
  --m 33,48,64 --kn 4096x4096,4096x14336 --chains bias,bias_gelu --variants 0:0,0:0:FXFUSE_GEMV_DENSE_MAX_M=64 \
  > "$L/sweep.txt" 2>&1
echo "sweep rc $? ($(( $(date +%s) - t0 )) s)"
device_pack
grep -A30 "best/mm" "$L/tiles.txt" | cut -c1-230
tail -16 "$L/sweep.txt"
