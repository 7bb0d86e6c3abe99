// The mark `addmm` (spec::Value::addmmResult) is the CPU reference's alone: a marked chain generates the kernel of the
// unmarked one, byte for byte, name included, so its cubin's cache key is the same (runtime/kernel_loader.cpp) and
// kernels cached before the pass printed the mark are found again.
#include <gtest/gtest.h>

#include <optional>

#include "codegen/codegen.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

// The spec with its one eager addmm call marked, or nullopt where it has none (no add or mul of the product's form).
std::optional<spec::ChainSpec> marked(spec::ChainSpec s) {
  for (size_t i = 0; i < s.values.size(); ++i)
    if (spec::addmmCallAt(s, static_cast<int>(i), nullptr).result >= 0) {
      s.values[i].addmmResult = true;
      spec::validateSpec(s);
      return s;
    }
  return std::nullopt;
}

TEST(AddmmMark, GeneratesTheUnmarkedKernel) {
  int compared = 0;
  for (const std::string& name : test::specNames()) {
    SCOPED_TRACE(name);
    const spec::ChainSpec plain = test::loadSpec(name);
    const std::optional<spec::ChainSpec> mark = marked(plain);
    if (!mark) continue;
    ASSERT_NE(spec::printSpec(*mark), spec::printSpec(plain));
    for (const ProblemShape& shape : {ProblemShape{1, 4096, 4096, 4096}, ProblemShape{1, 1, 4096, 4096}})
      for (int sm : {80, 90})
        for (const KernelConfig& config : candidateConfigs(plain, shape, sm)) {
          SCOPED_TRACE(describeConfig(config));
          const KernelSource a = generate(plain, config), b = generate(*mark, config);
          EXPECT_EQ(a.name, b.name);
          EXPECT_EQ(a.code, b.code);
          ++compared;
        }
  }
  EXPECT_GT(compared, 0);  // tests/codegen/specs has addmm chains (f32_addmm_relu, doc_example_int8_gelu, ...)
}

}  // namespace
}  // namespace fxfuse::codegen
