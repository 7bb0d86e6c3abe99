// hopper_tile_choice.cpp — see hopper_tile_choice.h. Every rule cites the measurement behind it
// (bench/RESULTS.md runs, compare_tiles on the H200); bench/sm90/stored_cells.py and
// bench/sm90/planner_grid.py check a change against every stored cell and over a grid of sizes.
#include "codegen/hopper_tile_choice.h"

#include <algorithm>
#include <vector>

namespace fxfuse {
namespace sm90 {

namespace {
long long tilesOf(long long M, long long N, long long batch, long long rows, long long cols) {
  return batch * ((M + rows - 1) / rows) * ((N + cols - 1) / cols);
}
long long roundsOf(long long tiles, int num_sms) {
  const long long sms = std::max(1, num_sms);
  return (tiles + sms - 1) / sms;
}
}  // namespace

long long tileCount(long long M, long long N, long long batch, const GemmConfig& c) {
  return tilesOf(M, N, batch, c.bm, c.bn);
}

long long roundsOfTiles(long long M, long long N, long long batch, const GemmConfig& c, int num_sms) {
  return roundsOf(tileCount(M, N, batch, c), num_sms);
}

double slotShare(long long M, long long N, long long batch, long long rows, long long cols, int num_sms,
                 long long* tiles) {
  const long long count = tilesOf(M, N, batch, rows, cols);
  if (tiles) *tiles = count;
  const double slots = double(roundsOf(count, num_sms)) * double(std::max(1, num_sms)) * double(rows) * double(cols);
  return double(M) * double(N) * double(batch) / slots;
}

namespace {
// A Hopper tile's throughput on whole tiles, relative to 128x256 cooperative: the time of one
// round of tiles per unit of K at K = 4096 over the tile's area (Run AH, bias+ReLU+cast, 1025-8192
// rows: 128x256 cooperative 11.1-12.0 ns per round and K for 32768 outputs, 64x256 ping-pong
// 5.7-6.2 for 16384, 128x128 5.6-6.5, 64x128 ping-pong 3.5-4.1 for 8192). 64x128 pays its
// epilogue and its B loads over half the MMA work per tile.
double tileThroughput(const GemmConfig& g) {
  if (g.bm == 128 && g.bn == 256) return 1.0;
  if (g.bm == 64 && g.bn == 256) return 0.97;
  if (g.bm == 128 && g.bn == 128) return 0.94;
  return 0.76;  // 64x128
}
}  // namespace

double tileWorkShare(long long M, long long N, long long batch, const GemmConfig& c, int num_sms) {
  return slotShare(M, N, batch, c.bm, c.bn, num_sms) * tileThroughput(c);
}

namespace {
GemmConfig tileConfig(int bm, int bn, int stages, bool pingpong) {
  GemmConfig c;
  c.bm = bm;
  c.bn = bn;
  c.stages = stages;
  c.pingpong = pingpong;
  c.consumers = pingpong ? 2 : bm / 64;
  return c;
}

// The output area the SMs' tile slots cover: rounds of num_sms tiles, each of bm x bn. Every
// tile covers the same real outputs (M x N x batch), so the smallest slot area is the largest
// share of the slots doing real work (tiles partly past M or N count only their inside part).
long long slotArea(long long M, long long N, long long batch, const GemmConfig& c, int num_sms) {
  return roundsOfTiles(M, N, batch, c, num_sms) * c.bm * c.bn;
}

// Where a slot-area tie takes the larger tile, partial row tile or not (tileFillingTheSms, Run AR):
// one matrix of 257-1024 rows.
bool largerTileTakesTies(long long M, long long batch) { return batch == 1 && M > 256 && M <= 1024; }
}  // namespace

double judgedWorkShare(long long M, long long N, long long K, long long batch, const GemmConfig& chosen,
                       int num_sms) {
  const double share = tileWorkShare(M, N, batch, chosen, num_sms);
  const GemmConfig t64x256 = tileConfig(64, 256, 5, true);
  const bool tie_it_took = largerTileTakesTies(M, batch) && chosen.bm == 128 && M % 128 != 0 && M % 64 == 0 &&
                           slotArea(M, N, 1, chosen, num_sms) == slotArea(M, N, 1, t64x256, num_sms);
  const bool square_in_its_place = batch == 1 && M > 1024 && K >= 4096 && N % 64 == 0 && chosen.bm == 128 &&
                                   chosen.bn == 128 && chosen.pingpong &&
                                   roundsOfTiles(M, N, 1, chosen, num_sms) == roundsOfTiles(M, N, 1, t64x256, num_sms);
  return tie_it_took || square_in_its_place ? std::max(share, tileWorkShare(M, N, 1, t64x256, num_sms)) : share;
}

namespace {
// The tile of `order` with the least slotArea; among ties, first one without a partial row tile
// (unless `whole_rows_first` is false), then the first in `order`. `narrow_fifths`: what one
// output slot of the 64x128 tile costs, in fifths of another tile's (5: the same), for the
// per-output cost of its operands (6 operand elements per 256 outputs and unit of K against 3-5
// for the others; see tileFillingTheSms).
GemmConfig leastSlotArea(const std::vector<GemmConfig>& order, long long M, long long N, long long batch,
                         int num_sms, long long narrow_fifths = 5, bool whole_rows_first = true) {
  const auto area = [&](const GemmConfig& c) {
    return slotArea(M, N, batch, c, num_sms) * (c.bm == 64 && c.bn == 128 ? narrow_fifths : 5);
  };
  long long least = area(order[0]);
  for (const GemmConfig& c : order) least = std::min(least, area(c));
  const auto ties = [&](const GemmConfig& c) { return area(c) == least; };
  if (whole_rows_first)
    for (const GemmConfig& c : order)
      if (ties(c) && M % c.bm == 0) return c;  // M of one matrix: its partial row tile repeats per matrix
  for (const GemmConfig& c : order)
    if (ties(c)) return c;
  return order.back();  // not reached: the least slot area ties with itself
}

// Rows of up to 1024 (M x batch), and more where 64x256 leaves SMs idle (chooseConfig): the tile
// whose slots cover the fewest outputs beyond the real ones (slotArea; from 257 rows of one matrix
// 64x128's slots weighted 6/5, below). Measured on the H200
// (bench/RESULTS.md Run AC, 2026-12-01, compare_tiles, 14 shapes of M = 320-1024 at N =
// 2048-14336, 4 bench chains each, 512 x 4096 twice): this rule's
// tile was the fastest Hopper tile or within 1.7 % of it in 59 of 60 cells (the other: 512 x 14336
// bias+ReLU+cast, 64x128 at 1.11x mm against 1.02-1.09x on the shape's other chains, one
// sample), and up to 1.5x faster than 64x256 (512 x 2048); on 10 shapes not used to write it,
// within 2 % in 28 of 40 cells, 4.1 % at worst (640 x 8192). Where several tiles tie (the same
// slot area), the order of the list decides: the larger tile first, whose operands cost fewer
// shared-memory bytes per MMA (512 x 4096: 128x128 cooperative 1.03-1.14x mm against 64x256's
// 1.10-1.27x), with a partial row tile or not. Until Run AR a tile without a partial row tile
// came first (Run AC, 448 rows: 64x256 1.10-1.26x mm, 128x128 cooperative with a half-empty last
// row of tiles 1.20-1.64x); since the kernel skips the boxes wholly past M (Run AH) that row no
// longer costs its slots. Measured on the H200 (bench/RESULTS.md Run AR, 2026-12-03,
// compare_tiles, four bench chains, time / cuBLAS mm alone): 320 x 4096 x 4096 128x128
// cooperative 1.16-1.28x against 64x256's 1.29-1.58x; 448 x 4096 x 4096 1.04-1.15x against
// 1.12-1.38x; 448 x 8192 x 4096 1.03-1.08x against 1.07-1.20x; 320 x 4096 x 11008 128x256
// cooperative 0.56-0.62x against 0.61-0.69x; 576 x 4096 x 8192 128x128 ping-pong 1.26-1.37x
// against 1.31-1.47x (all 20 cells). Batches, and rows past 1024 (leastSlotArea's other callers),
// keep whole rows first (unmeasured). The refusals judge such a tie by the larger of the two
// tiles' work shares (judgedWorkShare). A 128x128 tile runs
// cooperative when all its tiles fit in one round (both consumers on one tile; ping-pong would
// idle one) and ping-pong otherwise (768 x 8192: ping-pong 1.00-1.08x, cooperative 1.04-1.15x).
//
// Up to 256 rows the same rule without the 128x128 tile, which was never the fastest Hopper tile
// there (bench/RESULTS.md Run AD, 2026-12-01, compare_tiles at M = 96-256: 0.2-8 % behind the
// best at M = 96-128 and 224-256 at N = 14336, 24-67 % at 144-192 and at N = 4096, K = 14336).
// The rule's choices there, measured: 64x128 where it alone covers the fewest outputs (M = 64
// and 176-192 at N = 14336; 128-256 at N = 4096; for M = 144 and 160 see below); 64x256 where it
// ties with 64x128 in one round instead of two (M = 96 and 100: 1.5-6 % faster than 64x128 in
// seven of eight cells, the eighth within 0.2 %; M = 112 and 128 within 2.8 % either way, and
// Run AA had 64x128 1.5-5.5 % ahead at M = 128); 128x256 cooperative where all three tie (M = 224
// and 256 at N = 14336: one round against 64x128's four, 12-24 % faster).
// The 128x128 tile: cooperative when all its tiles fit in one round (both consumers on one tile;
// ping-pong would idle one), ping-pong otherwise.
GemmConfig tile128x128(long long M, long long N, long long batch, int num_sms) {
  return tileConfig(128, 128, 6, tileCount(M, N, batch, tileConfig(128, 128, 6, false)) > num_sms);
}

// 128x128 cooperative, its tiles whole (one matrix, M and N multiples of 128) and at least 96 of
// them (73 % of the SMs, as a decode batch) in one round: below 257 rows the tile of both one-round
// rules (chooseConfig at K >= 8192, tileFillingTheSms at K = 2048-8192).
const GemmConfig kSquareCooperative = tileConfig(128, 128, 6, false);
}  // namespace

bool isSquareCooperative(const GemmConfig& c) {
  return c.bm == kSquareCooperative.bm && c.bn == kSquareCooperative.bn && !c.pingpong;
}

long long squareCooperativeMaxK(long long rows) { return rows == 2 * kSquareCooperative.bm ? 14336 : 8192; }

namespace {
bool wholeSquareTilesInOneRound(long long M, long long N, long long batch, int num_sms) {
  const GemmConfig& sq = kSquareCooperative;
  return batch == 1 && M % sq.bm == 0 && N % sq.bn == 0 && tileCount(M, N, batch, sq) >= 96 &&
         roundsOfTiles(M, N, batch, sq, num_sms) == 1;
}

GemmConfig tileFillingTheSms(long long M, long long N, long long K, long long batch, int num_sms,
                             EpilogueLoad epilogue) {
  const GemmConfig wide = tileConfig(128, 256, 4, false), t64x256 = tileConfig(64, 256, 5, true),
                   narrow = tileConfig(64, 128, 8, true);
  // From 257 rows the 64x128 tile's slots count 6/5: it moves 1.5x the operand bytes per output of
  // 128x128, and where it took 8-17 % fewer slots than the best 128-row tile it still ran 3-23 %
  // slower (1024 x 4096 x 11008: 1.22-1.28x mm against 128x128 ping-pong's 1.01-1.07x; 768 x 4096 x
  // 14336, 640 x 4096 x 8192, 1024 x 8192 x 5120), while with 25 % fewer it ran ~10 % faster (768 x
  // 4096 x 4096, 576 x 4096 x 4096, 384 / 320 x 4096 x 8192): a per-output cost of about 1.2.
  // Measured on the H200 (bench/RESULTS.md Run AC and Run AL, compare_tiles, four bench chains).
  // Where 64x128 has exactly 1/6 fewer slots (640 x 4096 x 8192, 1024 x 8192 x 5120) the weighted
  // areas tie and the list's order takes the 128-row tile, as measured. One matrix only (batches
  // unmeasured); a 128-row tile it picks at 769-800 rows has a last row tile at most a quarter real
  // (unmeasured at these rows; at 144-160 such a tile lost, Run AE).
  //
  // Where 128x256 cooperative takes three rounds or more at K <= 4096 and the rows are whole 128-row
  // tiles, 128x128 (ping-pong there) comes first
  // among tiles of the same weighted slot area: a cooperative tile's epilogue runs with both
  // consumers off the MMAs, once per round, while ping-pong runs one consumer's epilogue under the
  // other's MMAs. Measured on the H200 (bench/RESULTS.md Runs AL-AM, 2026-12-02, compare_tiles, four
  // bench chains, 128x256's time over 128x128 ping-pong's, the same slot area): three and four
  // rounds 0.988-1.050, over 1 in 38 of 40 cells, by up to 5.0 % with the residual (768 x 14336,
  // 896 x 12288, 1024 x 11008 and 1024 x 16384, K = 4096); one round 0.965-1.018 (512 x 8192, 896 /
  // 1024 x 4096) and two 0.987-1.025 (512 x 14336, 768 x 11008) keep 128x256 (but see the residual,
  // below). At K = 1024-3072, out of sample (Run AM call 5: 768 x 1024 x 14336, 1024 x 1024 / 2048
  // x 11008, 768 x 2048 x 14336,
  // 1024 x 2048 x 16384, 896 x 3072 x 12288), 128x256 ran 1.03-1.16 of 128x128's time in 24 of 24
  // cells: the shorter the K, the larger the epilogue's share. One matrix of whole 128-row tiles at
  // K <= 4096, as measured (a partial row tile was not; at K = 8192 the 128x128 tile's smaller work
  // share would refuse shapes such as 1024 x 8192 x 11008).
  // Two rounds of 128x256 weigh the same way at K = 1024-3072, and at K = 4096 where the epilogue
  // reads a residual (EpilogueLoad::ReadsResidual). 128x256's time over 128x128 ping-pong's (the
  // same slot area: four rounds of 128x128), bench/RESULTS.md Runs AL-AN, 2026-12-02, compare_tiles:
  //  - K = 4096 with bias+GELU then the residual 1.010-1.033 in 9 of 9 cells (512 x 14336 three
  //    times, 640 x 12288, 768 x 11008 twice, 896 x 8192, 1024 x 8192 twice); out of sample (Run AN
  //    call 3) 1.011 at 512 x 16384 and 1.023 at 640 x 11008. Without a residual 0.986-1.010
  //    (bias+GELU 0.986-1.009, ahead or within 1 %): 128x256 stays for those chains at K = 4096.
  //  - K = 1024-3072 (Run AN call 3, out of sample: 768 x 2048 x 11008, 1024 x 1024 x 8192, 896 x
  //    1536 x 8192, 512 x 3072 x 14336): 1.001-1.090, over 1 in 16 of 16 cells, every bench chain;
  //    at K = 3072 1.001-1.014 without the residual, 1.043 with it. With the rule, out of
  //    sample (Run AN call 4: 640 x 2048 x 12288, 512 x 1024 x 16384, 1024 x 3072 x 8192, 768 x 1536
  //    x 11008) 128x128 ping-pong the fastest tile in 16 of 16 cells (128x256 at 1.002-1.099 of its
  //    time). Below K = 1024 unmeasured: two rounds keep 128x256 there, with a residual too.
  // One round keeps 128x256 (with the residual 0.965-1.002 at 512 x 8192, 896 / 1024 x 4096). The
  // work-share refusal then judges 128x128's share (throughput 0.94, four rounds) for a residual
  // chain at K = 4096: where 128x256's two rounds sat just above the threshold (8/11 at K = 4096) a
  // residual chain is now refused, e.g. 1024 x 4096 x 6400 (0.758 -> 0.712; unmeasured, named).
  if (M * batch > 256) {
    const GemmConfig square = tile128x128(M, N, batch, num_sms);
    const long long wide_rounds = roundsOfTiles(M, N, batch, wide, num_sms);
    const bool epilogue_weighs =
        wide_rounds >= 3 ||
        (wide_rounds == 2 && K >= 1024 && (K <= 3072 || epilogue == EpilogueLoad::ReadsResidual));
    if (batch == 1 && M % square.bm == 0 && K <= 4096 && epilogue_weighs)
      return leastSlotArea({square, wide, t64x256, narrow}, M, N, batch, num_sms, 6);
    return leastSlotArea({wide, square, t64x256, narrow}, M, N, batch, num_sms, batch == 1 ? 6 : 5,
                         /*whole_rows_first=*/!largerTileTakesTies(M, batch));
  }
  // Up to 256 rows a wider tile is a candidate only where its tiles fill at least three quarters
  // of the SMs, as the measured ones did (112 tiles of 64x256 or 128x256 at N = 14336); with
  // fewer (M = 128 at N = 11008: 86 tiles of 64x256) 64x128, the tile Runs AA and AC measured
  // there, stays.
  const auto fills = [&](const GemmConfig& c) { return 4 * tileCount(M, N, batch, c) >= 3LL * num_sms; };
  std::vector<GemmConfig> order;
  for (const GemmConfig& c : {wide, t64x256})
    if (fills(c)) order.push_back(c);
  order.push_back(narrow);
  const GemmConfig c = leastSlotArea(order, M, N, batch, num_sms);
  // A last row of 64-row tiles under three quarters real, run in a later round, costs more than
  // its slots (M = 144 and 160 at N = 14336: 64x128 in three rounds 1.31-1.55x mm, 128x256 in
  // one 1.27-1.43x, in all 12 cells, M = 160 measured twice; M = 176, 48 of 64 rows real, stays
  // with 64x128, the fastest there): then the one-round 128x256 where it is a candidate (M =
  // 129-143 and 145-159 follow 144 and 160 unmeasured). The slot area does not see this cost
  // (measured before the kernel skipped the boxes wholly past M, which were most of it: Run AH;
  // not re-measured for this choice since). The heuristic does not run
  // this 128x256 where its own last row tile holds at most a quarter real rows at K >= 4096 (M =
  // 144 and 160 at K = 4096: cuBLAS + the epilogue kernel was faster, config_table's
  // unfusedPathFaster, Run AE); it does elsewhere, and the autotune measures it.
  // One round of 64x256 ping-pong gives each CTA one tile, so one of its two consumers idles, and
  // four row tiles read every column of the weight. 128x128 cooperative in one round runs both
  // consumers on its tile and reads the weight for two row tiles: up to 256 rows it comes first
  // where it has at least 96 whole tiles in one round (one matrix, M and N multiples of 128; at 132
  // SMs, where 64x256 fills the SMs from 99 tiles: M = 128 at N = 12672-16896, M = 256 at N =
  // 6272-8448), at K = 2048-8192, and for two row tiles (M = 256) to K = 14336, as measured, with
  // every epilogue. A lone 128-row tile past K = 8192 keeps 64x256 (at 128 x 14336 x 13312 64x256
  // ran 1.4-4.3 % ahead in 3 of 4 cells, and config_table's measuredTileInOneRound refuses a lone 128-row tile
  // there). Measured on the H200 (compare_tiles, time / cuBLAS mm alone, 128x128
  // cooperative's over 64x256's): with the residual first (bench/RESULTS.md Run AS call 5,
  // 2026-12-03: 256 x 4096 x 8192 1.095 against 1.295, 128 x 4096 x 14336 1.111 against 1.158;
  // bias+GELU 1.045 against 1.151, 1.078 against 1.088), then out of sample at six shapes, four
  // bench chains each (Run AT call 2, 2026-12-03): 22 of 24 cells faster, by 0.6-21 % (256 x 2048
  // x 8192 11-21 %, 256 x 4096 x 7168 8-13 %, 256 x 6144 x 8192 6-12 %, 128 x 4096 x 12800 / 16384
  // 0.6-7 %), and 0.3 / 0.5 % slower in two (SiLU, bias+ReLU+cast at 128 x 6144 x 14336); at K =
  // 8192 (Run AU call 1, 2026-12-03, out of sample): 256 x 8192 x 7680 faster in 4 of 4 cells by
  // 5-10 %, 128 x 8192 x 13312 in 3 of 4 by 1.8-2.6 % (SiLU 0.9 % slower, left to eager there);
  // Run AU call 2 (2026-12-03, out of sample): 128 x 8192 x 12288 / 16384 and 256 x 8192 x 8448
  // faster in 12 of 12 cells by 0.8-9.1 %, 256 x 11008 x 7680 and 256 x 14336 x 8192 in 8 of 8 by
  // 2.4-7.6 %.
  if (M * batch <= 256 && K >= 2048 && K <= squareCooperativeMaxK(M * batch) && c.bm == t64x256.bm && c.bn == t64x256.bn &&
      roundsOfTiles(M, N, batch, c, num_sms) == 1 && wholeSquareTilesInOneRound(M, N, batch, num_sms))
    return kSquareCooperative;
  const long long edge_rows = M % narrow.bm;
  if (c.bm == narrow.bm && c.bn == narrow.bn && edge_rows != 0 && 4 * edge_rows < 3 * narrow.bm &&
      tileCount(M, N, batch, narrow) > num_sms && fills(wide) && tileCount(M, N, batch, wide) <= num_sms)
    return wide;
  return c;
}
}  // namespace

GemmConfig chooseConfig(long long M, long long N, long long K, long long batch, int num_sms,
                        EpilogueLoad epilogue) {
  // Ping-pong 64x256 (5 stages) from 1025 rows where its tiles fill the SMs: measured faster than every cooperative tile on
  // every shape of bench/sm90/NOTES.md run 6 (bias+GELU: 4096^3 1.09x cuBLAS vs 1.16x; K=1024
  // 1.35x vs 1.55x), because one consumer's epilogue runs under the other's MMAs (at K <= 2048
  // 128x128 ping-pong now takes its place, measured faster still: the end of this function). N <= 128 takes
  // 64x128 tiles, 8 stages (or 128x128, below). Up to 1024 rows (M x B), the tile that fills the SMs
  // (tileFillingTheSms): at up to 256 rows mostly 64x128, as in Run AA (K = 4096: 0.84-0.90x
  // cuBLAS mm alone at M = 128 and 256, N = 4096, where 64x256 ran 1.04-1.26x).
  // From 1025 rows a narrow N leaves 64x256's tiles short of one round (M = 4096, N = 256: 64
  // tiles on 132 SMs); there too the tile that fills the SMs. Measured on the H200 (bench/RESULTS.md
  // Run AF, 2026-12-01, compare_tiles, K = 4096, four bench chains, time / cuBLAS mm alone): M x N
  // = 4096 x 256 64x128 ping-pong 1.10-1.18x against 64x256's 1.37-1.57x; 4096 x 384 and 4096 x
  // 512 128x128 cooperative 1.04-1.16x against 1.07-2.44x; 8192 x 256 128x128 cooperative
  // 1.08-1.18x against 1.13-1.26x (each the fastest Hopper tile of the shape).
  if (N <= 128) {
    // From 1025 rows of one matrix, 128x128 where 64x128 takes more rounds: at a narrow N the tiles
    // stream A, so rounds, not slots, set the time. Measured on the H200 (bench/RESULTS.md Run AH,
    // 2026-12-01, compare_tiles, K = 4096, four bench chains, time / cuBLAS + the epilogue
    // kernel): M x N = 10240 x 128 and 12288 x 128 (128x128 in one round, 64x128 in two)
    // 0.78-0.88 against 64x128's 0.86-1.05, 8512 x 64 0.87-0.94 against 1.02-1.11; 16384 x 64
    // (two rounds against one) at par; one round each (4096-8192 x 128, 8192 x 64): 64x128 ran
    // 0.75-0.94 against 128x128's 0.84-1.23, and stays.
    const GemmConfig narrow = tileConfig(64, 128, 8, true), square = tile128x128(M, N, batch, std::max(1, num_sms));
    // (one round of 128x128 only: more was not measured)
    const auto rounds = [&](const GemmConfig& c) { return roundsOfTiles(M, N, batch, c, num_sms); };
    if (batch == 1 && M > 1024 && rounds(square) == 1 && rounds(narrow) > 1) return square;
    return narrow;
  }
  const GemmConfig pingpong64x256 = tileConfig(64, 256, 5, true);
  if (M * batch <= 256 && K >= 8192) {
    // Below 257 rows at K >= 8192 the weights stream through one round of tiles or the kernel
    // loses to cuBLAS + the epilogue kernel (config_table's measuredTileInOneRound, which also
    // decides which of these one-round tiles may run): where the tile that fills the SMs takes
    // more rounds, 128x128 cooperative in one round of at least 96 tiles (73 % of the SMs, as a
    // decode batch) for one matrix of whole 128-row and 128-column tiles. At 132 SMs that is a
    // narrow band, where 64x256's tiles are just too few to fill the SMs: M = 256 at N = 6144 and
    // M = 128 at N = 12288-12544. Measured on the H200 (bench/RESULTS.md Runs AL call 3 and AM
    // calls 2-3, 2026-12-02, compare_tiles, four bench chains, time / cuBLAS mm alone): 256 x
    // 14336 x 6144 (96 tiles) 1.05-1.10x against 64x128 in two rounds 1.21-1.28x and cuBLAS + the
    // epilogue kernel 1.11-1.16x; 256 x 11008 x 6144 1.03-1.08x against 1.14-1.19x; end to end
    // 1.08-1.26x eager (Run AM). At 128 x 14336 x 12288 it ran 1.07-1.20x (64x128 in two rounds
    // 1.24-1.29x) but no better than the unfused path (1.08-1.13x): one 128-row tile is a weight
    // stream, and measuredTileInOneRound refuses the kernel there.
    const GemmConfig c = tileFillingTheSms(M, N, K, batch, std::max(1, num_sms), epilogue);
    return roundsOfTiles(M, N, batch, c, num_sms) > 1 && wholeSquareTilesInOneRound(M, N, batch, num_sms)
               ? kSquareCooperative
               : c;
  }
  if (M * batch <= 1024 || tileCount(M, N, batch, pingpong64x256) < num_sms)
    return tileFillingTheSms(M, N, K, batch, std::max(1, num_sms), epilogue);
  // A partial 256-column tile (N not a multiple of 256): 64x256 ping-pong was slower than the
  // best 128-row tile at every such shape measured, by 6-65 %; there the 128-row tile whose slots
  // cover the fewest outputs, 128x256 cooperative on ties. Measured on the H200 (bench/RESULTS.md
  // Run AG, 2026-12-01, compare_tiles after the staged column edge, four bench chains, time /
  // cuBLAS mm alone, M x N at K = 4096 unless given): 4096 x 4160 and 4096 x 4224 128x128
  // ping-pong 1.11-1.22x against 64x256's 1.18-1.52x; 4096 x 1408 1.08-1.18x against 1.27-1.36x;
  // 4096 x 4304 (K = 1152) 1.20-1.47x against 1.46-1.66x; 4096 x 2944 128x256 cooperative
  // 1.03-1.12x against 1.14-1.21x; 4096 x 896 and 8192 x 896 (K = 4864) 1.03-1.12x against
  // 1.60-1.73x. Whole 256-column tiles keep 64x256 (issue 6's shapes from six rounds; at K <= 2048
  // 128x128 ping-pong, below; 8192 x 768 (K = 3072) 1.04-1.17x, the fastest there) except where
  // 128x256 takes half the rounds, up to two, or up to four at K = 4096-8192 (below; 4096^3 there).
  // Most of 64x256's loss was the TMA filling B's boxes wholly past N; since the kernel skips them
  // (Run AH, 2026-12-01, B as [K, N]: 4096 x 896 at K = 4864 1.54-1.64x -> 1.07-1.18x mm) 128x256
  // is still the faster there (1.04-1.12x), so the rule stands; the exceptions, measured after the
  // skip, follow the choice below. (A K-major B, F.linear's weight, still loads its one box whole:
  // not re-measured.)
  // One matrix only: a batch of small matrices would give every matrix a mostly empty 128-row last
  // tile (B = 8, M = 144), the cost config_table's unfusedPathFaster refuses for one matrix.
  const GemmConfig wide = tileConfig(128, 256, 4, false);
  GemmConfig choice = pingpong64x256;
  const auto rounds = [&](const GemmConfig& c) { return roundsOfTiles(M, N, batch, c, num_sms); };
  if (N % pingpong64x256.bn != 0 && batch == 1) {
    choice = leastSlotArea({wide, tile128x128(M, N, batch, num_sms)}, M, N, batch, std::max(1, num_sms));
    // Back to 64x256 ping-pong where the choice is 128x128 and 64x256 takes as many rounds, more
    // than one, at K = 4096-8192 with rows of whole 128-byte lines (N a multiple of 64): the same
    // slot area, and since the kernel skips B's boxes wholly past N (Run AH) 64x256's partial
    // column tile no longer costs more than its slots (B as [K, N]; a K-major B, nn.Linear's
    // weight, unmeasured). Measured on the H200 (bench/RESULTS.md Runs AH-AJ, 2026-12-01/02,
    // compare_tiles, four bench chains, 64x256's time over 128x128 ping-pong's, both in the same
    // number of rounds): 0.91-0.99 at 8192 x 640, 4096 x 1408 (three rounds) and 8192 x 1152 (five),
    // K = 4096; out of sample at par, 0.98-1.015, at 6144 x 2944, 4096 x 5504, 2048 x 2432, 3072 x
    // 1664 (K = 4096), 8192 x 1152 and 4096 x 2432 (K = 8192). Not taken: fewer rounds of 128x128
    // (6144 x 1408: four against five, 128x128 13-15 % ahead), other rounds or choices (unmeasured),
    // one round each (exactly num_sms tiles of 64x256: fewer go to tileFillingTheSms; ping-pong
    // would give each CTA one tile, idling a consumer, as 2048 x 4864 x 896 showed there), N not a
    // multiple of 64 (below), K = 14336 (unmeasured). Where it switches, the work-share refusal
    // judges 64x256's larger share (its throughput, 0.97 against 0.94): 2048 x 4096 x 2432 and
    // 8192 x 8192 x 1152, refused before, fused at 0.99-1.04x the unfused path's time, slower in
    // 6 of 8 cells (Run AJ call 5): a breach of at most 4 % against that path, named; since session
    // 34 the refusal weighs cuBLAS's own share from 1025 rows and refuses both again (Run AV).
    const bool square = choice.bm == 128 && choice.bn == 128;
    if (square && K >= 4096 && K <= 8192 && N % 64 == 0 && rounds(choice) > 1 &&
        rounds(pingpong64x256) == rounds(choice))
      choice = pingpong64x256;
    // Rows of B and C that are not whole 128-byte lines (N not a multiple of 64) at K >= 4096:
    // 128x256 cooperative, the tile with the fewest operand bytes per MMA (3 per 256 outputs and
    // unit of K against 128x128's 4, 64x256's 5, 64x128's 6), which these rows make dearer.
    // Measured on the H200 with B as [K, N] (bench/RESULTS.md Run AJ, 2026-12-02, compare_tiles,
    // four bench chains, time / cuBLAS mm alone): at N = 4304 12288 x 4304 (K = 4096) 128x256
    // 1.05-1.16 against 128x128 ping-pong's 1.14-1.32 (two calls, 8 of 8 cells), 6144 x 4304 (K =
    // 14336) 1.15-1.16 against 1.17-1.24, 64x256 1.32-1.60 and 64x128 1.69-1.95 there; out of
    // sample (call 8) the fastest Hopper tile or within 1 % in 15 of 16 cells at 4096 x 4304
    // (1.06-1.16 against 128x128's 1.22-1.26), 2048 x 4304 (3.4 % behind 128x128 with the
    // residual; refused by the work share, rightly), 4096 x 4304 at K = 8192 (1.00-1.07) and 8192 x
    // 2200 (1.38-1.49). At K = 1152 128x128 ping-pong stays the fastest (2048 / 4096 x 4304:
    // 1.16-1.47 against 128x256's 1.19-1.65, Runs AG-AH): K < 4096 keeps the slot area's choice.
    // nn.Linear's K-major weight has whole-line rows (only C's are not): unmeasured, and
    // chooseConfig does not see the layout.
    // The work share does not order unaligned rows (named, one shape each): 128x256's smaller
    // share refuses 4096 x 8192 x 4304 (0.815 under 0.842; 0.851 on 128x128), where 128x256 ran
    // 6-10 % ahead of the unfused path (the 128x128 it ran before, 4-7 % behind it). At 8192 x
    // 2200 every tile ran behind cuBLAS + the epilogue kernel: N % 16 != 0, rows only 16-byte
    // aligned, the cost Run AK separated from the column count (config_table's unfusedPathFaster
    // refuses it; 32- and 64-byte aligned rows run 128x256 ahead of that path). SiLU alone at
    // 12288 x 4304 (share 0.94) now fuses against eager, unmeasured end to end (compare_tiles: 128x256 1.08x mm,
    // cuBLAS + the epilogue kernel 1.15-1.22x, eager's SiLU cheaper than that kernel).
    if (N % 64 != 0 && K >= 4096) choice = wide;
  } else {
    // Whole 256-column tiles where 128x256 cooperative takes half the rounds of 64x256 (the same
    // slot area) and at most two (four at K = 4096-8192, below): 128x256, fewer tiles each SM runs.
    // Measured on the H200 (Runs AG and AH, 2026-12-01, compare_tiles, four bench chains, 128x256's
    // time over 64x256's): one round
    // 0.91-0.99 at K = 3072-14336 (4096 x 1024 and 4096 x 768, as the one-round choice of
    // tileFillingTheSms at 1024 x 4096, Run AC; 2048 x 2048, 5120 x 768, 1280 x 3072 ...), but
    // 1.01-1.07 at K = 1024 (3072 x 768, where 64x128 was the fastest); two rounds 0.96-0.99 (2048 x
    // 4096 at K = 4096, Run AH call 6). Only where measured: one round from K = 3072, two from K =
    // 4096. Not measured for batches: one matrix only.
    // Three and four rounds at K = 4096-8192 with whole 128-row tiles too: 128x256's time over
    // 64x256's (bench/RESULTS.md Runs AL-AN, 2026-12-02, compare_tiles, four bench chains): three
    // rounds 0.967-0.993 at 1536 x 8192, 3072 x 4096 and 4096 x 3072 (12 of 12 cells under 1, K =
    // 4096); four 0.969-0.997 at 2048 x 8192 (K = 4096 and 8192, 8 of 8) and 0.964-0.993 at 4096 x
    // 4096 (Run AL call 2, 4 of 4; Runs AG-AH had it at par, 0.976-1.034 in 20 cells). Out of
    // sample (Run AN call 7) 128x256 the fastest Hopper tile in 16 of 16 cells at 6144 x 2048, 8192
    // x 2048 (K = 4096), 1536 x 8192 and 3072 x 4096 (K = 8192), and again at 4096 x 4096 (0.970-0.992
    // of 64x256's time). At K = 14336 64x256 stays ahead (4096 x 4096 and 3072 x 5120: 128x256 at
    // 1.004-1.088 of its time, Run AN call 7), and from six rounds they are mixed (4096 x 6144,
    // 6144 x 4096: 0.985-1.015): 64x256 keeps both. Where it switches, the work-share refusal judges
    // 128x256's larger share (throughput 1.0 against 0.97): a shape just under the threshold on
    // 64x256 may now fuse, e.g. 2688 x 8192 x 4096 (0.823 -> 0.848; unmeasured, named; since session
    // 34 its threshold is cuBLAS's share times 0.89, 0.76 there, config_table.cpp).
    const long long rounds_wide = rounds(wide);
    const bool whole_rows = M % wide.bm == 0;
    if (batch == 1 && rounds(pingpong64x256) == 2 * rounds_wide &&
        ((rounds_wide == 1 && K >= 3072) || (rounds_wide == 2 && K >= 4096) ||
         (rounds_wide <= 4 && K >= 4096 && K <= 8192 && whole_rows)))
      choice = wide;
    // 1025-1535 rows (a multiple of 64, as measured) at K >= 4096: 128x128 ping-pong where 64x256
    // stays and both take the same rounds, more than one (one round of 128x128 would run
    // cooperative: unmeasured here). Likely why: each of 64x256's 17-23 row tiles streams the
    // whole weight for 64 rows, 128x128's for 128 (half the weight bytes per output), and where M
    // is an odd multiple of 64 the last 128-row tile loads only its real 64-row box. Measured on the H200
    // (bench/RESULTS.md Runs AU call 3 and AV call 1, 2026-12-03, compare_tiles with every
    // candidate's calls interleaved, four bench chains, 64x256's time over 128x128 ping-pong's):
    // 1088 x 14336 x 11008 1.075-1.089, 1088 x 8192 x 11008 1.087-1.101, 1088 x 14336 x 8192
    // 1.043-1.065, 1152 x 14336 x 11008 1.024-1.045, 1216 x 14336 x 11008 1.015-1.026, 1408 x 14336
    // x 11008 1.003-1.028 (24 of 24 cells over 1); block-timed (Run AL) 1088 x 4096 x 4096
    // 1.028-1.056. From 1536 rows mixed (1536 x 11008 x 11008: 0.920-1.018, block-timed) and from
    // 2048 rows 64x256 mostly ahead: those keep it. Where 128x128 takes a round more (1344 x 14336
    // x 11008) 64x256 ran 10-13 % ahead and stays.
    const bool square_rows = batch == 1 && M > 1024 && M < 1536 && M % 64 == 0 && K >= 4096;
    const GemmConfig square = tile128x128(M, N, batch, std::max(1, num_sms));
    if (square_rows && square.pingpong && choice.bm == pingpong64x256.bm && choice.bn == pingpong64x256.bn &&
        rounds(square) == rounds(pingpong64x256))
      choice = square;
  }
  // At K <= 3072, 64x128 ping-pong where its work share (tileWorkShare: the real outputs over its
  // rounds' slots, times its throughput) is larger than the choice's: a short K leaves each tile
  // little MMA work to hide a wide tile's idle slots behind. Measured on the H200 (bench/RESULTS.md
  // Runs AH-AI, 2026-12-01, compare_tiles, four bench chains, the choice's time over 64x128's):
  // 3072 x 768 at K = 1024 1.08-1.10 (64x256, share 0.53 against 0.55) and 4096 x 768 at K = 3072
  // 1.05-1.08 (128x256, 0.73 against 0.74); at K = 4096 the same comparison gave 0.94-1.05 at nine
  // shapes (128x256 ahead at 4096 x 768 in all 16 cells), at K = 14336 0.97-1.00 (4096 x 768, 2048
  // x 1152): K > 3072 keeps the choice. Shapes where the choice's share is the larger (8192 x 768 at
  // K = 3072: 64x256 1.04-1.17x mm against 64x128's 1.29-1.39x) keep it. One matrix and whole
  // 256-column tiles only, as measured (with a partial one the margins are within the throughput
  // table's uncertainty). Where it switches, the work-share refusal judges 64x128's larger share, so
  // a shape just under the threshold with the old tile may now fuse (1408 x 2048 at K = 3072: 0.667
  // -> 0.676 against 0.667; unmeasured).
  if (batch == 1 && K <= 3072 && N % pingpong64x256.bn == 0) {
    const GemmConfig narrow = tileConfig(64, 128, 8, true);
    if (tileWorkShare(M, N, batch, narrow, num_sms) > tileWorkShare(M, N, batch, choice, num_sms)) return narrow;
  }
  // At K <= 2048, 128x128 ping-pong in place of 64x256 ping-pong where the two take the same rounds
  // (whole 128-row tiles: the same tile count): with few k-blocks per tile the prologue and the
  // epilogue weigh more, and 128x128 loads 4 operand elements per 256 outputs and unit of K
  // against 64x256's 5. Measured on the H200 (bench/RESULTS.md Runs AG-AM, 2026-12-01/02,
  // compare_tiles, four bench chains, 64x256's time over 128x128 ping-pong's): K = 768-2048 at 14
  // shapes (4096 x 1024 x 4096 and 16384 x 1024 x 4096 among them) over 1 in 74 of 76 cells, by up
  // to 6.9 % (0.993-0.995 in the other two); the rule was written from five of them (session 23)
  // and held on the nine measured after (Run AM). At K = 3072 mixed (0.957-1.028) and at K = 4096
  // either way (0.91-1.19), so longer K keeps 64x256. One matrix, as measured. 64x256 is chosen
  // here only on whole 256-column tiles, so with whole 128-row tiles the two have the same tile
  // count. The work-share refusals then judge 128x128's share (its throughput, 0.94 against 0.97;
  // measured at K = 4096): none of the general refusal's decisions changes on a grid of 9,120
  // points, but SiLU alone against eager (threshold K / (K + 700)) now goes to eager at some
  // shapes just above it before, e.g. 2048 x 2048 x 3328 (0.764 -> 0.741 under 0.745), 1536 x 2048
  // x 4352, 6656 x 2048 x 1024: unmeasured, named.
  //
  // With a residual read, the same at K = 4096-14336: 64x256's time over 128x128 ping-pong's with
  // bias+GELU then the residual, measured on the H200 with every candidate's calls interleaved
  // (bench/RESULTS.md Run AP, 2026-12-02, compare_tiles after session 27's timer change, two calls):
  // 1.010-1.011 at 4096 x 14336 x 4096, 1.026-1.034 at 4096 x 4096 x 14336, 1.018-1.033 at 8192 x
  // 4096 x 8192, 1.002 at 8192 x 8192 x 8192 (7 of 7 cells over 1); out of sample 1.018 at 4096 x
  // 8192 x 4096 and 4096 x 11008 x 4096, 0.999 at 6144 x 4096 x 8192, 0.995 at 3072 x 4096 x 14336.
  // Without a residual the same shapes are mixed (0.960-1.014): those chains keep 64x256. (The
  // timer before Run AP timed each candidate in its own block and put the tiles either way at K =
  // 4096, above.) Whole 256-column tiles only, as measured: at a partial one 64x256 came back above
  // where it takes 128x128's rounds (measured with the residual chain among others). Here too the
  // work-share refusal judged 128x128's share, refusing some residual chains that ran 64x256
  // (3072 x 8192 x 3072 measured: the unfused path 4 % ahead of 64x256 there); since session 34
  // it judges the larger of the two (judgedWorkShare), as at 1025-1535 rows above: at 4096 x 14336
  // x 14336 its own share refused a chain 4.5 % ahead of the unfused path (Run AV).
  const bool square_first = K <= 2048 || (epilogue == EpilogueLoad::ReadsResidual && K >= 4096 && K <= 14336 &&
                                          N % pingpong64x256.bn == 0);
  if (batch == 1 && square_first && choice.bm == pingpong64x256.bm && choice.bn == pingpong64x256.bn &&
      M % 128 == 0)
    return tile128x128(M, N, batch, std::max(1, num_sms));
  return choice;
}

GemmConfig splitKConfig(int ks) {
  GemmConfig c;
  c.bm = 64;
  c.bn = 128;
  c.consumers = 1;
  c.stages = 7;  // 7 x 24 KB + 9 KB staging + 32 KB partial + 1 KB slack = 210 KB of 227
  c.split_k = ks;
  return c;
}

int splitKForFewTiles(long long M, long long N, long long K, long long batch, int num_sms) {
  if (batch != 1) return 1;  // batches: unmeasured
  const long long tiles = tileCount(M, N, batch, splitKConfig(2));  // of 64x128
  const bool doubled_fits = 2 * tiles <= num_sms;
  // One matrix of one 64-row tile (48-64 rows: at least three quarters of the MMA rows real)
  // whose 64x128 tiles, doubled, still fit in one round of the SMs, with at least kSplitKMinK of K.
  // Measured on the H200 (bench/RESULTS.md Run AC, call 6, 2026-12-01, compare_tiles): M = 64,
  // K = 14336, N = 4096 (32 tiles, 224 k-blocks): KS = 2 1.02-1.07x cuBLAS mm alone on the four
  // bench chains, against cuBLAS + the epilogue kernel 1.08-1.10x and the 64x128 tile without
  // split-K 1.52-1.57x; KS = 4 1.32-1.39x (not taken: 32 clusters of four 210 KB CTAs, each
  // cluster inside one GPC, may not all be resident at once). Run AE, against the faster
  // epilogue kernel: KS = 2 0.98-1.04x, that path 1.09-1.11x. Not taken: K = 4160 (65 k-blocks:
  // KS = 2 1.17-1.29x against 1.18-1.26x).
  // Not on two row tiles (96-128 rows; session 15 took them): KS = 2 ran 1.16-1.23x mm at M = 100
  // and 128 (K = 14336, N = 4096) against cuBLAS + the faster epilogue kernel's 1.08-1.16x (Run AE);
  // config_table's unfusedPathFaster leaves those shapes to that path.
  // Both forms need at least kSplitKMinTiles tiles (64 CTAs, half the SMs): fewer lost to cuBLAS
  // + the epilogue kernel or tied with it (Run AF: 4, 8 and 16 tiles at a narrow N), and the
  // decode form was measured at 32 and 64 tiles only (N = 4096 and 8192).
  constexpr long long kSplitKMinK = 8192, kSplitKMinTiles = 32;
  if (tiles < kSplitKMinTiles || !doubled_fits) return 1;
  if (M >= 48 && M <= 64 && K >= kSplitKMinK) return 2;
  // A narrow N (one or two whole column tiles) over many rows at K >= 4096: 32-66 tiles of 64x128,
  // so KS = 2 fills half to all of the SMs in one round. Measured on the H200
  // (bench/RESULTS.md Run AF, 2026-12-01, compare_tiles, four bench chains, time / cuBLAS mm
  // alone): M x N = 1024 x 256 (32 tiles) KS = 2 1.15-1.31x against 64x128 ping-pong's 1.42-1.55x
  // and cuBLAS + the epilogue kernel's 1.25-1.54x; 1536 x 256 (48) 1.13-1.32x against 1.35-1.54x
  // and 1.33-1.51x; 2048 x 256 (64) 1.13-1.24x against 1.27-1.36x and 1.34-1.52x; 4096 x 128 (64)
  // 1.10-1.25x against 1.16-1.35x and 1.30-1.55x, all at K = 4096; at K = 14336 2048 x 256
  // 1.10-1.17x against 1.46-1.52x and 1.13-1.25x, 3072 x 128 1.04-1.09x against 1.40-1.44x and
  // 1.11-1.23x; at K = 8192 2048 x 256 1.05-1.15x against 1.31-1.38x and 1.17-1.34x. (At the same
  // 64 tiles and K = 14336, two row tiles of N = 4096 lost to the unfused path, Run AE; why the
  // narrow N differs is not established.) Fewer tiles do not win (8 tiles, 512 x 128: KS = 2
  // 1.30-1.46x against 1.25-1.47x, ahead in 2 of 4 chains; 16 tiles, 128 x 1024: 1.23-1.43x
  // against 1.28-1.35x, ahead in 2 of 4; KS = 4 slower; config_table's unfusedPathFaster refuses
  // the Hopper kernel under 64 tiles without split-K, 32 at K <= 1024). A partial column tile
  // (N = 192) was not measured with split-K and is left out.
  // N = 64 (half of each tile's columns empty, B's boxes past N not loaded since Run AH) at 64
  // tiles: 4096 x 64 at K = 4096 KS = 2 1.10-1.21x mm against 64x128 ping-pong's 1.20-1.28x and
  // cuBLAS + the epilogue kernel's 1.28-1.51x (bench/RESULTS.md Run AH call 7, four bench chains;
  // that path had been taken: config_table's unfusedPathFaster refuses N < 128 under 128 tiles
  // without split-K). Fewer tiles, and a longer K (which would pass by the K >= 8192 and GELU's
  // K > 4096 refusals), were not measured at N = 64.
  constexpr long long kNarrowMaxN = 256, kSplitKN64MinTiles = 64, kSplitKN64K = 4096;
  if (N <= kNarrowMaxN && N % 128 == 0 && K >= 4096) return 2;
  if (N == 64 && tiles >= kSplitKN64MinTiles && K == kSplitKN64K) return 2;
  return 1;
}

}  // namespace sm90
}  // namespace fxfuse
