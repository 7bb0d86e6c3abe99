// The parsed-spec cache: one parse per text, shared entries, invalid specs not cached.
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/spec_cache.h"

namespace fxfuse::runtime {
namespace {

const char* kSpec =
    "fxfuse.chain v1\n"
    "gemm mm\n"
    "%0 = input 0 bf16 [m,k]\n"
    "%1 = input 1 bf16 [k,n]\n"
    "%2 = mm %0 %1 : bf16\n"
    "%3 = relu %2 : bf16\n"
    "output %3\n";

TEST(SpecCache, SameTextSameEntry) {
  auto a = getCachedSpec(kSpec);
  auto b = getCachedSpec(kSpec);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->spec.values.size(), 4u);
  EXPECT_EQ(a->text, kSpec);
}

TEST(SpecCache, ConcurrentLookupsAgree) {
  const std::string text = std::string(kSpec) + "output %2\n";
  std::vector<const CachedSpec*> seen(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] { seen[t] = getCachedSpec(text).get(); });
  for (auto& t : threads) t.join();
  for (const CachedSpec* s : seen) EXPECT_EQ(s, seen[0]);
}

TEST(SpecCache, InvalidSpecThrowsAndIsNotCached) {
  const size_t before = cachedSpecCount();
  EXPECT_THROW(getCachedSpec("fxfuse.chain v2\n"), spec::SpecError);
  EXPECT_EQ(cachedSpecCount(), before);
}

TEST(DimLetters, AcceptsBothForms) {
  EXPECT_EQ(dimLetters("m,k"), "mk");
  EXPECT_EQ(dimLetters("n1"), "n1");
  EXPECT_EQ(dimLetters(""), "");
}

}  // namespace
}  // namespace fxfuse::runtime
