// Process-wide counters for fxfuse._C.stats(): what the kernel caches and launcher did.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fxfuse::runtime {

struct RuntimeStats {
  std::atomic<int64_t> cpuCalls{0};          // CPU kernel (reference) runs
  std::atomic<int64_t> launches{0};          // generated kernels launched
  std::atomic<int64_t> fallbacks{0};         // CUDA calls evaluated with ATen instead (no kernel)
  // CUDA calls run unfused through ATen by design: the chosen variant is not a fast one
  // (codegen::isFastVariant), so cuBLAS + ATen pointwise is at least as fast. Not an error.
  std::atomic<int64_t> atenDispatch{0};
  std::atomic<int64_t> clusterLaunches{0};   // of `launches`: cuLaunchKernelEx cluster launches (split-K gemv)
  // of `launches`: kernels launched as programmatic dependents (gemv, Hopper, epilogue-alone: launched
  // ahead of the previous kernel's end; they wait for it before touching memory)
  std::atomic<int64_t> pdlLaunches{0};
  // programmatic launches the driver refused where the plain launch then succeeded (the attribute was
  // the cause): the call entry launches its kernel plainly from then on (CallEntry::pdlRefused), so a
  // refusal costs one extra launch attempt, not one a call
  std::atomic<int64_t> pdlLaunchRefusals{0};
  // of `launches`: sm90 split-K kernels (clusters compiled in, launched plainly): what tells a
  // differential run that its decode cases reached the split-K tile
  std::atomic<int64_t> hopperSplitKLaunches{0};
  // of `launches`: sm90 kernels with the overlapped epilogue (FX_EPI_OVERLAP, bench knob
  // FXFUSE_SM90_EPILOGUE_OVERLAP): what tells an A/B run and the tests that it ran
  std::atomic<int64_t> hopperOverlapLaunches{0};
  // of `launches`: epilogue-alone kernels after a cuBLAS product (the unfused path, Kind::Pointwise)
  std::atomic<int64_t> pointwiseLaunches{0};
  std::atomic<int64_t> callCacheHits{0};     // CUDA calls served by the per-call-site cache
  std::atomic<int64_t> kernelsCompiled{0};   // NVRTC compilations
  // compiles whose NVRTC worker crashed, hung or could not start (codegen::CompilerCrashed): the op
  // ran unfused, and the user's process lived on
  std::atomic<int64_t> compilerCrashes{0};
  // of `kernelsCompiled`: compiled in the user's process, not in the NVRTC worker
  // (FXFUSE_COMPILE_IN_PROCESS=1, or the worker executable is missing: fxfuse warns at import)
  std::atomic<int64_t> compilesInProcess{0};
  std::atomic<int64_t> memoryHits{0};        // kernel found in the in-memory cache
  std::atomic<int64_t> diskHits{0};          // cubin loaded from the disk cache
  std::atomic<int64_t> diskMisses{0};        // no entry on disk: compiled
  std::atomic<int64_t> diskRebuilds{0};      // corrupt/truncated entry found, recompiled
  std::atomic<int64_t> diskWrites{0};        // entries written
  std::atomic<int64_t> diskWriteFailures{0};
  std::atomic<int64_t> unsafeRegisterFallbacks{0};  // sm90 kernels refused (setmaxnreg)
  std::atomic<int64_t> backgroundCompiles{0};      // kernels queued for a background compile
  // CUDA calls answered with ATen ops while their kernel compiled in the background
  std::atomic<int64_t> backgroundCompileCalls{0};
  // expect inputs (docs/spec.md) whose data was read and checked: once per tensor until it is written in place
  // or replaced (known_values_check.h), so a model's steady state adds none
  std::atomic<int64_t> expectReads{0};

  // (name, value) pairs in a fixed order, for the Python dict.
  std::vector<std::pair<std::string, int64_t>> snapshot() const;
  void reset();
};

RuntimeStats& stats();

// The hash of the library's sources (generated at build time: library_version.cmake).
const char* libraryVersion();

}  // namespace fxfuse::runtime
