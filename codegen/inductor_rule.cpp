// The backend's rule against Inductor: where the fused Hopper kernel is counted faster than
// torch.compile default (cuBLAS + one Inductor pointwise kernel), each box measured
// (bench/RESULTS.md); elsewhere Inductor keeps the chain and the report names the box it is outside.
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/hopper_shape_rules.h"
#include "codegen/hopper_tile_choice.h"
#include "spec/chain_spec.h"

namespace fxfuse::codegen {
namespace {

// The least work share at which 512-2048 rows are fused against Inductor (midRowsBeatInductor):
// every measured shape that won had 0.898-0.97 (0.898: 1536 x 4096 x 14336 on 64x256, Run AK), the
// one behind by the fastest round (768 rows) 0.74; between the two nothing was measured, and the
// bound sits just under the least winner (0.897: lower would take unmeasured rows at N = 4096).
constexpr double kMidRowsInductorShare = 0.897;

// Whether every op that takes a residual input ([m, n]) takes it beside a value computed from a
// GELU(tanh) or SiLU (the measured form `gelu_tanh(mm + b) * 0.5 + r`; not `gelu_tanh(mm + r)`).
bool residualsFollowActivation(const spec::ChainSpec& spec) {
  std::vector<bool> activated(spec.values.size(), false);  // computed from a GELU(tanh) or SiLU
  for (size_t i = 0; i < spec.values.size(); ++i) {
    const spec::Value& v = spec.values[i];
    if (v.kind != spec::ValueKind::Op) continue;
    bool from = v.op == "gelu_tanh" || v.op == "silu";
    for (int o : v.operands) from = from || activated[o];
    activated[i] = from;
    for (int r : v.operands) {
      if (!spec::isResidualInput(spec.values[r])) continue;
      bool beside = false;
      for (int o : v.operands) beside = beside || (o != r && activated[o]);
      if (!beside) return false;
    }
  }
  return true;
}

// Whether the chain is nn.Linear's `linear(x, w, b) + r` as measured: its ops only adds (and
// roundings to a dtype), one of them adding a bias (an input of the output's space along n alone).
// A scale, an activation or any other op is not that form.
bool isBiasThenResidual(const spec::ChainSpec& spec) {
  bool adds_bias = false;
  for (const spec::Value& v : spec.values) {
    if (v.kind != spec::ValueKind::Op) continue;
    if (v.op != "add" && v.op != "convert") return false;
    for (int o : v.operands) {
      const spec::Value& in = spec.values[o];
      adds_bias = adds_bias || (v.op == "add" && in.kind == spec::ValueKind::Input && in.space == spec::Space::Out &&
                                spec::valueLetters(spec, o) == "n");
    }
  }
  return adds_bias;
}

// One matrix of 512-2048 rows at K = 4096, N = 4096, or 1024-2048 rows at N = 14336, the
// heuristic's tile doing at least 89.7 % of its slots' work: torch.compile(backend="fxfuse") made to
// fuse ran 1.01-1.85x torch.compile default over the medians of 3-5 round-robin rounds in all 14
// cells at 512 / 1024 / 1536 / 2048 x 4096 x 4096, 1.10-1.13x at 1024 x 4096 x 14336
// (bench/RESULTS.md Run AI, calls 7-9; mm + bias chains, B as [K, N]). Run AJ (2026-12-02,
// backend_rule_check --graphs) confirmed it by device time, each variant replayed from a CUDA graph:
// 1.03-1.11x at those shapes on the mm chains and 1.04-1.15x in nn.Linear's form (addmm, the
// weight K-major); 768 rows 0.94-0.98x. Inductor's graph launches a Triton kernel beside cuBLAS,
// and at these sizes its host time shows in the medians. By the fastest round the kernel was behind at 768 rows (4
// of 6 cells, 0.91-0.97x against the faster of the two Inductor runs), where the tile is 64x128
// at a share of 0.74 (the share bound leaves those to Inductor: it tracks how well the kernel's
// grid is filled, not host time, and every winning shape had 0.91-0.97), and in one of two calls
// at 1024 rows (bias+ReLU+cast 0.94x; 1.23x in the other). 1536 and 2048 rows at N = 14336
// (2048 rows: 0.98-1.04x by the medians in Run AI): by device time, each variant replayed from a
// CUDA graph, 1.02-1.06x (2048 rows, Run AJ) and, in two calls of Run AK (2026-12-02, mm chains
// and nn.Linear's form), 1.00-1.08x at 2048 rows and 1.00-1.06x at 1536 (the residual after GELU
// at par, 1.00-1.02x): never behind, taken. N = 14336 under 1024 rows is unmeasured; from 4096
// rows the medians tie (0.95-1.03x).
bool midRowsBeatInductor(const ProblemShape& s) {
  if (s.B != 1 || s.M < 512) return false;
  if (!(s.N == 4096 && s.M <= 2048) && !(s.N == 14336 && s.M >= 1024 && s.M <= 2048)) return false;
  const sm90::GemmConfig g = sm90::chooseConfig(s.M, s.N, s.K, s.B, kHopperSms);
  return sm90::judgedWorkShare(s.M, s.N, s.K, s.B, g, kHopperSms) >= kMidRowsInductorShare;
}
}  // namespace

std::string inductorRefusal(const spec::ChainSpec& spec, long long M, long long N, long long K, long long B) {
  // The residual was measured added after GELU(tanh) (bench chain bias_gelu_resid), which
  // Inductor runs as a pointwise kernel reading the residual. A residual without one before it
  // was not measured: Inductor may run `mm + r` inside cuBLAS (addmm with the residual as C),
  // and the fused kernel's residual read costs 1.3x mm at K = 1024 (Run X).
  // In the mid-row box (midRowsBeatInductor) nn.Linear's `linear(x, w, b) + r` was measured
  // (bench/RESULTS.md Run AJ, 2026-12-02, backend_rule_check, the chain linear_resid): the
  // backend made to fuse ran 1.04-1.07x torch.compile default replayed from CUDA graphs and
  // 1.06-1.69x over the medians at 512 / 1024 / 2048 x 4096 x 4096 and 1024 x 4096 x 14336 (768
  // rows: 0.96x, outside the box). With the bias in addmm, Inductor's residual add is a pointwise
  // kernel of its own; without a bias torch.compile hands the pass the residual as addmm's C (a
  // bare GEMM: nothing to fuse; Run AJ call 6), and `mm + r` in other forms is unmeasured.
  const ProblemShape shape{B, M, N, K};
  const bool mid_rows = K == 4096 && midRowsBeatInductor(shape);
  if (!residualsFollowActivation(spec) && !(mid_rows && isBiasThenResidual(spec)))
    return mid_rows ? "a residual not added after GELU(tanh) or SiLU was measured against torch.compile in this "
                      "box only as nn.Linear's linear(x, w, b) + r"
                    : "a residual not added after GELU(tanh) or SiLU was not measured against torch.compile";
  // Against torch.compile default the Hopper kernel wins where the separate epilogue is a large
  // share of the chain's time, and where Inductor's own choice is slow; at K = 4096 with
  // N >= 4096 the two are within torch.compile's spread (Run Y: 1.01-1.07x over the median of
  // three compiles; Run V: 0.92-1.11x, one each; Run AI call 8: 0.95-1.03x), so Inductor keeps
  // those. Only the measured boxes, at M x B >= 4096 (other K were not measured against
  // Inductor), 512-2048 rows at K = 4096 (midRowsBeatInductor; torch.compile's own times vary up
  // to 5x between compiles there, Run Z, so it was measured round-robin, Run AI), the decode
  // batches and the split-K shapes:
  //  - K = 1024, N >= 4096: Runs L and M (no residual, 1.12-1.58x) and Run Y (2026-11-30, the
  //    kernels of 58482df: every bench chain incl. the residual, 1.13-1.39x);
  //  - K = 4096, N = 1024: torch.compile default is slower than eager there (Run F 2.1-3.0x,
  //    Run Y 1.69-1.83x the fused chain, residual included).
  // Run Z has the backend fuse all 12 of those cells, 1.06-1.56x torch.compile. Measured on
  // 2-D bf16 mm chains (bias+GELU(tanh), SiLU, bias+ReLU+cast, GELU(tanh) then the residual);
  // bmm (M x B), fp16 and SiLU before a residual follow them unmeasured, as they do in the
  // eager rule (epilogueRefusal).
  // Decode batches the eager rule takes (decodeBatchFillsSms), at the K measured: torch.compile
  // default ran slower than eager there and 1.31-4.50x the fused chain (Run AC, 2026-12-01, K =
  // 4096: M = 64 and 192 at N = 14336, M = 256 at N = 4096; bias+GELU, GELU then the residual,
  // bias+ReLU+cast).
  if (K == 4096 && decodeBatchFillsSms(shape)) return {};
  // Split-K decode shapes (splitKFor) at the size measured: torch.compile default 1.05-2.20x the
  // fused chain (Run AC, call 7: M = 48 and 64, K = 14336, N = 4096, the four bench chains; one
  // compile each). Other K and N of the split-K rule were not measured against torch.compile.
  if (K == 14336 && N == 4096 && splitKFor(shape) > 1) return {};
  if (mid_rows) return {};
  if (M * B < 4096)
    return "M x B < 4096 was measured against torch.compile only at decode batches and 512-2048 rows at K = "
           "4096 (N = 4096; N = 14336 at 1024-2048 rows) where the tile is well filled, and split-K at K = 14336, "
           "N = 4096";
  if ((K == 1024 && N >= 4096) || (K == 4096 && N == 1024)) return {};
  return "measured faster than torch.compile only at K = 1024 with N >= 4096 and K = 4096 with N = 1024";
}

bool beatsBaseline(const spec::ChainSpec& spec, const KernelConfig& config, long long M, long long N, long long K,
                   long long B, Baseline baseline) {
  if (isFastVariant(config, baseline)) return true;
  if (baseline != Baseline::Inductor || config.variant != "sm90_wgmma") return false;
  return inductorRefusal(spec, M, N, K, B).empty();
}

}  // namespace fxfuse::codegen
