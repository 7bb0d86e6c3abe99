#!/usr/bin/env bash
# Nsight Compute, full set, on the int8 gemv (M=16, 4096x14336): the details page and the SASS
# source page (per-instruction executions and stall samples, CSV) in $OUT/ncu_gemv.tgz.
# Run on the GPU machine: OUT=... scripts/ncu-gemv.sh   (bench/gemv/NOTES.md reads them)
set -u
export FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=${FXFUSE_CACHE_DIR:-/tmp/fxfuse-cache} PYTHONUNBUFFERED=1
python3 -c "import fxfuse._C" 2>/dev/null ||
  python3 -m pip install --no-build-isolation --no-deps --no-index -e . > "$OUT/build.log" 2>&1 ||
  { tail -n 30 "$OUT/build.log"; exit 1; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -n 1)
mkdir -p "$OUT/r"
timeout 200 "$NCU" --clock-control none --profile-from-start off --set full --import-source no \
  -o "$OUT/r/i8" python3 bench/profile_kernels.py --only "int8 linear+bias M=16 4096x14336" > "$OUT/r/ncu.log" 2>&1
"$NCU" -i "$OUT/r/i8.ncu-rep" --page source --csv --print-source sass > "$OUT/r/sass.csv" 2>&1
"$NCU" -i "$OUT/r/i8.ncu-rep" --page details > "$OUT/r/details.txt" 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Issued Warp Per|No Eligible" \
  "$OUT/r/details.txt" | head -n 12
rm -f "$OUT/r/"*.ncu-rep
tar czf "$OUT/ncu_gemv.tgz" -C "$OUT" r && rm -rf "$OUT/r"
