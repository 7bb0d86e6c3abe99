// runtime/unavailable_kernels.h: a kernel that failed for good is never tried again; one that failed for
// a transient reason is tried again after a backoff (10 s, 1 min, 6 min), and its fourth transient
// failure holds for good.
#include <gtest/gtest.h>

#include "runtime/unavailable_kernels.h"

namespace fxfuse::runtime {
namespace {

using Clock = UnavailableKernels::Clock;
using std::chrono::seconds;

TEST(UnavailableKernels, AFailureForGoodHoldsForever) {
  UnavailableKernels u;
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(u.find("k", t0), nullptr);
  u.record("k", "the compiler crashed", /*transient=*/false, t0);
  ASSERT_NE(u.find("k", t0), nullptr);
  EXPECT_EQ(u.find("k", t0)->why, "the compiler crashed");
  EXPECT_FALSE(u.find("k", t0)->transient());
  EXPECT_NE(u.find("k", t0 + seconds(365 * 24 * 3600)), nullptr);
  EXPECT_EQ(u.find("other", t0), nullptr);
}

TEST(UnavailableKernels, ATransientFailureIsRetriedAfterABackoffThenHoldsForGood) {
  UnavailableKernels u;
  Clock::time_point t = Clock::now();
  for (int wait : {10, 60, 360}) {  // each failure waits six times as long as the one before
    u.record("k", "the worker was killed", /*transient=*/true, t);
    ASSERT_NE(u.find("k", t + seconds(wait - 1)), nullptr) << wait;
    EXPECT_TRUE(u.find("k", t + seconds(wait - 1))->transient());
    EXPECT_EQ(u.find("k", t + seconds(wait)), nullptr) << wait;  // tried again
    t += seconds(wait);
  }
  u.record("k", "the worker was killed", true, t);  // the fourth: for good
  ASSERT_NE(u.find("k", t + seconds(365 * 24 * 3600)), nullptr);
  EXPECT_FALSE(u.find("k", t)->transient());
  EXPECT_NE(u.find("k", t)->why.find("not tried again"), std::string::npos) << u.find("k", t)->why;
}

TEST(UnavailableKernels, AFailureForGoodAfterTransientOnesHoldsForever) {
  UnavailableKernels u;
  const Clock::time_point t = Clock::now();
  u.record("k", "short of processes", true, t);
  u.record("k", "the compiler crashed", false, t + seconds(10));
  ASSERT_NE(u.find("k", t + seconds(10000)), nullptr);
  EXPECT_EQ(u.find("k", t + seconds(10000))->why, "the compiler crashed");
}

}  // namespace
}  // namespace fxfuse::runtime
