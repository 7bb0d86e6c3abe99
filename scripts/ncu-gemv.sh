#!/usr/bin/env bash
# Nsight Compute, full set, on the int8 gemv (M=16, 4096x14336) built with 4 and 8 warps per CTA:
# the details page and the SASS source page (per-instruction stall samples, CSV) in $OUT/ncu_gemv.tgz.
# Run on the GPU machine: OUT=... scripts/ncu-gemv.sh
set -u
export FXFUSE_BUILD_DIR=build-gpu FXFUSE_CACHE_DIR=/tmp/fxc PYTHONUNBUFFERED=1
python3 -c "import fxfuse._C" 2>/dev/null || python3 -m pip install --no-build-isolation --no-deps --no-index -e . > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -n 1)
mkdir -p $OUT/r
for w in 4 8; do
  FXFUSE_GEMV_WARPS=$w timeout 200 $NCU --clock-control none --profile-from-start off --set full --import-source no \
    -o $OUT/r/i8_w$w python3 bench/profile_kernels.py --only "int8 linear+bias M=16 4096x14336" > $OUT/r/ncu_w$w.log 2>&1
  $NCU -i $OUT/r/i8_w$w.ncu-rep --page source --csv --print-source sass > $OUT/r/sass_w$w.csv 2>&1
  $NCU -i $OUT/r/i8_w$w.ncu-rep --page details > $OUT/r/details_w$w.txt 2>&1
  echo "== warps $w"; grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Issued Warp Per|No Eligible|Executed Ipc Active|Block Limit" $OUT/r/details_w$w.txt | head -20
done
rm -f $OUT/r/*.ncu-rep
tar czf $OUT/ncu_gemv.tgz -C $OUT r && rm -rf $OUT/r
