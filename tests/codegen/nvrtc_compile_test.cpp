// CI without a GPU: every spec under tests/codegen/specs generates a kernel that NVRTC
// compiles to a cubin for sm_80 and sm_90a, without local-memory spills. A missing NVRTC is
// a failure, not a skip, unless FXFUSE_NO_NVRTC=1 says this machine has none on purpose.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "codegen/codegen.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

bool nvrtcOptedOut() {
  const char* v = std::getenv("FXFUSE_NO_NVRTC");
  return v && std::string(v) == "1";
}

#define REQUIRE_NVRTC()                                                       \
  do {                                                                        \
    if (nvrtcOptedOut()) GTEST_SKIP() << "FXFUSE_NO_NVRTC=1";                 \
    ASSERT_FALSE(findNvrtc().empty()) << "libnvrtc not found (the dlopen search of " \
                                         "codegen/nvrtc_library.cpp); set FXFUSE_NVRTC_PATH or FXFUSE_NO_NVRTC=1"; \
  } while (0)

// The generic template's configs for a spec: the large-M one and the small-M one.
KernelConfig genericConfig(const spec::ChainSpec& s, long long m) {
  bool f32 = s.values[s.values[s.mmIndex()].operands[0]].dtype == spec::DType::F32;
  if (f32) return m <= 64 ? KernelConfig{"simt", 64, 64, 16, 2, 256} : KernelConfig{"simt", 128, 128, 16, 2, 256};
  return m <= 64 ? KernelConfig{"sm80_mma", 64, 128, 32, 2, 128} : KernelConfig{"sm80_mma", 128, 128, 32, 2, 256};
}

void expectNoSpills(const std::string& log) {
  std::regex spill("([0-9]+) bytes spill (stores|loads)");
  int seen = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), spill); it != std::sregex_iterator(); ++it, ++seen)
    EXPECT_EQ((*it)[1].str(), "0") << "local-memory spill:\n" << log;
  EXPECT_GT(seen, 0) << "no ptxas statistics in the log:\n" << log;
}

TEST(Nvrtc, Found) {
  REQUIRE_NVRTC();
  std::string v = nvrtcVersion();
  EXPECT_TRUE(std::regex_match(v, std::regex("[0-9]+\\.[0-9]+"))) << v;
}

struct CompileCase {
  std::string spec;
  std::string arch;
  long long m;
};

void PrintTo(const CompileCase& c, std::ostream* os) { *os << c.spec << " " << c.arch << " M=" << c.m; }

class CompileSpec : public ::testing::TestWithParam<CompileCase> {};

TEST_P(CompileSpec, ToCubin) {
  REQUIRE_NVRTC();
  const CompileCase& c = GetParam();
  spec::ChainSpec s = test::loadSpec(c.spec);
  KernelSource src = generate(s, genericConfig(s, c.m));
  Cubin out;
  try {
    out = test::compileForStatistics(src, c.arch, /*want_ptx=*/true);
  } catch (const CompileError& e) {
    FAIL() << e.what();
  }
  EXPECT_GT(out.image.size(), 1000u);
  EXPECT_EQ(out.image.substr(0, 4), std::string("\x7f" "ELF"));
  EXPECT_NE(out.ptx.find(".entry " + src.name), std::string::npos);
  EXPECT_NE(out.log.find("Compiling entry function '" + src.name + "' for '" + c.arch + "'"), std::string::npos)
      << out.log;
  expectNoSpills(out.log);
}

std::vector<CompileCase> cases() {
  std::vector<CompileCase> out;
  for (const std::string& name : test::specNames()) {
    out.push_back({name, "sm_80", 4096});
    out.push_back({name, "sm_90a", 4096});
    out.push_back({name, "sm_80", 16});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Specs, CompileSpec, ::testing::ValuesIn(cases()), [](const auto& info) {
  return info.param.spec + "_" + info.param.arch + "_m" + std::to_string(info.param.m);
});

// The epilogue-alone kernel (kernels/epilogue_pointwise.cuh) for every spec it applies to.
TEST(Nvrtc, EpilogueAloneKernelCompilesForEveryEligibleSpec) {
  REQUIRE_NVRTC();
  int eligible = 0;
  for (const std::string& name : test::specNames()) {
    spec::ChainSpec s = test::loadSpec(name);
    if (!pointwiseApplies(s)) {
      EXPECT_THROW(generate(s, pointwiseConfig()), CodegenError) << name;
      continue;
    }
    ++eligible;
    SCOPED_TRACE(name);
    const KernelSource src = generate(s, pointwiseConfig());
    EXPECT_EQ(src.grid, GridPolicy::Elementwise);
    EXPECT_NE(src.code.find("#define FX_ACC_SLOT " + std::to_string(s.numInputSlots())), std::string::npos);
    const spec::DType mm = s.values[s.mmIndex()].dtype;  // the product is stored 16-bit when the mm is
    const char* loader = mm == spec::DType::BF16 ? "fx_ld_bf16" : mm == spec::DType::F16 ? "fx_ld_f16" : "fx_ld_f32";
    EXPECT_NE(src.code.find(std::string("#define FX_ACC_LOAD(ptr, i) ") + loader + "(ptr, i)"), std::string::npos)
        << name;
    for (const char* arch : {"sm_80", "sm_90a"}) {
      try {
        const Cubin out = test::compileForStatistics(src, arch);
        expectNoSpills(out.log);
      } catch (const CompileError& e) {
        ADD_FAILURE() << name << " " << arch << ": " << e.what();
      }
    }
  }
  EXPECT_GE(eligible, 10);
}

TEST(Nvrtc, CompileErrorCarriesLogAndNumberedSource) {
  REQUIRE_NVRTC();
  KernelSource src = generate(test::loadSpec("bare_bf16_mm"), genericConfig(test::loadSpec("bare_bf16_mm"), 4096));
  src.code += "\nthis is not cuda;\n";
  try {
    compileNvrtc(src, "sm_80");
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log.find("error"), std::string::npos) << e.log;
    EXPECT_NE(e.source.find("    1 | // Generated by fxfuse codegen"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("NVRTC failed to compile " + src.name + " for sm_80"), std::string::npos);
  }
}

}  // namespace
}  // namespace fxfuse::codegen
