# One device call (session 70): dense 16-bit weights at 33-64 rows, where issue 7's table has the fused chain behind
# cuBLAS mm alone (4096 x 4096 at 64 rows: the bias chain left to eager, 1.27x mm; bias+GELU on cuBLAS + the
# epilogue kernel, 1.17x; session 70 call 1). (1) the gemv's product by wgmma for 16-bit weights (w16_fragments,
# forced by FXFUSE_GEMV_WGMMA=1 FXFUSE_GEMV_DENSE_MAX_M=64): its GPU test; (2) the rule against the gemv forced to
# 64 rows on mma.sync and on wgmma, two rounds in alternating processes (bench/gemv/sweep_inflight.py); (3) every
# kernel the autotune may choose at 64 rows, interleaved with cuBLAS mm (bench/sm90/compare_tiles.py: the unfused
# path, sm80_mma, each Hopper tile and its split-K 2 / 4).
# From the device copy's root: `bash bench/gemv/session70_64rows.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
device_pytest "wgmma_product_of_16bit" 2 "${TESTS_LIMIT_S:-120}"
OUT="$L/sweep" timeout "${SWEEP_LIMIT_S:-170}" python3 bench/gemv/sweep_inflight.py --budget-s 160 --rounds 2 \
  --m "${SWEEP_M:-33,64}" --kn 4096x4096,4096x14336,14336x4096 --chains "${SWEEP_CHAINS:-bias}" \
  --variants 0:0,0:0:FXFUSE_GEMV_DENSE_MAX_M=64,0:0:FXFUSE_GEMV_DENSE_MAX_M=64+FXFUSE_GEMV_WGMMA=1 \
  > "$L/sweep.txt" 2>&1
echo "sweep rc $? ($(( $(date +%s) - t0 )) s)"
OUT="$L/tiles" timeout "${TILES_LIMIT_S:-120}" python3 bench/sm90/compare_tiles.py --rounds 3 \
  --shapes "${TILE_SHAPES:-64x4096x4096,64x4096x14336}" --chains bias_gelu,bias_relu_cast > "$L/tiles.txt" 2>&1
echo "tiles rc $? ($(( $(date +%s) - t0 )) s)"
device_pack
tail -18 "$L/sweep.txt"
grep -A8 "best/mm" "$L/tiles.txt" | cut -c1-250
