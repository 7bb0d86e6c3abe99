# One device call (session 61): the packed int4 prologue ('p' dim, pass/nibble_unpack.h) on the GPU, from the
# repository root of the device's copy: `bash bench/gemv/int4_check.sh`. CTest (the NVRTC corpus compiles the int4
# specs), the int4, group-wise and demo GPU tests, the generic kernel's prologue tests (the hooks changed), then issue 7's
# decode shapes with every chain fused and the kernel forced (no fast kernel takes a packed weight yet: the
# generic kernel's time is the figure the planner's rule would weigh). Logs in $OUT/res.tgz.
source bench/gemv/device_call.sh
device_build
nvidia-smi --query-gpu=name --format=csv,noheader
source scripts/one-test-seed.sh
ctest --test-dir build-gpu --output-on-failure -j 16 --timeout 300 > "$L/ctest.log" 2>&1
echo "ctest rc $? ($(( $(date +%s) - t0 )) s)"; grep -E "tests passed|tests failed" "$L/ctest.log"
grep -E "^\s+[0-9]+ - .*(Failed|Timeout|Exception)" "$L/ctest.log" | head -10
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/python/test_packed_int4.py \
  tests/python/test_group_wise_quant.py "tests/python/test_gpu.py::test_demo_fuses_int8_decode_on_gpu" \
  "tests/python/test_gpu.py::test_demo_times_every_model_on_gpu" > "$L/pytest_int4.log" 2>&1
echo "pytest int4 + groupwise rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_int4.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_int4.log" | head -12
timeout 150 python3 -m pytest -q -p no:cacheprovider -m "gpu and not slow" -n 16 tests/runtime/test_gemm_chain_cuda.py \
  -k "chain_matches_eager or cuda_matches_cpu or strided or bit_exact or non_fast_variant" > "$L/pytest_prologue.log" 2>&1
echo "pytest prologue rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_prologue.log"
grep -hE "^(FAILED|ERROR)" "$L/pytest_prologue.log" | head -12
OUT="$L/decode" timeout "${BENCH_LIMIT_S:-150}" python3 bench/bench_decode.py --force-fuse --m 1,16,64 \
  --kn 4096x14336,14336x4096 --chains w8g_bias,w4g_bias,w4g_linear_bias > "$L/decode.txt" 2>&1
echo "bench_decode rc $? ($(( $(date +%s) - t0 )) s)"
grep -A20 "^  M " "$L/decode.txt" | cut -c1-160
device_pack
