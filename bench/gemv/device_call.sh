# Sourced by the gemv's one-call device scripts (bench/gemv/*_check.sh), from the repository root of the
# device's copy (no git there): `device_build` makes $L (the call's log folder under $OUT), sets the
# build and cache folders and builds the extension; `device_pack` leaves every log in $OUT/res.tgz (the
# device returns at most 8 files). t0: the call's start, for the scripts' "(N s)" stamps.
L="$OUT/logs"
t0=$(date +%s)
device_build() {
  mkdir -p "$L"
  export FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=/tmp/fxfuse-cache PYTHONPATH=python
  python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$L/build.log" 2>&1
  echo "build rc $? ($(( $(date +%s) - t0 )) s)"
}
device_pack() { tar czf "$OUT/res.tgz" -C "$OUT" logs; }
# The call's GPU tests in tests/runtime/test_gemm_chain_cuda.py: device_pytest EXPR WORKERS LIMIT_S runs those `-k EXPR`
# selects on WORKERS processes, cut at LIMIT_S, with one test seed (printed), its failures listed.
device_pytest() {
  source scripts/one-test-seed.sh
  timeout "$3" python3 -m pytest -q -p no:cacheprovider -m gpu -n "$2" tests/runtime/test_gemm_chain_cuda.py -k "$1" \
    > "$L/pytest.log" 2>&1
  echo "pytest rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest.log"
  grep -hE "^(FAILED|ERROR)" "$L/pytest.log" | head -10
}
# The call's CTest run (the GPU's NVRTC compiles and runtime tests), its failures listed.
device_ctest() {
  ctest --test-dir build-gpu --output-on-failure -j 16 --timeout 300 > "$L/ctest.log" 2>&1
  echo "ctest rc $? ($(( $(date +%s) - t0 )) s)"; grep -E "tests passed|tests failed" "$L/ctest.log"
  grep -E "^\s+[0-9]+ - .*(Failed|Timeout|Exception)" "$L/ctest.log" | head -10
}
# The 8-bit gemv's GPU tests: every product forced at every row tile (test_gemv_both_products_of_8bit_weights)
# beside the bit-exact int8 dequantization run with the knobs given as NAME=VALUE arguments (the form the
# call measures forced where the rule would not take it).
device_w8_tests() {
  (env "$@" timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 4 \
    tests/runtime/test_gemm_chain_cuda.py -k "bit_exact" > "$L/pytest_exact_forced.log" 2>&1; \
    echo "rc $?" >> "$L/pytest_exact_forced.log") &
  timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu -n 10 tests/runtime/test_gemm_chain_cuda.py \
    -k "both_products" > "$L/pytest_both.log" 2>&1
  echo "pytest both rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_both.log"
  wait
  echo "pytest exact ($*) ($(( $(date +%s) - t0 )) s)"; tail -2 "$L/pytest_exact_forced.log"
  grep -hE "^(FAILED|ERROR)" "$L"/pytest_*.log | head -10
}
# One A/B sweep in alternating processes (bench/gemv/sweep_inflight.py, two rounds): device_sweep NAME M CHAINS
# VARIANTS BUDGET_S [KN] (KN: comma-separated KxN, default all three); its table in $L/sweep_NAME.txt, its JSON under
# $L/NAME.
device_sweep() {
  OUT="$L/$1" timeout $(($5 + 50)) python3 bench/gemv/sweep_inflight.py --budget-s "$5" --rounds 2 --m "$2" \
    --chains "$3" --variants "$4" ${6:+--kn "$6"} > "$L/sweep_$1.txt" 2>&1
  echo "sweep $1 rc $? ($(( $(date +%s) - t0 )) s)"
}
