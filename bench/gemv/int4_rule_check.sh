# One device call (session 62, after bench/gemv/int4_tile_buffer_check.sh's A/B): the packed int4 gemv's rule (three
# CTAs per SM where their split-K reaches four; N x K weights expanded in registers): the int4 / group-wise / demo GPU
# tests (call 1 ran the expanded-tile form's), the bit-level harness of bench/gemv/int4
# (its N x K mma.sync configs now in the register form), and issue 7's decode table for the int4 chains beside the
# group-wise int8 ones; then the K x N register form (FXFUSE_GEMV_NIBBLE_REGS_KN=1): the harness by bits, the gemv
# children and a two-round A/B. From the repository root of the device's copy: `bash bench/gemv/int4_rule_check.sh`.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
(cd bench/gemv/int4 && g++ -std=c++17 -I../../.. gen.cpp ../../../build-gpu/codegen/libfxfuse_codegen.a \
  ../../../build-gpu/spec/libfxfuse_spec.a -lfmt -ldl -lpthread -o gen > "$L/harness_build.log" 2>&1 &&
  bash build.sh >> "$L/harness_build.log" 2>&1; echo "harness build rc $?" >> "$L/harness_build.log") &
timeout "${INT4_TESTS_LIMIT_S:-150}" python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/python/test_packed_int4.py \
  ${INT4_MORE_TESTS-tests/python/test_group_wise_quant.py "tests/python/test_gpu.py::test_demo_fuses_int8_decode_on_gpu" \
  "tests/python/test_gpu.py::test_demo_times_every_model_on_gpu"} > "$L/pytest_int4.log" 2>&1
echo "pytest int4 + groupwise + demo rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_int4.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_int4.log" | head -12
wait
tail -1 "$L/harness_build.log"
(cd bench/gemv/int4 && for h in h_c*; do [ -x "$h" ] && { echo "== $h"; timeout 60 "./$h"; }; done) > "$L/harness.log" 2>&1
echo "harness ($(( $(date +%s) - t0 )) s): $(grep -c ': ok' "$L/harness.log") ok, $(grep -c ': FAIL' "$L/harness.log") FAIL"
# the K x N register form (knob FXFUSE_GEMV_NIBBLE_REGS_KN=1, built and host-checked only): the harness's configs
# regenerated with it, by bits, then the gemv children and a two-round A/B against the rule (HARNESS_KN=0 skips)
if [ "${HARNESS_KN:-1}" = 1 ]; then
  (cd bench/gemv/int4 && rm -f h_c* && FXFUSE_GEMV_NIBBLE_REGS_KN=1 bash build.sh > "$L/harness_kn_build.log" 2>&1 &&
    for h in h_c*; do [ -x "$h" ] && { echo "== $h"; timeout 60 "./$h"; }; done) > "$L/harness_kn.log" 2>&1
  echo "harness, K x N registers ($(( $(date +%s) - t0 )) s): $(grep -c ': ok' "$L/harness_kn.log") ok," \
    "$(grep -c ': FAIL' "$L/harness_kn.log") FAIL"
  FXFUSE_GEMV_NIBBLE_REGS_KN=1 timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu -n 6 \
    tests/python/test_packed_int4.py -k "decode_takes_the_gemv" > "$L/pytest_int4_regs_kn.log" 2>&1
  echo "pytest int4 gemv, K x N registers, rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_int4_regs_kn.log"
  OUT="$L/ab_kn" timeout 120 python3 bench/gemv/sweep_inflight.py --budget-s 80 --rounds 2 --m 1,16 \
    --kn 4096x14336,14336x4096,4096x4096 --chains w4g_bias --variants "0:0,0:0:FXFUSE_GEMV_NIBBLE_REGS_KN=1" \
    > "$L/sweep_kn.txt" 2>&1
  echo "sweep K x N registers rc $? ($(( $(date +%s) - t0 )) s)"; grep -A12 "^  M " "$L/sweep_kn.txt" | cut -c1-120
fi
OUT="$L/decode" timeout "${BENCH_LIMIT_S:-130}" python3 bench/bench_decode.py --m ${DECODE_M:-1,16,64} \
  --kn 4096x14336,14336x4096 --chains ${DECODE_CHAINS:-w8g_bias,w8g_linear_bias,w4g_bias,w4g_linear_bias} \
  > "$L/decode.txt" 2>&1
echo "bench_decode rc $? ($(( $(date +%s) - t0 )) s)"
grep -A40 "^  M " "$L/decode.txt" | cut -c1-150
device_pack
