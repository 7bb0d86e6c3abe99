#include "runtime/unavailable_kernels.h"

#include <algorithm>

namespace fxfuse::runtime {

const std::string* UnavailableKernels::find(const std::string& key, Clock::time_point now) const {
  const auto it = failures_.find(key);
  return it != failures_.end() && now < it->second.retryAt ? &it->second.why : nullptr;
}

void UnavailableKernels::record(const std::string& key, const std::string& why, bool transient,
                                Clock::time_point now) {
  Failure& f = failures_[key];
  f.why = why;
  if (!transient) {
    f.retryAt = Clock::time_point::max();
    return;
  }
  const int doublings = std::min(f.transientFailures++, 10);
  const auto wait = std::min<Clock::duration>(kFirstRetry * (1 << doublings), kLongestRetry);
  f.retryAt = now + wait;
}

}  // namespace fxfuse::runtime
