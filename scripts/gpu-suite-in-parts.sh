#!/usr/bin/env bash
# The whole GPU check in one device call of <= 600 s, sourced on the GPU machine from the repository root
# after `source bench/gemv/device_call.sh; device_build` (it writes to $L and stamps with $t0):
#   source bench/gemv/device_call.sh; device_build; source scripts/gpu-suite-in-parts.sh; device_pack
# CTest (all, ~20 s), then the GPU tests without the slow ones in two parts, as scripts/gpu-check.sh runs
# them in one: the forced-product children and autotune at -n 10 (~100 s), the rest at -n 16 (~220-300 s); one
# part at -n 14 oversubscribes the GPU's memory with the forced products' children. Last, the host overhead
# per call (bench/host_overhead.py, ~20 s), its table printed at the end.
source scripts/one-test-seed.sh
ctest --test-dir build-gpu --output-on-failure -j 16 --timeout 300 > "$L/ctest.log" 2>&1
echo "ctest rc $? ($(( $(date +%s) - t0 )) s)"; grep -E "tests passed|tests failed" "$L/ctest.log"
grep -E "^\s+[0-9]+ - .*(Failed|Timeout|Exception)" "$L/ctest.log" | head -10
suite_part() {  # suite_part NAME WORKERS TIMEOUT_S -k EXPRESSION
  FXFUSE_TEST_CHILD_TIMEOUT=200 timeout "$3" python3 -m pytest -q -p no:cacheprovider -m "gpu and not slow" \
    -n "$2" tests -k "$4" > "$L/pytest_$1.log" 2>&1
  echo "pytest $1 rc $? ($(( $(date +%s) - t0 )) s)"; tail -1 "$L/pytest_$1.log"
  grep -hE "^(FAILED|ERROR)" "$L/pytest_$1.log" | head -10
}
suite_part products 10 150 "both_products or every_gemv_product"
# 605 tests: 95 % done at 280 s at -n 14 on an H200 (session 52, after the products), 215 s at -n 16 on an H100
# (bench/RESULTS.md Run BN call 3); 320 s keeps a cold build, CTest and the products inside the call's 600 s
suite_part rest 16 "${REST_LIMIT_S:-320}" "not both_products and not every_gemv_product"
timeout 60 python3 bench/host_overhead.py > "$L/host_overhead.txt" 2>&1
echo "host overhead rc $? ($(( $(date +%s) - t0 )) s)"; cat "$L/host_overhead.txt"
