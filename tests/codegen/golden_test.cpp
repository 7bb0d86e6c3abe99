// The per-chain part of generated kernels (config macros and hooks) against files in
// tests/codegen/golden/. After an intended change: FXFUSE_UPDATE_GOLDEN=1 ./fxfuse_codegen_tests
// rewrites them; review the diff like code.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "codegen/codegen.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, HooksMatch) {
  spec::ChainSpec s = test::loadSpec(GetParam());
  ProblemShape shape;
  shape.M = shape.N = shape.K = 4096;
  std::string got = generateHooks(s, chooseConfig(s, shape, 80));
  std::string path = test::testDir() + "/golden/" + GetParam() + ".cu";
  const char* update = std::getenv("FXFUSE_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << got;
    GTEST_SKIP() << "updated " << path;
  }
  std::string want = test::readFile(path);
  ASSERT_FALSE(want.empty()) << path << " is missing; run with FXFUSE_UPDATE_GOLDEN=1";
  EXPECT_EQ(got, want) << "generated hooks differ from " << path << " (FXFUSE_UPDATE_GOLDEN=1 to accept)";
}

INSTANTIATE_TEST_SUITE_P(Chains, Golden,
                         ::testing::Values("doc_example_int8_gelu", "f16_residual_silu_two_outputs",
                                           "bmm_f16_scale_softcap", "f32_addmm_relu", "clamp_hardtanh_nan_bounds",
                                           "where_comparisons_bool_output"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fxfuse::codegen
