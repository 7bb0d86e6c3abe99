# One device call (session 60): the group-wise (GPTQ) prologue's GPU tests and its decode benchmark, from the
# repository root of the device's copy: `bash bench/gemv/group_wise_check.sh`. Logs in $OUT/res.tgz.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/python/test_group_wise_quant.py \
  > "$L/pytest_groupwise.log" 2>&1
echo "pytest groupwise rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_groupwise.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_groupwise.log" | head -12
# the gemv with group-wise scales against the per-channel int8 chains and cuBLAS mm, issue 7's shapes
OUT="$L/decode" timeout "${BENCH_LIMIT_S:-150}" python3 bench/bench_decode.py --m 1,16,64 \
  --kn 4096x14336,14336x4096 --chains w8_bias,w8g_bias,w8_linear_bias,w8g_linear_bias > "$L/decode.txt" 2>&1
echo "bench_decode rc $? ($(( $(date +%s) - t0 )) s)"
grep -A20 "^  M " "$L/decode.txt" | cut -c1-150
device_pack
