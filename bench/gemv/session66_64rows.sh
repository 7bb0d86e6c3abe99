# One device call (session 66): the GPTQ layer with its zero points at 64 rows (0.0576 / 0.0905 ms against the
# symmetric form's 0.0447 / 0.0483: session66_check.sh) under the rule's config and its neighbours, one process each:
# pipeline 48 / 64 KB (FXFUSE_GEMV_STAGE_KB) and the mma.sync product (FXFUSE_GEMV_WGMMA=0).
# From the device copy's root: `bash bench/gemv/session66_64rows.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
# (call 2: VARIANTS="FXFUSE_GEMV_WGMMA=0+FXFUSE_GEMV_STAGE_KB=64 FXFUSE_GEMV_WGMMA=0+FXFUSE_GEMV_STAGE_KB=48" FORMS=zeros,sym)
for v in ${VARIANTS:-rule FXFUSE_GEMV_STAGE_KB=64 FXFUSE_GEMV_STAGE_KB=48 FXFUSE_GEMV_WGMMA=0}; do
  tag=${v//[^A-Za-z0-9]/_}
  env $( [ "$v" != rule ] && echo "${v//+/ }" ) OUT="$L/$tag" timeout 60 python3 bench/bench_gptq_storage.py --m 64 \
    --kn 4096x14336,14336x4096 --forms ${FORMS:-zeros} > "$L/$tag.txt" 2>&1
  echo "$v rc $? ($(( $(date +%s) - t0 )) s)"; grep -A5 "^     M " "$L/$tag.txt" | tail -n +2 | cut -c1-170
done
device_pack
