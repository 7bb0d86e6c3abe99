#!/usr/bin/env bash
# What a GPU lease runs, one part per device call (each fits the 600 s limit of one call).
# Short summaries on stdout; logs in one archive under $OUT (the device tool returns at most
# 8 files).
#   scripts/gpu-session.sh check          build, CTest, GPU tests (-n 14), smoke with the Hopper
#                                         kernel on every epilogue, compile/disk-hit times (~540 s fresh)
#   scripts/gpu-session.sh demo           the README's demo on the GPU (correctness and timings)
#   scripts/gpu-session.sh diff FIRST N   issue 8: N chunks of 100 differential cases from chunk
#                                         FIRST, kernels forced (~5 min per 5,000 cases);
#                                         FXFUSE_DIFF_FORCE=0: as in production (unfused path)
#   scripts/gpu-session.sh bench          host overhead, end-to-end chains with Inductor beside
#                                         them, with and without autotune
#   scripts/gpu-session.sh decode         issue 7: every decode shape and weight format against
#                                         cuBLAS and a same-traffic copy (bench/bench_decode.py)
#   scripts/gpu-session.sh probe          decode at M 1/16/64, the gemv split-K sizes side by side,
#                                         ncu on the kernels behind issues 6/7's gaps (~6 min)
#   scripts/gpu-session.sh gemv           the gemv's GPU tests, then the decode shapes' 8-bit
#                                         and bias chains at M 1/16/64 (~3 min)
#   scripts/gpu-session.sh ncu-gemv       Nsight Compute, full set, on the int8 gemv (M=16,
#                                         4096x14336): details page and SASS source page (CSV)
#   scripts/gpu-session.sh ncu-hopper     Nsight Compute, full set, on cuBLAS and the fused Hopper
#                                         kernel at 4096^3: executed instructions per SASS opcode
#                                         (bench/sass_opcode_counts.py), then clocks under load
#   scripts/gpu-session.sh ncu-edge       Nsight Compute, full set, at 4096x4864x896 (a partial
#                                         256-column tile) and 4096x4864x1024: 64x256 ping-pong
#                                         (forced) against the heuristic's tile (Run AG: 1.60-1.68x
#                                         mm against 128x256's 1.04-1.12x at N = 896)
#   scripts/gpu-session.sh tiles [SHAPES] every autotune candidate (Hopper tiles, the unfused path)
#                                         per bench chain and shape (MxKxN,...), back to back in one
#                                         process (bench/sm90/compare_tiles.py, ~2 min)
#   scripts/gpu-session.sh timers [SHAPES] compare_tiles with each round kept, the project bench at
#                                         issue 6's shapes, and bench/round_spread.py on both (~2 min)
#   scripts/gpu-session.sh ab PATCH[,PATCH...] [SHAPES]  the same comparison and the clock
#                                         under sustained load on the tree, then with each PATCH
#                                         applied alone (rebuilt), e.g. bench/sm90/ab/*.patch: what
#                                         one code change costs, kernels side by side (~2 min per
#                                         variant at two shapes); AB_TESTS=1: the Hopper GPU tests
#                                         with each patch applied too (~75 s more per patch;
#                                         AB_TESTS_K: another pytest -k selection)
#   scripts/gpu-session.sh decode-eager [SHAPES]  decode batches end to end with eager in the same
#                                         run: the planner's choice (and, for the chains it leaves
#                                         to eager, the op's unfused path), then every epilogue
#                                         forced onto the Hopper kernel (~3 min)
#   scripts/gpu-session.sh unfused [SHAPES]  the op's unfused path (cuBLAS + one epilogue kernel)
#                                         against eager in the forms its rule does not take yet
#                                         (nn.Linear's f32 product, narrow N, decode sizes) beside
#                                         the measured mm form (~3 min)
#   scripts/gpu-session.sh narrow [SHAPES]  narrow N end to end against eager, then every autotune
#                                         candidate (the shapes session 17's rules extrapolate, ~3 min)
#   scripts/gpu-session.sh retime [SHAPES] the tile rules at the shapes they were written from, with
#                                         the interleaved timer: compare_tiles, tile_rule_check (~4 min)
#   scripts/gpu-session.sh rules [SHAPES] the tile rule and refusals where they decide (Run AH's
#                                         work share on both sides of its threshold, ...): every
#                                         autotune candidate, checked by bench/sm90/tile_rule_check.py,
#                                         then end to end against eager (~2 min)
#   scripts/gpu-session.sh activations [SHAPES]  session 28's SiLU / GELU-alone rules: their dispatch
#                                         GPU tests, then the planner's choice end to end against
#                                         eager at the shapes they changed and out of sample (~3 min)
#   scripts/gpu-session.sh oneround [SHAPES]  sessions 31-32's one-round rule (128x128 cooperative where
#                                         64x256 ping-pong runs one round at <= 256 rows): dispatch
#                                         cases, every candidate, end to end, out of sample (~6 min)
#   scripts/gpu-session.sh midrows [SHAPES]  one matrix of 257-511 rows (GELU chains taken since Run
#                                         AR, SiLU alone refused): every autotune candidate beside
#                                         cuBLAS + the epilogue kernel (compare_tiles, tile_rule_check),
#                                         then every epilogue forced against eager (~3 min)
#   scripts/gpu-session.sh inductor [SHAPES]  the backend's rule against Inductor where it decides
#                                         (codegen/inductor_rule.cpp): torch.compile, the backend and
#                                         the backend made to fuse, round-robin, also replayed from
#                                         CUDA graphs; mm chains, then nn.Linear's (~3 min at the six
#                                         default shapes; INDUCTOR_ROUNDS: rounds, default 3)
#   scripts/gpu-session.sh hopper FIRST   the Hopper kernel on every epilogue: smoke, 12
#                                         differential chunks from FIRST (half of the cases
#                                         Hopper-plain), ~8 min (the end-to-end table with every
#                                         epilogue forced: the bench part)
# The build persists on a warm machine; a fresh one rebuilds (~60 s) in every part.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 FXFUSE_CACHE_DIR=${FXFUSE_CACHE_DIR:-/tmp/fxfuse-cache} FXFUSE_BUILD_DIR=build-gpu
OUTDIR=${OUT:-gpu-logs}; LOGS=$OUTDIR/logs; mkdir -p "$LOGS"
rebuild() { python3 -m pip install --no-build-isolation --no-deps --no-index -e . > "$LOGS/$1" 2>&1; }
build() { python3 -c "import fxfuse._C" 2>/dev/null || rebuild build.log || { tail -n 30 "$LOGS/build.log"; exit 1; }; }
# Nsight Compute, full set, on bench/profile_kernels.py's cases named by $1: the SASS source page
# (CSV, executed instructions and stall samples per instruction) and the details page under $LOGS
# (file names suffixed with $2 when given)
ncu_full() {
  local ncu; ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
  timeout 200 "$ncu" --clock-control none --profile-from-start off --set full --import-source no \
    -o "$LOGS/prof" python3 bench/profile_kernels.py --only "$1" > "$LOGS/ncu${2:-}.log" 2>&1
  "$ncu" -i "$LOGS/prof.ncu-rep" --page source --csv --print-source sass > "$LOGS/sass${2:-}.csv" 2>&1
  "$ncu" -i "$LOGS/prof.ncu-rep" --page details > "$LOGS/details${2:-}.txt" 2>&1
  rm -f "$LOGS/prof.ncu-rep"
}
# The planner's dispatch GPU cases (tests/runtime/test_gemm_chain_cuda.py *_dispatch_by_the_heuristic):
# which kernel and tile each shape gets, one launch each against float64
dispatch_cases() {
  timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/runtime/test_gemm_chain_cuda.py \
    -k "dispatch_by_the_heuristic" -n 8 > "$LOGS/dispatch_tests.txt" 2>&1
  tail -n 1 "$LOGS/dispatch_tests.txt"; grep -E "^(FAILED|ERROR)" "$LOGS/dispatch_tests.txt" | head -n 20
}
# compare_tiles at shapes $3 (timeout $2 s; its JSON is written row by row), then tile_rule_check
# on it: the cells where the heuristic's tile is not the fastest or within 2 % (logs named $1_*)
tiles_checked() {
  OUT=$LOGS/tiles timeout "$2" python3 bench/sm90/compare_tiles.py --shapes "$3" > "$LOGS/$1_tiles.txt" 2>&1
  local json; json=$(realpath "$LOGS/tiles/compare_tiles.json")
  (cd bench/sm90 && PYTHONPATH=..:../../python python3 tile_rule_check.py "$json") > "$LOGS/$1_check.txt" 2>&1
  grep -v "rule/best 1.0[01]" "$LOGS/$1_check.txt" | tail -n 60
}
part=${1:-check}
case "$part" in
  check)
    OUT=$LOGS/check scripts/gpu-check.sh -n 14 --timeout=200 -p no:cacheprovider -m "gpu and not slow" \
      > "$LOGS/gpu-check.txt" 2>&1
    tail -n 8 "$LOGS/gpu-check.txt"; grep -hE "^(FAILED|ERROR)" "$LOGS/check/pytest_gpu.log" | head -n 25
    FXFUSE_POISON_OUTPUTS=1 FXFUSE_SM90_ALL_EPILOGUES=1 timeout 150 python3 scripts/gpu_smoke.py > "$LOGS/smoke.txt" 2>&1
    echo "smoke (Hopper kernel on every epilogue): $(grep -c '^ok' "$LOGS/smoke.txt") ok, $(grep -c '^BAD' "$LOGS/smoke.txt") bad"
    timeout 150 python3 bench/compile_time.py --repeats 1 > "$LOGS/compile_time.txt" 2>&1; cat "$LOGS/compile_time.txt"
    ;;
  demo)
    # the README's main job on the GPU (scripts/demo.sh without its set-up, which needs a network):
    # every model rewritten, checked against eager, timed against eager and torch.compile (~1-2 min)
    build
    timeout 300 python3 -m fxfuse.demo > "$LOGS/demo.txt" 2>&1
    echo "demo (rc $?): $(grep -c 'PASS$' "$LOGS/demo.txt") PASS, $(grep -c 'FAIL$' "$LOGS/demo.txt") FAIL"
    grep -E "^(===|time:|chains fused)" "$LOGS/demo.txt"
    ;;
  diff)
    build
    FXFUSE_DIFF_LOG=$OUTDIR/differential.jsonl OUT=$LOGS scripts/gpu-differential.sh "$2" "$3" 16 "${4:-480}"
    ;;
  bench)
    build
    python3 bench/host_overhead.py > "$LOGS/host_overhead.txt" 2>&1; tail -n 6 "$LOGS/host_overhead.txt"
    # the ATen path itself (the M=48 row without the unfused path's epilogue kernel)
    FXFUSE_NO_POINTWISE=1 python3 bench/host_overhead.py > "$LOGS/host_overhead_aten.txt" 2>&1
    grep "M=48" "$LOGS/host_overhead_aten.txt"
    OUT=$LOGS timeout 200 python3 bench/bench_chains.py --all-epilogues --compile --shapes 7 > "$LOGS/bench_all.txt" 2>&1
    grep -A30 "^ *shape" "$LOGS/bench_all.txt" | head -n 30
    OUT=$LOGS FXFUSE_AUTOTUNE=1 timeout 200 python3 bench/bench_chains.py --all-epilogues --shapes 7 > "$LOGS/bench_autotune.txt" 2>&1
    grep -A30 "^ *shape" "$LOGS/bench_autotune.txt" | head -n 30
    ;;
  decode)
    build
    OUT=$LOGS timeout 420 python3 bench/bench_decode.py > "$LOGS/bench_decode.txt" 2>&1
    grep -A140 "^copy bandwidth" "$LOGS/bench_decode.txt" | grep -E "^copy|^ *M |NOT met|targets met"
    ;;
  probe)
    # issue 7 with device-time timing, the gemv's split-K rule re-measured, and Nsight Compute on
    # the kernels behind the open gaps (bench/profile_kernels.py)
    build
    OUT=$LOGS timeout 200 python3 bench/bench_decode.py --m 1,16,64 > "$LOGS/bench_decode.txt" 2>&1
    grep -E "^copy|targets met" "$LOGS/bench_decode.txt" | tail -n 2
    grep -E " bfloat16 +(bias|w8_linear_bias|f8ch_bias) " "$LOGS/bench_decode.txt" | cut -c1-122
    for s in 1 2 4 8; do
      OUT=$LOGS timeout 50 python3 bench/bench_decode.py --split-k $s --m 1,16,64 --kn 4096x14336,14336x4096 \
        --chains bias,w8_linear_bias > "$LOGS/decode_split_k$s.txt" 2>&1
      echo "split-K $s:"; grep -E " bfloat16 +(bias|w8_linear_bias) " "$LOGS/decode_split_k$s.txt" | cut -c1-100
    done
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    timeout 150 "$NCU" --clock-control none --profile-from-start off --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      --section SchedulerStats python3 bench/profile_kernels.py > "$LOGS/ncu.txt" 2>&1
    grep -E "profiled:|^  [A-Za-z_]|Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occ|Theoretical Occ|Warp Cycles Per Issued|No Eligible|Grid Size" \
      "$LOGS/ncu.txt" | cut -c1-110 | head -n 80
    timeout 90 python3 bench/compile_time.py --repeats 1 > "$LOGS/compile_time.txt" 2>&1; cat "$LOGS/compile_time.txt"
    ;;
  gemv)
    build
    timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/runtime/test_gemm_chain_cuda.py \
      -k "gemv or split_k or int8 or fp8" > "$LOGS/gemv_tests.txt" 2>&1
    tail -n 3 "$LOGS/gemv_tests.txt"; grep -E "^(FAILED|ERROR)" "$LOGS/gemv_tests.txt" | head -n 20
    OUT=$LOGS timeout 100 python3 bench/bench_decode.py --m 1,16,64 \
      --chains bias,w8_linear_bias,w8_bias,f8ch_bias > "$LOGS/decode_gemv.txt" 2>&1
    grep -E "^copy|targets met" "$LOGS/decode_gemv.txt" | tail -n 2
    grep -E " bfloat16 +(bias|w8_linear_bias|w8_bias|f8ch_bias) " "$LOGS/decode_gemv.txt" | cut -c1-122
    ;;
  ncu-gemv)
    # per-instruction executions and stall samples, read per opcode in bench/gemv/NOTES.md
    build
    ncu_full "int8 linear+bias M=16 4096x14336"
    grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Issued Warp Per|No Eligible" \
      "$LOGS/details.txt" | head -n 12
    ;;
  ncu-hopper)
    # issue 6: where the fused Hopper kernel's instructions go at 4096^3 (2.1x cuBLAS's; power-
    # bound under sustained load, bench/sm90/NOTES.md session 8), per SASS opcode, beside cuBLAS
    build
    ncu_full "4096^3"
    python3 bench/sass_opcode_counts.py "$LOGS/sass.csv" --top 30 | tee "$LOGS/opcodes.txt"
    timeout 40 python3 bench/sm90/clocks_under_load.py | tee "$LOGS/clocks.txt"
    ;;
  ncu-edge)
    build
    FXFUSE_SM90_PINGPONG_TILE=64x256 ncu_full "x4864x" _64x256pp
    ncu_full "x4864x" _heuristic
    for f in "$LOGS"/details_*.txt; do
      # the cases in profiling order (the kernels' names and grids do not tell N = 896 from 1024)
      log=${f/details_/ncu_}
      echo "== $f: $(grep -h '^profiled:' "${log%.txt}.log" | sed 's/^profiled: //' | tr '\n' ';')"
      grep -E "^  [a-z_]+.*\(|Duration|SM Frequency|Compute \(SM\) Throughput|L2 Cache Throughput|DRAM Throughput|Registers Per|Achieved Occupancy" "$f" | head -n 40
    done
    ;;
  tiles)
    build
    OUT=$LOGS timeout 300 python3 bench/sm90/compare_tiles.py ${2:+--shapes "$2"} > "$LOGS/compare_tiles.txt" 2>&1
    grep -A40 "^ *shape" "$LOGS/compare_tiles.txt" | head -n 40
    ;;
  timers)
    # issue 6's figures under the interleaved timer (bench/RESULTS.md Run AP; session 27):
    # compare_tiles (every candidate compiled first, then all and cuBLAS mm timed with their calls
    # interleaved, each round kept), then the bench at issue 6's shapes (interleaved rounds, a first
    # one discarded), then how far each variant's rounds spread
    build
    OUT=$LOGS/tiles timeout 200 python3 bench/sm90/compare_tiles.py --shapes "${2:-4096x14336x4096,4096x4096x4096}" \
      > "$LOGS/timers_tiles.txt" 2>&1
    grep -A20 "^ *shape" "$LOGS/timers_tiles.txt" | head -n 20
    OUT=$LOGS timeout 240 python3 bench/bench_chains.py --which 1,5,6,7,8,9,10 > "$LOGS/timers_e2e.txt" 2>&1
    grep -A40 "^ *shape" "$LOGS/timers_e2e.txt" | head -n 40
    python3 bench/round_spread.py "$LOGS/tiles/compare_tiles.json" "$LOGS/bench_chains.json" | head -n 40
    ;;
  ab)
    build
    shapes=${3:-4096x4096x4096,4096x1024x4096}
    variant() {  # variant NAME: compare_tiles and clocks_under_load on the library as built now
      mkdir -p "$LOGS/$1"
      OUT=$LOGS/$1 timeout 200 python3 bench/sm90/compare_tiles.py --shapes "$shapes" > "$LOGS/ab_$1.txt" 2>&1
      timeout 40 python3 bench/sm90/clocks_under_load.py > "$LOGS/clocks_$1.txt" 2>&1
      if [ "${AB_TESTS:-0}" = 1 ] && [ "$1" != tree ]; then
        timeout 200 python3 -m pytest -q -p no:cacheprovider -m "gpu and not slow" tests -n 14 \
          -k "${AB_TESTS_K:-hopper or autotune or residual or special_values or staged or sm90}" > "$LOGS/tests_$1.txt" 2>&1
        echo "tests with $1: $(tail -n 1 "$LOGS/tests_$1.txt")"
      fi
    }
    variant tree
    IFS=, read -ra patches <<< "$2"
    for pa in "${patches[@]}"; do
      name=$(basename "$pa" .patch)
      git apply "$pa" || { echo "$pa does not apply"; continue; }
      if rebuild "build_$name.log"; then variant "$name"; else tail -n 30 "$LOGS/build_$name.log"; fi
      git apply -R "$pa"
    done
    rebuild build_restored.log
    for f in "$LOGS"/ab_*.txt; do
      echo "== ${f#"$LOGS"/ab_}"; grep -A16 "^ *shape" "$f" | head -n 16; grep -v "^ *case" "${f/ab_/clocks_}"
    done
    ;;
  decode-eager)
    build
    shapes=${2:-100x14336x4096,128x14336x4096,144x4096x14336,160x4096x14336,224x4096x14336,256x4096x14336}
    OUT=$LOGS timeout 240 python3 bench/bench_chains.py --op-unfused --mkn "$shapes" > "$LOGS/planner.txt" 2>&1
    grep -A60 "^ *shape" "$LOGS/planner.txt" | head -n 60
    OUT=$LOGS/forced timeout 200 python3 bench/bench_chains.py --all-epilogues --mkn "$shapes" > "$LOGS/forced.txt" 2>&1
    grep -A30 "^ *shape" "$LOGS/forced.txt" | head -n 30
    ;;
  unfused)
    # pass/profitability.cpp unfusedPathBeatsEager was measured on the `torch.mm(x, w) + b` form
    # only (bench/RESULTS.md Run AE); the linear_* chains have an f32 product
    build
    shapes=${2:-16x4096x4096,32x4096x14336,128x14336x4096,4096x14336x4096,4096x4096x256,256x4096x64}
    OUT=$LOGS timeout 300 python3 bench/bench_chains.py --op-unfused --mkn "$shapes" \
      --chains bias_gelu,bias_relu_cast,linear_gelu,linear_relu_cast,linear_resid > "$LOGS/unfused.txt" 2>&1
    grep -A80 "^ *shape" "$LOGS/unfused.txt" | head -n 80
    ;;
  narrow)
    # narrow N (bench/RESULTS.md Run AF): what session 17's rules extrapolate, end to end against
    # eager (the planner's choice; for chains it leaves to eager, the op's unfused path), then every
    # autotune candidate side by side
    build
    shapes=${2:-1024x1024x256,2048x4096x128,4096x4096x320,4096x4096x448,8192x4096x64,16384x4096x128,1024x4096x256,4096x4096x256}
    OUT=$LOGS timeout 280 python3 bench/bench_chains.py --op-unfused --mkn "$shapes" \
      --chains bias_gelu,bias_gelu_resid,silu,bias_relu_cast,linear_relu_cast > "$LOGS/narrow.txt" 2>&1
    grep -A60 "^ *shape" "$LOGS/narrow.txt" | head -n 60
    OUT=$LOGS/tiles timeout 150 python3 bench/sm90/compare_tiles.py --shapes "$shapes" > "$LOGS/narrow_tiles.txt" 2>&1
    grep -A40 "^ *shape" "$LOGS/narrow_tiles.txt" | head -n 40
    ;;
  retime)
    # The Hopper tile rules of sessions 14-25 at the shapes they were written from, with the
    # interleaved timer (every rule's cells were block-timed before session 27, bench/RESULTS.md
    # Run AP): compare_tiles, then tile_rule_check (is the rule's tile still the fastest or within
    # 2 %?). M x K x N, by rule (hopper_tile_choice.cpp): 128x128 ping-pong for 64x256 at K <= 2048
    # (4096 x 1024 x 4096, 16384 x 1024 x 4096, 8192 x 2048 x 4096); 128x128 ping-pong before a
    # 128x256 of three or more rounds at 257-1024 rows (1024 x 4096 x 11008, 768 x 4096 x 14336);
    # two rounds of 128x256 at K = 1024-3072 (1024 x 1024 x 8192, 512 x 3072 x 14336); 128x256 at
    # half 64x256's rounds, K = 4096-8192 (4096^3, 2048 x 8192 x 4096, 3072 x 4096 x 4096); 64x128
    # by work share at K <= 3072 (3072 x 1024 x 768, 4096 x 3072 x 768); the partial 256-column
    # tile (4096 x 4096 x 1408, 8192 x 4096 x 640); N not a multiple of 64 (4096 x 4096 x 4304);
    # the tile per size up to 1024 rows (512 x 4096 x 4096, 640 x 4096 x 8192); decode batches
    # (128 x 4096 x 14336, 256 x 4096 x 14336); ~4 min. `rules` has the refusals' shapes. (A chain
    # the heuristic refuses, SiLU at 128 rows here, has the sm80 kernel among its candidates, whose
    # long calls lift the clock of that whole row: compare its ratios with care.)
    build
    shapes=${2:-4096x1024x4096,16384x1024x4096,8192x2048x4096,1024x4096x11008,768x4096x14336,1024x1024x8192,512x3072x14336,4096x4096x4096,2048x8192x4096,3072x4096x4096,3072x1024x768,4096x3072x768,4096x4096x1408,8192x4096x640,4096x4096x4304,512x4096x4096,640x4096x8192,128x4096x14336,256x4096x14336}
    tiles_checked retime 480 "$shapes"
    ;;
  rules)
    # compare_tiles, tile_rule_check and end to end at the shapes where the rules decide (M x K x
    # N): Run AH's work-share refusal on both sides of its threshold (3072 x 4096 x 768, 2048 x
    # 4096 x 1152, 4096 x 4096 x 640 refused; 2048 x 4864 x 896, 5120 x 4096 x 768 taken; 4096 x
    # 4096 x 768 on it), 128x128 at N <= 128 (10240 x 4096 x 128, 8512 x 4096 x 64), the partial
    # 256-column tile (8192 x 4096 x 1152; SiLU alone there left to eager by the pass), the K >=
    # 8192 refusal at three row tiles (192 x 14336 x 4096), 128x256 in two rounds (2048 x 4096 x
    # 4096), split-K at N = 64 (4096 x 4096 x 64), session 21's named breach (64x256 at a partial
    # 256-column tile passing the work share where 128x128 would not: 2048 x 4096 x 2432, 8192 x
    # 8192 x 1152, 0.99-1.07x the unfused path's time in Runs AJ and AP)
    build
    shapes=${2:-3072x4096x768,2048x4096x1152,4096x4096x640,2048x4864x896,5120x4096x768,4096x4096x768,10240x4096x128,8512x4096x64,8192x4096x1152,192x14336x4096,2048x4096x4096,4096x4096x64,2048x4096x2432,8192x8192x1152}
    tiles_checked rules 280 "$shapes"
    OUT=$LOGS timeout 260 python3 bench/bench_chains.py --op-unfused --mkn "$shapes" \
      --chains bias_gelu,bias_gelu_resid,silu,bias_relu_cast > "$LOGS/rules_e2e.txt" 2>&1
    # the rows where fxfuse (the planner's choice) ran slower than eager
    grep -A70 "^ *shape" "$LOGS/rules_e2e.txt" | awk '(NF >= 10 && $10 < 1.0) || /shape/' | head -n 40
    ;;
  activations)
    # codegen/config_table.cpp epilogueRefusal and siluAgainstEagerRefusal (bench/RESULTS.md Run AQ):
    # SiLU alone on decode batches in one round of 64x128 (from 192 rows, K >= 4096) or of 64x256 /
    # 128x256 (K = 4096), from 1536 rows and N >= 512 at K <= 14336, refused on 128x128 in one round
    # at N <= 128 under a 0.29 share; GELU(tanh) alone from 512 rows to K = 14336
    build
    dispatch_cases
    shapes=${2:-192x4096x4096,256x4096x4096,128x4096x14336,128x4096x12288,192x4096x11008,256x4096x11008,256x8192x4096,2048x4864x896,3072x8192x4096,4096x11008x4096,4096x14336x4096,12288x14336x4096,8192x8192x8192,8512x4096x64,12288x4096x64,4096x4096x448,512x14336x4096,6144x14336x4096,3072x14336x11008}
    OUT=$LOGS timeout 300 python3 bench/bench_chains.py --rounds 5 --op-unfused --mkn "$shapes" \
      --chains silu,bias_gelu > "$LOGS/activations_e2e.txt" 2>&1
    grep -A40 "^ *shape" "$LOGS/activations_e2e.txt" | head -n 40
    ;;
  oneround)
    # bench/RESULTS.md Runs AS call 5, AT call 2: up to 256 rows, where 64x256 ping-pong runs one
    # tile per CTA (one round: one consumer idles), every epilogue takes 128x128 cooperative at K =
    # 2048-6144 (sm90 tileFillingTheSms). Its dispatch cases, then every autotune candidate and the
    # planner's choice end to end at shapes (default: Run AT call 2's, where the rule was measured)
    build
    dispatch_cases
    shapes=${2:-128x4096x16384,256x4096x7168,128x4096x12800,256x2048x8192,256x6144x8192,128x6144x14336}
    tiles_checked oneround 200 "$shapes"
    OUT=$LOGS timeout 150 python3 bench/bench_chains.py --rounds 5 --op-unfused --mkn "$shapes" \
      --chains bias_gelu_resid,bias_gelu,bias_relu_cast,silu > "$LOGS/oneround_e2e.txt" 2>&1
    grep -A30 "^ *shape" "$LOGS/oneround_e2e.txt" | head -n 30
    ;;
  midrows)
    # bench/RESULTS.md Runs AQ call 9 and AR call 2 (the default shapes, from which the mid-row rules
    # were written): forced, the GELU chains won at every shape, SiLU alone lost at 288 / 320 x 4096 x
    # 4096; with a bias the planner's alternative is the op's unfused path (cuBLAS + one epilogue
    # kernel), which compare_tiles times ("aten"). Pass other SHAPES to check the rules out of sample.
    build
    shapes=${2:-320x4096x4096,384x4096x4096,448x4096x4096,384x4096x14336,320x4096x11008,448x8192x4096,384x14336x4096,288x4096x4096,480x4096x8192}
    tiles_checked midrows 300 "$shapes"
    OUT=$LOGS timeout 200 python3 bench/bench_chains.py --all-epilogues --rounds 5 --mkn "$shapes" > "$LOGS/midrows_forced.txt" 2>&1
    grep -A40 "^ *shape" "$LOGS/midrows_forced.txt" | head -n 40
    ;;
  inductor)
    build
    shapes=${2:-512x4096x4096,768x4096x4096,1024x4096x4096,2048x4096x4096,1024x4096x14336,2048x4096x14336}
    logs=$(realpath "$LOGS")
    rounds=${INDUCTOR_ROUNDS:-3}  # more rounds for a closer median at the shapes the rule ties on
    (cd bench && OUT=$logs/inductor_mm timeout 260 python3 backend_rule_check.py --graphs --rounds "$rounds" \
      --mkn "$shapes") > "$LOGS/inductor_mm.txt" 2>&1
    (cd bench && OUT=$logs/inductor_linear timeout 200 python3 backend_rule_check.py --graphs --rounds "$rounds" \
      --chains linear_gelu,linear_relu_cast,linear_resid --mkn "$shapes") > "$LOGS/inductor_linear.txt" 2>&1
    grep -vE "Warning|warn\(" "$LOGS/inductor_mm.txt" | tail -n 40; grep -vE "Warning|warn\(" "$LOGS/inductor_linear.txt" | tail -n 30
    ;;
  hopper)
    build
    # worst case within the 600 s of one device call: build 60 + smoke 100 + differential 400. A
    # chunk with the wide-N decode cases took 200-213 s (session 18: 3 of 14 chunks finished in
    # 240 s, none of the planner half), so 12 chunks get 400 s; the end-to-end table it ran
    # before is in the bench part (bench_all.txt)
    FXFUSE_POISON_OUTPUTS=1 FXFUSE_SM90_ALL_EPILOGUES=1 timeout 100 python3 scripts/gpu_smoke.py > "$LOGS/smoke.txt" 2>&1
    echo "smoke (Hopper kernel on every epilogue): $(grep -c '^ok' "$LOGS/smoke.txt") ok, $(grep -c '^BAD' "$LOGS/smoke.txt") bad"
    # half the cases plain 16-bit operands at Hopper sizes (only the epilogue random), so the
    # sm90-all half runs the Hopper kernel on about 45 % of its cases (3 % without); a fifth of
    # those at decode sizes with a long K, which run the split-K tile (session 14); at two row
    # tiles (FXFUSE_DIFF_HOPPER_DECODE_TWO_TILES, session 15's split-K) none since session 16:
    # the heuristic leaves those shapes to the unfused path; the decode cases at N of 32-66
    # column tiles (FXFUSE_DIFF_HOPPER_DECODE_WIDE_N): split-K needs 32 tiles since session 17
    FXFUSE_DIFF_HOPPER_PLAIN=0.5 FXFUSE_DIFF_HOPPER_DECODE=${FXFUSE_DIFF_HOPPER_DECODE:-0.2} \
      FXFUSE_DIFF_HOPPER_DECODE_TWO_TILES=${FXFUSE_DIFF_HOPPER_DECODE_TWO_TILES:-0} \
      FXFUSE_DIFF_HOPPER_DECODE_WIDE_N=${FXFUSE_DIFF_HOPPER_DECODE_WIDE_N:-1} \
      FXFUSE_DIFF_LOG=$OUTDIR/differential.jsonl OUT=$LOGS \
      scripts/gpu-differential.sh "$2" 12 16 400 | head -n 3
    ;;
  *) echo "usage: $0 check | diff FIRST N [SECONDS] | bench | decode | probe | gemv | ncu-gemv | ncu-hopper | ncu-edge | tiles [SHAPES] | timers [SHAPES] | ab PATCH [SHAPES] | decode-eager [SHAPES] | unfused [SHAPES] | narrow [SHAPES] | rules [SHAPES] | activations [SHAPES] | midrows [SHAPES] | hopper FIRST"; exit 2 ;;
esac
tar czf "$OUTDIR/gpu-logs-$part${2:+-${2//[^A-Za-z0-9_.-]/_}}.tgz" -C "$OUTDIR" logs && rm -rf "$LOGS"
