// CTA pairs along M that share each B tile by TMA multicast (KernelConfig::cluster_m 2, the template's
// FX_CLUSTER_M; measurement knob FXFUSE_SM90_CLUSTER_PAIRS): which configs the knob changes, the kernel's own
// name and macros, the configs generate refuses, the launch grid (whole pairs), and the kernels NVRTC builds
// for sm_90a. No GPU: their results are the GPU tests' run with the knob set (bench/RESULTS.md session 58).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "codegen/codegen.h"
#include "codegen/config_table.h"
#include "codegen/tma_desc.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

using test::KnobUnset;

KernelConfig cooperative(int bn, int stages) { return KernelConfig{"sm90_wgmma", 128, bn, 64, stages, 384}; }

KernelConfig pairs(int bn, int stages) {
  KernelConfig c = cooperative(bn, stages);
  c.cluster_m = 2;
  return c;
}

// The knob changes the heuristic's cooperative tiles without the overlap, and nothing else; unset or "0",
// nothing; another value is an error naming it.
TEST(ClusterPairs, TheKnobPairsCooperativeTilesOnly) {
  if (!test::hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  const KnobUnset unset("FXFUSE_SM90_CLUSTER_PAIRS");
  const KnobUnset overlap("FXFUSE_SM90_LAST_EPILOGUE_SHARED");
  const spec::ChainSpec gelu = test::biasGeluTanh();
  const auto plan = [&](long long m, long long n, long long k) {
    return describeConfig(chooseConfigForSize(gelu, m, n, k, 1, 90));
  };
  const std::string plain_1024 = plan(1024, 4096, 4096), plain_4096 = plan(4096, 4096, 4096);
  const std::string plain_pp = plan(8192, 1024, 2048), plain_sk = plan(64, 4096, 14336);
  EXPECT_EQ(plain_1024, "sm90_wgmma 128x256x64 s4 t384");
  ::setenv("FXFUSE_SM90_CLUSTER_PAIRS", "0", 1);
  EXPECT_EQ(plan(1024, 4096, 4096), plain_1024);
  ::setenv("FXFUSE_SM90_CLUSTER_PAIRS", "1", 1);
  EXPECT_EQ(plan(1024, 4096, 4096), plain_1024 + " clusterm2");
  EXPECT_EQ(plan(4096, 4096, 4096), plain_4096);  // the overlapped epilogue: not paired
  EXPECT_NE(plain_4096.find("epioverlap"), std::string::npos);
  EXPECT_EQ(plan(8192, 1024, 2048), plain_pp);  // ping-pong
  EXPECT_NE(plain_pp.find("pingpong"), std::string::npos);
  EXPECT_EQ(plan(64, 4096, 14336), plain_sk);  // split-K
  EXPECT_NE(plain_sk.find("splitk"), std::string::npos);
  ::setenv("FXFUSE_SM90_CLUSTER_PAIRS", "2", 1);
  EXPECT_THROW(plan(1024, 4096, 4096), CodegenError);
}

// A pair is its own kernel (name and cache key come from describeConfig) with FX_CLUSTER_M 2 compiled in, the
// same shared memory (each CTA holds the whole B tile, half of it loaded by its peer); generate refuses pairs
// with ping-pong, the overlapped epilogue, split-K or another size.
TEST(ClusterPairs, EachPairIsItsOwnKernelAndGenerateRefusesTheRest) {
  if (!test::hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  const spec::ChainSpec gelu = test::biasGeluTanh();
  const KernelSource one = generate(gelu, cooperative(128, 6)), two = generate(gelu, pairs(128, 6));
  EXPECT_NE(one.name, two.name);
  EXPECT_NE(one.code.find("#define FX_CLUSTER_M 1\n"), std::string::npos);
  EXPECT_NE(two.code.find("#define FX_CLUSTER_M 2\n"), std::string::npos);
  EXPECT_EQ(one.smem_bytes, two.smem_bytes);
  KernelConfig bad = pairs(128, 6);
  bad.pingpong = true;
  EXPECT_THROW(generate(gelu, bad), CodegenError);
  bad = pairs(128, 6);
  bad.epilogue_overlap = true;
  EXPECT_THROW(generate(gelu, bad), CodegenError);
  bad = pairs(128, 6);
  bad.split_k = 2;
  EXPECT_THROW(generate(gelu, bad), CodegenError);
  bad = pairs(128, 6);
  bad.cluster_m = 4;
  EXPECT_THROW(generate(gelu, bad), CodegenError);
  bad = KernelConfig{"sm80_mma", 128, 128, 32, 2, 256};
  bad.cluster_m = 2;
  EXPECT_THROW(generate(gelu, bad), CodegenError);
}

// The persistent grid is whole pairs, at most one CTA per SM, and no more pairs than pair tiles (two
// vertically adjacent tiles; an odd row-tile count leaves the last pair's second tile past M).
TEST(ClusterPairs, GridIsWholePairs) {
  if (!test::hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  const KernelSource two = generate(test::loadSpec("bare_bf16_mm"), pairs(128, 6));
  ProblemShape s;
  s.M = 512;
  s.N = 4096;
  s.K = 4096;
  EXPECT_EQ(launchDims(two, s, 132).grid[0], 128u);  // 4 x 32 tiles: 64 pairs
  EXPECT_EQ(launchDims(two, s, 132).cluster[0], 1u);  // compiled in: a plain launch
  s.M = 2048;  // 16 x 32 tiles: 256 pairs on 66
  EXPECT_EQ(launchDims(two, s, 132).grid[0], 132u);
  EXPECT_EQ(launchDims(two, s, 131).grid[0], 130u);
  s.M = 384;  // 3 row tiles: 2 pairs a column, the second one's second tile past M
  s.N = 256;
  EXPECT_EQ(launchDims(two, s, 132).grid[0], 8u);
}

// Both cooperative tiles build for sm_90a as pairs, with the registers the setmaxnreg budget assumes.
TEST(ClusterPairs, CompileForSm90a) {
  if (!test::hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  REQUIRE_NVRTC();
  for (const KernelConfig& c : {pairs(128, 6), pairs(256, 4)}) {
    const Cubin out = test::compileForStatistics(generate(test::biasGeluTanh(), c), "sm_90a");
    EXPECT_EQ(out.log.find("warning"), std::string::npos) << describeConfig(c) << "\n" << out.log;
    EXPECT_EQ(test::registersUsed(out.log), 168) << describeConfig(c) << "\n" << out.log;
    EXPECT_TRUE(sm90::setmaxnregSafe(sm90ConfigOf(c), test::registersUsed(out.log))) << describeConfig(c);
    EXPECT_LE(test::maxSpillBytes(out.log), 8) << describeConfig(c) << "\n" << out.log;
  }
}

}  // namespace
}  // namespace fxfuse::codegen
