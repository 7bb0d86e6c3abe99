#include "pass/legality.h"

#include <fmt/format.h>

namespace fxfuse::pass {
namespace {

bool isGemmDtype(spec::DType d) {
  return d == spec::DType::BF16 || d == spec::DType::F16 || d == spec::DType::F32;
}

std::optional<Rejection> reject(const char* reason, std::string detail) {
  return Rejection{reason, std::move(detail)};
}

std::optional<Rejection> checkDtypes(const GraphIndex& index, const GemmMatch& m, const OperandFacts& f,
                                     const PassOptions& o) {
  spec::DType out = index.tensor(m.anchor)->dtype;
  if (!isGemmDtype(f.aDtype) || !isGemmDtype(f.bDtype) || !isGemmDtype(out))
    return reject("unsupported_dtype", fmt::format("{} x {} -> {}", spec::dtypeName(f.aDtype),
                                                   spec::dtypeName(f.bDtype), spec::dtypeName(out)));
  if (f.aDtype != f.bDtype)
    return reject("unsupported_dtype", fmt::format("mixed operands {} x {}", spec::dtypeName(f.aDtype),
                                                   spec::dtypeName(f.bDtype)));
  if (f.aDtype == spec::DType::F32 && !o.allowFp32) return reject("unsupported_dtype", "f32 (allow_fp32 is off)");
  return std::nullopt;
}

// The raw operand tensors (leaves carrying both k and m or n) must have stride 1 along k or
// along their last m/n dim: one of the two layouts the kernel templates load.
std::optional<Rejection> checkStrides(const GraphIndex& index, const PrologueResult& p, char outer) {
  for (const OperandLeaf& leaf : p.leaves) {
    size_t kPos = leaf.letters.find('k');
    size_t oPos = leaf.letters.rfind(outer);
    if (kPos == std::string::npos || oPos == std::string::npos) continue;
    const ir::TensorType* t = index.tensor(leaf.node);
    const std::string& name = index.node(leaf.node).name;
    if (!t->hasStrides) return reject("unknown_meta", "strides of %" + name + " unknown");
    auto unitOrTrivial = [&](size_t d) { return t->strides[d].is(1) || t->sizes[d].is(1); };
    if (t->strides.size() != t->sizes.size()) return reject("unknown_meta", "strides of %" + name + " malformed");
    if (!unitOrTrivial(kPos) && !unitOrTrivial(oPos))
      return reject("non_contiguous", "%" + name + " has no unit stride along k or " + std::string(1, outer));
  }
  return std::nullopt;
}

}  // namespace

std::optional<Rejection> checkLegality(const GraphIndex& index, const GemmMatch& m, const OperandFacts& f,
                                       const PassOptions& o, std::vector<std::string>* notes) {
  if (auto r = checkDtypes(index, m, f, o)) return r;

  const ir::TensorType& anchor = *index.tensor(m.anchor);
  const std::string& device = anchor.device;
  const bool cuda = anchor.onCuda();
  if (!cuda && !(o.allowCpu && (device == "cpu" || device.empty())))
    return reject("unsupported_device", device.empty() ? "unknown device" : device);
  notes->push_back("device " + (device.empty() ? std::string("unknown") : device));
  if (cuda && !o.nvrtc)
    return reject("nvrtc_unavailable", "no NVRTC to compile CUDA kernels with: the chain stays for the graph compiler");

  for (const ir::Dim& d : m.outShape)
    if (d.is(0)) return reject("empty_shape", "a zero-sized output dim");
  if (m.k.is(0)) return reject("empty_shape", "K is 0");
  if (m.k.symbolic || m.n.symbolic)
    return reject("dynamic_k_or_n", fmt::format("K={} N={}", m.k.str(), m.n.str()));

  if (auto r = checkStrides(index, *f.a, 'm')) return r;
  if (auto r = checkStrides(index, *f.b, 'n')) return r;

  // 16-byte rows for 16-bit operands (TMA, vector loads): a generic kernel can still run.
  int bytes = spec::dtypeBytes(f.aDtype);
  if (bytes == 2 && (m.k.value * bytes % 16 != 0 || m.n.value * bytes % 16 != 0)) {
    std::string what = fmt::format("K={} N={}: rows not 16-byte aligned", m.k.value, m.n.value);
    if (o.requireAligned) return reject("misaligned", what);
    notes->push_back("misaligned (" + what + "): needs the generic kernel");
  }
  if (m.k.value < o.minK) return reject("not_profitable", fmt::format("K={} < min_k={}", m.k.value, o.minK));
  if (m.n.value < o.minN) return reject("not_profitable", fmt::format("N={} < min_n={}", m.n.value, o.minN));
  // M: the product of the output's m dims (a batch's matrices are counted apart); a symbolic M is
  // not judged here (its size differs call by call).
  int64_t rows = 1;
  bool known = true;
  for (size_t i = 0; i < m.outShape.size() && i < m.outLetters.size(); ++i) {
    if (m.outLetters[i] != 'm') continue;
    if (m.outShape[i].symbolic) known = false;
    rows *= m.outShape[i].value;
  }
  if (known && rows < o.minM) return reject("not_profitable", fmt::format("M={} < min_m={}", rows, o.minM));
  return std::nullopt;
}

}  // namespace fxfuse::pass
