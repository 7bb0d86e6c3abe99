# One device call (session 66, last): the 64-row rule for GPTQ's words with zero points (mma.sync, the usual CTAs per
# SM) through GPTQ's GPU tests (bit for bit at 1-64 rows, float64 with a bias at 64 x 4096 x 14336), then the layer's
# table at 64 rows. From the device copy's root: `bash bench/gemv/session66_confirm.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
timeout "${TESTS_LIMIT_S:-150}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 14 tests/python/test_gptq_storage.py \
  > "$L/pytest.log" 2>&1
echo "pytest gptq rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -10
OUT="$L/gptq" timeout 60 python3 bench/bench_gptq_storage.py --m 64 --kn 4096x14336,14336x4096 --forms zeros,sym \
  > "$L/gptq.txt" 2>&1
echo "bench_gptq_storage rc $? ($(( $(date +%s) - t0 )) s)"; grep -A5 "^     M " "$L/gptq.txt" | cut -c1-170
device_pack
