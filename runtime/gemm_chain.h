// Shared by the op's kernels (Meta, CPU, CUDA) and the bindings: input validation, the
// problem shape, logical views of inputs, and the entry points of each kernel.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>

#include "runtime/spec_cache.h"

namespace fxfuse::runtime {

// The problem an input list poses for a spec. Symbolic under fake tensors; concrete (but
// still SymInt, so one code path validates both) for real ones.
struct ChainShape {
  std::vector<c10::SymInt> lead;  // output dims before N: A's m dims (mm) or {B, M} (bmm)
  c10::SymInt B = 1, M = 1, N = 1, K = 1;
  std::vector<c10::SymInt> outputShape() const;  // [*lead, N]
};

// Parses (cached) or raises a RuntimeError naming the bad line.
std::shared_ptr<const CachedSpec> specFor(c10::string_view text);

// Checks the inputs against the spec (count, rank, dtype, sizes per dims letter, one device)
// and infers the problem shape. Every error is a TORCH_CHECK naming the input slot. `inputs` are the op's:
// numOpInputs(), the expect lines' inputs after the values' (their dtypes and sizes checked here; their values by
// checkExpects, known_values_check.h, which reads them: never here, where the tensors may be fake). The kernels
// then take the first numInputSlots() of them.
ChainShape checkInputs(const spec::ChainSpec& spec, at::TensorList inputs);

// `t` (the tensor of an input value with `dims`) as a view over the logical dims of `space`:
// rank 2 ([M,K], [K,N], [M,N]) for mm, rank 3 with a leading b for bmm. Multiple m dims
// flatten (copying only if they cannot be viewed), a letter missing from dims becomes a
// size-1 dim, '1' dims disappear. Strides of the result are the kernel's per-dim strides. A 'g' dim (k's
// group) becomes k, each element repeated `kGroup` times; a 'p' dim (k packed as 4-bit values) becomes k, each
// element's nibbles unpacked to values 0..15 of its dtype (copies: the CPU reference's forms); a 'q' dim (n packed so)
// becomes n, its element's 4-bit values in `nibbleOrder` (spec::Value::order; empty: the plain order).
at::Tensor logicalView(const at::Tensor& t, const std::string& dims, spec::Space space,
                       spec::GemmKind gemm, int kGroup = 0, const std::vector<int>& nibbleOrder = {});

// The letters of `space` in logical order: "mk", "kn", "mn" (with a leading 'b' for bmm).
std::string spaceLetters(spec::Space space, spec::GemmKind gemm);

// Grad mode as the op's caller had it: the Autograd kernel records it for the call (its autograd::Function runs the
// op with grad mode off), for eager's choices that depend on it (reference_eval.cpp weightRequiresGrad); where the op
// was reached without that kernel (inference mode, a call below autograd), grad mode as it is.
class CallerGradMode {
 public:
  explicit CallerGradMode(bool enabled);
  ~CallerGradMode();
  CallerGradMode(const CallerGradMode&) = delete;
  CallerGradMode& operator=(const CallerGradMode&) = delete;
  static bool enabled();

 private:
  int previous_;
};

// Evaluates the spec with ATen ops on the inputs' device, one op at a time, each in fp32
// and rounded to its value's dtype (docs/spec.md). The CPU kernel, and the CUDA fallback.
std::vector<at::Tensor> evaluateReference(const spec::ChainSpec& spec, at::TensorList inputs,
                                          const ChainShape& shape);

// The chain's product of its raw A and B (no prologue), fp32 accumulation, contiguous [M, N] or
// [B, M, N]: in the mm value's dtype when that is 16-bit (rounded once, by cuBLAS), else fp32
// unrounded (cuBLAS with fp32 output for 16-bit operands). What the epilogue-alone kernel reads
// (kernels/epilogue_pointwise.cuh; codegen picks its loader by the same rule).
at::Tensor chainProduct(const spec::ChainSpec& spec, at::TensorList inputs, const ChainShape& shape);

// The CUDA kernel (cuda_launch.cpp).
std::vector<at::Tensor> gemmChainCuda(at::TensorList inputs, c10::string_view spec);
// Compiles and loads the kernel the CUDA kernel would use for these inputs, without
// launching, so that a later call inside CUDA graph capture finds it ready; `background`: queues
// the compile (a background compile, kernel_loader.h) and returns at once. The inputs may be stand-ins of the
// same shapes: the expect lines' values are not checked here (the op's calls check them, checkExpects).
void precompileCuda(at::TensorList inputs, c10::string_view spec, bool background = false);

// Measured kernel choice (runtime/kernel_choice.h) for the problem these CUDA inputs pose:
// the candidates (codegen::describeConfig texts, the heuristic's first), the choice in force
// ("" = the heuristic), and setting one (a candidate, "aten", "aten-ops" or "" for the heuristic; persist:
// also in the disk cache). Setting makes every call site plan again. Thread-safe.
std::vector<std::string> kernelCandidatesCuda(at::TensorList inputs, c10::string_view spec);
std::string kernelChoiceCuda(at::TensorList inputs, c10::string_view spec);
void setKernelChoiceCuda(at::TensorList inputs, c10::string_view spec, const std::string& choice, bool persist);

// The heuristic's kernel for these CUDA inputs and its launch geometry on their GPU (codegen::launchDims with the
// GPU's SM count and peak memory bandwidth, as the op launches it where no measured choice is set): for tests and
// reports of the device-dependent split-K rule.
struct LaunchGeometry {
  std::string kernel;  // codegen::describeConfig
  unsigned grid[3] = {1, 1, 1}, cluster[3] = {1, 1, 1};
  int smCount = 0;
  double dramBytesPerS = 0;  // the driver's memory clock and bus width (0: not said)
};
LaunchGeometry launchGeometryCuda(at::TensorList inputs, c10::string_view spec);

// Availability of the dlopen'd libraries (false on a machine without them; never throws).
bool cudaDriverAvailable();
bool nvrtcAvailable();

}  // namespace fxfuse::runtime
