// Kernel selection. The rows below are the whole policy: the first row whose template is
// built in and whose condition holds wins. Owners of a template tune its row (tile sizes,
// conditions); a new variant is a new row plus its .cuh under kernels/.
#include "codegen/config_table.h"
#include "codegen/cublas_share.h"

#include "codegen/hopper_shape_rules.h"
#include "codegen/hopper_tile_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "codegen/embedded_sources.h"
#include "codegen/hooks.h"

namespace fxfuse::codegen {
namespace {

using spec::DType;

// What the conditions look at.
struct Query {
  OperandInfo a, b;
  const ProblemShape& shape;
  int arch;
  std::string epilogue_refusal;  // why the Hopper kernel loses with this epilogue ("": it wins; epilogueRefusal)
  // What the epilogue weighs in the Hopper tile choice (sm90::chooseConfig): the config and the
  // work-share refusal judge the same tile.
  sm90::EpilogueLoad epilogue_load = sm90::EpilogueLoad::Light;
  // The fewest rows the Hopper kernel is considered for. The heuristic: 128 (measured from M =
  // 512 up), or 64 where a decode batch fills the SMs (decodeBatchFillsSms), or none where one
  // 64-row tile runs split-K (splitKFor). The autotune's candidates: one 64-row tile always
  // (candidatesValidated).
  long long hopper_min_m = 128;
  // The heuristic's measured refusals of the Hopper kernel apply (unfusedPathFaster); false for
  // the autotune's candidates, which measure instead.
  bool heuristic = true;
  // The product is 16-bit (`x @ w + ...`): eager writes it and runs the epilogue as separate
  // kernels. An f32 product is the addmm / F.linear form, whose bias eager adds inside cuBLAS.
  bool product_16bit = false;
  // The chain has a 16-bit hand-off value for the Hopper kernel's overlapped epilogue (hooks.h
  // epilogueHandoff; only FXFUSE_SM90_EPILOGUE_OVERLAP asks).
  bool handoff = false;
  // The epilogue computes GELU(tanh): the heaviest measured activation, whose epilogue the overlap
  // hides better than ping-pong does (overlapRule).
  bool gelu_tanh = false;
  // The ops after the product: with a 16-bit product, eager's elementwise kernels after its mm (1: a bias add alone,
  // where the op has no faster unfused path to offer: gemvDenseOneOpRowsAhead).
  int epilogue_ops = 0;
  bool is16bit() const { return spec::isHalfFloat(a.elem); }
};

struct VariantRow {
  const char* variant;
  const char* templ;
  GridPolicy grid;
  bool fast;               // isFastVariant: at least as fast as eager where the row applies
  bool fast_vs_inductor;   // ... and as Inductor (cuBLAS + one fused pointwise kernel)
  bool (*applies)(const Query&);
  KernelConfig (*config)(const Query&);
};

long long tiles64x128(const ProblemShape& s) { return (s.M + 63) / 64 * ((s.N + 127) / 128) * s.B; }

// Whether the heuristic's Hopper tile (sm90::chooseConfig) fits in one round of the SMs and is one
// measured there: at a long K below 257 rows the kernel won in one round and lost in two
// (epilogueRefusal, unfusedPathFaster): 64x128 in one round at 128-256 x 8192-28672 (Runs AK, AL),
// in two at 192 x 14336 x 8192 (Run AK) and 256 x 14336 x 6144 (Run AL: 1.21-1.28x cuBLAS mm alone
// against cuBLAS + the epilogue kernel's 1.11-1.16x); in one round where 64x128 takes two, 64x256
// at 256 x 28672 x 8192 (1.01-1.03x against 1.05-1.07x) and 128x128 cooperative at 256 x 14336 x
// 6144 (1.05-1.10x; Run AL, 2026-12-02, compare_tiles, four bench chains). 128-row tiles only as
// two whole row tiles of one matrix (M = 256): 128x256 cooperative in one round (N 12545-16896 at
// 132 SMs) at 256 x 14336 x 14336 ran 1.02-1.05x against cuBLAS + the epilogue kernel's 1.07-1.11x,
// at 256 x 8192 x 16384 1.03-1.09x against 1.12-1.18x (Run AM, 2026-12-02, compare_tiles, four
// bench chains). One 128-row tile, where each weight byte feeds one CTA, lost or tied: 128x128
// cooperative at 128 x 14336 x 12288 1.09-1.20x against 1.09-1.12x (Run AM call 2; call 3 a tie),
// 0.95-1.00x eager end to end; a partial last row tile (128x256 at 129-255 rows, N > 12544) is
// unmeasured at a long K: both refused.
// (g: the heuristic's tile for s, sm90::chooseConfig)
// A lone 128-row tile also where it is 128x128 cooperative at K <= 8192 (sm90::tileFillingTheSms;
// it ran at M = 128 there, Run AT call 2; at 128 x 8192 x 13312 1.09-1.16x cuBLAS mm alone against
// cuBLAS + the epilogue kernel's 1.13-1.16x, Run AU call 1, 2026-12-03, compare_tiles).
bool measuredTileInOneRound(const ProblemShape& s, const sm90::GemmConfig& g) {
  const bool lone_square_measured = sm90::isSquareCooperative(g) && s.K <= sm90::squareCooperativeMaxK(s.M * s.B);
  return sm90::roundsOfTiles(s.M, s.N, s.B, g, kHopperSms) == 1 &&
         !(g.bm == 128 && (s.B != 1 || s.M != 2 * g.bm) && !lone_square_measured);
}

// Whether at least three quarters of the rows of M's bm-row tiles are real rows.
bool rowsMostlyReal(long long M, int bm) { return 4 * M >= 3LL * bm * ((M + bm - 1) / bm); }

// Whether the last of M's bm-row tiles is partial with at most a quarter of its rows real.
bool lastRowTileAtMostAQuarterReal(long long M, int bm) { return M % bm != 0 && 4 * (M % bm) <= bm; }

// Whether the last of M's bm-row tiles is whole or at least half real.
bool lastRowTileAtLeastHalfReal(long long M, int bm) { return M % bm == 0 || 2 * (M % bm) >= bm; }

// Whether a decode batch (one matrix of 64 to 256 rows) fills the machine with 64x128 tiles whose
// rows are mostly real (sm90::chooseConfig may run a wider tile there, Run AD). Measured
// (bench/RESULTS.md Run AA, 2026-12-01, K = 4096): where whole tiles fill most SMs (M = 64 at N =
// 13312 and 14336, 104 and 112 tiles; M = 128 and 192 at N = 14336; M = 256 at N = 4096) the
// Hopper kernel beat cuBLAS + the epilogue on every bench chain but SiLU alone (bias+GELU,
// bias+GELU then the residual, bias+ReLU+cast: 1.11-1.62x eager; SiLU 0.97-1.16x, so
// epilogueRefusal kept SiLU to 512 rows and more at K = 4096 until session 28, which takes it where
// it was measured winning, Run AQ). A partial row tile: M = 100 (78 %
// of the tiles' rows real) lost on every chain before the staged epilogue took M-edge tiles (Run
// AA) and won on every chain after it (Run AC, febc641: 64x128 1.09-1.16x cuBLAS mm alone against
// cuBLAS + the epilogue kernel's 1.17-1.24x); a batch with fewer real rows (M = 65: half the MMA rows
// wasted) was not measured and is left out. Not filling: M = 64 at K = 14336, N = 4096 (32
// tiles) lost, 1.64x and more against 1.10x, until split-K (splitKFor: 1.02-1.07x there, Run
// AC); M = 128 at N = 4096 (64 tiles) won with GELU (1.08x eager) and the residual
// (1.31x) but lost with SiLU (0.96x). Batches of several matrices were not measured. 96 tiles
// (73 % of the 132 SMs; 100 until session 23): M = 192
// at N = 4096 (Run AL, 2026-12-02, compare_tiles, four bench chains) ran 64x128 ping-pong at
// 0.93-1.03x cuBLAS mm alone against cuBLAS + the epilogue kernel's 1.24-1.33x at K = 4096,
// 0.84-0.90x against 1.14-1.19x at K = 8192 and 1.02-1.08x against 1.11-1.13x at K = 14336; 97-99
// tiles follow unmeasured.
constexpr long long kSmallBatchMinTiles = 96;

}  // namespace

bool decodeBatchFillsSms(const ProblemShape& s) {
  if (s.B != 1 || s.M < 64 || s.M > 256 || !rowsMostlyReal(s.M, 64)) return false;
  return tiles64x128(s) >= kSmallBatchMinTiles;
}

namespace {

// ---- split-K (FX_SPLIT_K): tiles too few to fill the SMs ----
// Below this many 64x128 tiles the autotune also measures the split-K tiles (candidatesValidated):
// M = 64, K = 14336, N = 4096 (the MLP's down-projection at a decode batch) has 32, which
// stream the 117 MB of weights through 32 SMs (Run AA: the 64x128 tile lost there, 1.64x cuBLAS
// mm and more). 100: decodeBatchFillsSms' threshold until session 23 (now 96), where whole tiles
// already fill the SMs; the heuristic takes split-K only where the doubled grid fits one round
// (sm90::splitKForFewTiles), and the autotune measures it below 100.
constexpr long long kSplitKMaxTiles = 100;

KernelConfig splitKKernelConfig(int ks) {
  const sm90::GemmConfig g = sm90::splitKConfig(ks);
  KernelConfig c{"sm90_wgmma", g.bm, g.bn, g.bk, g.stages, g.threads()};
  c.split_k = ks;
  return c;
}

// Measurement knob (bench only, like FXFUSE_SM90_PINGPONG_TILE): FXFUSE_SM90_SPLIT_K=2 or 4
// forces that KS wherever the shape has fewer than kSplitKMaxTiles tiles (M = 1 included, which
// the autotune's candidates start at 64: to time or test one KS anywhere), =0 turns split-K off;
// unset, the heuristic's rule (sm90::splitKForFewTiles). Read once.
int splitKKnob() {
  static const int knob = [] {
    const char* v = std::getenv("FXFUSE_SM90_SPLIT_K");
    const std::string s = v ? v : "";
    if (s.empty()) return -1;
    if (s == "0" || s == "2" || s == "4") return std::stoi(s);
    throw CodegenError("FXFUSE_SM90_SPLIT_K must be 0, 2 or 4, not '" + s + "'");
  }();
  return knob;
}

}  // namespace

int splitKFor(const ProblemShape& s) {
  if (tiles64x128(s) >= kSplitKMaxTiles) return 1;
  const int knob = splitKKnob();
  if (knob == 0) return 1;
  if (knob > 1) return knob;
  return sm90::splitKForFewTiles(s.M, s.N, s.K, s.B, kHopperSms);
}

namespace {

// Whether the Hopper kernel with this epilogue beats the unfused graph (cuBLAS, then the
// epilogue's own kernels) at this K. Measured end to end on the H200 (bench/RESULTS.md Runs L and
// M, 2026-11-30, after the staged stores): an epilogue without a transcendental or a full-size
// residual wins at every measured shape (1.02-2.83x eager); GELU(tanh), SiLU and residual chains
// win at K <= 4096 (GELU 1.12-1.85x, residual 1.26-1.94x, SiLU 1.00-1.26x) and lost at K = 14336
// (0.96-0.98x), where the separate epilogue is a small share of the GEMM's time (on that kernel;
// since session 25 the long-K rows below take them again, epilogueRefusal). Those
// measurements are of staged chains (one 16-bit output, the residual staged with it:
// stagedEverything) with one fast-math GELU(tanh) or SiLU, at M >= 512 and (Run AA, 2026-12-01)
// below 512 rows where a decode batch fills the SMs (decodeBatchFillsSms); other expensive chains
// (several outputs, a 32-bit output, erf-GELU, sigmoid or tanh alone, stacked activations,
// division, logarithms...) were not measured or lost (Runs C-J) and stay unfused. Beyond K = 4096
// only split-K shapes, decode batches of 128-256 rows in one round of the heuristic's tile (up
// to K = 28672, Runs AD, AK, AL, AM) and, since session 25, one matrix of 512 rows or more at
// K <= 14336 with GELU(tanh) (from 257 rows since session 30, Run AR), and since session 28 of
// 1536 rows or more with SiLU alone (Runs AN, AO, AQ) take them (epilogueRefusal).
constexpr long long kExpensiveEpilogueMaxK = 4096, kLongKDecodeMaxK = 28672, kLongKRowsMaxK = 14336;
// SiLU alone on decode batches from this K (the least measured, Run AQ; epilogueRefusal)
constexpr long long kSiluDecodeMinK = 4096;
// SiLU alone at a long K from this many rows and from this N (the least measured: 1536 x 11008 x
// 11008, N = 896 at 2048 x 4864 x 896; from N = 512 the work share against eager's SiLU pass judges
// it, siluAgainstEagerRefusal, which it was fitted for; Run AQ; epilogueRefusal)
constexpr long long kSiluLongKMinRows = 1536, kSiluLongKMinN = 512;
// The work-share refusal's rows (workShareRefusal, below): from 257 rows, SiLU against eager from 1025.
constexpr long long kWorkShareAboveRows = 256, kSiluWorkShareAboveRows = 1024;

// Measurement and test knob (bench/bench_chains.py --all-epilogues, the GPU differential's
// sm90-all half, the Hopper GPU tests): FXFUSE_SM90_ALL_EPILOGUES=1 runs the Hopper kernel on
// every epilogue and at every shape the heuristic's measured refusals leave out (unfusedPathFaster;
// the autotune's candidates have them too), to time or test it there and to re-decide the rules
// when the kernel changes. Not for production use. Read once.
bool allEpiloguesKnob() {
  static const bool all = [] {
    const char* v = std::getenv("FXFUSE_SM90_ALL_EPILOGUES");
    return v && std::string(v) == "1";
  }();
  return all;
}

// What an epilogue costs beside the GEMM, as the measured rules see it: its transcendentals,
// divisions and powers (the rest are cheap: one FMA-class instruction per element) and whether it
// reads a full-size residual.
struct EpilogueCost {
  int expensive_ops = 0;
  bool silu = false, gelu_tanh = false, residual = false;
  // the expensive ops are exp, expm1, log1p and tanh, each at most once, one of the first three among
  // them: the steps of elu / selu / celu (expm1), softplus (exp, log1p) and mish (exp, log1p, tanh)
  // with their fast-math forms (fx_prelude.cuh), measured fused in session 57 (epilogueRefusal), and
  // what costs no more than one of them (logsigmoid's exp and log1p with cheap ops around them: as
  // softplus, not measured itself)
  bool exp_log = false;
  std::string unmeasured;  // the first expensive op without a measured fast-math form ("": none)
};

EpilogueCost epilogueCost(const spec::ChainSpec& spec) {
  static const char* const kExpensive[] = {"tanh", "exp", "log", "erf", "sigmoid", "sin", "cos",
                                           "gelu", "gelu_tanh", "silu", "pow", "sqrt", "rsqrt",
                                           "hardswish", "div", "reciprocal", "log1p", "expm1"};
  EpilogueCost c;
  // exp_log's ops, each counted (kExpLog order); a chain of them only is exp_log where each appears at most once
  static const char* const kExpLog[] = {"exp", "expm1", "log1p", "tanh"};
  int exp_log_count[4] = {0, 0, 0, 0};
  for (const spec::Value& v : spec.values) {
    if (spec::isResidualInput(v)) c.residual = true;
    if (v.kind != spec::ValueKind::Op) continue;
    if (!std::any_of(std::begin(kExpensive), std::end(kExpensive), [&](const char* e) { return v.op == e; })) continue;
    ++c.expensive_ops;
    // the activations measured fused, each with a fast-math form (fx_prelude.cuh)
    if (v.op == "silu") c.silu = true;
    else if (v.op == "gelu_tanh") c.gelu_tanh = true;
    else {
      if (c.unmeasured.empty()) c.unmeasured = v.op;
      for (int i = 0; i < 4; ++i) exp_log_count[i] += v.op == kExpLog[i];
    }
  }
  const int tanh_count = exp_log_count[3];
  const int exp_log_ops = exp_log_count[0] + exp_log_count[1] + exp_log_count[2] + tanh_count;
  c.exp_log = std::all_of(std::begin(exp_log_count), std::end(exp_log_count), [](int n) { return n <= 1; }) &&
              exp_log_ops == c.expensive_ops && c.expensive_ops > tanh_count;
  if (c.exp_log) c.unmeasured.clear();
  return c;
}

// What the epilogue weighs in the Hopper tile choice: a residual read per output, or nothing.
sm90::EpilogueLoad epilogueLoad(const EpilogueCost& cost) {
  return cost.residual ? sm90::EpilogueLoad::ReadsResidual : sm90::EpilogueLoad::Light;
}
sm90::EpilogueLoad epilogueLoad(const spec::ChainSpec& spec) { return epilogueLoad(epilogueCost(spec)); }

// One matrix of 257-511 rows whose heuristic tiles number at least this many: there
// GELU(tanh), alone or then a residual, beats the unfused graph. Measured on the H200
// (bench/RESULTS.md Run AR, 2026-12-03, nine shapes of 288-480 rows at K = 4096-14336, N =
// 4096-14336, 96-336 tiles): forced onto the kernel, 1.08-1.89x eager with bias+GELU and
// 1.20-1.92x with the residual behind it (18 of 18 cells); in compare_tiles the heuristic's tile
// (since Run AR's tie-break: sm90::chooseConfig) ran 0.51-0.93 of cuBLAS + the epilogue kernel's
// time with these chains at all nine shapes (at 320 x 4096 x 4096 64x256, the tile before the
// tie-break, had run 1.03-1.15). The work share (unfusedPathFaster) still judges these rows, but
// for one round of tiles at K = 4097-14336 (midRowsOneRoundAtLongK). Fewer tiles (a narrow N) were
// not measured. (epilogueRefusal)
constexpr long long kMidRowsMinTiles = 96;

// Mish (three of exp_log's transcendentals) below this K only from this many rows (epilogueRefusal).
constexpr long long kThreeExpLogMinK = 4096, kThreeExpLogShortKMinRows = 4096;

// Why the Hopper kernel with this epilogue (its cost: epilogueCost(spec)) does not beat the
// unfused graph at this shape, in words for the report; "" where it does.
std::string epilogueRefusal(const spec::ChainSpec& spec, const EpilogueCost& cost, const ProblemShape& shape) {
  if (allEpiloguesKnob()) return {};
  // A 16-bit bias or column scale the fast path cannot pair (not contiguous, not 4-byte aligned)
  // sends the whole launch to the per-element edge path: the unfused path is faster.
  if (shape.align_bytes_columns < 4) return "a 16-bit bias or column scale is not 4-byte aligned (per-element path)";
  const int expensive_ops = cost.expensive_ops;
  const bool silu = cost.silu, residual = cost.residual;
  const std::string& unmeasured = cost.unmeasured;
  if (!residual && expensive_ops == 0) return {};  // cheap: wins at every measured shape
  // measured: K <= 4096, M >= 512 (B x M for bmm) or a decode batch whose 64-row tiles fill the
  // SMs (Runs AA, AC; at K <= 28672 with the heuristic's tile in one round, Runs AD, AK, AL), at
  // most one such activation, the staged form
  if (!unmeasured.empty()) return "'" + unmeasured + "' was not measured fused";
  // exp / expm1 / log1p (elu, softplus, mish: cost.exp_log) follow GELU(tanh)'s rules below. Measured
  // forced onto the kernel (bench/RESULTS.md session 57, an H100, 2026-12-06; eager in the same
  // process, interleaved rounds) at nine shapes of 256-16384 rows, K = 160-14336, each also one of
  // GELU(tanh)'s: elu 1.04-1.86x eager, softplus 1.05-1.89x, both wherever GELU(tanh) won
  // (1.01-1.66x). Mish (three transcendentals) won at 256-2048 rows at K = 4096 (1.01-1.13x), at
  // K = 14336 and 8192^3 (1.04-1.16x), and at K = 160 from 4096 rows (1.24-1.42x), and lost at 1024
  // x 160 x 5120 (0.90x), where the epilogue is most of the kernel's time and too few tiles hide it.
  // With a residual they were not measured. Not yet on the H200, the issue's card. logsigmoid (exp and
  // log1p, as softplus, with cheap ops around them) and subsets of mish's three follow unmeasured.
  if (cost.exp_log) {
    if (residual) return "exp / expm1 / log1p activations were measured without a residual (bench/RESULTS.md session 57)";
    if (expensive_ops == 3 && shape.K < kThreeExpLogMinK && shape.M * shape.B < kThreeExpLogShortKMinRows)
      return "three transcendentals (mish) at K < 4096 lost below 4096 rows (1024 x 160 x 5120: 0.90x eager; "
             "bench/RESULTS.md session 57)";
  } else if (expensive_ops > 1) {
    return "more than one transcendental or division (not measured fused)";
  }
  // Split-K shapes (splitKFor): every bench chain won there at K = 14336, SiLU alone and the
  // residual behind GELU(tanh) included: one 64-row tile (Run AC, call 6: 3.4-6.4 % under cuBLAS +
  // the epilogue kernel; the GEMM streams weights, and the separate epilogue pass is the loss), and
  // a narrow N (Run AF: 2048 x 256 and 3072 x 128 at K = 14336, 2048 x 256 at K = 8192, 2-14 %
  // under it in all 12 cells); a residual without GELU(tanh) was not measured there.
  const bool split_k = splitKFor(shape) > 1;
  // Decode batches whose 64-row tiles fill the SMs (decodeBatchFillsSms) stream the weights at a
  // long K too, and the separate pass stays the loss: at 256 x 14336 x 4096 64x128 ping-pong ran
  // 0.99-1.03x cuBLAS mm alone against cuBLAS + the epilogue kernel's 1.12-1.16x with every bench
  // chain (bench/RESULTS.md Run AD call 4, 2026-12-01, compare_tiles). Out of sample (Run AK,
  // 2026-12-02, end to end) 1.06-1.34x eager with GELU and the residual at 256 x 8192 x 4096, 256 x
  // 11008 x 4096 and 128 x 14336 x 8192, all of them one round of 128 tiles; in two rounds (192 x
  // 14336 x 8192, 192 tiles) every tile tied or lost (unfusedPathFaster refuses it); one row tile
  // (64 x 14336 x 14336, 112 tiles) lost by 2-3 % (0.97x eager with GELU). At 256 x 28672 x 8192
  // (Run AL, compare_tiles) the heuristic's 64x256 in one round ran 1.01-1.03x cuBLAS mm alone
  // against cuBLAS + the epilogue kernel's 1.05-1.07x with every bench chain; at M = 256 (Run AM,
  // end to end) 1.07-1.10x eager on 128x256 at 256 x 14336 x 14336 and 1.15-1.21x at 256 x 8192 x
  // 16384 with GELU and the residual. Up to K = 28672,
  // 128-256 rows of whole 64-row tiles (partial ones lost at 144-160 rows, Run AE) with the
  // heuristic's tile in one round (measuredTileInOneRound); the rows' own refusals below (SiLU
  // alone, a residual without GELU) apply.
  const sm90::GemmConfig tile = sm90::chooseConfig(shape.M, shape.N, shape.K, shape.B, kHopperSms, epilogueLoad(cost));
  const bool long_k_decode = decodeBatchFillsSms(shape) && shape.M >= 128 && shape.M % 64 == 0 &&
                             measuredTileInOneRound(shape, tile) && shape.K <= kLongKDecodeMaxK;
  // From 512 rows of one matrix at a long K: Runs L and M measured the kernel of session 3
  // (1.20-1.24x cuBLAS mm alone at 4096^3; 1.04-1.12x now in compare_tiles, Run AN call 7), and
  // Run V (session 11, do_bench end to end) still had it at 0.96-1.01x eager at 4096 x 14336 x
  // 4096, in a call whose eager times were out of order (the residual chain faster than
  // bias+GELU). In the stored compare_tiles cells (round-robin in one process) at K = 4864-14336
  // and 512-12288 rows where the shape refusals (unfusedPathFaster) let the kernel run, the
  // heuristic's tile over cuBLAS + the epilogue kernel (bench/RESULTS.md Run AN, "Long K"): GELU
  // then the residual 0.816-1.000 in 31 cells, SiLU 0.824-1.037 and bias+GELU 0.822-1.042 in 31
  // each. The cells over 1: 8192 x 8192 x 1152 (every chain, bias+ReLU+cast too: session 21's
  // named breach of the shape rules) and bias+GELU at 12288 x 14336 x 4096 (1.042; 0.995 at 4096 x
  // 14336 x 4096), where GELU then the residual and SiLU won (0.902-0.958 at those two shapes); why
  // GELU alone differs there is not established (at the narrow-N split-K shapes of K = 14336,
  // fused before, it won). Taken as measured: GELU(tanh) then a residual up to K = 14336,
  // GELU(tanh) alone up to K = 11008 (2048 / 8192 x 11008 x 4096: 0.930, 0.957). End to end
  // (bench/RESULTS.md Run AO, 2026-12-02, 12 shapes at K = 8192-14336) these ran 0.99-1.32x eager
  // (GELU alone 0.99-1.18, GELU then the residual 1.00-1.32). SiLU alone, taken in session 25 from
  // 1025 rows, ran 0.95-0.99x eager at three shapes in Run AO; GELU alone was kept to K = 11008.
  // Both by timers that ran each variant in a block of its own calls (bench/RESULTS.md Run AP:
  // such blocks put the same kernel up to 15 % apart). With the variants' calls interleaved (Run
  // AQ calls 5-6, 2026-12-02, every epilogue forced, eager in the same process), eager / fused:
  // SiLU alone 1.02-1.11 at all nine shapes of 1536-8192 rows, K = 4864-14336 (Run AO's three
  // 1.03-1.05; 8192^3 1.07 in both calls, 4096 x 14336 x 4096 1.02 in both; 2048 / 4096 x 4864 x 896
  // 1.08-1.11, which the SiLU work share still refuses), GELU alone 1.09-1.11 at
  // all seven shapes of 1024-12288 rows at K = 14336. Taken: GELU(tanh), alone or then a residual,
  // from 512 rows up to K = 14336; SiLU alone from 1536 rows and N = 512 up to K = 14336 (where its
  // work share against eager's SiLU pass applies: siluAgainstEagerRefusal). A residual without
  // GELU(tanh), SiLU with one, SiLU under 1536 rows (768 x 14336 x 4096 lost, 0.91x eager, and 1024
  // x 8192 x 4096 won, 1.05x, Run AQ call 9) or at a narrower N, and batches: unmeasured or mixed.
  // From 257 rows (kMidRowsMinTiles, above) GELU(tanh) at K = 8192 and 14336 ran 1.13-1.30x eager
  // (448 x 8192 x 4096, 384 x 14336 x 4096, Run AR): those rows follow it there, judged by the work
  // share like the rest.
  const bool gelu = (expensive_ops == 1 && !silu) || cost.exp_log;  // GELU(tanh), or exp_log's (above)
  const bool silu_alone = expensive_ops == 1 && silu && !residual;
  const bool long_k_rows =
      shape.B == 1 && shape.K <= kLongKRowsMaxK &&
      ((gelu && shape.M > kWorkShareAboveRows) ||
       (silu_alone && shape.M >= kSiluLongKMinRows && shape.N >= kSiluLongKMinN));
  if (shape.K > kExpensiveEpilogueMaxK && !split_k && !long_k_decode && !long_k_rows)
    return "GELU, SiLU and residual epilogues at K > 4096 were measured winning only on one matrix (GELU, alone "
           "or then a residual, from 257 rows to K = 14336; SiLU alone from 1536 rows), with split-K and on decode "
           "batches (bench/RESULTS.md Runs L, M, AN, AO, AQ, AR)";
  if (!stagedEverything(spec)) return "outputs or a residual the fast path cannot stage (several, or 32-bit)";
  if (shape.align_bytes_residual < 16) return "the residual is not 16-byte aligned";
  if (split_k) return expensive_ops == 0 ? "a residual without GELU(tanh) was not measured with split-K" : "";
  if (shape.M * shape.B < 512) {
    const bool mid_rows = shape.M > kWorkShareAboveRows;  // one matrix of 257-511 rows (M x B < 512: B = 1)
    if (mid_rows && silu)
      return "SiLU alone at 257-511 rows lost to eager at 15 of 24 measured shapes (0.67-0.99x) and won at nine "
             "(1.02-1.77x); neither the work share nor the tile separates them (Runs AR, AS)";
    if (mid_rows && sm90::tileCount(shape.M, shape.N, 1, tile) < kMidRowsMinTiles)
      return "at 257-511 rows GELU(tanh) was measured only on at least 96 tiles (Run AR)";
    if (!mid_rows && !decodeBatchFillsSms(shape))
      return "below 512 rows only decode batches were measured: one matrix of 64-256 rows, at least 96 "
             "tiles of 64x128 with three quarters of their rows real, or split-K (Runs AA, AC), and one "
             "matrix of 257-511 rows with GELU(tanh) (Run AR)";
    // SiLU's separate pass is the cheapest of eager's epilogues: the kernel must fill the machine
    // to beat it. Measured end to end (eager in the same process; Run AO 2026-12-02 at K >= 8192, Run
    // AQ calls 5-7 at K = 4096-8192 with the calls interleaved), eager / fused with SiLU alone, all
    // on decode batches whose heuristic tile is one round (long_k_decode): won on 64x128 at 192-256
    // rows, K = 4096-28672 (192 / 256 x 4096 x 4096 1.16-1.23, 256 x 8192 x 4096 1.11; K = 8192-28672
    // at N = 4096 1.01-1.30, Run AO), and at K = 4096 on the wider tiles of a wider N: 64x256 (256 x
    // 4096 x 8192 1.04, 128 x 4096 x 14336 1.05-1.06, 192 x 4096 x 11008 1.16) and 128x256 (256 x
    // 4096 x 14336 1.09-1.10); lost where the tile takes three rounds (256 x 4096 x 11008, 192 x 4096
    // x 14336: 0.96-0.98) and where the batch does not fill the SMs (128 x 4096 x 4096: 0.95; refused
    // above for every chain). Taken as measured: 64x128 from 192 rows at K >= 4096, the wider tiles
    // at K = 4096 only; 128 rows on 64x128, the wider tiles at a longer K, 128x128, K under 4096,
    // SiLU with a residual or a gate unmeasured and refused.
    // (128x128 cooperative at K = 4096: Run AT call 2, 2-9 % faster with SiLU than 64x256, which won)
    const bool measured_silu_tile = tile.bm == 64 && tile.bn == 128
                                        ? shape.M >= 192
                                        : (tile.bn == 256 || sm90::isSquareCooperative(tile)) &&
                                              shape.K <= kSiluDecodeMinK;
    if (!mid_rows && silu && !(long_k_decode && silu_alone && shape.K >= kSiluDecodeMinK && measured_silu_tile))
      return "SiLU is faster unfused below 512 rows but for SiLU alone on decode batches in one round of the tile "
             "it was measured on (64x128 from 192 rows at K >= 4096; 64x256 / 128x256 / 128x128 cooperative at K = "
             "4096) (Runs AA, AO, AQ, AT)";
    // the residual was measured only behind GELU(tanh) there (bench chain bias_gelu_resid)
    if (expensive_ops == 0) return "a residual without GELU(tanh) was not measured below 512 rows";
  }
  return {};
}

// Why cuBLAS + the epilogue kernel (the op's unfused path) beats the Hopper kernel at this shape,
// in words; "" elsewhere. The rules, each measured on the H200 (every figure, run and shape behind
// them: docs/hopper_refusals.md); the conditions in full are the code below:
//  - fewer than kFewestTilesTheKernelWins 64x128 tiles (kFewestTilesShortK for one matrix at
//    K <= 1024) without split-K (split-K from 32 tiles is checked first: sm90::splitKForFewTiles);
//  - a partial 128-column tile at N < kPartialColumnTileMaxN; below 128 columns only one matrix
//    from kEdgeColumnsMinTiles tiles and N >= 64 is taken;
//  - the rules below judge one matrix only (a batch returns before them);
//  - at K >= 8192, 64x128 tiles too few to fill the SMs (under kSplitKMaxTiles) without split-K,
//    but for decode batches of 128 rows and more that fill them (decodeBatchFillsSms);
//  - from 257 rows (inWorkShareRange), N >= kFillRuleMinN, at least kFillRuleMinFlops: the
//    heuristic tile's work share (real outputs over its rounds' area, times its throughput) at
//    K / (K + kFillRuleK) or less, the K counted up to kFillRuleMaxK at 257-1024 rows where N is a
//    multiple of 64 and to kFillRuleMaxKElsewhere otherwise; from 1025 rows at N a multiple of 64
//    and K >= kAgainstCublasMinK, where cuBLAS's tiles fill a round (cublasWorkShare > 0), weighed
//    against cuBLAS's own share (K / (K + kFillRuleKAgainstCublas) of it); one round at a long K
//    below 512 rows is spared (midRowsOneRoundAtLongK);
//  - a 128-row last tile at most a quarter real (up to 32 real rows, K >= 4096);
//  - from 1025 rows at K >= kSixteenByteRowsMinK and N >= kFillRuleMinN, N a multiple of 8 but not
//    of 16 (16-byte rows), B not K-major;
//  - up to 256 rows at K >= 8192, the heuristic's tile in more than one round of 132 SMs, or in one
//    round but not a measured tile (measuredTileInOneRound).
// Whole or three-quarter last tiles, and 64-row last tiles, won (not refused).
constexpr long long kFewestTilesTheKernelWins = 64, kFewestTilesShortK = 32, kEdgeColumnsMinTiles = 128,
                    kPartialColumnTileMaxN = 384, kFillRuleMinN = 512, kFillRuleMaxK = 5120, kFillRuleMaxKElsewhere = 14336,
                    kSixteenByteRowsMinK = 4096;
constexpr double kFillRuleMinFlops = 16e9, kFillRuleK = 1536, kFillRuleKAgainstCublas = 1000;
// The cuBLAS-relative yardstick's range and floor (docs/hopper_refusals.md): from K = 4096, and cuBLAS's share counted
// as no less than the least it was measured running at (0.82, 1088 x 14336 x 6144 on its own 160 x
// 128 tiles; 0.83 at 1216 x 11008): a tile missing from cublasWorkShare's set can only make the
// count too low, and a lower count lowers the threshold.
constexpr long long kAgainstCublasMinK = 4096;
constexpr double kLeastCublasShare = 0.82;

// SiLU alone against eager's SiLU (siluAgainstEagerRefusal): ATen's SiLU pass is cheaper than the
// epilogue kernel the general threshold was measured against (cuBLAS + that kernel ran 0.92-0.94x
// eager with SiLU at every shape of Run AH call 8), so the kernel needs a larger share to beat
// eager: K / (K + kFillRuleKSilu), 0.854 at K = 4096. Measured (Runs AH and AJ, bf16, K = 4096):
// end to end the kernel ran 0.98x eager at a share of 0.82 (8192 x 1152, 128x128) and 0.95x at
// 0.847 (the same shape on 64x256 since session 21, Run AJ call 6), 1.00x at 0.847 (4096 x 2304;
// its kernel 0.97x eager in Run AJ call 7, the pass leaving it to eager),
// 1.04-1.11x at 0.91-0.97 (1280 x 3072, 6144 x 1408, 2048 x 2048, Run AH call 5), 1.05-1.08x at
// 0.862 (4096 x 1408 on 64x256, Run AJ calls 6-7; 1.10x at 0.835 on 128x128, call 4); in
// compare_tiles 2560 x 768 at 0.86 ran 0.82 of cuBLAS + the epilogue kernel (Run AH call 7), so
// about 1.05-1.13x eager: taken. The constant was 850 (0.828) until 8192 x 1152's larger 64x256
// share crossed it. Interleaved (Run AQ call 4, 2026-12-02) the refusals held: the op forced onto
// the kernel at 8192 x 4096 x 1152 ran 0.98x eager, at 2048 x 4096 x 2432 0.92x.
// At a long K the threshold stops rising at kSiluFillRuleMaxK: there (Run AQ calls 5-6) SiLU alone
// on 64x256 at a share of 0.94 beat eager at K = 8192-14336 (8192^3 1.07, 8192 x 11008 x 4096 1.04,
// 4096 / 8192 x 14336 x 4096 1.02-1.03), where K / (K + 700) refuses it from about K = 11100
// (0.953 at K = 14336).
constexpr double kFillRuleKSilu = 700;
constexpr long long kSiluFillRuleMaxK = 8192;
// SiLU alone at N <= 128 on 128x128 tiles in one round (half of each tile's columns wasted at N =
// 64): eager's SiLU pass over so few columns costs next to nothing, so the kernel must keep up with
// cuBLAS alone. Measured at K = 4096 (eager / fused, the work share of the 128x128 tiles): 8512 x
// 4096 x 64 (0.24) 0.96-0.98 in Runs AH, AI and AQ (three sessions, every timer); 12288 x 4096 x 64 (0.34)
// 1.04 (Run AQ call 6), 16384 x 4096 x 64 (0.46) and 10240 x 4096 x 128 (0.57) 1.04-1.41 (Run AH),
// 1.07 (Run AQ call 4). Refused under this share: the midpoint between the loss and the least win.
// Other tiles at N <= 128 (64x128 over many rounds, split-K) are not judged by it (unmeasured).
constexpr double kSiluNarrowLeastShare = 0.29;

// Where the work-share refusal was measured: one matrix of more than `above_rows` rows, N >=
// kFillRuleMinN, at least kFillRuleMinFlops. Against cuBLAS + the epilogue kernel from 257 rows
// (kWorkShareAboveRows; Run AH from 1025 rows, and at 320-1024 rows Runs AC and AL, 2026-12-01/02,
// compare_tiles, four bench chains, the heuristic's tile / cuBLAS + the epilogue kernel: every
// shape in range at or under the threshold lost in at least one chain: 576 x 4096 x 4096 and 640
// x 4096 x 4096 at shares 0.55 / 0.61 by up to 6.5 % / 0.7 % in Run AC and by 4-9 % on every chain
// in Run AL, 320 x 4096 x 8192 (0.61) by 2.2 %, 1024 x 14336 x 2560 (0.61, threshold 0.90) by
// 15-17 %, 1024 x 8192 x 5120 (0.76, 0.84) by 7.5-9.3 %; every shape over it won, 768 x 4096 x
// 4096 at 0.74 by 13-15 %, 640 x 4096 x 8192 at 0.76 by 9-13 %). Below 16 GFLOP three
// won under it (384 x 4096 x 4096 at 0.68 by 20 %, 1024 x 4096 x 1152 at 0.51 by 4-7 %, 1024 x
// 4096 x 1024 at 0.74 by 16-21 %): the
// FLOP bound stands there too. SiLU against eager (kFillRuleKSilu) only from 1025 rows, where it
// was measured.
// (kWorkShareAboveRows, kSiluWorkShareAboveRows: above epilogueRefusal)
bool inWorkShareRange(const ProblemShape& s, long long above_rows) {
  return s.B == 1 && s.M > above_rows && s.N >= kFillRuleMinN && 2.0 * s.M * s.N * s.K >= kFillRuleMinFlops;
}

// The share at or under which the kernel is refused: K / (K + k_cost), K counted to max_k at most
// (the threshold would tend to 1 with K; kFillRuleMaxK: where it stops rising, measured), of
// the unfused path's own share (1 where it is not weighed).
struct WorkShareYardstick {
  double k_cost;
  long long max_k;
  double cublas_share = 0;  // cuBLAS's own share (cublasWorkShare) where it is weighed, else 0
  double least(long long K) const {
    const double k = double(std::min(K, max_k));
    return k / (k + k_cost) * (cublas_share > 0 ? cublas_share : 1.0);
  }
};

// The general refusal's yardstick (above): from 1025 rows of one matrix of whole 128-byte rows at
// K >= 4096 (where fitted and checked out of sample), against cuBLAS's share where its tiles fill a
// round, counted as at least kLeastCublasShare; at 257-1024 such rows stopping at K =
// kFillRuleMaxK; elsewhere the share alone to K = 14336.
WorkShareYardstick generalWorkShareYardstick(const ProblemShape& s) {
  if (s.N % 64 != 0) return {kFillRuleK, kFillRuleMaxKElsewhere};
  if (s.M <= 1024) return {kFillRuleK, kFillRuleMaxK};
  const double cublas_share = cublasWorkShare(s.M, s.N, kHopperSms);
  if (cublas_share == 0 || s.K < kAgainstCublasMinK) return {kFillRuleK, kFillRuleMaxKElsewhere};
  return {kFillRuleKAgainstCublas, kFillRuleMaxKElsewhere, std::max(cublas_share, kLeastCublasShare)};
}

// SiLU alone against cuBLAS + ATen's SiLU (kFillRuleKSilu, above): the share alone.
constexpr WorkShareYardstick kSiluWorkShareYardstick{kFillRuleKSilu, kSiluFillRuleMaxK};

// The work-share refusal (above): a reason in words where g, the heuristic's tile, does at most
// `yardstick`'s share of its slots' work, "" elsewhere or outside the rule's measured range.
std::string workShareRefusal(const ProblemShape& s, const sm90::GemmConfig& g, const WorkShareYardstick& yardstick,
                             long long above_rows, const char* unfused_path) {
  if (!inWorkShareRange(s, above_rows)) return {};
  const double share = sm90::judgedWorkShare(s.M, s.N, s.K, s.B, g, kHopperSms), least = yardstick.least(s.K);
  // A tie is refused: 4096 x 768 at K = 4096 sits on the general threshold (8/11 both); the kernel
  // ran at par with cuBLAS + the epilogue kernel there (Run AH call 8: 0.98-1.02) but 0.91x eager
  // with SiLU.
  if (share > least * (1 + 1e-9)) return {};
  if (yardstick.cublas_share > 0)
    return fmt::format("{}x{} tiles do {:.0f} % of their slots' work, under the {:.0f} % that beats {} (its cuBLAS "
                       "tiles counted at {:.0f} % of theirs) at K = {} (Runs AH, AV)",
                       g.bm, g.bn, 100 * share, 100 * least, unfused_path, 100 * yardstick.cublas_share, s.K);
  return fmt::format("{}x{} tiles do {:.0f} % of their slots' work, under the {:.0f} % that beats {} at K = {} (Run AH)",
                     g.bm, g.bn, 100 * share, 100 * least, unfused_path, s.K);
}

// Below 512 rows at K = 4097-14336, one round of the heuristic's tiles is not refused by its work
// share: cuBLAS runs so few rows at a long K no better than the kernel's one round (384 x 14336 x
// 4096: mm alone 0.085 ms, the fused bias+GELU 0.079 at a share of 0.68, under the 0.90 the K
// gives). Measured on the H200 (bench/RESULTS.md Run AR, 2026-12-03, compare_tiles and end to end,
// the heuristic's tile against cuBLAS + the epilogue kernel / eager): 384 x 14336 x 4096 (share
// 0.68) 14-15 % ahead in all four bench chains; 448 x 8192 x 4096 (0.80 under 0.84) 11-12 % ahead;
// out of sample 320 x 14336 x 4864 (0.68) 1.37-1.38x eager, 320 x 14336 x 3072 (0.69, 64x128)
// 1.25-1.35x, 320 x 14336 x 6144, 480 x 14336 x 4096, 320 / 384 / 352 x 8192 x 4864 / 4864 /
// 4096 1.04-1.42x (352 x 8192 x 4096 at a share of 0.63 at par with the unfused path). From K =
// 4097, not 8192, so that no K between measured wins is refused (under 16 GFLOP the work share
// does not apply: one round at K = 4096 won there, 320-448 x 4096 x 4096); to K = 14336, the
// longest measured. In three rounds the K's threshold held at K = 4096-14336 (384 x 4096 x 12288 at
// 0.68: 0.3-2.6 % behind; 384 x 8192 x 8192, 64x128 at 0.74: 10-12 % behind; 320 x 8192 x 14336 at
// 0.66: 0.97x eager with bias+GELU; 320 x 4096 x 8192, 64x128 at 0.61, 5-8 % behind). Named misses
// of that threshold, in three rounds: 320 x 3072 x 14336 (0.665 under 0.667, 7-9 % ahead) and 384
// x 14336 x 14336 (0.80 under 0.90, 1.08-1.14x eager). The last row tile at least half real, as
// measured (320, 448 rows of 128-row tiles; 257 rows: unmeasured). (g: the heuristic's tile for s)
bool midRowsOneRoundAtLongK(const ProblemShape& s, const sm90::GemmConfig& g) {
  if (s.B != 1 || s.M >= 512 || s.K <= kExpensiveEpilogueMaxK || s.K > kLongKRowsMaxK) return false;
  return sm90::roundsOfTiles(s.M, s.N, 1, g, kHopperSms) == 1 && lastRowTileAtLeastHalfReal(s.M, g.bm);
}

std::string unfusedPathFaster(const ProblemShape& s, sm90::EpilogueLoad epilogue) {
  if (splitKFor(s) > 1) return {};
  const long long tiles = tiles64x128(s);
  if (tiles < (s.K <= 1024 && s.B == 1 ? kFewestTilesShortK : kFewestTilesTheKernelWins))
    return fmt::format("{} tiles of 64x128, under half the SMs, and no split-K: cuBLAS + the epilogue kernel is "
                       "faster (Run AF)",
                       tiles);
  const bool measured_below_128_columns = s.N >= 64 && s.N < 128 && s.B == 1 && tiles >= kEdgeColumnsMinTiles;
  if (s.N % 128 != 0 && s.N < kPartialColumnTileMaxN && !measured_below_128_columns)
    return "a partial 128-column tile, at least a third of N's column tiles: cuBLAS + the epilogue kernel is faster "
           "(Runs AF, AG)";
  if (s.B != 1) return {};
  const sm90::GemmConfig g = sm90::chooseConfig(s.M, s.N, s.K, s.B, kHopperSms, epilogue);
  if (s.K >= 8192 && tiles < kSplitKMaxTiles && !(decodeBatchFillsSms(s) && s.M >= 128))
    return fmt::format("{} tiles of 64x128, too few to fill the SMs at K >= 8192: cuBLAS + the epilogue kernel is "
                       "faster (Run AE)",
                       tiles);
  if (s.K >= 8192 && s.M <= 256 && !measuredTileInOneRound(s, g))
    return "the tiles take more than one round at K >= 8192 below 257 rows: cuBLAS + the epilogue kernel is faster "
           "(Runs AK, AL)";
  if (s.M > 1024 && s.K >= kSixteenByteRowsMinK && s.N >= kFillRuleMinN && s.N % 16 != 0 && !s.b_kmajor)
    return fmt::format("rows of B and the output {} bytes long, a multiple of 16 but not of 32: cuBLAS + the "
                       "epilogue kernel is faster (Run AK)",
                       2 * s.N);
  if (s.M > kWorkShareAboveRows)
    return midRowsOneRoundAtLongK(s, g) ? ""
                                        : workShareRefusal(s, g, generalWorkShareYardstick(s), kWorkShareAboveRows,
                                                           "cuBLAS + the epilogue kernel");
  if (g.bm == 128 && s.K >= 4096 && lastRowTileAtMostAQuarterReal(s.M, g.bm))
    return fmt::format("the last 128-row tile holds {} real rows: cuBLAS + the epilogue kernel is faster (Run AE)",
                       s.M % g.bm);
  return {};
}

// Why the Hopper kernel does not take this problem, in words; "" where it does.
std::string hopperRefusal(const Query& q) {
  const ProblemShape& s = q.shape;
  // wgmma and setmaxnreg exist on sm_90a only: Blackwell (sm_100, sm_120) has neither, so it takes the
  // pre-Hopper tiles until it has a template of its own (review of session 53).
  if (q.arch != 90) return q.arch < 90 ? "needs sm_90" : fmt::format("wgmma is sm_90a only, not sm_{}", q.arch);
  if (!q.is16bit()) return "operands are not bf16/f16";
  if (!q.a.plain || !q.b.plain) return "an operand has a prologue (TMA loads the tensors as they are)";
  // TMA loads A with k innermost: a transposed A is not expressible (the template checks).
  if (!q.a.kmajor || !s.a_kmajor) return "A is transposed";
  if (s.align_bytes_a < 16 || s.align_bytes_b < 16) return "an operand is not 16-byte aligned";
  if (s.K % 8 != 0 || s.N % 8 != 0) return "K or N is not a multiple of 8";
  if (s.M < q.hopper_min_m && !decodeBatchFillsSms(s) && splitKFor(s) == 1)
    return fmt::format("M < {} and neither a decode batch whose 64-row tiles fill the SMs nor one 64-row tile, "
                       "three quarters real, at K >= 8192 (split-K) (Runs AA, AC, AE)", q.hopper_min_m);
  if (q.heuristic && !allEpiloguesKnob())
    if (std::string why = unfusedPathFaster(s, q.epilogue_load); !why.empty()) return why;
  if (!q.epilogue_refusal.empty()) return q.epilogue_refusal;
  return {};
}

// The Hopper tiles a measured autotune chooses from (candidateConfigs), with the ring depths
// that fit beside the staged stores' 18 KB in 227 KB (GemmConfig::dynSmemBytes). 128x128
// ping-pong: measured beside 64x256 in session 7 with 7 stages, before the staging buffer
// (bench/RESULTS.md, Run J): faster for bias+GELU and bias+ReLU+cast at 4096^3, slower elsewhere.
struct HopperTile {
  int bm, bn, stages;
  bool pingpong;
};
constexpr HopperTile kHopperTiles[] = {
    {64, 256, 5, true}, {64, 128, 8, true}, {128, 128, 6, true}, {128, 256, 4, false}, {128, 128, 6, false}};

KernelConfig hopperConfigOf(const HopperTile& t) {
  KernelConfig c{"sm90_wgmma", t.bm, t.bn, sm90::GemmConfig{}.bk, t.stages, 0};
  c.pingpong = t.pingpong;
  c.threads = sm90ConfigOf(c).threads();
  return c;
}

// Measurement knobs (bench only, like FXFUSE_SM90_ALL_EPILOGUES): FXFUSE_SM90_PINGPONG_TILE=BMxBN (one
// of the ping-pong tiles above: 64x256, 64x128, 128x128) or FXFUSE_SM90_COOPERATIVE_TILE=BMxBN (one of
// the cooperative 128-row tiles: 128x256, 128x128) runs every Hopper launch with that tile, to compare
// tiles end to end (a cooperative one with FXFUSE_SM90_EPILOGUE_OVERLAP: the overlapped tile for every
// chain with a hand-off, also where the rule would take ping-pong). Read once; both set, or a tile not in
// the list, is an error naming the knob.
std::optional<KernelConfig> tileKnob(const char* env, bool pingpong, const char* tiles) {
  const char* v = std::getenv(env);
  if (!v || !*v) return std::nullopt;
  for (const HopperTile& t : kHopperTiles)
    if (t.pingpong == pingpong && fmt::format("{}x{}", t.bm, t.bn) == v)
      return hopperConfigOf(t);
  throw CodegenError(fmt::format("{} must be {}, not '{}'", env, tiles, v));
}

const KernelConfig* forcedTileKnob() {
  static const std::optional<KernelConfig> knob = []() -> std::optional<KernelConfig> {
    const std::optional<KernelConfig> pp = tileKnob("FXFUSE_SM90_PINGPONG_TILE", true, "64x256, 64x128 or 128x128");
    const std::optional<KernelConfig> coop = tileKnob("FXFUSE_SM90_COOPERATIVE_TILE", false, "128x256 or 128x128");
    if (pp && coop) throw CodegenError("FXFUSE_SM90_PINGPONG_TILE and FXFUSE_SM90_COOPERATIVE_TILE are both set");
    return pp ? pp : coop;
  }();
  return knob ? &*knob : nullptr;
}

// Measurement knob (bench only): FXFUSE_SM90_STAGES=N (2-8) gives every Hopper launch without split-K
// a ring of N stages instead of its tile's, where that still fits the 227 KB a block may use: e.g.
// whether three 48 KB stages keep 128x256 cooperative's mainloop at par, the room an epilogue
// overlapped with the next tile would need (bench/sm90/NOTES.md session 45). Read once; a bad or
// too deep value is an error naming the knob, not a silent fallback.
int sm90StagesKnob() {
  static const int stages = [] {
    const char* v = std::getenv("FXFUSE_SM90_STAGES");
    const std::string s = v ? v : "";
    if (s.empty()) return 0;
    if (s.size() != 1 || s[0] < '2' || s[0] > '8')
      throw CodegenError("FXFUSE_SM90_STAGES must be 2 to 8, not '" + s + "'");
    return s[0] - '0';
  }();
  return stages;
}

KernelConfig withSm90StagesKnob(KernelConfig c) {
  const int stages = sm90StagesKnob();
  if (stages == 0) return c;
  c.stages = stages;
  if (!sm90ConfigOf(c).fitsSharedMemory())
    throw CodegenError(fmt::format("FXFUSE_SM90_STAGES={} does not fit the {}x{} tile in 227 KB", stages, c.bm, c.bn));
  return c;
}

// FXFUSE_SM90_EPILOGUE_OVERLAP (bench and debugging): "1" gives every cooperative 128-row Hopper launch
// without split-K whose chain has a hand-off the overlapped epilogue (the autotune's candidates too, as
// always); "0" gives none of them it; unset, the rule (overlapRule) decides. Read once.
int epilogueOverlapKnob() {
  static const int knob = [] {
    const std::string s = readBinaryKnob("FXFUSE_SM90_EPILOGUE_OVERLAP");
    return s.empty() ? -1 : s == "1" ? 1 : 0;
  }();
  return knob;
}

// Whether c can take the overlapped epilogue (FX_EPI_OVERLAP): a cooperative 128-row tile without
// split-K, for a chain with a 16-bit hand-off value (hooks.h epilogueHandoff), N % 8 == 0 (the Hopper
// rule's already: the consumers' hand-off pairs never straddle N).
bool overlapFits(const KernelConfig& c, const Query& q) {
  return q.handoff && !c.pingpong && c.split_k == 1 && c.bm == 128 && q.shape.N % 8 == 0;
}

// Measurement knob FXFUSE_SM90_LAST_EPILOGUE_SHARED: "1" gives every overlapped config the shared last
// tile, "0" none; unset (-1), the rule (overlapRule) decides. Read per decision, not once: the CTests
// and bench/sm90/knob_ab.sh set it per kernel. Applied to the config, so the tile's name says it.
int lastEpilogueSharedKnob() {
  const std::string s = readBinaryKnob("FXFUSE_SM90_LAST_EPILOGUE_SHARED");
  return s.empty() ? -1 : s == "1" ? 1 : 0;
}

// c with the overlapped epilogue (the last tile's shared by the consumers where last_shared says so, or
// the knob) and the deepest ring that fits beside its hand-off buffer (128x256: three stages;
// FXFUSE_SM90_STAGES, where set, instead: withSm90StagesKnob).
KernelConfig overlapped(KernelConfig c, bool last_shared = false) {
  c.epilogue_overlap = true;
  const int knob = lastEpilogueSharedKnob();
  c.last_epilogue_shared = knob >= 0 ? knob == 1 : last_shared;
  c.threads = sm90ConfigOf(c).threads();
  while (c.stages > 2 && !sm90ConfigOf(c).fitsSharedMemory()) --c.stages;
  return c;
}

// 128x256 cooperative tiles of s.
long long tiles128x256(const ProblemShape& s) { return (s.M + 127) / 128 * ((s.N + 255) / 256) * s.B; }
// The fewest 128x256 tiles the overlapped epilogue with the shared last tile was measured ahead at
// (2048 x 4096: overlapRule); from 3 per SM the overlap alone was.
constexpr long long kOverlapSharedMinTiles = 256;

// The overlapped epilogue where it was measured ahead of the heuristic's tile (bench/RESULTS.md Run BI,
// 2026-12-05, bench/sm90/knob_ab.sh, bf16, two rounds, fxfuse / cuBLAS mm):
//  - on the heuristic's 128x256 cooperative tile at 4096^3 (512 tiles, ~3.9 per SM): bias+GELU 1.056 ->
//    1.041, GELU + residual 1.125 -> 1.118, bias+ReLU+cast 1.034 -> 1.028, SiLU 1.039 -> 1.038; at 2048 x
//    4096 x 4096 (256 tiles, ~1.9 per SM) it lost 0.7-4 % (too few tiles a CTA to hide an epilogue
//    behind: the last one's is never hidden, and the ring is a stage shorter): from 3 tiles per SM;
//  - instead of the heuristic's ping-pong tile (128x128 for these chains: sm90::chooseConfig's
//    ReadsResidual), for chains that read a residual at K <= 14336 (the longest K measured), where the
//    epilogue is a large share of a tile's time: 8192^3 1.044 -> 1.000, M = 4096, K = 4096, N = 14336
//    1.124 -> 1.057; at K = 14336, N = 4096 a tie on the H200 (1.024 -> 1.027), but on an H100 the
//    ping-pong tile ran 1.203x mm against 1.029x, slower than eager (bench/RESULTS.md Run BM,
//    compare_tiles; end to end 1.35 -> 1.01x mm): taken since session 51. In place of 64x256 ping-pong,
//    GELU(tanh) without a residual gained 0.1-1.2 % on the H200 at the three shapes (Run BI) and 0.8-8.5 %
//    on the H100 (Run BM: 8192^3 1.055 -> 0.984, K = 4096, N = 14336 1.119 -> 1.024): taken since session
//    51. ReLU+cast and SiLU lost 0.1-2.5 % on the H200 (within 1 % either way on the H100): those keep
//    ping-pong. Whole tiles only (the measured shapes).
// The last tile's epilogue shared by the consumers (last_epilogue_shared; bench/RESULTS.md Run BL,
// 2026-12-05, knob_ab.sh: the overlap, the same shared, the plain tile; bf16, two rounds): on the 128x256
// cooperative tile at 4096^3 (512 tiles, 3.9 per SM) 0.8-4.6 % ahead of the overlap alone (GELU +
// residual 1.117 -> 1.066), at 2048 x 4096 x 4096 (256 tiles, 1.9 per SM) 1-8 % ahead of it and at or
// ahead of the plain tile (GELU + residual 1.152 -> 1.095, bias+GELU 1.069 -> 1.065, SiLU 1.044 -> 1.048
// within the rounds' spread): there the overlap now goes from 256 tiles at K <= 4096 (at a longer K the
// epilogue is a smaller share of a tile, against the ring's stage it costs). Not measured above 4 tiles per
// SM, where the last tile is a smaller share of a CTA's time and the joined row loop (rows in pairs for
// a warp count unknown at compile time) runs on every tile: the overlap alone there; nor at K > 4096,
// where the last tile's epilogue is a smaller share of its CTA's time (the overlap alone there too).
// For chains that read a residual, whose epilogue is the longest, an H100 (Run BM, compare_tiles, the
// shared last tile forced) had it ahead of the plain 128x256 tile with fewer tiles and a longer K too:
// 224 tiles (1792 x 4096 x 4096) 1.161 -> 1.093x mm, 256 tiles at K = 8192 1.075 -> 1.049x, while the
// light chains there tied or lost 0.2-0.7 %: residual chains from 224 tiles and to K = 8192, on whole tiles
// of one matrix (the measured shapes; 4096 x 4096 at K = 8192 lies between the measured 4096^3 and K = 8192).
constexpr long long kOverlapResidualMinTiles = 224;
KernelConfig overlapRule(const KernelConfig& c, const Query& q) {
  const int knob = epilogueOverlapKnob();
  if (knob >= 0) return knob == 1 && overlapFits(c, q) ? overlapped(c) : c;
  const long long tiles = tiles128x256(q.shape);
  const ProblemShape& s = q.shape;
  const bool residual = q.epilogue_load == sm90::EpilogueLoad::ReadsResidual;
  const bool whole_tiles = s.M % 128 == 0 && s.N % 256 == 0;
  // the residual's measured extension: whole tiles of one matrix
  const bool residual_extended = residual && whole_tiles && s.B == 1;
  if (!q.heuristic || tiles < (residual_extended ? kOverlapResidualMinTiles : kOverlapSharedMinTiles)) return c;
  const long long shared_max_k = residual_extended ? 8192 : 4096;  // the longest K the shared last tile won at
  auto take = [shared = tiles <= 4 * kHopperSms && s.K <= shared_max_k](const KernelConfig& o) {
    return overlapped(o, shared);
  };
  const bool fewTiles = tiles < 3 * kHopperSms;
  if (c.bn == 256 && overlapFits(c, q) && (!fewTiles || s.K <= shared_max_k)) return take(c);
  if (fewTiles) return c;
  const bool heavy = residual || (q.gelu_tanh && c.bm == 64 && c.bn == 256);
  if (c.pingpong && heavy && s.K <= 14336 && whole_tiles) {
    const KernelConfig coop = hopperConfigOf(HopperTile{128, 256, 4, false});
    if (overlapFits(coop, q)) return take(coop);
  }
  return c;
}

// ---- gemv (kernels/gemv.cuh): the host-side chooser of its header comment ----
constexpr int kGemvNT = 128;       // output columns per CTA (the rule's; gemvColumnsPerCta)
constexpr int kGemvNarrowNT = 64;  // the product by wgmma's other width (FX_GEMV_NT: the knob, the autotune)
constexpr int kGemvThreads = 128;  // 4 warps (fixed)
constexpr long long kGemvMaxGridZ = 65535;

// m-tiles of 8 rows: 1, 2, 4 or 8 (M <= 64 gets all rows in one CTA). Two row blocks of 32 rows
// at M = 33-64, each streaming the weights, ran up to 28 % behind the unfused chain on dense weights
// (even at best, M = 64 x 4096 x 14336) and 5-15 % behind the one 64-row block on int8 (bench/RESULTS.md
// Run BB): not taken.
int gemvMTiles(long long M) {
  long long mt8 = (M + 7) / 8;
  return mt8 <= 1 ? 1 : mt8 <= 2 ? 2 : mt8 <= 4 ? 4 : 8;
}

// Hopper's shared memory per SM and what each CTA reserves of it (sm_90: H100 / H200).
constexpr long long kGemvSmemPerSm = 228 * 1024, kGemvReservedPerCta = 1024;
// The deepest pipeline the gemv takes (about five stages: bench/gemv/NOTES.md run 3); 96 KB where
// a block may opt in to only 99 KB (sm_86 / sm_89 and the consumer Blackwells from sm_120: five
// 20 KB stages at M = 9-16 would not load there).
constexpr long long kGemvMaxPipelineBytes = 100 * 1024, kGemvMaxPipelineBytesSmallSmem = 96 * 1024;
bool gemvSmallSharedMemory(int arch) { return arch == 86 || arch == 89 || arch >= 120; }

// A gemv launch's extents (kernels/gemv.cuh, "Launch geometry"): column tiles of bn, row blocks of
// bm over the batch, k-steps of bk.
struct GemvExtents {
  long long nt, mz, ksteps;
};
GemvExtents gemvExtents(const ProblemShape& s, long long bm, long long bn, long long bk) {
  return {(s.N + bn - 1) / bn, s.B * ((s.M + bm - 1) / bm), (s.K + bk - 1) / bk};
}

// One pipeline stage: the W tile (nt columns x kt weights of `wb` bytes; packed int4: half its bytes, the packed
// ones) and the A tile (bm x kt, 16-bit).
long long gemvStageBytes(int mtiles, int kt, int nt, int wb, bool nibbles) {
  return 1LL * nt * kt * wb / (nibbles ? 2 : 1) + 8LL * mtiles * kt * 2;
}
// Shared memory a gemv holds besides its stages: packed int4's expanded 8-bit tile (kernels/gemv.cuh expand_stage).
long long gemvTileBufferBytes(int kt, int nt, bool nibbles) { return nibbles ? 1LL * nt * kt : 0; }

}  // namespace

// Bytes of the weight element the kernel streams: the raw 8-bit element on the fast
// quantized path (FX_B_QUANT_SCALE), else the 16-bit MMA element.
int gemvWeightBytes(const OperandInfo& b) { return b.quant_scale ? 1 : 2; }

// Bytes of the weight element a gemv config streams: as the config says (gemvConfigWith), else from its k per stage,
// 128 bytes of weight (bk 64: 16-bit, 128: 8-bit), but where the product by wgmma takes 64 k of 8-bit weights
// (gemvKPerStage): a config written without weight_bytes that has wgmma and bk 64 is 8-bit. No other 64-k config of
// 8-bit weights exists: generate refuses one without wgmma, K x N weights and 128 columns.
int gemvWeightBytesOf(const KernelConfig& c) {
  if (c.weight_bytes) return c.weight_bytes;
  return c.bk == 64 && !c.wgmma ? 2 : 1;
}

namespace {

// Measurement knob: FXFUSE_GEMV_STAGE_KB=N sizes the gemv's pipeline to about N KB instead of the
// rule's (bench/bench_decode.py --stage-kb, bench/gemv/sweep_inflight.py). Read once per process;
// not for production use. 0: not set.
long long gemvPipelineBytesKnob() {
  static const long long bytes = [] {
    const char* v = std::getenv("FXFUSE_GEMV_STAGE_KB");
    const long long kb = v && *v ? std::atoll(v) : 0;
    return kb >= 16 && kb <= 200 ? kb * 1024 : 0;
  }();
  return bytes;
}

// Stages of a pipeline that lets `ctas` CTAs share an SM (at most kGemvMaxPipelineBytes, `held` of it the shared
// memory the gemv keeps besides its stages), 2 to `most_stages`: 6, or packed int4's 8 (kernels/gemv.cuh takes 2-8),
// whose stages are half the weight bytes (its 8 stages hold 64 KB of weights, 8-bit weights' 6 hold 96).
int gemvStagesFor(long long stage_bytes, int ctas, int arch, long long held, long long most_stages) {
  const long long most = gemvSmallSharedMemory(arch) ? kGemvMaxPipelineBytesSmallSmem : kGemvMaxPipelineBytes;
  long long budget = std::min(most, kGemvSmemPerSm / ctas - kGemvReservedPerCta);
  if (const long long knob = gemvPipelineBytesKnob()) {
    budget = knob;
    most_stages = 8;  // the kernel's deepest (kernels/gemv.cuh FX_GEMV_STAGES): the knob measures past the rule's 6
  }
  budget -= held;  // (the knob too sizes the whole: its KB are the CTA's shared memory, as for 8-bit weights)
  return static_cast<int>(std::clamp(budget / stage_bytes, 2LL, most_stages));
}
// The stages of query q's gemv at `ctas` CTAs per SM: its tile buffer held, packed int4's 8 stages at most.
int gemvStagesOf(const Query& q, long long stage_bytes, int ctas, int kt, int nt) {
  return gemvStagesFor(stage_bytes, ctas, q.arch, gemvTileBufferBytes(kt, nt, q.b.nibbles), q.b.nibbles ? 8 : 6);
}

// The most CTAs per SM an 8-bit gemv's split-K aims at, by rows per CTA (bm): three (Run AX: at
// M = 1, N = 14336, four per SM would take S = 4, 448 CTAs, 3-8 % slower than S = 2's 224), but
// four for M = 17-32 (bm = 32: Run AX calls 2, 5 and Run AY call 1, below). gemvSplitKCtasPerSm
// applies it; gemvPipelineCtasPerSm sizes the pipeline so that a cap of four can be reached.
constexpr int kGemvSplitKUsualCap = 3;
int gemvSplitKCtasCap(int bm) { return bm == 32 ? 4 : kGemvSplitKUsualCap; }

// CTAs per SM the gemv's pipeline is sized for. bench/RESULTS.md Run AX (H200, 8-bit weights at
// M = 1-64, K x N of issue 7, two rounds each), against two CTAs per SM (~100 KB, five stages):
//  - where the split-K cluster is large (few column tiles: N = 4096, S = 8), a 60 KB pipeline
//    (three or four CTAs per SM: three stages, two at M = 64) ran 5-26 % faster at every M (int8
//    14336 x 4096 at M = 1: 0.0310 -> 0.0230 ms) but in one cell (w8_linear_bias there at M = 64:
//    0.9 %): at two per SM, 32 clusters of 8 do not all fit the GPCs at once (bench/gemv/NOTES.md
//    run 2: 30 of 32 resident), so two of them ran a second wave;
//  - at N = 14336 (S = 2, 224 CTAs: resident either way) 60 KB ran 3-7 % faster at M = 1, within
//    5 % either way at M = 16 and 4-10 % slower at M = 64, where the deeper pipeline counts;
//  - at M <= 8, three stages (four CTAs' worth) ran 2-8 % faster than four (three CTAs' worth)
//    at the same split (call 2: 60 KB against this rule's first form, and call 1's 60 KB S = 2 at
//    N = 14336).
// 16-bit weights keep two (call 2: at 60 KB they ran 4-16 % slower; their split-K aims at fewer
// CTAs: gemvSplitKCtasPerSm), as do GPUs without clusters and those with less shared memory per
// SM than Hopper's (sm_120: not measured). The split-K tried here assumes 132 SMs (kHopperSms);
// on fewer the launch's S (launchDims, the real SM count) can be smaller than the one sized for.
// Packed int4 weights (FX_B_NIBBLES): three CTAs per SM where their pipeline's split-K reaches four (as 8-bit
// weights' usual rule below), else two. bench/RESULTS.md session 62 (H100; w4g_bias, w4g_linear_bias at 1 / 16 / 64
// rows, two rounds in alternating processes, the stage knob at 72 KB: three CTAs per SM at every row count): at N =
// 4096 (14336 x 4096, and 4096 x 4096 from 16 rows, where three CTAs' shallower pipeline lets the split reach 4-8)
// 0.65-0.84x two CTAs' time; at 4096 x 14336 (112 column tiles, the split 2 either way) 0.91-1.04x, 1.02-1.03x at 64
// rows; at 4096 x 4096 and one row (the split 4 either way; the rule takes three there) 1.00x.
bool gemvTakesWgmma(const Query& q, int mtiles);

int gemvPipelineCtasPerSm(const Query& q, int mtiles, int kt, int nt, long long stage_bytes) {
  if (q.arch < 90 || gemvSmallSharedMemory(q.arch) || gemvWeightBytes(q.b) == 2) return 2;
  const GemvExtents e = gemvExtents(q.shape, 8LL * mtiles, nt, kt);
  const int usual = kGemvSplitKUsualCap;
  // three CTAs per SM (the usual cap), where their pipeline's split-K reaches four
  const bool threeReachFour =
      gemvSplitK(e.nt, e.mz, e.ksteps, usual, gemvStagesOf(q, stage_bytes, usual, kt, nt), 8, kHopperSms, 0) >= 4;
  // A zero point tensor or GPTQ's words at 1-16 rows take four. At two CTAs of four warps per SM the GPTQ layer's gemv
  // is latency- and issue-bound (Nsight at one row: 12.5 % theoretical occupancy, 10.6 % achieved, issue slots 29-32 %
  // busy), and its zero points add 30 % of the warp instructions over the words alone. Four CTAs' pipelines (48 / 64
  // KB) ran 1-18 % faster at 1 and 16 rows on issue 7's two big shapes for the GPTQ layer (zero points and symmetric)
  // and 0.1-15 % for the u8 zero point tensor chains (bench/RESULTS.md session 66); the u8 bytes with a constant zero
  // point keep the rule below (0.96-1.05x there).
  if (q.b.nibbles && (q.b.zero_value >= 0 || q.b.words) && mtiles <= 2) return 4;
  // (a zero point tensor on the wgmma product at 64 rows keeps two: its per-column zero points beside the
  // accumulators spill 20-64 bytes at three CTAs' 168 registers: bench/RESULTS.md session 63; gemv_test
  // PackedInt4ZeroPointTensor. GPTQ's words with zero points take mma.sync there, gemvTakesWgmma, and the usual rule.)
  if (q.b.nibbles)
    return threeReachFour && !(q.b.zero_value >= 0 && mtiles == 8 && gemvTakesWgmma(q, mtiles)) ? usual : 2;
  if (mtiles == 1) return 4;
  if (threeReachFour) return usual;
  // Where the split-K may aim past three (gemvSplitKCtasCap: M = 17-32) over many column tiles
  // (N = 14336): two stages, four CTAs per SM and S = 4 ran 2-5 % ahead of two CTAs per SM with
  // S = 2 (bench/RESULTS.md Run AX calls 2, 5 through the knobs; Run AY call 1 through this rule:
  // 1.2-5.5 % at M = 24 / 32, every 8-bit chain). It also takes, unmeasured,
  // every other shape where three per SM would not reach S = 4: N > 12672 (at N = 28672 S stays 2,
  // so the four CTAs per SM are not used), K below 1536, and batched shapes.
  const int cap = gemvSplitKCtasCap(8 * mtiles);
  return cap > usual ? cap : 2;
}

// Measurement knob: FXFUSE_GEMV_WGMMA=0 or 1 turns the gemv's product by wgmma off or on for every
// row count its weights allow (gemvTakesWgmma), in place of the rule, for A/B runs. Read once per
// process; not for production use. -1: not set.
int gemvWgmmaKnob() {
  static const int knob = [] {
    const std::string s = readBinaryKnob("FXFUSE_GEMV_WGMMA");
    return s.empty() ? -1 : s == "1" ? 1 : 0;
  }();
  return knob;
}

// The gemv multiplies 8-bit weights by wgmma (kernels/gemv.cuh, "The product by wgmma") on sm_90
// (sm_90a's instruction). K x N weights (the `x @ (w.to(bf16) * s)` form) at 17-64 rows (m-tiles of
// 32 and 64 rows): bench/RESULTS.md Run BD call 2 (H200; w8, w8_bias_gelu, f8ch_bias; K x N of
// issue 7; alternating processes, two rounds): against the mma.sync product 8-20 % less time at
// M = 33, 48 and 64 on every row, 3-7 % at M = 24, but 1-6 % more at M = 16 (its 16-row m-tile keeps
// mma.sync). N x K weights (the F.linear form: w8_nk_fragments) at 33-64 rows (the 64-row m-tile):
// bench/RESULTS.md Run BE call 1 (w8_linear, w8_linear_bias_gelu; the same shapes and method): 15-18 %
// less time at M = 33, 48 and 64 on every row, but at M = 24 0.994-1.038x (slower at 4096 x 14336)
// and at M = 16 0.97-1.03x: their two loads a row and k16 step (against one in four on the mma.sync
// path) cost what the activation fragments save until the m-tile is 64 rows.
bool gemvTakesWgmma(const Query& q, int mtiles) {
  if (q.arch != 90) return false;
  const int knob = gemvWgmmaKnob();
  // Dense 16-bit K x N weights (w16_fragments) from 17 rows (m-tiles of 32 and 64 rows; the rule takes the dense gemv
  // up to 32 rows, gemvDenseMidRowsAhead, the knob FXFUSE_GEMV_DENSE_MAX_M to 64): bench/RESULTS.md session 70 call 3
  // (an H100; bias, `x @ w + b`, 4096 x 4096 and 14336 x 4096, S = 4, alternating processes, two rounds): at 24 rows
  // 0.7-1.7 % less time than mma.sync, at 33 and 64 rows 7-11 % less. N x K weights were not measured: mma.sync.
  if (!q.b.quant_scale) return q.b.plain && (knob >= 0 ? knob == 1 : !q.b.kmajor && mtiles >= 4);
  if (knob >= 0) return knob == 1;
  // GPTQ's words with their zero points keep mma.sync at 64 rows: bench/RESULTS.md session 66 call 6 (the GPTQ layer,
  // an H100): 0.0522 / 0.0589 ms at 4096 x 14336 / 14336 x 4096 (two / three CTAs per SM, the usual rule's) against
  // wgmma's 0.0579 / 0.0905 under the rule before (two CTAs per SM: its registers) and 0.0603 / 0.0590 at three (at
  // 14336 x 4096 the CTAs, not the product, made the difference); the symmetric form (the words alone) keeps wgmma
  // (0.0445 / 0.0480 against mma.sync's 0.0472 / 0.0524). Not measured: 17-32 rows (m-tiles of 32: the rule before
  // stands there), u8 bytes with a zero point tensor.
  if (q.b.words && q.b.zero_value >= 0 && mtiles == 8) return false;
  // AWQ's words keep mma.sync at every row count: bench/RESULTS.md session 67 (the AWQ layer, with its zero points, an
  // H100): 0.0426 / 0.0417 ms at 32 rows and 0.0518 / 0.0565 at 64 (4096 x 14336 / 14336 x 4096) against wgmma's
  // 0.0522 / 0.0493 and 0.0574 / 0.0908. (Words along n with a constant zero point, no AWQ checkpoint's form, were
  // neither measured nor run on the GPU with wgmma: mma.sync too.)
  if (q.b.n_words) return false;
  return mtiles >= (q.b.kmajor ? 8 : 4);
}

// Measurement knob: FXFUSE_GEMV_NT=64 or 128 gives the product by wgmma that many columns per CTA
// (kernels/gemv.cuh FX_GEMV_NT) in place of the rule, for A/B runs; the mma.sync product keeps 128.
// Read once per process; not for production use. 0: not set.
int gemvColumnsKnob() {
  static const int knob = [] {
    const char* v = std::getenv("FXFUSE_GEMV_NT");
    if (!v || !*v) return 0;
    if (std::string(v) == "64") return kGemvNarrowNT;
    if (std::string(v) == "128") return kGemvNT;
    throw CodegenError(std::string("FXFUSE_GEMV_NT must be 64 or 128, not '") + v + "'");
  }();
  return knob;
}

// Measurement knob: FXFUSE_GEMV_KT=64 or 128 gives the product by wgmma of 8-bit K x N weights at 128
// columns that many k per stage (kernels/gemv.cuh FX_GEMV_KT) in place of the rule, for A/B runs.
// Read once per process; not for production use. 0: not set.
int gemvKPerStageKnob() {
  static const int knob = [] {
    const char* v = std::getenv("FXFUSE_GEMV_KT");
    if (!v || !*v) return 0;
    if (std::string(v) == "64") return 64;
    if (std::string(v) == "128") return 128;
    throw CodegenError(std::string("FXFUSE_GEMV_KT must be 64 or 128, not '") + v + "'");
  }();
  return knob;
}

// The gemv takes a group-wise scale (FX_B_SCALE_GROUP): its GPU tests passed on an H100 (session 60, tests/GPU_RESULTS.md),
// 7.6-13x eager's dequantize-then-mm at issue 7's shapes, 0-46 % behind the per-channel scale (bench/RESULTS.md
// session 60). Knob FXFUSE_GEMV_GROUP_SCALES=0 turns it off (such a chain then has no fast CUDA variant: the planner
// leaves it unfused, not_profitable). Read once per process.
bool gemvGroupScalesKnob() {
  static const bool on = readBinaryKnob("FXFUSE_GEMV_GROUP_SCALES") != "0";
  return on;
}

// Packed int4 weights on the gemv (FX_B_NIBBLES: the packed bytes streamed, expanded per stage; session 61): the
// rule since its GPU tests passed (tests/GPU_RESULTS.md session 61; 8-20x eager's unpack-then-mm on an H100,
// bench/RESULTS.md session 61). Knob FXFUSE_GEMV_NIBBLES=0 turns it off (such a chain then has no fast CUDA
// variant: the planner leaves it unfused, not_profitable). Read once per process.
bool gemvNibblesKnob() {
  static const bool on = readBinaryKnob("FXFUSE_GEMV_NIBBLES") != "0";
  return on;
}

// Whether a gemv may take 64 k per stage: the product by wgmma of 8-bit K x N weights at 128 columns.
bool gemvHas64KStage(const Query& q, bool wgmma, int nt) {
  return wgmma && !q.b.kmajor && nt == kGemvNT && gemvWeightBytes(q.b) == 1;
}

// k per stage: 128 bytes of each weight row or column (128 k of 8-bit weights, 64 of 16-bit). Where
// gemvHas64KStage, 64 k is an 8 KB weight tile, twice the stages in the same shared memory (the wgmma
// prototype's stage, bench/RESULTS.md Run BD call 1); measured in the gemv (Run BF call 3: issue 7's
// K x N shapes, 24-64 rows, alternating processes): 5-6 % faster at M = 24, 4096 x 4096, 0.985-1.016x at
// 14336 x 4096, 3-5 % slower at 4096 x 14336 and 33-64 rows. So 128; 64 is a candidate of the measured
// autotune (gemvAlternatives) and the knob's.
int gemvKPerStage(const Query& q, bool wgmma, int nt) {
  const int knob = gemvKPerStageKnob();
  return knob && gemvHas64KStage(q, wgmma, nt) ? knob : 128 / gemvWeightBytes(q.b);
}

// The gemv with the given product, columns per CTA and k per stage (0: gemvKPerStage); its pipeline
// sized as the rule sizes it.
KernelConfig gemvConfigWith(const Query& q, bool wgmma, int nt, int k_per_stage = 0) {
  const int mtiles = gemvMTiles(q.shape.M);
  const int kt = k_per_stage ? k_per_stage : gemvKPerStage(q, wgmma, nt);
  const bool nibbles = q.b.nibbles;
  const long long stage = gemvStageBytes(mtiles, kt, nt, gemvWeightBytes(q.b), nibbles);
  const int stages = gemvStagesOf(q, stage, gemvPipelineCtasPerSm(q, mtiles, kt, nt, stage), kt, nt);
  KernelConfig c{"gemv", 8 * mtiles, nt, kt, stages, kGemvThreads};
  c.max_cluster = q.arch >= 90 ? 8 : 1;  // thread block clusters: sm_90 and later (8: portable)
  c.wgmma = wgmma;
  c.weight_bytes = gemvWeightBytes(q.b);
  c.nibbles = nibbles;
  return c;
}

// Dense 16-bit K x N weights on the product by wgmma at K <= 4096 where 128 columns a CTA would take split-K 4 (N up
// to 4224 on 132 SMs): 64 columns and split-K 2, about as many CTAs with half the partial sums each to reduce and
// twice the k-steps. bench/RESULTS.md session 70 call 4 (an H100; 4096 x 4096, bias and bias+GELU(tanh), bf16 / f16,
// alternating processes, two rounds): at 24 rows 0.904-0.915x the time of 128 columns at S = 4, at 33 and 64 rows
// (the knob's dense rows) 0.93-0.95x; 64 columns at S = 4 0.95x at 24 rows and 1.2-1.35x at 33-64. Not measured:
// other K and N (4096 x 14336 keeps 128 columns at S = 1), N x K weights (mma.sync: gemvTakesWgmma), the H200.
// The dense 16-bit gemv's launch at 128 columns a CTA, on the product the rule gives, on 132 SMs (the geometry Run BA
// measured the 17-32-row rule on, and from which the 64-column rule departs): its split-K, and whether its CTAs cover
// at least 4/5 of the SMs.
struct GemvWideGeometry {
  int split;
  bool fills;
};
GemvWideGeometry gemvDenseWideGeometry(const Query& q) {
  const KernelConfig c = gemvConfigWith(q, gemvTakesWgmma(q, gemvMTiles(q.shape.M)), kGemvNT);
  const GemvExtents e = gemvExtents(q.shape, c.bm, c.bn, c.bk);
  const int split = gemvSplitK(e.nt, e.mz, e.ksteps, gemvSplitKCtasPerSm(c), c.stages, c.max_cluster, kHopperSms, 0);
  return {split, 5 * e.nt * e.mz * split >= 4LL * kHopperSms};
}

// Where the 64-column rule may apply at all, before the 128-column geometry is worked out.
bool gemvDenseMayTakeNarrowColumns(const Query& q) {
  return !q.b.quant_scale && !q.b.kmajor && q.shape.K <= 4096 && gemvMTiles(q.shape.M) >= 4;
}

bool gemvDenseTakesNarrowColumns(const Query& q) {
  return gemvDenseMayTakeNarrowColumns(q) && gemvDenseWideGeometry(q).split == 4;
}

// Output columns per CTA: 128, or with the product by wgmma 64 (one wgmma of 64 columns per k16
// step, twice the CTAs, each with half the weight tile; the prototype's best, bench/RESULTS.md Run BD
// call 1). For 8-bit weights bench/RESULTS.md Run BE call 2 (w8, w8_linear at M = 24-64, issue 7's shapes, the
// rule's pipeline and split-K): 3-5.5 % faster only for w8_linear at 4096 x 4096 and 33-64 rows (w8 there
// -1.4 to +0.2 %), 8-17 % slower at 4096 x 14336 and 10-12 % (K x N) at 14336 x 4096; split-K 8 and
// a 50 KB pipeline slower still. So 128; 64 is a candidate of the measured autotune
// (gemvAlternatives) and the knob's. Dense 16-bit weights: gemvDenseTakesNarrowColumns.
int gemvColumnsPerCta(const Query& q, bool wgmma) {
  if (!wgmma) return kGemvNT;
  if (const int knob = gemvColumnsKnob()) return knob;
  return gemvDenseTakesNarrowColumns(q) ? kGemvNarrowNT : kGemvNT;
}

KernelConfig gemvConfig(const Query& q) {
  const bool wgmma = gemvTakesWgmma(q, gemvMTiles(q.shape.M));
  return gemvConfigWith(q, wgmma, gemvColumnsPerCta(q, wgmma));
}

// The gemvs a measured autotune times besides the rule's for 8-bit weights on sm_90: every product,
// width and stage the template has (mma.sync at 128 columns, wgmma at 128 and 64, and for K x N
// weights wgmma at 128 columns and 64 k a stage), since the rule's boundaries (wgmma from 17 or 33
// rows, 128 columns, 128 k) were measured on three shapes only. Dense 16-bit K x N weights at 17-32 rows (the rule's
// wgmma product, 64 or 128 columns: measured at two shapes on an H100 only) the same three.
std::vector<KernelConfig> gemvAlternatives(const Query& q) {
  if (q.arch != 90) return {};
  if (!q.b.quant_scale) {
    if (!q.b.plain || q.b.kmajor || gemvMTiles(q.shape.M) < 4) return {};
    return {gemvConfigWith(q, false, kGemvNT), gemvConfigWith(q, true, kGemvNT), gemvConfigWith(q, true, kGemvNarrowNT)};
  }
  const int kt = 128;  // 128 bytes of 8-bit weight (in place of a knob's)
  std::vector<KernelConfig> out{gemvConfigWith(q, false, kGemvNT, kt), gemvConfigWith(q, true, kGemvNT, kt),
                                gemvConfigWith(q, true, kGemvNarrowNT, kt)};
  if (gemvHas64KStage(q, true, kGemvNT)) out.push_back(gemvConfigWith(q, true, kGemvNT, 64));
  return out;
}

// Measurement knob: FXFUSE_GEMV_DENSE_MAX_M=R (1-64) gives the gemv dense 16-bit weights up to R rows
// at every shape and in every form, in place of the rule below (16 restores the rule before it), to
// re-measure it (bench/gemv/sweep_inflight.py). Read once per process; not for production use.
// 0: not set.
long long gemvDenseRowsKnob() {
  static const long long rows = [] {
    const char* v = std::getenv("FXFUSE_GEMV_DENSE_MAX_M");
    const long long r = v && *v ? std::atoll(v) : 0;
    return r >= 1 && r <= 64 ? r : 0LL;
  }();
  return rows;
}

// Dense 16-bit weights at 17-32 rows (one 32-row tile) on sm_90 and later, in the `x @ w + ...` form:
// where the gemv ran ahead of the chain left unfused, two kernels either way (the bias alone: eager's
// mm and add; bias+GELU(tanh): the op's cuBLAS + one epilogue kernel; Inductor's cuBLAS + one fused
// kernel is alike, unmeasured). bench/RESULTS.md Run BA (H200, bf16 / f16, M = 20-32), at K = 4096-8192:
//  - split-K 4 over 32 column tiles (N = 4096: 128 CTAs): 2.5-14 % faster (K = 4096, 6144, 8192);
//  - no split over at least 4/5 of the SMs' worth of column tiles (N >= 13824): 3-7 % faster at
//    4096 / 8192 x 14336 and 5120 x 13824, at par (-0.5 to +1.7 %) at 4096 x 28672;
//  - split-K 2 (N = 6144-8192): at par or up to 2.2 % behind (4096 / 8192 x 8192, 6144 x 6144);
//  - too few CTAs: 2-4 % behind at 4096 x 11008 (86), 2.5 % ahead at 4096 x 12288 (96; not taken);
//  - split-K 8 (N <= 2048): not measured, not taken (forced onto the shapes above: 17-49 % behind);
// behind at K = 14336 (2.5-3.6 %); at K = 2048 (split-K 2) 3-4 % ahead at 24 rows, up to 2 % behind
// at 32. From 33 rows (a 64-row tile) 14-27 % behind. N x K weights (`x @ w.t()`: nn.Linear's
// without a bias) ran 8-23 % behind (call 7): K x N only. The gemv alone ran 3-16 % behind cuBLAS mm,
// so it is not offered where eager's bias is inside cuBLAS (the f32 product of addmm / F.linear:
// reasoned, unmeasured); batched shapes unmeasured. The split is the one launchDims takes on 132
// SMs (kHopperSms); on fewer SMs the launch's may differ.
bool gemvDenseMidRowsAhead(const Query& q) {
  const ProblemShape& s = q.shape;
  if (!q.product_16bit || s.b_kmajor || s.M <= 16 || s.M > 32 || s.B != 1 || s.K < 4096 || s.K > 8192 || q.arch < 90)
    return false;
  // (the launch may take 64 columns: gemvDenseTakesNarrowColumns)
  const GemvWideGeometry g = gemvDenseWideGeometry(q);
  return (g.split == 4 || g.split == 1) && g.fills;
}

// Dense 16-bit K x N weights at 33-64 rows (one 64-row m-tile) on sm_90 with one epilogue op after a 16-bit product
// (`x @ w + b`, as measured; any one op is one more eager kernel of the same size): eager runs the mm and that op, and
// the op has no faster unfused path (cuBLAS + the epilogue kernel beats eager from
// kEagerKernelsTheUnfusedPathBeats elementwise kernels, codegen.h). bench/RESULTS.md session 70 call 4 (an H100, bf16 /
// fp16, alternating processes, two rounds): the gemv on the wgmma product at 64 columns and split-K 2 took
// 0.908-0.925x eager's time at 33 and 64 rows, 4096 x 4096 (1.15-1.17x cuBLAS mm alone); with bias+GELU(tanh) it was
// 1.00-1.03x the op's cuBLAS + epilogue path, so a longer epilogue keeps that path. Taken only near what was
// measured: K = 4096, one matrix, the 64-column geometry (gemvDenseTakesNarrowColumns) over at least 4/5 of the SMs'
// worth of 128-column tiles at split-K 4 (N = 3,456-4,224 on 132 SMs); where the Hopper kernel applies (decode
// batches filling the SMs, split-K at K >= 8192) it is chosen first (kRows).
bool gemvDenseOneOpRowsAhead(const Query& q) {
  const ProblemShape& s = q.shape;
  if (!q.product_16bit || s.b_kmajor || s.M <= 32 || s.M > 64 || s.B != 1 || s.K != 4096 || q.arch != 90 ||
      q.epilogue_ops < 1 || q.epilogue_ops >= kEagerKernelsTheUnfusedPathBeats || !gemvDenseMayTakeNarrowColumns(q))
    return false;
  const GemvWideGeometry g = gemvDenseWideGeometry(q);  // (gemvDenseTakesNarrowColumns: split 4)
  return g.split == 4 && g.fills;
}

// When gemv is chosen, from bench/gemv/NOTES.md (run 3, H200, vs cuBLAS on 16-bit weights):
//  - dense 16-bit weights: at par with cuBLAS for M <= 16 (72-80 % of HBM bandwidth on 4096 x
//    14336); M = 17-32 where it beats the unfused chain (gemvDenseMidRowsAhead). Only where clusters exist
//    (sm_90+): run 2 measured S = 1 2-4x slower than cuBLAS on the same shapes (before run 3's
//    loader rework; session 5 measured S = 1 at N = 14336 at 0.95x cuBLAS, so sm_80 deserves a
//    re-measurement).
//  - int8 / fp8 weights with a per-column or per-tensor scale (FX_B_QUANT_SCALE): faster than
//    the eager convert + mul + cuBLAS sequence up to M = 64 (which reads the weight once
//    and writes/reads a 16-bit copy twice), also at S = 1: M <= 64, sm_80+.
//  - a group-wise scale (FX_B_SCALE_GROUP, groups of a multiple of 128 k: GPTQ's usual 128) the same way, read
//    per stage; smaller groups get no gemv at all (the scale would change inside a stage).
//  - other quantized prologues (FX_B_QUANT alone: zero points, w / s) take the
//    element-wise fx_dequant_b path, 5-7x slower than cuBLAS ("/slow" rows): not chosen.
//  - the template's fast path needs A a plain k-contiguous input and B (or the raw weight)
//    contiguous along the dim the spec says, 16-byte aligned base and row strides, same MMA
//    type for A and B; anything else runs element-wise, so it is not chosen.
// Packed int4's ragged last stage pads k with the nibble of the constant zero point (kernels/gemv.cuh kPadByte), whose
// weight is exactly 0; another zero point's padding would dequantize to (0 - z) * s, which can overflow to inf and
// meet the padded activation's 0 (NaN): such a chain takes the gemv only at a K of whole stages (128 k: session 63).
bool nibblePaddingIsZero(const OperandInfo& b) { return b.zero_value < 0 && b.zero >= 0 && b.zero <= 15; }

bool gemvApplies(const Query& q) {
  const ProblemShape& s = q.shape;
  if (q.arch < 80 || !q.is16bit() || q.a.elem != q.b.elem) return false;
  if (!q.a.plain || !q.a.kmajor || !s.a_kmajor || s.b_kmajor != q.b.kmajor) return false;
  if (s.align_bytes_a < 16 || s.align_bytes_b < 16 || s.N <= 0 || s.N % 8 != 0 || s.M <= 0 || s.K <= 0) return false;
  const long long knob = gemvDenseRowsKnob();
  const bool dense = q.b.plain && q.arch >= 90 &&
                     (knob ? s.M <= knob : s.M <= 16 || gemvDenseMidRowsAhead(q) || gemvDenseOneOpRowsAhead(q));
  // a group-wise scale is read once per stage: its groups must cover whole stages (128 k of 8-bit weights)
  const bool quant = q.b.quant_scale && s.M <= 64 && (q.b.scale_group == 0 || (gemvGroupScalesKnob() &&
                                                                                q.b.scale_group % 128 == 0)) &&
                     (!q.b.nibbles || (gemvNibblesKnob() && (s.K % 128 == 0 || nibblePaddingIsZero(q.b))));
  if (!dense && !quant) return false;
  return gemvExtents(s, 8LL * gemvMTiles(s.M), kGemvNT, 128 / gemvWeightBytes(q.b)).mz <= kGemvMaxGridZ;
}

const VariantRow kRows[] = {
    // Hopper: wgmma + TMA needs both operands to be raw 16-bit tensors, 16-byte aligned.
    // Against Inductor it is not fast everywhere (bench/RESULTS.md Run E, 2026-11-29: 0.54-0.99x
    // torch.compile default; Run Y, 2026-11-30: at par at K = 4096, N >= 4096): Inductor keeps
    // those GEMMs, except where it was measured faster (beatsBaseline).
    {"sm90_wgmma", "kernels/sm90_wgmma_gemm.cuh", GridPolicy::Persistent, true, false,
     [](const Query& q) { return hopperRefusal(q).empty(); },
     [](const Query& q) {
       // Tile shape per problem (kernels/sm90_wgmma_gemm.cuh, bench/sm90/NOTES.md run 7): ping-pong
       // 64x256, 5 stages, from 1025 rows where its tiles fill the SMs (but mostly a 128-row tile at
       // a partial 256-column tile, where 128x256 takes half its rounds and at most two (three or four
       // at K = 4096-8192), or at N <=
       // 128, and 128x128 ping-pong at K <= 2048); otherwise the
       // tile that fills them (sm90::chooseConfig); split-K where 64x128 tiles are few
       // (sm90::splitKForFewTiles).
       if (const KernelConfig* forced = forcedTileKnob())  // as forced: the overlap only where the knob says 1
         return withSm90StagesKnob(epilogueOverlapKnob() == 1 && overlapFits(*forced, q) ? overlapped(*forced) : *forced);
       if (const int ks = splitKFor(q.shape); ks > 1) return splitKKernelConfig(ks);
       const sm90::GemmConfig g =
           sm90::chooseConfig(q.shape.M, q.shape.N, q.shape.K, q.shape.B, kHopperSms, q.epilogue_load);
       KernelConfig c{"sm90_wgmma", g.bm, g.bn, g.bk, g.stages, g.threads()};
       c.pingpong = g.pingpong;
       return withSm90StagesKnob(overlapRule(c, q));
     }},
    // Decode-sized M: a memory-bound schedule over the (possibly quantized) weights.
    // At decode sizes Inductor runs cuBLAS (or a slower Triton mm: 4x eager at M=1, issue 7)
    // plus the pointwise kernel, so the gemv, at par with cuBLAS alone, beats it too.
    {"gemv", "kernels/gemv.cuh", GridPolicy::SplitKCluster, true, true, gemvApplies, gemvConfig},
    // Everything else with 16-bit operands: mma.sync m16n8k16 (generic template).
    {"sm80_mma", "kernels/generic_gemm.cuh", GridPolicy::Tiles, false, false,
     [](const Query& q) { return q.is16bit(); },
     [](const Query& q) {
       return q.shape.M <= 64 ? KernelConfig{"sm80_mma", 64, 128, 32, 2, 128}
                              : KernelConfig{"sm80_mma", 128, 128, 32, 2, 256};
     }},
    // The epilogue alone over a cuBLAS product (runtime's path for chains without a fast
    // kernel): never picked here, only by name (pointwiseConfig).
    {"pointwise", "kernels/epilogue_pointwise.cuh", GridPolicy::Elementwise, false, false,
     [](const Query&) { return false; }, [](const Query&) { return pointwiseConfig(); }},
    // fp32 operands: full-precision FFMA like eager (no TF32).
    {"simt", "kernels/generic_gemm.cuh", GridPolicy::Tiles, false, false,
     [](const Query&) { return true; },
     [](const Query& q) {
       return q.shape.M <= 64 ? KernelConfig{"simt", 64, 64, 16, 2, 256} : KernelConfig{"simt", 128, 128, 16, 2, 256};
     }},
};

const VariantRow& row(const std::string& variant) {
  for (const VariantRow& r : kRows)
    if (variant == r.variant) return r;
  throw CodegenError("unknown kernel variant '" + variant + "'");
}

}  // namespace

sm90::GemmConfig sm90ConfigOf(const KernelConfig& c) {
  sm90::GemmConfig g;
  g.bm = c.bm;
  g.bn = c.bn;
  g.bk = c.bk;
  g.stages = c.stages;
  g.pingpong = c.pingpong;
  g.consumers = c.pingpong ? 2 : c.bm / 64;  // ping-pong: 2; cooperative: one per 64 rows of the tile
  g.split_k = c.split_k;
  g.epilogue_overlap = c.epilogue_overlap;
  return g;
}

std::string templateFor(const std::string& variant) { return row(variant).templ; }
GridPolicy gridFor(const std::string& variant) { return row(variant).grid; }
bool templateWaitsForPreviousKernel(const std::string& variant) {
  // The templates are embedded and never change: each row's answer (a search of its whole text) is
  // computed once, not at every call site's planning.
  static const std::vector<bool> waits = [] {
    std::vector<bool> w;
    for (const VariantRow& r : kRows) {
      const char* t = embeddedFile(r.templ);
      w.push_back(t != nullptr && std::strstr(t, "fx_grid_dependency_wait();") != nullptr);
    }
    return w;
  }();
  return waits[&row(variant) - kRows];  // row throws for no such variant
}

bool isFastVariant(const KernelConfig& config, Baseline baseline) {
  for (const VariantRow& r : kRows)
    if (config.variant == r.variant) return baseline == Baseline::Inductor ? r.fast_vs_inductor : r.fast;
  return false;
}

int gemvCtasPerSm(const KernelConfig& c) {
  const long long n = kGemvSmemPerSm / (static_cast<long long>(dynamicSmemBytes(c)) + kGemvReservedPerCta);
  return static_cast<int>(std::clamp(n, 1LL, 4LL));
}

size_t dynamicSmemBytes(const KernelConfig& c) {
  if (c.variant == "sm90_wgmma") return static_cast<size_t>(sm90ConfigOf(c).dynSmemBytes());
  if (c.variant != "gemv") return 0;  // the generic template uses static shared memory only
  // max(STAGES * (W tile bn x bk weights + A tile bm x bk x 2 B) + packed int4's expanded tile, fp32 reduction
  // bm x (bn + 4) x 4 B)
  const size_t stage = static_cast<size_t>(gemvStageBytes(c.bm / 8, c.bk, c.bn, gemvWeightBytesOf(c), c.nibbles));
  const size_t held = static_cast<size_t>(gemvTileBufferBytes(c.bk, c.bn, c.nibbles));
  const size_t red = static_cast<size_t>(c.bm) * (c.bn + 4) * 4;
  // the product by wgmma starts its stages at a 1024-byte boundary (kernels/gemv.cuh)
  return std::max(stage * c.stages + held, red) + (c.wgmma ? 1024 : 0);
}

namespace {
bool productIs16bit(const spec::ChainSpec& checked) {
  const DType product = checked.values[checked.mmIndex()].dtype;
  return spec::isHalfFloat(product);
}

int epilogueOps(const spec::ChainSpec& checked) {
  int n = 0;
  for (size_t i = checked.mmIndex() + 1; i < checked.values.size(); ++i) n += checked.values[i].kind == spec::ValueKind::Op;
  return n;
}

// The heuristic's question for a validated spec: its epilogue's refusal and load, from one cost.
Query heuristicQuery(const spec::ChainSpec& checked, const OperandInfo& a, const OperandInfo& b,
                     const ProblemShape& shape, int sm_arch) {
  const EpilogueCost cost = epilogueCost(checked);
  Query q{a, b, shape, sm_arch, epilogueRefusal(checked, cost, shape), epilogueLoad(cost)};
  q.product_16bit = productIs16bit(checked);
  q.handoff = epilogueHandoff(checked) >= 0;
  q.gelu_tanh = cost.gelu_tanh;
  q.epilogue_ops = epilogueOps(checked);
  return q;
}

// The first row that applies, for a validated spec and its operand analyses.
// The heuristic's config: the first variant row (built in) that applies.
KernelConfig chooseFor(const Query& q) {
  for (const VariantRow& r : kRows)
    if (embeddedFile(r.templ) && r.applies(q)) return r.config(q);
  throw std::logic_error("fxfuse internal error: no kernel variant applies (please report a bug)");
}

KernelConfig chooseValidated(const spec::ChainSpec& checked, const OperandInfo& a, const OperandInfo& b,
                             const ProblemShape& shape, int sm_arch) {
  return chooseFor(heuristicQuery(checked, a, b, shape, sm_arch));
}
}  // namespace

KernelConfig chooseConfig(const spec::ChainSpec& spec, const ProblemShape& shape, int sm_arch) {
  spec::ChainSpec checked = spec;
  spec::validateSpec(checked);  // the analysis relies on a well-formed spec
  return chooseValidated(checked, analyzeA(checked), analyzeB(checked), shape, sm_arch);
}

namespace {
// An aligned problem of this size, its operands laid out as the spec's dims say.
ProblemShape sizedShape(const OperandInfo& a, const OperandInfo& b, long long M, long long N, long long K,
                        long long B) {
  ProblemShape shape;
  shape.B = B;
  shape.M = M;
  shape.N = N;
  shape.K = K;
  shape.a_kmajor = a.kmajor;
  shape.b_kmajor = b.kmajor;
  return shape;
}
}  // namespace

namespace {
// A validated spec, its operand analyses and an aligned problem of this size: what the ...ForSize
// questions ask about.
struct SizedProblem {
  spec::ChainSpec checked;
  OperandInfo a, b;
  ProblemShape shape;
};

SizedProblem sizedProblem(const spec::ChainSpec& spec, long long M, long long N, long long K, long long B) {
  SizedProblem p{spec, {}, {}, {}};
  spec::validateSpec(p.checked);
  p.a = analyzeA(p.checked);
  p.b = analyzeB(p.checked);
  p.shape = sizedShape(p.a, p.b, M, N, K, B);
  return p;
}
}  // namespace

KernelConfig chooseConfigForSize(const spec::ChainSpec& spec, long long M, long long N, long long K, long long B,
                                 int sm_arch) {
  const SizedProblem p = sizedProblem(spec, M, N, K, B);
  return chooseValidated(p.checked, p.a, p.b, p.shape, sm_arch);
}

std::string siluAgainstEagerRefusal(const spec::ChainSpec& spec, long long M, long long N, long long K, long long B) {
  if (allEpiloguesKnob()) return {};
  // SiLU the one expensive op, no residual (cheap ops beside it: the caller counts eager's kernels)
  const EpilogueCost cost = epilogueCost(spec);
  if (!cost.silu || cost.expensive_ops != 1 || cost.residual) return {};
  const ProblemShape shape = sizedProblem(spec, M, N, K, B).shape;
  // no residual (above): the tile of a light epilogue
  const sm90::GemmConfig g = sm90::chooseConfig(shape.M, shape.N, shape.K, shape.B, kHopperSms, sm90::EpilogueLoad::Light);
  if (shape.B == 1 && shape.N <= 128 && splitKFor(shape) == 1) {  // kSiluNarrowLeastShare
    const double share = sm90::tileWorkShare(shape.M, shape.N, 1, g, kHopperSms);
    const bool measured_tile = g.bm == 128 && g.bn == 128 && sm90::roundsOfTiles(shape.M, shape.N, 1, g, kHopperSms) == 1;
    if (measured_tile && share < kSiluNarrowLeastShare)
      return fmt::format("SiLU alone: {}x{} tiles do {:.0f} % of their slots' work at N = {}, under the {:.0f} % "
                         "that beats cuBLAS + ATen's SiLU there (Runs AH, AQ)",
                         g.bm, g.bn, 100 * share, shape.N, 100 * kSiluNarrowLeastShare);
  }
  const std::string why =
      workShareRefusal(shape, g, kSiluWorkShareYardstick, kSiluWorkShareAboveRows, "cuBLAS + ATen's SiLU");
  return why.empty() ? why : "SiLU alone: " + why;
}

HopperWorkShare hopperWorkShareForSize(long long M, long long N, long long K) {
  const ProblemShape s{1, M, N, K};
  HopperWorkShare w;
  const sm90::GemmConfig g = sm90::chooseConfig(M, N, K, 1, kHopperSms);
  w.bm = g.bm;
  w.bn = g.bn;
  w.share = sm90::judgedWorkShare(M, N, K, 1, g, kHopperSms);
  if (inWorkShareRange(s, kWorkShareAboveRows) && !midRowsOneRoundAtLongK(s, g))
    w.least = generalWorkShareYardstick(s).least(K);
  if (inWorkShareRange(s, kSiluWorkShareAboveRows))
    w.least_silu = kSiluWorkShareYardstick.least(K);
  return w;
}

std::string hopperRefusalForSize(const spec::ChainSpec& spec, long long M, long long N, long long K, long long B,
                                 int sm_arch) {
  const SizedProblem p = sizedProblem(spec, M, N, K, B);
  if (!embeddedFile(row("sm90_wgmma").templ)) return "built without the Hopper template";
  return hopperRefusal(heuristicQuery(p.checked, p.a, p.b, p.shape, sm_arch));
}

namespace {
std::vector<KernelConfig> candidatesValidated(const spec::ChainSpec& checked, const OperandInfo& a,
                                              const OperandInfo& b, const ProblemShape& shape, int sm_arch) {
  const Query heuristic = heuristicQuery(checked, a, b, shape, sm_arch);
  std::vector<KernelConfig> out{chooseFor(heuristic)};
  auto add = [&out](const KernelConfig& c) {
    bool seen = false;
    for (const KernelConfig& o : out) seen = seen || describeConfig(o) == describeConfig(c);
    if (!seen) out.push_back(c);
  };
  // the rule's gemv: its other products and widths (8-bit weights on sm_90)
  if (out[0].variant == "gemv")
    for (const KernelConfig& c : gemvAlternatives(heuristic)) add(c);
  // The epilogue rule (epilogueRefusal) and the heuristic's smallest M are guesses the
  // measurement replaces: ask as if the epilogue wins, from one 64-row tile.
  Query q{a, b, shape, sm_arch, /*epilogue_refusal=*/"", epilogueLoad(checked)};
  q.product_16bit = productIs16bit(checked);
  q.handoff = heuristic.handoff;
  q.hopper_min_m = 64;
  q.heuristic = false;
  const VariantRow& hopper = row("sm90_wgmma");
  if (!embeddedFile(hopper.templ) || !hopper.applies(q)) return out;
  std::vector<KernelConfig> tiles;
  for (const HopperTile& t : kHopperTiles) tiles.push_back(hopperConfigOf(t));
  // too few tiles to fill the SMs: the split-K tiles too (the heuristic's rule:
  // sm90::splitKForFewTiles)
  if (tiles64x128(shape) < kSplitKMaxTiles)
    for (int ks : {2, 4}) tiles.push_back(splitKKernelConfig(ks));
  for (const KernelConfig& c : tiles) add(c);
  // the cooperative 128-row tiles with the overlapped epilogue too (not with FXFUSE_SM90_EPILOGUE_OVERLAP=0),
  // each also with its last tile's epilogue shared by the consumers: overlapRule takes that only where it
  // was measured (bench/RESULTS.md Runs BL, BM, BN), so elsewhere the measurement decides
  for (const KernelConfig& c : tiles)
    if (epilogueOverlapKnob() != 0 && overlapFits(c, q))
      for (bool last_shared : {false, true}) add(overlapped(c, last_shared));
  return out;
}
}  // namespace

std::vector<KernelConfig> candidateConfigs(const spec::ChainSpec& spec, const ProblemShape& shape, int sm_arch) {
  spec::ChainSpec checked = spec;
  spec::validateSpec(checked);
  return candidatesValidated(checked, analyzeA(checked), analyzeB(checked), shape, sm_arch);
}

std::vector<KernelConfig> candidateConfigsForSize(const spec::ChainSpec& spec, long long M, long long N, long long K,
                                                  long long B, int sm_arch) {
  const SizedProblem p = sizedProblem(spec, M, N, K, B);
  return candidatesValidated(p.checked, p.a, p.b, p.shape, sm_arch);
}

KernelConfig pointwiseConfig() { return KernelConfig{"pointwise", 1, 2, 1, 1, 256}; }

bool pointwiseApplies(const spec::ChainSpec& spec) {
  // A and B are raw inputs (no prologue to evaluate first), and a slot is left for the product.
  const spec::Value& mm = spec.values[spec.mmIndex()];
  return spec.values[mm.operands[0]].kind == spec::ValueKind::Input &&
         spec.values[mm.operands[1]].kind == spec::ValueKind::Input && spec.numInputSlots() < 16;
}

bool envFlag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

bool pointwiseEnabled() { return !envFlag("FXFUSE_NO_POINTWISE"); }

std::string describeConfig(const KernelConfig& c) {
  std::string s = fmt::format("{} {}x{}x{} s{} t{}", c.variant, c.bm, c.bn, c.bk, c.stages, c.threads);
  if (c.pingpong) s += " pingpong";
  if (c.max_cluster != 1) s += fmt::format(" cluster{}", c.max_cluster);
  if (c.split_k != 1) s += fmt::format(" splitk{}", c.split_k);
  if (c.wgmma) s += " wgmma";
  if (c.nibbles) s += " nibbles";
  if (c.epilogue_overlap) s += " epioverlap";
  if (c.last_epilogue_shared) s += " lastshared";
  return s;
}

int smFromArch(const std::string& arch) {
  std::string digits;
  for (char c : arch)
    if (c >= '0' && c <= '9') digits.push_back(c);
  return digits.empty() || digits.size() > 4 ? -1 : std::stoi(digits);
}

namespace {
// Measurement knob (bench/bench_decode.py --split-k): FXFUSE_GEMV_SPLIT_K=1..8 launches every
// gemv with that split-K cluster size instead of gemvSplitK's rule, to re-measure the rule. Read
// once per process; not for production use.
int gemvSplitKOverride() {
  static const int forced = [] {
    const char* v = std::getenv("FXFUSE_GEMV_SPLIT_K");
    const std::string s = v ? v : "";
    return s.size() == 1 && s[0] >= '1' && s[0] <= '8' ? s[0] - '0' : 0;
  }();
  return forced;
}
}  // namespace

int gemvSplitK(long long nt, long long mz, long long ksteps, int ctas_per_sm, int stages, int max_cluster,
               int sm_count, int forced) {
  // A forced size is taken where the config allows clusters that large (1 to 8: the template
  // splits the k-steps and deals the reduction's column pairs over any cluster size up to 8).
  if (forced >= 1 && forced <= 8 && forced <= max_cluster) return forced;
  // S doubles while the grid stays within ctas_per_sm CTAs per SM and each CTA keeps at least as
  // many k-steps as its pipeline has stages (fewer never fill it). Measured on the H200:
  //  - bench/RESULTS.md section 6 (session 5, S = 1..8 side by side, two CTAs per SM): 16-bit
  //    weights stream fastest at one CTA per SM (gemvSplitKCtasPerSm); int8 at 14336 x 4096 at S = 8,
  //    12-15 % faster than 4.
  //  - Run AX call 1 (three CTAs per SM, three stages): int8 / fp8 at K = 4096, N = 4096, S = 8
  //    (four k-steps a CTA) 5-14 % faster than S = 4 at M = 1-64; session 5 had measured S = 8 there
  //    0-14 % slower at two CTAs per SM, where not all of the 32 clusters of 8 were resident.
  // Not modelled: a cluster must fit in one GPC, so fewer clusters of 8 are resident than the CTA
  // count says (gemvPipelineCtasPerSm makes room for them). Halving S until every cluster fits is
  // no cure: session 5 measured S = 8 with two clusters in a second wave 12-15 % ahead of S = 4.
  const int smax = std::min(max_cluster, 8);
  int s = 1;
  while (s * 2 <= smax && nt * mz * s * 2 <= static_cast<long long>(ctas_per_sm) * sm_count &&
         ksteps / (s * 2) >= stages)
    s *= 2;
  return s;
}

// Below this peak DRAM bandwidth an SM, 16-bit weights take half the split-K (gemvSplitKForBandwidth). The H200 has
// 4.8 TB/s for 132 SMs (36 GB/s an SM), where the rule was measured; an H100 SXM 3.35 TB/s (25 GB/s an SM).
constexpr double kGemvHalfSplitBelowBytesPerSm = 30e9;

int gemvSplitKForBandwidth(int s, const KernelConfig& config, int sm_count, double dram_bytes_per_s) {
  // On an H100 (bench/RESULTS.md session 69, sweep_inflight in alternating processes, two rounds) the 16-bit gemv
  // at 4096 x 4096 and 14336 x 4096 with 1-16 rows took 0.96-0.996x the time at S = 2 of the rule's S = 4 (equal at
  // 64 rows); fewer, longer CTAs keep its lower bandwidth busy and have fewer partial sums to reduce. On the H200
  // S = 4 was 8 % ahead of 2 at 14336 x 4096 (bench/RESULTS.md section 6). 8-bit weights lost with S = 2 on the
  // H100 (1.08-1.78x) and keep the rule; an S of 2 (one cluster pair a tile, N >= 8192) was not measured halved.
  // Up to 16 rows only (a 16-row m-tile or less): at 24 rows the H100 ran S = 4 in 0.95-0.96x the time of S = 2
  // (bench/RESULTS.md session 70 call 3: 4096 x 4096 and 14336 x 4096, mma.sync and wgmma).
  const bool lowBandwidth = dram_bytes_per_s > 0 && sm_count > 0 && dram_bytes_per_s / sm_count < kGemvHalfSplitBelowBytesPerSm;
  return lowBandwidth && gemvWeightBytesOf(config) == 2 && config.bm <= 16 && s >= 4 ? s / 2 : s;
}

int gemvSplitKCtasPerSm(const KernelConfig& config) {
  // 16-bit weights: one (session 5: 4096 x 14336 at S = 1 4 % faster than 2; 14336 x 4096 at
  // S = 4, where 8 was 20 % slower, with a 100 KB pipeline; Run AX call 2: none of five other
  // pipeline and S pairs was faster, 0.4-52 % slower). 8-bit: the CTAs the shared memory fits, up
  // to gemvSplitKCtasCap.
  return gemvWeightBytesOf(config) == 2 ? 1 : std::min(gemvCtasPerSm(config), gemvSplitKCtasCap(config.bm));
}

// The epilogue-alone kernel's grid size, in blocks per SM (GridPolicy::Elementwise).
constexpr long long kElementwiseBlocksPerSm = 16;

// Notes for the launcher: a cluster other than (1,1,1) needs cuLaunchKernelEx with the
// attribute CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = (cluster[0], cluster[1], cluster[2]);
// smem_bytes > 48 KB needs cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
// on the function first (KernelSource::smem_optin).
LaunchDims launchDims(const KernelSource& src, const ProblemShape& shape, int sm_count, double dram_bytes_per_s) {
  LaunchDims d;
  d.block = static_cast<unsigned>(src.config.threads);
  d.smem_bytes = src.smem_bytes;
  if (src.grid == GridPolicy::Persistent) {
    // sm90: a persistent grid of at most one CTA per SM and never more than there are tiles
    // (an idle CTA would still allocate its shared memory and barriers). With split-K, one
    // cluster of split_k CTAs per tile (compiled-in __cluster_dims__, so d.cluster stays 1 and
    // cuLaunchKernel launches clusters): a multiple of split_k. The kernel strides its tiles
    // by gridDim.x, so any grid it gets covers them all.
    const sm90::GemmConfig g = sm90ConfigOf(src.config);
    sm90::GemmProblem pr;
    pr.batch = shape.B;
    pr.M = shape.M;
    pr.N = shape.N;
    pr.K = shape.K;
    d.grid[0] = sm90::launchGeometry(pr, g, sm_count).grid[0];
    return d;
  }
  if (src.grid == GridPolicy::Elementwise) {
    // x: enough blocks to cover one row's column pairs (at most the whole target); y: rows, so
    // that about kElementwiseBlocksPerSm blocks per SM are resident in all (a wave of 256-thread
    // blocks at 8 per SM, twice), never more rows than there are nor over the grid's y limit.
    const long long pairs_per_row = (shape.N + 1) / 2;
    const long long target = kElementwiseBlocksPerSm * sm_count;
    const long long gx = std::max(1LL, std::min((pairs_per_row + src.config.threads - 1) / src.config.threads, target));
    const long long gy = std::min({shape.B * shape.M, std::max(1LL, target / gx), 65535LL});
    d.grid[0] = static_cast<unsigned>(gx);
    d.grid[1] = static_cast<unsigned>(std::max(1LL, gy));
    return d;
  }
  if (src.grid == GridPolicy::SplitKCluster) {
    // kernels/gemv.cuh, "Launch geometry": grid (ceil(N/NT), S, B * ceil(M / (8*MTILES))),
    // cluster (1, S, 1).
    const auto [nt, mz, ksteps] = gemvExtents(shape, src.config.bm, src.config.bn, src.config.bk);
    if (mz > kGemvMaxGridZ) throw CodegenError("B * ceil(M / bm) exceeds the gemv grid limit of 65535");
    // gemvConfig: k-steps of 128 bytes of the streamed weight, so bk = 64 (16-bit) or 128 (8-bit), or 64
    // for 8-bit weights by wgmma (gemvKPerStage)
    if (src.config.bk != 64 && src.config.bk != 128) throw CodegenError("gemv config with a k-step other than 64 or 128");
    const int forced = gemvSplitKOverride();
    int s = gemvSplitK(nt, mz, ksteps, gemvSplitKCtasPerSm(src.config), src.config.stages, src.config.max_cluster,
                       sm_count, forced);
    if (forced == 0) s = gemvSplitKForBandwidth(s, src.config, sm_count, dram_bytes_per_s);
    d.grid[0] = static_cast<unsigned>(nt);
    d.grid[1] = static_cast<unsigned>(s);
    d.grid[2] = static_cast<unsigned>(mz);
    d.cluster[1] = static_cast<unsigned>(s);
    return d;
  }
  long long gx = (shape.N + src.config.bn - 1) / src.config.bn;
  long long gy = (shape.M + src.config.bm - 1) / src.config.bm;
  if (gy > 65535 || shape.B > 65535)
    throw CodegenError("M / bm or the batch exceeds the tiled grid limit of 65535");
  d.grid[0] = static_cast<unsigned>(gx);
  d.grid[1] = static_cast<unsigned>(gy);
  d.grid[2] = static_cast<unsigned>(shape.B);
  return d;
}

}  // namespace fxfuse::codegen
