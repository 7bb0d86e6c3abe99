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
// NVRTC, a spec codegen cannot emit, NVRTC rejected the source). what() is the reason; `transient`:
// a later attempt may succeed (codegen::CompilerCrashed::transient), so it is retried after a backoff.
struct KernelUnavailable : std::runtime_error {
  explicit KernelUnavailable(const std::string& what, bool transient = false)
      : std::runtime_error(what), transient(transient) {}
  bool transient;
};
// A transient failure's retry is due, but inside a CUDA graph capture, which allows no compile: ATen for this
// call, as since the failure, and the retry at the first call outside it; not another failure (getKernel).
struct KernelRetryAfterCapture : KernelUnavailable {
  explicit KernelRetryAfterCapture(const std::string& what) : KernelUnavailable(what, /*transient=*/true) {}
};
// The kernel is not compiled and compiling now is not allowed (CUDA graph capture).
struct KernelNotReady : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The kernel is being compiled in the background (KernelRequest::background): ask again later.
struct KernelCompiling : KernelNotReady {
  using KernelNotReady::KernelNotReady;
};

struct KernelRequest {
  codegen::KernelConfig config;
  int device = 0;           // CUDA ordinal; its context must be current
  std::string arch;         // "sm_90a"
  int maxSmemOptin = 0;     // bytes, from the device
  // Asked only on a memory-cache miss (it costs a driver call): false during stream capture,
  // where a miss throws KernelNotReady. Empty: compiling is allowed.
  std::function<bool()> mayCompile;
  // A kernel in neither cache is compiled on backgroundCompileQueue() (compile_queue.h) and the
  // call throws KernelCompiling, as do later calls until the compile ends; the first call after
  // it loads the kernel. A disk hit loads at once, as without it.
  bool background = false;
};

// Thread-safe. Throws KernelUnavailable, KernelNotReady (KernelCompiling), or std::runtime_error
// for a driver failure (message from CudaDriver::describe). A kernel that could not be had
// (KernelUnavailable), compiled in the background or not, throws it at every later request,
// without generating or compiling again (a transient failure: until its backoff has passed,
// unavailable_kernels.h).
std::shared_ptr<CudaKernel> getKernel(const CudaDriver& driver, const CachedSpec& spec,
                                      const KernelRequest& request);

// Blocks until no background compile is queued or running, or timeout_ms (< 0: no limit) has
// passed; true when none is left. The kernels they built load at their next request.
bool waitForBackgroundCompiles(long long timeout_ms = -1);

// The input value behind mm operand `which` (0: A, 1: B): the operand itself when it is a raw
// input, else the space's main raw input (the one carrying both of its letters, e.g. the int8
// weight of a dequant prologue), whose layout and alignment select the variant. -1 if none.
int operandInput(const spec::ChainSpec& spec, int which);

// Whether operand `which`'s input (operandInput) is stored with k innermost (B: F.linear's [N, K] weight).
bool operandKMajor(const spec::ChainSpec& spec, int which);

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
