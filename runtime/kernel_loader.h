// Get-or-compile of generated kernels, torch-free: memory cache (per spec, in CachedSpec) →
// disk cache (kernel_cache.h) → codegen + NVRTC; then cuModuleLoadData on the device.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "runtime/cuda_driver.h"
#include "runtime/spec_cache.h"

namespace fxfuse::runtime {

struct CudaKernel {
  codegen::KernelSource source;  // name, config, smem, grid policy (code dropped once loaded)
  cu::Module module = nullptr;
  cu::Function function = nullptr;
  int device = -1;
  int numRegs = -1;  // CU_FUNC_ATTRIBUTE_NUM_REGS: registers per thread ptxas allocated
};

// No kernel can be had, for a reason the op answers by evaluating with ATen instead (no
// NVRTC, a spec codegen cannot emit, NVRTC rejected the source). what() is the reason.
struct KernelUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The kernel is not compiled and compiling now is not allowed (CUDA graph capture).
struct KernelNotReady : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct KernelRequest {
  codegen::KernelConfig config;
  int device = 0;           // CUDA ordinal; its context must be current
  std::string arch;         // "sm_90a"
  int maxSmemOptin = 0;     // bytes, from the device
  // Asked only on a memory-cache miss (it costs a driver call): false during stream capture,
  // where a miss throws KernelNotReady. Empty: compiling is allowed.
  std::function<bool()> mayCompile;
};

// Thread-safe. Throws KernelUnavailable, KernelNotReady, or std::runtime_error for a driver
// failure (message from CudaDriver::describe).
std::shared_ptr<CudaKernel> getKernel(const CudaDriver& driver, const CachedSpec& spec,
                                      const KernelRequest& request);

// The input value behind mm operand `which` (0: A, 1: B): the operand itself when it is a raw
// input, else the space's main raw input (the one carrying both of its letters, e.g. the int8
// weight of a dequant prologue), whose layout and alignment select the variant. -1 if none.
int operandInput(const spec::ChainSpec& spec, int which);

// a_kmajor / b_kmajor as the spec's dims order promises them (the innermost dim of the A / B
// input is contiguous; the launcher makes it so). Leaves sizes and alignment alone.
void setLayoutFromSpec(const spec::ChainSpec& spec, codegen::ProblemShape* shape);

// Where codegen looks for NVRTC and CUDA headers besides its defaults (the bindings add the
// pip package dirs Python knows about).
void setNvrtcSearchDirs(std::vector<std::string> libDirs, std::vector<std::string> includeDirs);
codegen::NvrtcEnv nvrtcEnv();

// "" when NVRTC cannot be found (never throws).
std::string nvrtcLibraryPath();

}  // namespace fxfuse::runtime
