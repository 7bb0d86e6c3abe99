// Kernel selection. The rows below are the whole policy: the first row whose template is
// built in and whose condition holds wins. Owners of a template tune its row (tile sizes,
// conditions); a new variant is a new row plus its .cuh under kernels/.
#include "codegen/config_table.h"

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
  bool is16bit() const { return a.elem == DType::BF16 || a.elem == DType::F16; }
};

struct VariantRow {
  const char* variant;
  const char* templ;
  GridPolicy grid;
  bool (*applies)(const Query&);
  KernelConfig (*config)(const Query&);
};

const VariantRow kRows[] = {
    // Hopper: wgmma + TMA needs both operands to be raw 16-bit tensors, 16-byte aligned.
    {"sm90_wgmma", "kernels/sm90_wgmma_gemm.cuh", GridPolicy::Persistent,
     [](const Query& q) {
       return q.arch >= 90 && q.is16bit() && q.a.plain && q.b.plain && q.shape.align_bytes_a >= 16 &&
              q.shape.align_bytes_b >= 16 && q.shape.M >= 128;
     },
     [](const Query&) { return KernelConfig{"sm90_wgmma", 128, 256, 64, 4, 384}; }},
    // Decode-sized M: a memory-bound schedule over the (possibly quantized) weights.
    {"gemv", "kernels/gemv.cuh", GridPolicy::Tiles,
     [](const Query& q) { return q.shape.M <= 64 && q.arch >= 80; },
     [](const Query&) { return KernelConfig{"gemv", 64, 64, 128, 2, 128}; }},
    // Everything else with 16-bit operands: mma.sync m16n8k16 (generic template).
    {"sm80_mma", "kernels/generic_gemm.cuh", GridPolicy::Tiles,
     [](const Query& q) { return q.is16bit(); },
     [](const Query& q) {
       return q.shape.M <= 64 ? KernelConfig{"sm80_mma", 64, 128, 32, 2, 128}
                              : KernelConfig{"sm80_mma", 128, 128, 32, 2, 256};
     }},
    // fp32 operands: full-precision FFMA like eager (no TF32).
    {"simt", "kernels/generic_gemm.cuh", GridPolicy::Tiles,
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

std::string templateFor(const std::string& variant) { return row(variant).templ; }
GridPolicy gridFor(const std::string& variant) { return row(variant).grid; }

KernelConfig chooseConfig(const spec::ChainSpec& spec, const ProblemShape& shape, int sm_arch) {
  spec::ChainSpec checked = spec;
  spec::validateSpec(checked);  // the analysis below relies on a well-formed spec
  Query q{analyzeA(checked), analyzeB(checked), shape, sm_arch};
  for (const VariantRow& r : kRows)
    if (embeddedFile(r.templ) && r.applies(q)) return r.config(q);
  throw std::logic_error("fxfuse internal error: no kernel variant applies (please report a bug)");
}

LaunchDims launchDims(const KernelSource& src, const ProblemShape& shape, int sm_count) {
  LaunchDims d;
  d.block = static_cast<unsigned>(src.config.threads);
  d.smem_bytes = src.smem_bytes;
  if (src.grid == GridPolicy::Persistent) {
    d.grid[0] = static_cast<unsigned>(sm_count);
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
