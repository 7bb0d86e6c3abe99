#include "runtime/unavailable_kernels.h"

namespace fxfuse::runtime {

const UnavailableKernels::Failure* UnavailableKernels::find(const std::string& key, Clock::time_point now) const {
  const auto it = failures_.find(key);
  return it != failures_.end() && now < it->second.retryAt ? &it->second : nullptr;
}

const UnavailableKernels::Failure* UnavailableKernels::recorded(const std::string& key) const {
  const auto it = failures_.find(key);
  return it != failures_.end() ? &it->second : nullptr;
}

void UnavailableKernels::record(const std::string& key, const std::string& why, bool transient,
                                Clock::time_point now) {
  Failure& f = failures_[key];
  f.why = why;
  if (!transient || ++f.transientFailures >= kMostTransientFailures) {
    if (transient) f.why += " (" + std::to_string(f.transientFailures) + " such failures: not tried again)";
    f.retryAt = Clock::time_point::max();
    return;
  }
  Clock::duration wait = kFirstRetry;
  for (int i = 1; i < f.transientFailures; ++i) wait *= kBackoffFactor;
  f.retryAt = now + wait;
}

}  // namespace fxfuse::runtime
