#!/usr/bin/env bash
# One device call for bench/gemv/ab/pdl_all_kernels.patch (docs/STATUS.md "Next session" 2), run from
# the repository root of the device's copy (no git there): applies the patch, builds, runs the GPU
# tests of the Hopper, epilogue-alone, graph and dispatch paths with every kernel launched as a
# programmatic dependent, then A/B FXFUSE_PDL_ALL=0 / 1 in alternating processes (two rounds) on
# bench_decode's dense chains at decode batches of 64-256 rows (the Hopper kernel and cuBLAS + the
# epilogue kernel). Leaves $OUT/res.tgz (the device returns at most 8 files).
#   run: bash bench/gemv/pdl_all_check.sh   (~400-500 s on a fresh H200 machine)
set -u
L="$OUT/logs"
mkdir -p "$L"
export FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=/tmp/fxfuse-cache
patch -p1 < bench/gemv/ab/pdl_all_kernels.patch > "$L/patch.log" 2>&1
echo "patch rc $?"
python3 -m pip install -q --no-build-isolation --no-deps --no-index -e . > "$L/build.log" 2>&1
echo "build rc $?"
export PYTHONPATH=python
FXFUSE_PDL_ALL=1 timeout 220 python3 -m pytest -q -p no:cacheprovider -m gpu -n 12 tests/runtime/test_gemm_chain_cuda.py \
  -k "hopper or pointwise or graph or dispatch or programmatic or epilogue" > "$L/pytest.log" 2>&1
echo "pytest (FXFUSE_PDL_ALL=1) rc $?"; tail -2 "$L/pytest.log"
for round in 1 2; do
  order="0 1"; [ $round = 2 ] && order="1 0"
  for v in $order; do
    FXFUSE_PDL_ALL=$v OUT="$L/ab_r${round}_pdl$v" timeout 110 python3 bench/bench_decode.py --m 64,128,256 \
      --chains bias,bias_gelu > "$L/ab_r${round}_pdl$v.txt" 2>&1
    echo "round $round FXFUSE_PDL_ALL=$v rc $?"
  done
done
tar czf "$OUT/res.tgz" -C "$OUT" logs
python3 - "$L" <<'EOF'
import json, os, statistics, sys
L = sys.argv[1]
rows = {}
for name in sorted(os.listdir(L)):
    if not name.startswith("ab_r") or not name.endswith(".txt"):
        continue
    v = name[-5]
    for line in open(os.path.join(L, name)):
        if line.startswith("{"):
            r = json.loads(line)
            key = (r["M"], r["K"], r["N"], r["dtype"][:4], r["chain"])
            rows.setdefault(key, {}).setdefault(v, []).append((r["fxfuse"], r["fxfuse"] / r["mm"], r["path"]))
print(" M     K     N  dt   chain      pdl0 ms  pdl1 ms  1/0    x mm 0  x mm 1  path")
for k, d in sorted(rows.items()):
    if "0" not in d or "1" not in d:
        continue
    m0 = statistics.median(t for t, _, _ in d["0"]); m1 = statistics.median(t for t, _, _ in d["1"])
    r0 = statistics.median(x for _, x, _ in d["0"]); r1 = statistics.median(x for _, x, _ in d["1"])
    print(f"{k[0]:>3} {k[1]:>5} {k[2]:>5} {k[3]} {k[4]:<10} {m0:.4f}  {m1:.4f}  {m1/m0:.3f}  {r0:.3f}  {r1:.3f}  {d['1'][0][2]}")
EOF
