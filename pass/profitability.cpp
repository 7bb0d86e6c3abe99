#include "pass/profitability.h"

#include <fmt/format.h>

#include <exception>
#include <string>

#include "codegen/codegen.h"

namespace fxfuse::pass {
namespace {

// A dim's size: its value, or a symbolic dim's hint.
std::optional<long long> sizeOf(const ir::Dim& d, const PassOptions& o) {
  if (!d.symbolic) return d.value;
  auto it = o.sizeHints.find(d.text);
  if (it == o.sizeHints.end()) return std::nullopt;
  return it->second;
}

// Whether the op's unfused path (cuBLAS, then one epilogue kernel) beats eager's separate
// elementwise kernels for this chain. As measured (bench/RESULTS.md Run AE: the four bench chains
// in the `torch.mm(x, w) + b` form, bf16, on the H200): operands without a prologue (cuBLAS reads
// them as they are), a 16-bit product (an addmm / F.linear chain's is f32: written and read at
// twice the bytes, which can cancel the pass eager saves), sm_90, and eager running at least
// codegen::kEagerKernelsTheUnfusedPathBeats kernels. Not where FXFUSE_NO_POINTWISE turns the path off
// (codegen::pointwiseEnabled; the op would evaluate the chain with ATen).
bool unfusedPathBeatsEager(const spec::ChainSpec& spec, int sm, int eagerKernels) {
  if (eagerKernels < codegen::kEagerKernelsTheUnfusedPathBeats || sm < 90 || !codegen::pointwiseApplies(spec))
    return false;
  const spec::DType product = spec.values[spec.mmIndex()].dtype;
  return spec::isHalfFloat(product) && codegen::pointwiseEnabled();
}

}  // namespace

Profitability checkProfitable(const GraphIndex& index, const GemmMatch& match, const spec::ChainSpec& spec,
                              const PassOptions& options, int eagerKernels) {
  if (!options.onlyProfitable) return {};
  const ir::Type& out = index.node(match.root).type;
  if (!out.isTensor() || !out.tensor.onCuda()) return {};
  if (match.outShape.size() != match.outLetters.size() || match.n.symbolic) return {};
  long long m = 1, b = 1;
  for (size_t i = 0; i < match.outShape.size(); ++i) {
    const char letter = match.outLetters[i];
    if (letter != 'm' && letter != 'b') continue;
    std::optional<long long> size = sizeOf(match.outShape[i], options);
    if (!size) return {};
    (letter == 'm' ? m : b) *= *size;
  }
  std::optional<long long> k = sizeOf(match.k, options);
  const int sm = codegen::smFromArch(options.arch);
  if (!k || sm < 0) return {};
  const long long n = match.n.value;
  try {
    const codegen::KernelConfig config = codegen::chooseConfigForSize(spec, m, n, *k, b, sm);
    const bool inductor = options.baseline == "inductor";
    if (codegen::beatsBaseline(spec, config, m, n, *k, b,
                               inductor ? codegen::Baseline::Inductor : codegen::Baseline::Eager)) {
      // Where eager's epilogue is one SiLU kernel, the Hopper kernel must beat that, not the op's
      // unfused path (codegen::siluAgainstEagerRefusal; bench/RESULTS.md Run AH)
      const bool eagerKernelsLoseToPath = eagerKernels >= codegen::kEagerKernelsTheUnfusedPathBeats;
      const std::string why = inductor || eagerKernelsLoseToPath || config.variant != "sm90_wgmma"
                                  ? std::string()
                                  : codegen::siluAgainstEagerRefusal(spec, m, n, *k, b);
      if (why.empty()) return {};
      return Profitability{Rejection{"not_profitable", fmt::format("no kernel faster than unfused eager for M={}, K={}, "
                                                                   "N={} (the Hopper kernel: {})",
                                                                   m, *k, n, why)},
                           std::nullopt};
    }
    if (!inductor && unfusedPathBeatsEager(spec, sm, eagerKernels))
      return Profitability{std::nullopt,
                           fmt::format("no fused kernel faster than eager for M={}, K={}, N={}: the op runs cuBLAS + "
                                       "one epilogue kernel in place of eager's {} elementwise kernels",
                                       m, *k, n, eagerKernels)};
    // Say why the Hopper kernel does not take the chain: which of its conditions failed, or,
    // against Inductor, which measured box it is outside (words only: a failure here must not
    // turn the rejection into a fusion).
    std::string why;
    try {
      if (sm >= 90 && config.variant != "sm90_wgmma")
        why = "the Hopper kernel: " + codegen::hopperRefusalForSize(spec, m, n, *k, b, sm);
      else if (config.variant == "sm90_wgmma" && inductor)
        why = "the Hopper kernel: " + codegen::inductorRefusal(spec, m, n, *k, b);
    } catch (const std::exception&) {
      why.clear();
    }
    return Profitability{Rejection{"not_profitable",
                                   fmt::format("no kernel faster than unfused {} for M={}, K={}, N={} (it would "
                                               "run as {}{})",
                                               options.baseline, m, *k, n, config.variant,
                                               why.empty() ? "" : "; " + why)},
                         std::nullopt};
  } catch (const std::exception&) {
    return {};  // codegen cannot answer for this spec: the op decides at run time
  }
}

}  // namespace fxfuse::pass
