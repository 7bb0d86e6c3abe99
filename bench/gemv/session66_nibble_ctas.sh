# One device call (session 66): the packed int4 gemv's CTAs per SM at 1 and 16 rows. Nsight (session66_gptq_profile.sh)
# found the GPTQ layer's gemv at one row issue-bound at two CTAs of four warps per SM (12.5 % occupancy, issue slots
# 29-32 % busy), and a 48 KB pipeline (three stages, four CTAs per SM) ran its zero point form 15 % faster. Here the
# pipeline sizes 0 (the rule's), 48 and 64 KB side by side: the GPTQ layer (zero points and symmetric; each size a
# process of its own, cuBLAS mm in each) and the u8 byte chains (w4g constant zero point, w4z zero point tensor;
# bench/gemv/sweep_inflight.py, alternating rounds). From the device copy's root: `bash bench/gemv/session66_nibble_ctas.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
for kb in 0 48 64; do
  env $( [ "$kb" != 0 ] && echo FXFUSE_GEMV_STAGE_KB=$kb ) OUT="$L/gptq_$kb" timeout 100 python3 \
    bench/bench_gptq_storage.py --m 1,16 --kn 4096x14336,14336x4096 --forms zeros,sym > "$L/gptq_$kb.txt" 2>&1
  echo "gptq KB $kb rc $? ($(( $(date +%s) - t0 )) s)"; grep -A9 "^     M " "$L/gptq_$kb.txt" | tail -8 | cut -c1-170
done
OUT="$L/bytes" timeout 260 python3 bench/gemv/sweep_inflight.py --budget-s 200 --rounds 2 --m 1,16 \
  --kn 4096x14336,14336x4096 --chains w4g_bias,w4z_bias --variants 0:0,48:0,64:0 > "$L/sweep_bytes.txt" 2>&1
echo "sweep bytes rc $? ($(( $(date +%s) - t0 )) s)"; grep -A14 "^  M " "$L/sweep_bytes.txt" | cut -c1-140
device_pack
