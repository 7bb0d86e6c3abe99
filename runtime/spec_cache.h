// Parsed-spec cache: the op receives its spec as a string on every call, and parsing it each
// time would dominate a small launch. Entries live for the whole process (a model has a few
// dozen distinct specs), so callers may keep the returned pointer.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "runtime/unavailable_kernels.h"
#include "spec/chain_spec.h"

namespace fxfuse::runtime {

struct CudaKernel;         // defined by the CUDA launcher; opaque here
struct BackgroundCompile;  // a kernel compiling off the calling thread (kernel_loader.cpp)

struct CachedSpec {
  std::string text;
  spec::ChainSpec spec;

  // Kernels compiled for this spec, keyed by what else selects a kernel (config, alignment,
  // arch, device). Kept here so that a launch does one string hash, not two.
  mutable std::mutex kernelsMutex;
  mutable std::unordered_map<std::string, std::shared_ptr<CudaKernel>> kernels;
  // Kernels compiling in the background, or failed there, under the same keys: a request finds
  // them before generating the source again. Under kernelsMutex.
  mutable std::unordered_map<std::string, std::shared_ptr<BackgroundCompile>> compiling;
  // Kernels that cannot be had (KernelUnavailable: codegen cannot emit it, the compiler rejected or
  // crashed on it, the device cannot run it), under the same keys, with the reason
  // (unavailable_kernels.h: transient failures are tried again after a backoff). Under kernelsMutex.
  mutable UnavailableKernels unavailable;
  // The unfused path's epilogue kernel failed (runtime/cuda_launch.cpp pointwiseEntry): no new
  // attempt before this time (max: codegen cannot emit it), whatever the call site, so dynamic
  // shapes do not recompile a failing kernel at every new size. Under kernelsMutex.
  mutable std::chrono::steady_clock::time_point pointwiseRetryAt{};
};

// Thread-safe. Throws spec::SpecError (with the parser's "line L: ..." message) for an
// invalid spec; invalid specs are not cached. A hit neither copies nor allocates: the map's
// keys view the entries' own text.
std::shared_ptr<const CachedSpec> getCachedSpec(std::string_view text);

// Number of distinct specs parsed so far (for stats()).
size_t cachedSpecCount();

// An input's dims as letters only ("m,k" and "mk" both give "mk"; '1' is kept).
std::string dimLetters(const std::string& dims);

}  // namespace fxfuse::runtime
