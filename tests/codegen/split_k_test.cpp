// Split-K for the Hopper kernel (FX_SPLIT_K, kernels/sm90_wgmma_gemm.cuh): the autotune measures
// the split-K tiles exactly where the 64x128 tiles are too few to fill the SMs; each KS is its own
// kernel (name, cache key, macros); the launch grid is a whole number of clusters; the heuristic's
// rule (sm90::splitKForFewTiles) and the chains it fuses. That every split-K tile builds for
// sm_90a without spills: CandidateConfigs.EveryHopperTileCompiles.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/config_table.h"
#include "codegen/embedded_sources.h"
#include "codegen/hopper_tile_choice.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

using test::biasGeluTanh;
using test::hopperBuiltIn;
using test::loadSpec;

KernelConfig splitK(int ks) {
  KernelConfig c{"sm90_wgmma", 64, 128, 64, 7, 256};
  c.split_k = ks;
  return c;
}

std::vector<std::string> splitKCandidates(const spec::ChainSpec& spec, long long M, long long N, long long K,
                                          long long B) {
  std::vector<std::string> out;
  for (const KernelConfig& c : candidateConfigsForSize(spec, M, N, K, B, 90))
    if (c.split_k != 1) out.push_back(describeConfig(c));
  return out;
}

// The split-K cluster size the heuristic takes for a bare bf16 mm; 0: not the Hopper kernel.
int ks(long long m, long long n, long long k, long long b) {
  const KernelConfig c = chooseConfigForSize(loadSpec("bare_bf16_mm"), m, n, k, b, 90);
  return c.variant == "sm90_wgmma" ? c.split_k : 0;
}

