// Kernels that cannot be had, per spec (CachedSpec::unavailable), with the reason: a request for one
// throws the reason again without generating or compiling (each attempt costs a compile, 0.5-1.5 s,
// at every call of the call site).
//
// Most reasons hold for good: codegen cannot emit the spec, the compiler rejected or crashed on the
// source, the device cannot run the kernel: the same source fails the same way. A transient one (the
// compiler's worker could not be started for want of processes or memory, or was killed from outside:
// codegen::CompilerCrashed::transient) says nothing about the source, so the kernel is tried again
// after a backoff: 10 s, 1 min, 6 min. The fourth transient failure holds for good: a kernel whose
// compile the OOM killer ends every time must not keep taking the machine's memory (the killer may pick
// the user's own process next).
#pragma once

#include <chrono>
#include <string>
#include <unordered_map>

namespace fxfuse::runtime {

class UnavailableKernels {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kFirstRetry{10};
  static constexpr int kBackoffFactor = 6;
  static constexpr int kMostTransientFailures = 4;  // the last of them holds for good

  struct Failure {
    std::string why;
    Clock::time_point retryAt = Clock::time_point::max();  // max(): never
    int transientFailures = 0;
    bool transient() const { return retryAt != Clock::time_point::max(); }  // tried again at retryAt
  };

  // Why `key` cannot be had at `now`, or null when it may be tried (never failed, or its transient
  // failure's backoff has passed).
  const Failure* find(const std::string& key, Clock::time_point now) const;
  // Its failure, whether or not its backoff has passed; null where it never failed.
  const Failure* recorded(const std::string& key) const;
  // Records that `key` failed at `now` for `why`.
  void record(const std::string& key, const std::string& why, bool transient, Clock::time_point now);

 private:
  std::unordered_map<std::string, Failure> failures_;
};

}  // namespace fxfuse::runtime
