// Kernels that cannot be had, per spec (CachedSpec::unavailable), with the reason: a request for one
// throws the reason again without generating or compiling (each attempt costs a compile, 0.5-1.5 s,
// at every call of the call site).
//
// Most reasons hold for good: codegen cannot emit the spec, the compiler rejected or crashed on the
// source, the device cannot run the kernel: the same source fails the same way. A transient one (the
// compiler's worker could not be started for want of processes or memory, or was killed from outside:
// codegen::CompilerCrashed::transient) says nothing about the source, so the kernel is tried again after
// a backoff that doubles with each failure (5 s, 10 s, ... at most 10 min): a system short of memory
// is not made shorter by a compile at every call.
#pragma once

#include <chrono>
#include <string>
#include <unordered_map>

namespace fxfuse::runtime {

class UnavailableKernels {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kFirstRetry{5}, kLongestRetry{600};

  // The reason `key` cannot be had at `now`, or null when it may be tried (never failed, or its
  // transient failure's backoff has passed).
  const std::string* find(const std::string& key, Clock::time_point now) const;
  // Records that `key` failed at `now` for `why`; `transient` failures are retried after the backoff.
  void record(const std::string& key, const std::string& why, bool transient, Clock::time_point now);

 private:
  struct Failure {
    std::string why;
    Clock::time_point retryAt;  // max(): never
    int transientFailures = 0;
  };
  std::unordered_map<std::string, Failure> failures_;
};

}  // namespace fxfuse::runtime
