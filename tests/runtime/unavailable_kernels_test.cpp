// runtime/unavailable_kernels.h: a kernel that failed for good is never tried again; one that failed for
// a transient reason is tried again after a backoff that doubles (5 s, 10 s, ...) up to 10 min.
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
  EXPECT_EQ(*u.find("k", t0), "the compiler crashed");
  EXPECT_NE(u.find("k", t0 + seconds(365 * 24 * 3600)), nullptr);
  EXPECT_EQ(u.find("other", t0), nullptr);
}

TEST(UnavailableKernels, ATransientFailureIsRetriedAfterADoublingBackoff) {
  UnavailableKernels u;
  Clock::time_point t = Clock::now();
  u.record("k", "the worker could not start", /*transient=*/true, t);
  EXPECT_NE(u.find("k", t + seconds(4)), nullptr);
  EXPECT_EQ(u.find("k", t + seconds(5)), nullptr);  // tried again
  t += seconds(5);
  u.record("k", "again", true, t);  // the second failure waits twice as long
  EXPECT_NE(u.find("k", t + seconds(9)), nullptr);
  EXPECT_EQ(u.find("k", t + seconds(10)), nullptr);
  for (int i = 0; i < 20; ++i) u.record("k", "again", true, t);
  EXPECT_NE(u.find("k", t + seconds(599)), nullptr);
  EXPECT_EQ(u.find("k", t + seconds(600)), nullptr);  // never longer than 10 min
}

TEST(UnavailableKernels, AFailureForGoodAfterTransientOnesHoldsForever) {
  UnavailableKernels u;
  const Clock::time_point t = Clock::now();
  u.record("k", "short of processes", true, t);
  u.record("k", "the compiler crashed", false, t + seconds(5));
  ASSERT_NE(u.find("k", t + seconds(10000)), nullptr);
  EXPECT_EQ(*u.find("k", t + seconds(10000)), "the compiler crashed");
}

}  // namespace
}  // namespace fxfuse::runtime
