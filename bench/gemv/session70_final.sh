# One device call (session 70's last): the 16-bit gemv rules of session 70 (K x N weights at 17-32 rows on the
# product by wgmma; the H100's split-K halving at 1-16 rows only). (1) their GPU tests (the forced wgmma product at
# 128 and 64 columns, both layouts; the dense 17-32-row gemv; split-K and bandwidth; decode); (2) issue 7's 16-bit
# rows with 24 rows beside (`bench_decode.py`, one process); (3) 24-64 rows at 4096 x 4096: the rule against the gemv
# forced to 64 rows (wgmma at S = 4) and at 64 columns per CTA (S = 2 and 4), two rounds in alternating processes.
# (Call 4 ran it on 3cf9a58; since then its tests include `bias_alone`, 3e95c89's rule, for the next call.)
# From the device copy's root: `bash bench/gemv/session70_final.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
device_pytest "wgmma_product_of_16bit or 17_to_32_rows or bias_alone or memory_bandwidth or split_k or gemv_dense or decode" 12 \
  "${TESTS_LIMIT_S:-130}"
OUT="$L/decode" timeout "${DECODE_LIMIT_S:-70}" python3 bench/bench_decode.py --m 1,16,24,64 --chains bias,bias_gelu \
  > "$L/decode.txt" 2>&1
echo "decode rc $? ($(( $(date +%s) - t0 )) s)"
D=FXFUSE_GEMV_DENSE_MAX_M=64
OUT="$L/sweep" timeout "${SWEEP_LIMIT_S:-130}" python3 bench/gemv/sweep_inflight.py --budget-s 120 --rounds 2 \
  --m 24,33,64 --kn 4096x4096 --chains bias,bias_gelu \
  --variants "0:0,0:0:$D,0:2:$D+FXFUSE_GEMV_NT=64,0:4:$D+FXFUSE_GEMV_NT=64" > "$L/sweep.txt" 2>&1
echo "sweep rc $? ($(( $(date +%s) - t0 )) s)"
device_pack
grep -vE '^\{' "$L/decode.txt" | grep -E "bias|targets met" | grep -E "^ *(1|16|24|64) +4096 +4096|^ *24 |targets" | cut -c1-175
tail -16 "$L/sweep.txt" | cut -c1-200