TEST(SplitK, CandidatesExactlyWhereTilesAreFew) {
  if (!hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  const std::vector<std::string> both = {"sm90_wgmma 64x128x64 s7 t256 splitk2", "sm90_wgmma 64x128x64 s7 t256 splitk4"};
  for (const spec::ChainSpec& spec : {biasGeluTanh(), loadSpec("bare_bf16_mm")}) {
    // M = 64, K = 14336, N = 4096: 32 tiles of 64x128
    EXPECT_EQ(splitKCandidates(spec, 64, 4096, 14336, 1), both);
    EXPECT_EQ(splitKCandidates(spec, 100, 4096, 4160, 1), both);       // 2 x 32 tiles, K not a multiple of 4 x 64
    EXPECT_EQ(splitKCandidates(spec, 64, 99 * 128, 4096, 1), both);    // 99 tiles
    EXPECT_TRUE(splitKCandidates(spec, 64, 100 * 128, 4096, 1).empty());  // 100: whole tiles fill the SMs
    EXPECT_TRUE(splitKCandidates(spec, 64, 14336, 4096, 1).empty());      // 112 tiles
    EXPECT_TRUE(splitKCandidates(spec, 64, 4096, 14336, 4).empty());      // a batch of 4: 128 tiles
    EXPECT_EQ(splitKCandidates(spec, 64, 4096, 14336, 3), both);          // 96 tiles
    EXPECT_TRUE(splitKCandidates(spec, 4096, 4096, 4096, 1).empty());
    // where the Hopper kernel does not apply at all, no split-K either (fewer than 48 rows: gemv
    // or the generic kernel; no sm_90)
    EXPECT_TRUE(splitKCandidates(spec, 47, 4096, 14336, 1).empty());
    EXPECT_EQ(candidateConfigsForSize(spec, 64, 4096, 14336, 1, 80).size(), 1u);
  }
}

TEST(SplitK, HeuristicTakesItForOneLongRowTile) {
  // KS = 2 for one matrix of 48-64 rows at K >= 8192 whose column tiles, doubled, fit in the SMs
  // (bench/RESULTS.md Run AC, call 6, Runs AD and AE: measured at M = 64, K = 14336, N = 4096).
  // Two row tiles there (65-128 rows) take no Hopper kernel: cuBLAS + the epilogue kernel was
  // faster (Run AE; codegen unfusedPathFaster).
  if (!hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  EXPECT_EQ(ks(64, 4096, 14336, 1), 2);
  EXPECT_EQ(ks(48, 4096, 14336, 1), 2);
  EXPECT_EQ(ks(64, 4096, 8192, 1), 2);
  EXPECT_EQ(ks(64, 66 * 128, 14336, 1), 2);   // 66 tiles: 132 CTAs
  EXPECT_EQ(ks(64, 67 * 128, 14336, 1), 0);   // 134 CTAs would not fit in one round
  EXPECT_EQ(ks(64, 4096, 8128, 1), 0);        // K below 8192
  EXPECT_EQ(ks(64, 31 * 128, 14336, 1), 0);   // 31 tiles: fewer than split-K needs (Run AF)
  EXPECT_EQ(ks(64, 128, 14336, 1), 0);        // one tile: two CTAs on the whole GPU
  EXPECT_EQ(ks(47, 4096, 14336, 1), 0);       // fewer than three quarters of the rows real
  EXPECT_EQ(ks(65, 4096, 14336, 1), 0);       // two row tiles, under three quarters real
  EXPECT_EQ(ks(95, 4096, 14336, 1), 0);
  EXPECT_EQ(ks(96, 4096, 14336, 1), 0);       // two row tiles: the unfused path (Run AE)
  EXPECT_EQ(ks(128, 4096, 14336, 1), 0);      // ... also at 128 rows (64x128 without split-K lost too)
  EXPECT_EQ(ks(128, 47 * 128, 14336, 1), 0);  // 94 tiles of 64x128: still too few
  EXPECT_EQ(ks(128, 48 * 128, 14336, 1), 1);  // 96 tiles of a decode batch fill the SMs (Run AL)
  EXPECT_EQ(ks(192, 4096, 14336, 1), 1);      // 96, measured: 5-10 % ahead of the unfused path
  EXPECT_EQ(ks(64, 96 * 128, 14336, 1), 0);   // one row tile of 96: refused at K >= 8192 (Runs AE, AK)
  EXPECT_EQ(ks(128, 4096, 4096, 1), 1);       // K = 4096: the 64x128 tile as before (not measured against the path)
  EXPECT_EQ(ks(128, 4096, 8192, 1), 0);       // the K bound: 8192 refused, 8184 not
  EXPECT_EQ(ks(128, 4096, 8184, 1), 1);
  EXPECT_EQ(ks(129, 4096, 14336, 1), 0);      // three row tiles, 96 of 64x128: one round along K, as at 64
  EXPECT_EQ(ks(192, 2048, 14336, 1), 0);      // 48 tiles
  EXPECT_EQ(ks(200, 4096, 14336, 1), 1);      // 128 tiles fill the SMs
  EXPECT_EQ(ks(64, 4096, 14336, 2), 0);       // a batch: unmeasured
  EXPECT_EQ(ks(128, 14336, 4096, 1), 1);      // the decode batch's 64x128 tiles fill the SMs
  EXPECT_EQ(ks(4096, 4096, 4096, 1), 1);
  // the measured chains fuse there although K > 4096 (GELU(tanh), SiLU, the residual behind GELU)
  const char* head = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n";
  for (const char* tail : {"%3 = silu %2 : bf16\noutput %3\n", "%3 = gelu_tanh %2 : bf16\noutput %3\n",
                           "%3 = gelu_tanh %2 : bf16\n%4 = input 2 bf16 [m,n]\n%5 = add %3 %4 : bf16\noutput %5\n"}) {
    const spec::ChainSpec chain = spec::parseSpec(std::string(head) + tail);
    EXPECT_EQ(chooseConfigForSize(chain, 64, 4096, 14336, 1, 90).split_k, 2) << tail;
    EXPECT_NE(chooseConfigForSize(chain, 128, 4096, 14336, 1, 90).variant, "sm90_wgmma") << tail;
    EXPECT_NE(chooseConfigForSize(chain, 100, 4096, 14336, 1, 90).variant, "sm90_wgmma") << tail;
  }
  const spec::ChainSpec relu_cast =
      spec::parseSpec(std::string(head) + "%3 = relu %2 : f32\n%4 = convert %3 : f16\noutput %4\n");
  for (const long long m : {100LL, 128LL}) {
    EXPECT_NE(chooseConfigForSize(relu_cast, m, 4096, 14336, 1, 90).variant, "sm90_wgmma") << m;
    EXPECT_NE(hopperRefusalForSize(relu_cast, m, 4096, 14336, 1, 90).find(m < 128 ? "M < 128" : "64 tiles of 64x128, too few to fill the SMs at K >= 8192"),
              std::string::npos)
        << m;
  }
  // against torch.compile split-K was measured at one row tile only
  for (const long long m : {64LL, 128LL}) {
    const KernelConfig c = chooseConfigForSize(relu_cast, m, 4096, 14336, 1, 90);
    EXPECT_EQ(beatsBaseline(relu_cast, c, m, 4096, 14336, 1, Baseline::Inductor), m == 64) << m;
  }
  // a residual alone was not measured with split-K (nor below 512 rows without it)
  const spec::ChainSpec residual = spec::parseSpec(std::string(head) + "%3 = input 2 bf16 [m,n]\n%4 = add %2 %3 : bf16\noutput %4\n");
  EXPECT_NE(chooseConfigForSize(residual, 64, 4096, 14336, 1, 90).variant, "sm90_wgmma");
}

TEST(SplitK, HeuristicTakesItForANarrowNOverManyRows) {
  // KS = 2 where N is 128 or 256 and 32-66 tiles of 64x128 at K >= 4096 (bench/RESULTS.md Run AF:
  // 1024-2048 x 256 and 4096 x 128 at K = 4096, 2048 x 256 at K = 14336, faster than 64x128
  // ping-pong and than cuBLAS + the epilogue kernel), and N = 64 at 64-66 tiles (Run AH).
  if (!hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  EXPECT_EQ(ks(1024, 256, 4096, 1), 2);   // 32 tiles
  EXPECT_EQ(ks(2048, 256, 4096, 1), 2);   // 64
  EXPECT_EQ(ks(4096, 128, 4096, 1), 2);   // 64
  EXPECT_EQ(ks(4224, 128, 4096, 1), 2);   // 66: 132 CTAs
  EXPECT_EQ(ks(4288, 128, 4096, 1), 1);   // 67: would take two rounds
  EXPECT_EQ(ks(4096, 256, 4096, 1), 1);   // 128 tiles
  EXPECT_EQ(ks(2048, 256, 8192, 1), 2);
  EXPECT_EQ(ks(2048, 256, 14336, 1), 2);  // measured too (two row tiles of N = 4096 there: no split-K)
  EXPECT_EQ(ks(2048, 256, 4088, 1), 1);   // K under 4096: not measured, the 64x128 tile
  EXPECT_EQ(ks(2048, 384, 4096, 1), 1);   // N over 256 (three column tiles): not measured
  EXPECT_EQ(ks(2048, 264, 4096, 1), 0);   // a partial third column tile: no Hopper kernel (Run AG)
  EXPECT_EQ(ks(2048, 192, 4096, 1), 0);   // a partial column tile: no split-K, and no Hopper kernel (Run AF)
  EXPECT_EQ(ks(960, 256, 4096, 1), 0);    // 30 tiles: too few for any Hopper kernel (Run AF)
  EXPECT_EQ(ks(1024, 256, 4096, 2), 1);   // a batch: unmeasured
  // N = 64 from 64 tiles (Run AH: 4096 x 64 at K = 4096); fewer were not measured
  EXPECT_EQ(ks(4096, 64, 4096, 1), 2);    // 64 tiles
  EXPECT_EQ(ks(4224, 64, 4096, 1), 2);    // 66
  EXPECT_EQ(ks(4032, 64, 4096, 1), 0);    // 63: no split-K, and no Hopper kernel under 128 tiles at N < 128
  EXPECT_EQ(ks(4096, 64, 2048, 1), 0);    // K under 4096
  EXPECT_EQ(ks(4096, 64, 8192, 1), 0);    // or over: not measured at N = 64
  EXPECT_EQ(ks(8128, 64, 4096, 1), 0);    // 127 tiles: the doubled grid would not fit one round
  // at K >= 8192 without split-K, too few tiles for the Hopper kernel at any M (Run AE's rule)
  EXPECT_EQ(ks(3072, 256, 14336, 1), 0);  // 96 tiles: split-K's doubled grid would not fit
  EXPECT_EQ(ks(512, 1024, 8192, 1), 0);   // 64 tiles, N over 256
  EXPECT_EQ(ks(512, 1024, 8184, 1), 1);
  // GELU(tanh) and SiLU there at any K (measured at 4096, 8192 and 14336); a residual alone was not
  // measured with split-K
  const char* head = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n";
  for (const char* tail : {"%3 = silu %2 : bf16\noutput %3\n", "%3 = gelu_tanh %2 : bf16\noutput %3\n"}) {
    const spec::ChainSpec chain = spec::parseSpec(std::string(head) + tail);
    for (const long long k : {4096LL, 6144LL, 14336LL})
      EXPECT_EQ(chooseConfigForSize(chain, 2048, 256, k, 1, 90).split_k, 2) << tail << k;
  }
  const spec::ChainSpec residual =
      spec::parseSpec(std::string(head) + "%3 = input 2 bf16 [m,n]\n%4 = add %2 %3 : bf16\noutput %4\n");
  EXPECT_NE(hopperRefusalForSize(residual, 2048, 256, 4096, 1, 90).find("residual without GELU(tanh) was not measured with split-K"),
            std::string::npos);
}

TEST(SplitK, EachClusterSizeIsItsOwnKernel) {
  if (!hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  KernelConfig plain = splitK(1);
  EXPECT_EQ(describeConfig(plain), "sm90_wgmma 64x128x64 s7 t256");
  EXPECT_NE(describeConfig(splitK(2)), describeConfig(plain));
  EXPECT_NE(describeConfig(splitK(2)), describeConfig(splitK(4)));
  const spec::ChainSpec spec = biasGeluTanh();
  const KernelSource a = generate(spec, splitK(2)), b = generate(spec, splitK(4)), c = generate(spec, plain);
  EXPECT_NE(a.name, b.name);  // the kernel's name and the loader's cache key both come from describeConfig
  EXPECT_NE(a.name, c.name);
  EXPECT_NE(a.code.find("#define FX_SPLIT_K 2\n"), std::string::npos);
  EXPECT_NE(b.code.find("#define FX_SPLIT_K 4\n"), std::string::npos);
  EXPECT_NE(c.code.find("#define FX_SPLIT_K 1\n"), std::string::npos);
  EXPECT_NE(a.code.find("#define FX_CONSUMERS 1\n"), std::string::npos);
  // the partial buffer (64 x 128 f32) on top of the plain layout, within 227 KB with 7 stages
  EXPECT_EQ(a.smem_bytes, c.smem_bytes + 64 * 128 * 4);
  EXPECT_EQ(a.smem_bytes, 7u * 24576 + 9216 + 32768 + 1024);
  const sm90::GemmConfig g = sm90ConfigOf(splitK(4));
  EXPECT_EQ(g.split_k, 4);
  EXPECT_EQ(g.consumers, 1);
  EXPECT_LE(g.dynSmemBytes() + g.staticSmemBytes(), 227 * 1024);
  // one consumer: entry 128 registers (launch bounds of 2 CTAs per SM), 88 of the producer's
  // moved to the consumer (216); the runtime's hang guard refuses a kernel allocated fewer
  EXPECT_EQ(sm90::entryRegs(g), 128);
  EXPECT_TRUE(sm90::setmaxnregSafe(g, 128));
  EXPECT_FALSE(sm90::setmaxnregSafe(g, 120));
  sm90::GemmConfig eight = g;
  eight.stages = 8;
  EXPECT_GT(eight.dynSmemBytes() + eight.staticSmemBytes(), 227 * 1024);  // why 7
}

TEST(SplitK, TensorMapsRefuseSplitKWithPingPongOrClusterPairs) {
  sm90::GemmProblem pr;
  alignas(16) static char a[16], b[16];
  pr.M = 64;
  pr.N = 4096;
  pr.K = 14336;
  pr.a_ptr = a;
  pr.b_ptr = b;
  pr.a_sm = pr.K;
  pr.b_sk = pr.N;
  sm90::TensorMapDesc maps[2];
  std::string why;
  EXPECT_TRUE(sm90::describeTensorMaps(pr, sm90::splitKConfig(4), maps, &why)) << why;
  EXPECT_TRUE(sm90::describeTensorMaps(pr, sm90::splitKConfig(2), maps, &why)) << why;
  sm90::GemmConfig bad = sm90::splitKConfig(4);
  bad.split_k = 3;
  EXPECT_FALSE(sm90::describeTensorMaps(pr, bad, maps, &why));
  bad = sm90::splitKConfig(2);
  bad.pingpong = true;
  bad.consumers = 2;
  EXPECT_FALSE(sm90::describeTensorMaps(pr, bad, maps, &why));
  bad = sm90::splitKConfig(2);  // ping-pong alone
  bad.pingpong = true;
  EXPECT_FALSE(sm90::describeTensorMaps(pr, bad, maps, &why));
  bad = sm90::splitKConfig(2);  // two cooperative consumers (128-row tile)
  bad.bm = 128;
  bad.consumers = 2;
  EXPECT_FALSE(sm90::describeTensorMaps(pr, bad, maps, &why));
  bad = sm90::splitKConfig(2);  // a cluster along M as well
  bad.cluster_m = 2;
  EXPECT_FALSE(sm90::describeTensorMaps(pr, bad, maps, &why));
  bad = sm90::splitKConfig(2);
  bad.stages = 8;
  EXPECT_FALSE(sm90::describeTensorMaps(pr, bad, maps, &why));
}

TEST(SplitK, GridIsWholeClustersOnePerTile) {
  if (!hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  const spec::ChainSpec spec = loadSpec("bare_bf16_mm");
  ProblemShape s;
  s.M = 64;
  s.N = 4096;
  s.K = 14336;
  const KernelSource two = generate(spec, splitK(2)), four = generate(spec, splitK(4));
  EXPECT_EQ(four.grid, GridPolicy::Persistent);
  EXPECT_EQ(launchDims(four, s, 132).grid[0], 128u);  // 32 tiles x 4
  EXPECT_EQ(launchDims(two, s, 132).grid[0], 64u);
  EXPECT_EQ(launchDims(four, s, 132).block, 256u);
  // the cluster is compiled in (__cluster_dims__): a plain launch, no cluster attribute
  EXPECT_EQ(launchDims(four, s, 132).cluster[0], 1u);
  s.N = 40 * 128;  // 40 tiles: 33 clusters of 4 on 132 SMs, persistent
  EXPECT_EQ(launchDims(four, s, 132).grid[0], 132u);
  EXPECT_EQ(launchDims(four, s, 114).grid[0], 112u);  // a multiple of 4 below 114 SMs
  EXPECT_EQ(launchDims(two, s, 131).grid[0], 80u);
  s.M = 1;
  s.N = 256;  // 2 tiles
  EXPECT_EQ(launchDims(four, s, 132).grid[0], 8u);
}

TEST(PersistentGrid, OneCtaPerSmAndNoMoreThanTiles) {
  if (!hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  const spec::ChainSpec spec = loadSpec("bare_bf16_mm");
  const KernelSource one = generate(spec, splitK(1));
  const sm90::GemmConfig g = sm90ConfigOf(one.config);
  ProblemShape s;
  s.M = 4096;
  s.N = 4096;
  s.K = 4096;  // hundreds of tiles: one CTA per SM
  EXPECT_EQ(launchDims(one, s, 132).grid[0], 132u);
  EXPECT_EQ(launchDims(one, s, 114).grid[0], 114u);
  s.M = g.bm;
  s.N = 3 * g.bn;  // three tiles: three CTAs, not 132 of which 129 would only allocate and leave
  EXPECT_EQ(launchDims(one, s, 132).grid[0], 3u);
  s.B = 5;  // the batch's tiles count too
  EXPECT_EQ(launchDims(one, s, 132).grid[0], 15u);
  s.N = 3 * g.bn - 1;  // a partial tile is a tile
  EXPECT_EQ(launchDims(one, s, 132).grid[0], 15u);
}

}  // namespace
}  // namespace fxfuse::codegen
