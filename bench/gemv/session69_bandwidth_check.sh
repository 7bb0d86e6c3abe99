# One device call (session 69's owed checks, ~200 s on a fresh machine): the bandwidth-dependent split-K of 16-bit
# weights (codegen/config_table.cpp gemvSplitKForBandwidth) on whatever GPU the call gets. (1) its GPU test and the
# split-K / gemv tests beside it (the driver's memory clock and bus width read; S = 2 on an H100, 4 on an H200; outputs
# checked); (2) issue 7's 16-bit rows on the rule (`bench_decode.py`, one process); (3) S = 2 against 4 for 16-bit
# weights in alternating processes (`sweep_inflight.py`, two rounds): on an H100 the rule's S is already 2, so the
# sweep there shows 4 against it; on an H200 it measures the halving the rule leaves off there.
# From the device copy's root: `bash bench/gemv/session69_bandwidth_check.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name,clocks.max.memory --format=csv,noheader
source scripts/one-test-seed.sh
timeout "${TESTS_LIMIT_S:-150}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/runtime/test_gemm_chain_cuda.py \
  -k "memory_bandwidth or split_k or gemv_dense or decode" > "$L/pytest.log" 2>&1
echo "pytest rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -10
OUT="$L/decode" timeout "${DECODE_LIMIT_S:-90}" python3 bench/bench_decode.py --m 1,4,16,64 --chains bias,bias_gelu \
  > "$L/decode.txt" 2>&1
echo "decode rc $? ($(( $(date +%s) - t0 )) s)"
OUT="$L/sweep" timeout "${SWEEP_LIMIT_S:-150}" python3 bench/gemv/sweep_inflight.py --budget-s 140 --rounds 2 --m 1,4,16 \
  --kn 4096x4096,14336x4096 --chains bias --variants 0:0,0:2,0:4 > "$L/sweep.txt" 2>&1
echo "sweep rc $? ($(( $(date +%s) - t0 )) s)"
device_pack
grep -vE '^\{' "$L/decode.txt" | grep -E "bias|targets met" | tail -26
tail -16 "$L/sweep.txt"
