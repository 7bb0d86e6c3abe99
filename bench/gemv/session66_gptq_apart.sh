# One device call (session 66): the GPTQ layer's gemv taken apart (bench/RESULTS.md session 65: one row slower than
# 16, behind session 62's bytes with a constant zero point). Side by side: the layer with its zero points (a zero
# point tensor) against GPTQ's symmetric `w - 8` (the words alone); the one-row rule's neighbours (split-K, pipeline
# size; each a process of its own, every row with cuBLAS mm in the same process); u8 bytes with a constant zero point
# and with a zero point tensor (bench_decode's w4g / w4z chains). From the device copy's root:
# `bash bench/gemv/session66_gptq_apart.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
OUT="$L/gptq" timeout "${BENCH_LIMIT_S:-150}" python3 bench/bench_gptq_storage.py --m 1,16 \
  --kn 4096x14336,14336x4096 --forms zeros,sym > "$L/gptq.txt" 2>&1
echo "bench_gptq_storage zeros,sym rc $? ($(( $(date +%s) - t0 )) s)"; grep -A9 "^     M " "$L/gptq.txt" | cut -c1-170
# the one-row rule's neighbours: KB:S (0 = the rule's), the layer with zero points, one row, 4096 x 14336
for v in 0:0 0:1 0:2 0:4 48:0 64:0 80:0 0:0; do
  kb=${v%%:*}; s=${v##*:}
  env $( [ "$kb" != 0 ] && echo FXFUSE_GEMV_STAGE_KB=$kb ) $( [ "$s" != 0 ] && echo FXFUSE_GEMV_SPLIT_K=$s ) \
    OUT="$L/v_${kb}_$s" timeout 60 python3 bench/bench_gptq_storage.py --m 1 --kn 4096x14336 --forms zeros \
    > "$L/v_${kb}_$s.txt" 2>&1
  echo "variant KB:S $v rc $? ($(( $(date +%s) - t0 )) s): $(grep -A1 '^     M ' "$L/v_${kb}_$s.txt" | tail -1 | cut -c1-170)"
done
OUT="$L/decode" timeout "${DECODE_LIMIT_S:-110}" python3 bench/bench_decode.py --m 1,16 --kn 4096x14336,14336x4096 \
  --chains w4g_bias,w4z_bias > "$L/decode.txt" 2>&1
echo "bench_decode w4g / w4z rc $? ($(( $(date +%s) - t0 )) s)"; grep -A12 "^  M " "$L/decode.txt" | cut -c1-150
device_pack
