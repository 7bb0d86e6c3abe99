# One device call (session 62): the packed int4 gemv with its stages of packed bytes and one expanded tile buffer
# (kernels/gemv.cuh expand_stage) and the packed 16-bit conversion of nibbles (pair_scaled, FX_B_SCALE_IN_ELEM), from
# the repository root of the device's copy: `bash bench/gemv/int4_tile_buffer_check.sh`.
#  1. CTest, the int4 / group-wise / demo GPU tests and the gemv's own tests (bench/gemv/int4_gemv_check.sh's set);
#  2. the bit-level harness of bench/gemv/int4 (twelve configs against a host reference, by bits);
#  3. an A/B in alternating processes (bench/gemv/sweep_inflight.py): the rule; N x K weights expanded in registers
#     (FXFUSE_GEMV_NIBBLE_REGS=1, the mma.sync product's rows only); the fp32 conversion
#     (FXFUSE_GEMV_NIBBLE_PAIRS=0); a 72 KB pipeline (three CTAs per SM at every M); split-K 8 (half the stream
#     a CTA), beside the group-wise int8 chain as the anchor.
# Logs in $OUT/res.tgz.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
device_ctest
# the harness builds beside the tests (its gen links the build's static libraries)
(cd bench/gemv/int4 && g++ -std=c++17 -I../../.. gen.cpp ../../../build-gpu/codegen/libfxfuse_codegen.a \
  ../../../build-gpu/spec/libfxfuse_spec.a -lfmt -ldl -lpthread -o gen > "$L/harness_build.log" 2>&1 &&
  bash build.sh >> "$L/harness_build.log" 2>&1; echo "harness build rc $?" >> "$L/harness_build.log") &
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/python/test_packed_int4.py \
  tests/python/test_group_wise_quant.py "tests/python/test_gpu.py::test_demo_fuses_int8_decode_on_gpu" \
  "tests/python/test_gpu.py::test_demo_times_every_model_on_gpu" > "$L/pytest_int4.log" 2>&1
echo "pytest int4 + groupwise + demo rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_int4.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_int4.log" | head -12
# the A/B knobs' forms of the packed gemv (children inherit them): expanded in registers; the fp32 conversion
for knob in FXFUSE_GEMV_NIBBLE_REGS=1 FXFUSE_GEMV_NIBBLE_PAIRS=0; do
  env "$knob" timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu -n 6 tests/python/test_packed_int4.py \
    -k "decode_takes_the_gemv" > "$L/pytest_int4_${knob%%=*}.log" 2>&1
  echo "pytest int4 gemv with $knob rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_int4_${knob%%=*}.log"
done &
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -n 10 tests/runtime/test_gemm_chain_cuda.py \
  -k "both_products or bit_exact or gemv" > "$L/pytest_gemv.log" 2>&1
echo "pytest gemv rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_gemv.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_gemv.log" | head -12
wait
grep -hE "^(FAILED|ERROR)" "$L"/pytest_int4_FXFUSE*.log | head -8
tail -3 "$L/harness_build.log"
(cd bench/gemv/int4 && for h in h_c*; do [ -x "$h" ] && { echo "== $h"; timeout 60 "./$h"; }; done) > "$L/harness.log" 2>&1
echo "harness ($(( $(date +%s) - t0 )) s): $(grep -c ': ok' "$L/harness.log") ok, $(grep -c ': FAIL' "$L/harness.log") FAIL"
grep -E "TOTAL|FAIL|CUDA" "$L/harness.log" | head -16
OUT="$L/int4" timeout "$(( ${SWEEP_BUDGET_S:-160} + 60 ))" python3 bench/gemv/sweep_inflight.py \
  --budget-s "${SWEEP_BUDGET_S:-160}" --rounds "${SWEEP_ROUNDS:-1}" --m 1,16,64 --kn 4096x14336,14336x4096 \
  --chains w8g_bias,w4g_bias,w4g_linear_bias --variants "0:0,0:0:FXFUSE_GEMV_NIBBLE_REGS=1,72:0,0:8,0:0:FXFUSE_GEMV_NIBBLE_PAIRS=0" \
  > "$L/sweep_int4.txt" 2>&1
echo "sweep int4 rc $? ($(( $(date +%s) - t0 )) s)"
cut -c1-170 "$L/sweep_int4.txt" | tail -40
device_pack
