// The small-M "gemv" variant from codegen's side: when chooseConfig picks it, its config
// macros, the FX_B_QUANT_SCALE hook, launch geometry (kernels/gemv.cuh, "Launch geometry"),
// and NVRTC compiles of every spec that selects it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/config_table.h"
#include "codegen/embedded_sources.h"
#include "codegen/hooks.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

using test::loadSpec;

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

bool gemvBuiltIn() { return embeddedFile("kernels/gemv.cuh") != nullptr; }
// Packed int4 with a zero point tensor takes the gemv, the rule since session 65 (FXFUSE_GEMV_ZERO_TENSOR=0 turns it
// off: codegen.GemvZeroTensorKnob.Off)
bool zeroTensorKnobOn() {
  const char* v = std::getenv("FXFUSE_GEMV_ZERO_TENSOR");
  return !v || std::string(v) != "0";
}
// A measurement knob that replaces a rule the launch and product tests check is set in this process.
bool gemvRuleKnobSet() {
  for (const char* knob : {"FXFUSE_GEMV_WGMMA", "FXFUSE_GEMV_NT", "FXFUSE_GEMV_KT", "FXFUSE_GEMV_STAGE_KB", "FXFUSE_GEMV_SPLIT_K"})
    if (std::getenv(knob)) return true;
  return false;
}

// What the runtime passes: layouts from the spec (setLayoutFromSpec), aligned operands.
ProblemShape shapeFor(const spec::ChainSpec& s, long long M, long long N = 4096, long long K = 4096) {
  ProblemShape p;
  p.M = M;
  p.N = N;
  p.K = K;
  p.a_kmajor = analyzeA(s).kmajor;
  p.b_kmajor = analyzeB(s).kmajor;
  return p;
}

std::string variant(const std::string& spec, long long M, int arch) {
  spec::ChainSpec s = loadSpec(spec);
  return chooseConfig(s, shapeFor(s, M), arch).variant;
}

// ---- selection ---------------------------------------------------------------------------

std::string variantAt(const std::string& spec, long long M, long long N, long long K, int arch = 90) {
  spec::ChainSpec s = loadSpec(spec);
  return chooseConfig(s, shapeFor(s, M, N, K), arch).variant;
}

TEST(Gemv, DenseSixteenBitUpToM16OnHopper) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  for (const char* spec : {"gemv_bf16_kn_bias_gelu", "gemv_bf16_nk_bias_gelu", "bf16_linear3d_bias_gelu",
                           "bare_bf16_mm", "f16_residual_silu_two_outputs"}) {
    SCOPED_TRACE(spec);
    for (long long m : {1, 4, 8, 9, 16}) EXPECT_EQ(variant(spec, m, 90), "gemv") << "M=" << m;
    // From 33 rows (a 64-row tile) gemv ran 14-27 % behind the unfused chain (bench/RESULTS.md Run BA).
    for (long long m : {33, 64}) EXPECT_EQ(variant(spec, m, 90), "sm80_mma") << "M=" << m;
    // sm_80: no cluster split-K, 2-4x slower than cuBLAS.
    EXPECT_EQ(variant(spec, 1, 80), "sm80_mma");
    EXPECT_EQ(variant(spec, 1, 100), "gemv");
  }
}

// M = 17-32 (config_table.cpp gemvDenseMidRowsAhead): only with a 16-bit product (where eager runs
// the epilogue as its own kernels; the rule keys on the product's dtype, so a bare mm or a residual
// + SiLU chain stands for the measured bias chains here), K x N weights, K = 4096-8192, one matrix,
// and a grid (column tiles x split-K, one CTA per SM for 16-bit weights) over at least 4/5 of 132 SMs
// with split-K 4 or 1. Grids worked out by hand: 16 column tiles x S = 8 at N = 2048; 32 x 4 at
// N = 4096; S = 2 at N = 6144 (48 x 2) and 8192 (64 x 2); S = 1 from N = 8456 (67 tiles: 112 at
// 14336, 108 at 13824, 224 at 28672; 86 at 11008 and 96 at 12288 too few).
TEST(Gemv, DenseSixteenBitMidRowsWhereMeasuredAhead) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  struct Case {
    long long M, K, N;
    bool gemv;
  };
  const Case cases[] = {
      {17, 4096, 4096, true},   {32, 4096, 4096, true},   {24, 4096, 14336, true}, {32, 8192, 4096, true},
      {24, 8192, 8192, false},  {24, 5120, 13824, true},  {20, 4096, 28672, true}, {24, 4096, 11008, false},
      {32, 4096, 8192, false},  {24, 6144, 4096, true},   {32, 8192, 14336, true},
      {24, 4096, 12288, false}, {24, 6144, 6144, false},  {24, 14336, 4096, false}, {24, 2048, 8192, false},
      {24, 8200, 4096, false},  {33, 4096, 4096, false},  {24, 4096, 2048, false}, {24, 8192, 1024, false},
  };
  for (const char* spec : {"bare_bf16_mm", "f16_residual_silu_two_outputs"}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} M={} K={} N={}", spec, c.M, c.K, c.N));
      EXPECT_EQ(variantAt(spec, c.M, c.N, c.K), c.gemv ? "gemv" : "sm80_mma");
      EXPECT_EQ(variantAt(spec, c.M, c.N, c.K, 80), "sm80_mma");
    }
  }
  // Batched (B = 2 at a shape whose single matrix takes the gemv): unmeasured, not taken.
  for (const char* spec : {"bare_bf16_mm", "f16_residual_silu_two_outputs"}) {
    spec::ChainSpec sp = loadSpec(spec);
    ProblemShape p = shapeFor(sp, 24, 14336, 4096);
    p.B = 2;
    EXPECT_EQ(chooseConfig(sp, p, 90).variant, "sm80_mma") << spec;
  }
  // The addmm / F.linear form (f32 product): eager adds the bias inside cuBLAS, where the gemv
  // alone runs 3-16 % behind cuBLAS mm (reasoned from that, not measured in this form).
  for (const char* spec : {"gemv_bf16_kn_bias_gelu", "gemv_bf16_nk_bias_gelu"})
    for (long long m : {17, 24, 32}) EXPECT_EQ(variantAt(spec, m, 4096, 4096), "sm80_mma") << spec << " M=" << m;
  // N x K weights with a 16-bit product (`x @ w.t()`): 8-23 % behind at these rows (Run BA call 7),
  // not taken; up to 16 rows the gemv takes them.
  const spec::ChainSpec nk = spec::parseSpec(
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [n,k]\n%2 = mm %0 %1 : bf16\n"
      "%3 = gelu_tanh %2 : bf16\noutput %3\n");
  EXPECT_EQ(chooseConfig(nk, shapeFor(nk, 16, 4096, 4096), 90).variant, "gemv");
  for (long long m : {17, 24, 32}) EXPECT_EQ(chooseConfig(nk, shapeFor(nk, m, 4096, 4096), 90).variant, "sm80_mma") << "M=" << m;
}

TEST(Gemv, QuantizedWithScaleUpToM64FromSm80) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  for (const char* spec : {"gemv_int8_linear_channel_scale_bias", "gemv_fp8_e4m3_scalar_f32_scale",
                           "doc_example_int8_gelu", "fp8_e4m3_per_tensor_scale"}) {
    SCOPED_TRACE(spec);
    for (int arch : {80, 86, 89, 90}) {
      for (long long m : {1, 16, 17, 33, 64}) EXPECT_EQ(variant(spec, m, arch), "gemv") << "M=" << m << " sm_" << arch;
      EXPECT_EQ(variant(spec, 65, arch), "sm80_mma");
    }
    EXPECT_EQ(variant(spec, 1, 75), "sm80_mma");
  }
}

TEST(Gemv, NotChosen) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  // Quantized prologues without the scale hook (zero point, f16 raw weight): element-wise path.
  EXPECT_EQ(variant("u8_zero_point_dequant", 1, 90), "sm80_mma");
  EXPECT_EQ(variant("f16_weight_to_bf16_group_scale", 1, 90), "sm80_mma");
  // A prologue on A, A stored [k,m], fp32 operands.
  EXPECT_EQ(variant("a_prologue_row_scale", 1, 90), "sm80_mma");
  EXPECT_EQ(variant("transposed_a_col_bias_i8_input", 1, 90), "sm80_mma");
  EXPECT_EQ(variant("f32_addmm_relu", 1, 90), "simt");

  spec::ChainSpec bf16 = loadSpec("gemv_bf16_nk_bias_gelu"), i8 = loadSpec("gemv_int8_linear_channel_scale_bias");
  for (const spec::ChainSpec* s : {&bf16, &i8}) {
    ProblemShape p = shapeFor(*s, 1);
    ASSERT_EQ(chooseConfig(*s, p, 90).variant, "gemv");
    ProblemShape q = p;
    q.align_bytes_b = 8;  // e.g. an int8 [K,N] weight with N % 16 != 0
    EXPECT_EQ(chooseConfig(*s, q, 90).variant, "sm80_mma");
    q = p;
    q.align_bytes_a = 4;
    EXPECT_EQ(chooseConfig(*s, q, 90).variant, "sm80_mma");
    q = p;
    q.N = 4100;
    EXPECT_EQ(chooseConfig(*s, q, 90).variant, "sm80_mma");
    q = p;
    q.b_kmajor = !q.b_kmajor;  // runtime layout differs from the one compiled in
    EXPECT_EQ(chooseConfig(*s, q, 90).variant, "sm80_mma");
    q = p;
    q.B = 70000;  // grid.z limit
    EXPECT_EQ(chooseConfig(*s, q, 90).variant, "sm80_mma");
  }
}

TEST(Gemv, ConfigFollowsTheHeaderChooser) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  spec::ChainSpec bf16 = loadSpec("gemv_bf16_kn_bias_gelu"), i8 = loadSpec("gemv_int8_linear_channel_scale_bias");
  struct Want {
    const spec::ChainSpec* s;
    long long m, n;
    int arch, bm, bk, stages, max_cluster;
  };
  // stages = clamp(pipeline / (16 KB + bm * bk * 2), 2, 6), bk = 128 / bytes of the streamed
  // weight; the pipeline ~100 KB (two CTAs per SM; 96 KB on sm_86 / sm_89, whose blocks may opt in
  // to 99 KB: five 20 KB stages would not load), for 8-bit weights on sm_90 ~56 KB (four) at M <= 8
  // and ~75 KB (three) where split-K reaches 4 (N = 4096), two stages (four) at M = 17-32 where
  // three would not reach S = 4 (N = 14336).
  for (const Want& w : {Want{&bf16, 1, 4096, 90, 8, 64, 5, 8}, Want{&bf16, 16, 4096, 90, 16, 64, 5, 8},
                        Want{&i8, 1, 4096, 80, 8, 128, 5, 1}, Want{&i8, 1, 4096, 90, 8, 128, 3, 8},
                        Want{&i8, 16, 4096, 86, 16, 128, 4, 1}, Want{&i8, 16, 4096, 89, 16, 128, 4, 1},
                        Want{&i8, 16, 4096, 80, 16, 128, 5, 1},
                        Want{&i8, 1, 14336, 90, 8, 128, 3, 8}, Want{&i8, 16, 4096, 90, 16, 128, 3, 8},
                        Want{&i8, 16, 14336, 90, 16, 128, 5, 8}, Want{&i8, 17, 4096, 90, 32, 128, 3, 8},
                        Want{&i8, 17, 14336, 90, 32, 128, 2, 8}, Want{&i8, 64, 4096, 90, 64, 128, 2, 8},
                        Want{&i8, 64, 14336, 90, 64, 128, 3, 8}}) {
    KernelConfig c = chooseConfig(*w.s, shapeFor(*w.s, w.m, w.n), w.arch);
    SCOPED_TRACE("M=" + std::to_string(w.m) + " N=" + std::to_string(w.n) + " sm_" + std::to_string(w.arch));
    EXPECT_EQ(c.variant, "gemv");
    EXPECT_EQ(c.bm, w.bm);
    EXPECT_EQ(c.bn, 128);
    EXPECT_EQ(c.bk, w.bk);
    EXPECT_EQ(c.stages, w.stages);
    EXPECT_EQ(c.threads, 128);
    EXPECT_EQ(c.max_cluster, w.max_cluster);
    std::string h = generateHooks(*w.s, c);
    EXPECT_TRUE(has(h, "#define FX_GEMV_MTILES " + std::to_string(w.bm / 8) + "\n"));
    EXPECT_TRUE(has(h, "#define FX_GEMV_STAGES " + std::to_string(w.stages) + "\n"));
    EXPECT_FALSE(has(h, "FX_GEMV_SPLITK"));
  }
  // bk must match the weight the template streams.
  KernelConfig wrong = chooseConfig(i8, shapeFor(i8, 1), 90);
  wrong.bk = 64;
  EXPECT_THROW(generate(i8, wrong), CodegenError);
}

TEST(Gemv, FastVariants) {
  EXPECT_TRUE(isFastVariant(KernelConfig{"sm90_wgmma", 128, 256, 64, 4, 384}));
  EXPECT_TRUE(isFastVariant(KernelConfig{"gemv", 8, 128, 64, 5, 128}));
  EXPECT_FALSE(isFastVariant(KernelConfig{"sm80_mma", 64, 128, 32, 2, 128}));
  EXPECT_FALSE(isFastVariant(KernelConfig{"simt", 64, 64, 16, 2, 256}));
  EXPECT_FALSE(isFastVariant(KernelConfig{"tensor_magic", 1, 1, 1, 1, 32}));
  spec::ChainSpec bf16 = loadSpec("gemv_bf16_nk_bias_gelu");
  if (gemvBuiltIn()) EXPECT_TRUE(isFastVariant(chooseConfig(bf16, shapeFor(bf16, 1), 90)));
  EXPECT_FALSE(isFastVariant(chooseConfig(bf16, shapeFor(bf16, 32), 90)));
  EXPECT_FALSE(isFastVariant(chooseConfig(bf16, shapeFor(bf16, 1), 80)));
}

// ---- launch geometry ---------------------------------------------------------------------

// The host-side chooser of kernels/gemv.cuh (codegen/config_table.cpp), written again here.
struct GemvCfg {
  int mtiles, stages, splitk;
  unsigned gx, gy, gz;
  size_t smem;
};
// dense_wgmma: a plain 16-bit K x N weight, which takes the product by wgmma from 17 rows on sm_90
GemvCfg gemv_config(long long B, long long M, long long N, long long K, int wbytes /*1|2*/, bool b_kmajor, int num_sms,
                    bool sm90, bool dense_wgmma = false) {
  GemvCfg c;
  int mt8 = (int)((M + 7) / 8);
  c.mtiles = mt8 <= 1 ? 1 : mt8 <= 2 ? 2 : mt8 <= 4 ? 4 : 8;
  int KT = 128 / wbytes;
  int cols = 128;
  size_t stage = cols * 128 + (size_t)8 * c.mtiles * KT * 2;
  long long nt = (N + cols - 1) / cols, mz = B * ((M + 8 * c.mtiles - 1) / (8 * c.mtiles));
  long long ksteps = (K + KT - 1) / KT;
  // a pipeline for `ctas` CTAs per SM of Hopper's 228 KB (1 KB each reserved), at most 100 KB
  auto stagesFor = [&](long long ctas) {
    long long pipeline = std::min(100LL * 1024, 228LL * 1024 / ctas - 1024);
    return (int)std::clamp(pipeline / (long long)stage, 2LL, 6LL);
  };
  auto splitK = [&](long long per_sm, int stages, int sms) {
    int s = 1;
    if (sm90)
      while (s < 8 && nt * mz * s * 2 <= per_sm * sms && ksteps / (s * 2) >= stages) s *= 2;
    return s;
  };
  // 8-bit weights on sm_90: four CTAs per SM at M <= 8, three where that split reaches 4 (on
  // 132 SMs), else four at M = 17-32 (whose split-K then aims at four) and two otherwise
  int ctas = 2;
  if (sm90 && wbytes == 1) ctas = c.mtiles == 1 ? 4 : splitK(3, stagesFor(3), 132) >= 4 ? 3 : c.mtiles == 4 ? 4 : 2;
  c.stages = stagesFor(ctas);
  const bool wgmma16 = dense_wgmma && sm90 && wbytes == 2 && !b_kmajor && c.mtiles >= 4;
  // 16-bit weights on the product by wgmma: 64 columns a CTA where 128 would split K four ways, at K <= 4096
  if (wgmma16 && K <= 4096 && splitK(1, c.stages, 132) == 4) {
    cols = 64;
    stage = cols * 128 + (size_t)8 * c.mtiles * KT * 2;
    nt = (N + cols - 1) / cols;
    c.stages = stagesFor(ctas);
  }
  size_t red = (size_t)8 * c.mtiles * (cols + 4) * 4;
  c.smem = stage * c.stages > red ? stage * c.stages : red;
  // the product by wgmma (8-bit weights on sm_90: K x N from 17 rows, N x K from 33; 16-bit K x N weights from 17)
  // aligns its stages to 1024 bytes, with 1 KB more
  if (sm90 && ((wbytes == 1 && c.mtiles >= (b_kmajor ? 8 : 4)) || wgmma16)) c.smem += 1024;
  long long fit = std::clamp(228LL * 1024 / ((long long)c.smem + 1024), 1LL, 4LL);
  c.splitk = splitK(wbytes == 2 ? 1 : std::min(fit, c.mtiles == 4 ? 4LL : 3LL), c.stages, num_sms);
  c.gx = nt;
  c.gy = c.splitk;
  c.gz = mz;
  return c;
}

TEST(Gemv, LaunchDimsMatchTheHeaderFormula) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  if (gemvRuleKnobSet()) GTEST_SKIP() << "a measurement knob replaces the rule";
  // (a 16-bit product takes the gemv at 17-32 rows, gemvDenseMidRowsAhead: the product by wgmma)
  spec::ChainSpec bf16 = loadSpec("gemv_bf16_kn_bias_gelu"), i8 = loadSpec("gemv_int8_linear_channel_scale_bias"),
                  bf16p = loadSpec("gemv_bf16_kn_bf16_product_bias");
  int checked = 0, wgmma16 = 0;
  for (const spec::ChainSpec* s : {&bf16, &i8, &bf16p})
    for (int arch : {80, 90})
      for (long long B : {1, 3})
        for (long long M : {1, 5, 16, 24, 32, 40, 64})
          for (long long N : {8, 1000, 4096, 14336})
            for (long long K : {64, 520, 4096, 14336})
              for (int sms : {108, 132}) {
                ProblemShape p = shapeFor(*s, M, N, K);
                p.B = B;
                KernelConfig c = chooseConfig(*s, p, arch);
                if (c.variant != "gemv") continue;
                KernelSource src = generate(*s, c);
                LaunchDims d = launchDims(src, p, sms);
                GemvCfg want = gemv_config(B, M, N, K, analyzeB(*s).quant_scale ? 1 : 2, analyzeB(*s).kmajor, sms,
                                           arch >= 90, s == &bf16p);
                wgmma16 += s == &bf16p && c.wgmma;
                SCOPED_TRACE(fmt::format("sm_{} B={} M={} N={} K={} sms={}", arch, B, M, N, K, sms));
                EXPECT_EQ(c.bm, 8 * want.mtiles);
                EXPECT_EQ(c.stages, want.stages);
                EXPECT_EQ(d.grid[0], want.gx);
                EXPECT_EQ(d.grid[1], want.gy);
                EXPECT_EQ(d.grid[2], want.gz);
                EXPECT_EQ(d.block, 128u);
                EXPECT_EQ(d.cluster[0], 1u);
                EXPECT_EQ(d.cluster[1], unsigned(want.splitk));
                EXPECT_EQ(d.cluster[2], 1u);
                EXPECT_EQ(d.smem_bytes, want.smem);
                EXPECT_EQ(src.smem_bytes, want.smem);
                EXPECT_EQ(src.smem_optin, want.smem > 48 * 1024);
                ++checked;
              }
  EXPECT_GT(checked, 200);
  EXPECT_GT(wgmma16, 0);
}

TEST(Gemv, LaunchDimsOfMeasuredShapes) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  if (gemvRuleKnobSet()) GTEST_SKIP() << "a measurement knob replaces the rule";
  // "mt S st" of bench/gemv/NOTES.md run 3 (H200, 132 SMs), S as the session-5 split-K sweep
  // chose it (bench/RESULTS.md section 6) and, for 8-bit weights, Run AX's pipelines for three
  // CTAs per SM where the split-K reaches 4 and four at M <= 8: bf16 at N = 14336 S = 1, int8 /
  // fp8 at N = 4096 S = 8; Run AY's M = 32 at N = 14336: two stages, S = 4. 8-bit N x K weights at
  // 33-64 rows take the product by wgmma, whose stages start at a 1024-byte boundary (1 KB more).
  struct Case {
    const char* spec;
    long long M, K, N;
    unsigned S;
    size_t smem;
  };
  for (const Case& c : {Case{"gemv_bf16_kn_bias_gelu", 1, 4096, 4096, 4, 5 * 17408},
                        Case{"gemv_bf16_nk_bias_gelu", 16, 4096, 14336, 1, 5 * 18432},
                        Case{"gemv_bf16_kn_bias_gelu", 4, 14336, 4096, 4, 5 * 17408},
                        Case{"gemv_int8_linear_channel_scale_bias", 64, 14336, 4096, 8, 2 * 32768 + 1024},
                        Case{"gemv_int8_linear_channel_scale_bias", 64, 4096, 14336, 2, 3 * 32768 + 1024},
                        Case{"gemv_int8_linear_channel_scale_bias", 16, 4096, 14336, 2, 5 * 20480},
                        Case{"gemv_int8_linear_channel_scale_bias", 32, 4096, 14336, 4, 2 * 24576},
                        Case{"gemv_int8_linear_channel_scale_bias", 16, 14336, 4096, 8, 3 * 20480},
                        Case{"gemv_int8_linear_channel_scale_bias", 1, 4096, 14336, 2, 3 * 18432},
                        Case{"gemv_fp8_e4m3_scalar_f32_scale", 1, 4096, 4096, 8, 3 * 18432}}) {
    SCOPED_TRACE(fmt::format("{} M={} K={} N={}", c.spec, c.M, c.K, c.N));
    spec::ChainSpec s = loadSpec(c.spec);
    ProblemShape p = shapeFor(s, c.M, c.N, c.K);
    KernelSource src = generate(s, chooseConfig(s, p, 90));
    ASSERT_EQ(src.config.variant, "gemv");
    EXPECT_EQ(src.grid, GridPolicy::SplitKCluster);
    EXPECT_EQ(src.smem_optin, c.smem > 48 * 1024);  // the dynamic shared memory past the default 48 KB
    LaunchDims d = launchDims(src, p, 132);
    EXPECT_EQ(d.grid[0], unsigned((c.N + 127) / 128));
    EXPECT_EQ(d.grid[1], c.S);
    EXPECT_EQ(d.grid[2], 1u);
    EXPECT_EQ(d.cluster[1], c.S);
    EXPECT_EQ(d.smem_bytes, c.smem);
    // sm_80: the same kernel shape, never a cluster.
    KernelConfig c80 = chooseConfig(s, p, 80);
    if (c80.variant == "gemv") {
      LaunchDims d80 = launchDims(generate(s, c80), p, 108);
      EXPECT_EQ(d80.grid[1], 1u);
      EXPECT_EQ(d80.cluster[1], 1u);
    }
  }
}

// A GPU with less memory bandwidth an SM than the H200 (an H100 SXM: 3.35 TB/s, 132 SMs) launches 16-bit weights with
// half a split-K of 4 or more (config_table.cpp gemvSplitKForBandwidth: 0.96-0.996x the time on an H100 at 4096 x 4096
// and 14336 x 4096, bench/RESULTS.md session 69); the H200 (4.8 TB/s), an unknown bandwidth (0) and 8-bit weights keep
// the rule, and so does an S of 1 or 2.
TEST(Gemv, SixteenBitSplitKHalvedWhereBandwidthAnSmIsLower) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  if (gemvRuleKnobSet()) GTEST_SKIP() << "a measurement knob replaces the rule";
  constexpr double kH100 = 3.35e12, kH200 = 4.8e12;
  struct Case {
    const char* spec;
    long long M, K, N;
    unsigned h200, h100;
  };
  for (const Case& c : {Case{"gemv_bf16_kn_bias_gelu", 1, 4096, 4096, 4, 2}, Case{"gemv_bf16_kn_bias_gelu", 16, 14336, 4096, 4, 2},
                        Case{"gemv_bf16_nk_bias_gelu", 4, 4096, 4096, 4, 2}, Case{"gemv_bf16_nk_bias_gelu", 16, 4096, 14336, 1, 1},
                        Case{"gemv_bf16_kn_bias_gelu", 1, 8192, 8192, 2, 2},
                        // 17-32 rows keep the rule's S (session 70: S = 4 ahead of 2 at 24 rows on the H100)
                        Case{"gemv_bf16_kn_bf16_product_bias", 24, 8192, 4096, 4, 4},
                        Case{"gemv_int8_linear_channel_scale_bias", 16, 14336, 4096, 8, 8},
                        Case{"gemv_int4_linear_group_scale_bias", 1, 4096, 4096, 4, 4}}) {
    SCOPED_TRACE(fmt::format("{} M={} K={} N={}", c.spec, c.M, c.K, c.N));
    const spec::ChainSpec s = loadSpec(c.spec);
    const ProblemShape p = shapeFor(s, c.M, c.N, c.K);
    const KernelSource src = generate(s, chooseConfig(s, p, 90));
    ASSERT_EQ(src.config.variant, "gemv");
    EXPECT_EQ(launchDims(src, p, 132).grid[1], c.h200);
    EXPECT_EQ(launchDims(src, p, 132, kH200).grid[1], c.h200);
    const LaunchDims h100 = launchDims(src, p, 132, kH100);
    EXPECT_EQ(h100.grid[1], c.h100);
    EXPECT_EQ(h100.cluster[1], c.h100);
    EXPECT_EQ(h100.grid[0], launchDims(src, p, 132).grid[0]);
  }
}

// A config's weight width sizes the kernel's shared memory (dynamicSmemBytes): generate refuses one whose width is not
// the spec's. A wgmma config of 64 k a stage written without weight_bytes is 8-bit (the KT-64 form); its stages would
// hold half a 16-bit tile.
TEST(Gemv, GenerateRefusesAConfigOfTheOtherWeightWidth) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  const spec::ChainSpec bf16 = loadSpec("gemv_bf16_kn_bf16_product_bias");
  KernelConfig c{"gemv", 32, 128, 64, 5, 128};
  c.max_cluster = 8;
  c.wgmma = true;
  EXPECT_THROW(generate(bf16, c), CodegenError);
  c.weight_bytes = 2;
  const KernelSource src = generate(bf16, c);
  EXPECT_EQ(src.smem_bytes, dynamicSmemBytes(c));
  c.weight_bytes = 0;
  EXPECT_LT(dynamicSmemBytes(c), src.smem_bytes);
}

// Dense 16-bit K x N weights at 17-32 rows on the product by wgmma take 64 columns a CTA and split-K 2 where 128
// columns would take 4, at K <= 4096 (session 70 call 4: 0.91x the time at 4096 x 4096, 24 rows, on an H100); the
// split is the same at either bandwidth (the H100's halving is for 1-16 rows).
TEST(Gemv, DenseMidRowsTake64ColumnsWhereSplitKWouldBe4) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  if (gemvRuleKnobSet()) GTEST_SKIP() << "a measurement knob replaces the rule";
  constexpr double kH100 = 3.35e12, kH200 = 4.8e12;
  struct Case {
    long long M, K, N;
    int columns;
    unsigned split;
  };
  for (const Case& c : {Case{24, 4096, 4096, 64, 2}, Case{32, 4096, 4096, 64, 2}, Case{17, 4096, 4096, 64, 2},
                        Case{24, 8192, 4096, 128, 4}, Case{24, 4096, 14336, 128, 1}, Case{16, 4096, 4096, 128, 4}}) {
    SCOPED_TRACE(fmt::format("M={} K={} N={}", c.M, c.K, c.N));
    const spec::ChainSpec s = loadSpec("gemv_bf16_kn_bf16_product_bias");
    const ProblemShape p = shapeFor(s, c.M, c.N, c.K);
    const KernelSource src = generate(s, chooseConfig(s, p, 90));
    ASSERT_EQ(src.config.variant, "gemv");
    EXPECT_EQ(src.config.bn, c.columns);
    EXPECT_EQ(src.config.wgmma, c.M > 16);
    EXPECT_EQ(has(src.code, "#define FX_GEMV_NT 64\n"), c.columns == 64);
    EXPECT_EQ(launchDims(src, p, 132, kH200).grid[0], static_cast<unsigned>((c.N + c.columns - 1) / c.columns));
    EXPECT_EQ(launchDims(src, p, 132, kH200).grid[1], c.split);
    if (c.M > 16) EXPECT_EQ(launchDims(src, p, 132, kH100).grid[1], c.split);
  }
}

// Dense 16-bit K x N weights at 33-64 rows whose only epilogue op is the bias add (`x @ w + b` with a 16-bit product):
// the gemv on the wgmma product at 64 columns and split-K 2, at K = 4096 where 128-column tiles at split-K 4 fill 4/5
// of the SMs (session 70 call 4: 0.91-0.93x eager's mm + add at 4096 x 4096). Not with a second epilogue op
// (bias+GELU: the op's cuBLAS + epilogue path is as fast), 65 rows, other K, a narrower or wider N, a batch, N x K
// weights, sm_80.
TEST(Gemv, DenseBiasAloneTakesTheGemvAt33To64Rows) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  if (gemvRuleKnobSet()) GTEST_SKIP() << "a measurement knob replaces the rule";
  const spec::ChainSpec bias = loadSpec("gemv_bf16_kn_bf16_product_bias");
  const spec::ChainSpec gelu = spec::parseSpec(std::regex_replace(
      spec::printSpec(bias), std::regex("output %4"), "%5 = gelu_tanh %4 : bf16\noutput %5"));
  const spec::ChainSpec nk = spec::parseSpec(std::regex_replace(spec::printSpec(bias), std::regex("\\[k,n\\]"), "[n,k]"));
  ASSERT_TRUE(analyzeB(nk).kmajor);
  struct Case {
    const spec::ChainSpec* spec;
    long long M, K, N, B;
    int arch;
    bool gemv;
  };
  for (const Case& c : {Case{&bias, 33, 4096, 4096, 1, 90, true}, Case{&bias, 48, 4096, 4096, 1, 90, true},
                        Case{&bias, 64, 4096, 4096, 1, 90, true}, Case{&bias, 40, 4096, 3456, 1, 90, true},
                        Case{&gelu, 64, 4096, 4096, 1, 90, false}, Case{&bias, 65, 4096, 4096, 1, 90, false},
                        Case{&bias, 64, 2048, 4096, 1, 90, false}, Case{&bias, 64, 8192, 4096, 1, 90, false},
                        Case{&bias, 40, 4096, 3072, 1, 90, false}, Case{&bias, 40, 4096, 4352, 1, 90, false},
                        Case{&bias, 40, 4096, 4096, 2, 90, false}, Case{&nk, 64, 4096, 4096, 1, 90, false},
                        Case{&bias, 64, 4096, 4096, 1, 80, false}}) {
    SCOPED_TRACE(fmt::format("{} M={} K={} N={} B={} sm_{}", c.spec == &gelu ? "bias+gelu" : c.spec == &nk ? "nk" : "bias",
                             c.M, c.K, c.N, c.B, c.arch));
    ProblemShape p = shapeFor(*c.spec, c.M, c.N, c.K);
    p.B = c.B;
    const KernelConfig cfg = chooseConfig(*c.spec, p, c.arch);
    EXPECT_EQ(cfg.variant == "gemv", c.gemv) << describeConfig(cfg);
    if (!c.gemv || cfg.variant != "gemv") continue;
    EXPECT_TRUE(cfg.wgmma);
    EXPECT_EQ(cfg.bm, 64);
    EXPECT_EQ(cfg.bn, 64);
    const KernelSource src = generate(*c.spec, cfg);
    EXPECT_EQ(launchDims(src, p, 132, 4.8e12).grid[1], 2u);
    EXPECT_EQ(launchDims(src, p, 132, 3.35e12).grid[1], 2u);
  }
}

TEST(Gemv, SplitKRuleAsMeasured) {
  // (nt, mz, ksteps, CTAs per SM, stages): 112 column tiles = N 14336, 32 = N 4096; k-steps of 64
  // (16-bit) or 128 (8-bit) elements. One CTA per SM for 16-bit weights, two or three for 8-bit.
  EXPECT_EQ(gemvSplitK(112, 1, 64, 1, 5, 8, 132, 0), 1);   // bf16 4096 x 14336
  EXPECT_EQ(gemvSplitK(32, 1, 224, 1, 5, 8, 132, 0), 4);   // bf16 14336 x 4096
  EXPECT_EQ(gemvSplitK(112, 1, 32, 2, 5, 8, 132, 0), 2);   // int8 4096 x 14336, M = 16
  EXPECT_EQ(gemvSplitK(112, 1, 32, 3, 3, 8, 132, 0), 2);   // int8 4096 x 14336, M = 1: 448 > 396 CTAs
  EXPECT_EQ(gemvSplitK(32, 1, 112, 3, 3, 8, 132, 0), 8);   // int8 14336 x 4096
  EXPECT_EQ(gemvSplitK(32, 1, 32, 3, 3, 8, 132, 0), 8);    // int8 4096 x 4096: four k-steps a CTA
  EXPECT_EQ(gemvSplitK(32, 1, 32, 2, 5, 8, 132, 0), 4);    // five stages: eight would leave four
  EXPECT_EQ(gemvSplitK(32, 1, 112, 2, 5, 1, 108, 0), 1);   // sm_80: no clusters
}

TEST(Gemv, ForcedSplitKReplacesTheRuleOnlyWhereClustersExist) {
  for (int forced = 1; forced <= 8; ++forced) EXPECT_EQ(gemvSplitK(112, 1, 32, 2, 5, 8, 132, forced), forced);
  EXPECT_EQ(gemvSplitK(112, 1, 32, 2, 5, 1, 108, 8), 1);   // sm_80: no clusters to force
  EXPECT_EQ(gemvSplitK(112, 1, 32, 2, 5, 2, 132, 8), 2);   // larger than the config's clusters: the rule
  EXPECT_EQ(gemvSplitK(112, 1, 32, 2, 5, 8, 132, 16), 2);  // not a size the template takes: the rule
  EXPECT_EQ(gemvSplitK(112, 1, 32, 2, 5, 8, 132, -1), 2);
}

// The launch bounds follow the shared memory (Hopper's 228 KB): two CTAs per SM for the ~100 KB
// pipelines (so ptxas may use 255 registers, not the 72-168 it aimed at before, session 35),
// three for the ~75 KB ones of 8-bit weights at N = 4096 and four for the ~56 KB ones at M <= 8
// (Run AX), at most four. The split-K aims at that many for 8-bit weights, at most three, and at
// one for 16-bit.
TEST(Gemv, LaunchBoundsFollowTheSharedMemory) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  struct Case {
    const char* spec;
    long long m, n;
    int ctas, split_k_ctas;
  };
  for (const Case& c : {Case{"gemv_bf16_kn_bias_gelu", 1, 4096, 2, 1}, Case{"gemv_bf16_kn_bias_gelu", 16, 14336, 2, 1},
                        Case{"gemv_int8_linear_channel_scale_bias", 1, 4096, 4, 3},
                        Case{"gemv_int8_linear_channel_scale_bias", 1, 14336, 4, 3},
                        Case{"gemv_int8_linear_channel_scale_bias", 16, 4096, 3, 3},
                        Case{"gemv_int8_linear_channel_scale_bias", 64, 4096, 3, 3},
                        Case{"gemv_int8_linear_channel_scale_bias", 16, 14336, 2, 2},
                        Case{"gemv_int8_linear_channel_scale_bias", 64, 14336, 2, 2}}) {
    spec::ChainSpec s = loadSpec(c.spec);
    KernelConfig cfg = chooseConfig(s, shapeFor(s, c.m, c.n), 90);
    SCOPED_TRACE(fmt::format("{} M={} N={} {}", c.spec, c.m, c.n, describeConfig(cfg)));
    ASSERT_EQ(cfg.variant, "gemv");
    EXPECT_EQ(gemvCtasPerSm(cfg), c.ctas);
    EXPECT_EQ(gemvSplitKCtasPerSm(cfg), c.split_k_ctas);
    EXPECT_TRUE(has(generate(s, cfg).code, fmt::format("#define FX_GEMV_MIN_BLOCKS {}\n", c.ctas)));
  }
  EXPECT_EQ(gemvCtasPerSm(KernelConfig{"gemv", 16, 128, 128, 3, 128}), 3);  // 3 x 20 KB
  EXPECT_EQ(gemvCtasPerSm(KernelConfig{"gemv", 8, 128, 128, 2, 128}), 4);   // 2 x 18 KB: capped
  EXPECT_EQ(gemvCtasPerSm(KernelConfig{"gemv", 64, 128, 64, 6, 128}), 1);   // 6 x 24 KB
}

TEST(Gemv, OtherVariantsLaunchWithoutClusters) {
  KernelSource src = generate(loadSpec("bare_bf16_mm"), KernelConfig{"sm80_mma", 128, 128, 32, 2, 256});
  LaunchDims d = launchDims(src, shapeFor(loadSpec("bare_bf16_mm"), 300), 132);
  EXPECT_EQ(d.cluster[0] * d.cluster[1] * d.cluster[2], 1u);
  EXPECT_FALSE(src.smem_optin);
}

// The product by wgmma (kernels/gemv.cuh; config_table.cpp gemvTakesWgmma): 8-bit K x N weights at
// 17-64 rows, N x K weights at 33-64, on sm_90 only; its stages start at a 1024-byte boundary, so its
// launch has 1 KB more.
TEST(Gemv, TakesWgmmaOnHopperFrom17KnOr33NkRows) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  if (gemvRuleKnobSet()) GTEST_SKIP() << "a measurement knob replaces the rule";
  struct Case {
    const char* spec;
    long long m, n;
    int arch;
    bool wgmma;
  };
  for (const Case& c : {Case{"gemv_int8_kn_channel_scale_gelu", 33, 4096, 90, true},
                        Case{"gemv_int8_kn_channel_scale_gelu", 64, 14336, 90, true},
                        Case{"gemv_fp8_e4m3_scalar_f32_scale", 40, 4096, 90, true},
                        Case{"gemv_int8_kn_channel_scale_gelu", 17, 14336, 90, true},
                        Case{"gemv_int8_kn_channel_scale_gelu", 32, 4096, 90, true},
                        Case{"gemv_int8_kn_channel_scale_gelu", 16, 4096, 90, false},
                        Case{"gemv_int8_kn_channel_scale_gelu", 1, 4096, 90, false},
                        Case{"gemv_int8_kn_channel_scale_gelu", 64, 4096, 80, false},    // no wgmma
                        Case{"gemv_int8_linear_channel_scale_bias", 64, 4096, 90, true},   // N x K: 33-64
                        Case{"gemv_int8_linear_channel_scale_bias", 33, 14336, 90, true},
                        Case{"gemv_int8_linear_channel_scale_bias", 32, 4096, 90, false},
                        Case{"gemv_int8_linear_channel_scale_bias", 16, 4096, 90, false},
                        Case{"gemv_int8_linear_channel_scale_bias", 64, 4096, 80, false},
                        Case{"gemv_bf16_kn_bias_gelu", 16, 4096, 90, false},              // 16-bit
                        Case{"gemv_bf16_kn_bf16_product_bias", 24, 4096, 90, true},
                        Case{"gemv_bf16_kn_bf16_product_bias", 32, 4096, 90, true}}) {
    spec::ChainSpec s = loadSpec(c.spec);
    KernelConfig cfg = chooseConfig(s, shapeFor(s, c.m, c.n), c.arch);
    SCOPED_TRACE(fmt::format("{} M={} N={} sm_{}: {}", c.spec, c.m, c.n, c.arch, describeConfig(cfg)));
    ASSERT_EQ(cfg.variant, "gemv");
    EXPECT_EQ(cfg.wgmma, c.wgmma);
    EXPECT_EQ(has(describeConfig(cfg), " wgmma"), c.wgmma);
    EXPECT_EQ(has(generate(s, cfg).code, "#define FX_GEMV_WGMMA 1\n"), c.wgmma);
    // the product by wgmma costs 1 KB of alignment slack, nothing else
    KernelConfig other = cfg;
    other.wgmma = !cfg.wgmma;
    EXPECT_EQ(dynamicSmemBytes(cfg) + (c.wgmma ? 0 : 1024), dynamicSmemBytes(other) + (c.wgmma ? 1024 : 0));
  }
  // plain 16-bit weights (either layout; the rule leaves them on mma.sync, the knob forces wgmma: gemvTakesWgmma) and
  // 8-bit N x K weights have the product by wgmma
  for (auto [name, m] : {std::pair<const char*, long long>{"gemv_bf16_kn_bias_gelu", 16},
                         std::pair<const char*, long long>{"gemv_bf16_nk_bias_gelu", 16},
                         std::pair<const char*, long long>{"gemv_int8_linear_channel_scale_bias", 64}}) {
    spec::ChainSpec s = loadSpec(name);
    KernelConfig forced = chooseConfig(s, shapeFor(s, m), 90);
    ASSERT_EQ(forced.variant, "gemv") << name;
    forced.wgmma = true;
    EXPECT_TRUE(has(generate(s, forced).code, "#define FX_GEMV_WGMMA 1\n")) << name;
  }
  // a 16-bit weight behind a prologue that is not an 8-bit weight's scale (f16 converted to bf16, times a scale) has
  // none: generate refuses the flag
  {
    spec::ChainSpec bf16 = loadSpec("gemv_bf16_nk_bias_gelu"), f16w = loadSpec("f16_weight_to_bf16_group_scale");
    KernelConfig forced = chooseConfig(bf16, shapeFor(bf16, 16), 90);
    ASSERT_EQ(forced.variant, "gemv");
    forced.wgmma = true;
    EXPECT_THROW(generate(f16w, forced), CodegenError);
  }
  // 64 columns per CTA (FX_GEMV_NT): the product by wgmma only; a weight tile of 64 x 128 bytes
  spec::ChainSpec i8 = loadSpec("gemv_int8_kn_channel_scale_gelu");
  KernelConfig narrow = chooseConfig(i8, shapeFor(i8, 64, 4096), 90);
  ASSERT_TRUE(narrow.wgmma);
  EXPECT_FALSE(has(generate(i8, narrow).code, "#define FX_GEMV_NT 64\n"));  // 128: the template's default
  const size_t wide_smem = dynamicSmemBytes(narrow);
  narrow.bn = 64;
  EXPECT_TRUE(has(generate(i8, narrow).code, "#define FX_GEMV_NT 64\n"));
  EXPECT_EQ(dynamicSmemBytes(narrow) + 64 * 128 * narrow.stages, wide_smem);
  EXPECT_EQ(launchDims(generate(i8, narrow), shapeFor(i8, 64, 4096), 132).grid[0], 4096u / 64);
  narrow.wgmma = false;
  EXPECT_THROW(generate(i8, narrow), CodegenError);
}

// ---- the FX_B_QUANT_SCALE hook -----------------------------------------------------------

TEST(Gemv, QuantScaleHookExactlyWhereTheSpecIsConvertTimesScale) {
  std::set<std::string> want = {"doc_example_int8_gelu", "fp8_e4m3_per_tensor_scale",
                                      "gemv_fp8_e4m3_scalar_f32_scale", "gemv_int8_kn_channel_scale_gelu",
                                      "gemv_int8_linear_channel_scale_bias", "gemv_int8_group_wise_scale_bias",
                                      "fp8_group_wise_both_operands_silu", "gemv_int4_linear_group_scale_bias",
                                      "gemv_int4_kn_channel_scale_f16", "int4_i32_kn_channel_scale_f16"};
  if (zeroTensorKnobOn()) {  // (the rule; codegen.GemvZeroTensorKnob.Off: not)
    want.insert("int4_u8_group_wise_zero_point_bias_gelu");
    want.insert("gptq_words_group_zero_point_bias");
    want.insert("gptq_words_packed_zero_points_bias");
    const char* nwords = std::getenv("FXFUSE_GEMV_NWORDS");  // (AWQ's words: codegen.GemvNWordsKnob.Off turns them off)
    if (!nwords || std::string(nwords) != "0") want.insert("awq_words_order_group_scale_bias");
  }
  std::set<std::string> got;
  for (const std::string& name : test::specNames()) {
    spec::ChainSpec s = loadSpec(name);
    std::string h = generateHooks(s, KernelConfig{"sm80_mma", 64, 128, 32, 2, 128});
    bool hook = has(h, "#define FX_B_QUANT_SCALE 1\n");
    // a group-wise scale (an input with a 'g' dim) is a function of k too
    const bool grouped = analyzeB(s).scale_group != 0;
    EXPECT_EQ(hook, has(h, grouped ? "float fx_b_scale(const fxfuse::FxParams& p, long long b, long long k, long long n)"
                                   : "float fx_b_scale(const fxfuse::FxParams& p, long long b, long long n)"))
        << name;
    EXPECT_EQ(grouped && hook, has(h, "#define FX_B_SCALE_GROUP ")) << name;
    EXPECT_EQ(hook, analyzeB(s).quant_scale) << name;
    if (hook) got.insert(name);
  }
  EXPECT_EQ(got, want);
}

// Packed int4 (a 'p' input, FX_B_NIBBLES): the gemv's fast path with the const zero point in FX_B_ZERO; the generic
// templates keep reading it through fx_load_b (FX_B_QUANT 0), its nibble loaded as fx_ld_nibble.
TEST(Gemv, PackedInt4TakesTheNibblePath) {
  spec::ChainSpec nk = loadSpec("gemv_int4_linear_group_scale_bias");
  OperandInfo b = analyzeB(nk);
  EXPECT_TRUE(b.nibbles && b.quant_scale && !b.quant && b.kmajor);
  EXPECT_EQ(b.slot, 1);
  EXPECT_EQ(b.zero, 8);
  EXPECT_EQ(b.scale_group, 128);
  std::string h = generateHooks(nk, KernelConfig{"sm80_mma", 64, 128, 32, 2, 128});
  for (const char* line : {"#define FX_B_QUANT 0\n", "#define FX_B_NIBBLES 1\n", "#define FX_B_ZERO 8\n",
                           "#define FX_B_SLOT 1\n", "using FxRawB = unsigned char;", "#define FX_B_SCALE_GROUP 128\n",
                           "fx_ld_nibble_u8(p.in[1].ptr, n * p.in[1].sn + (k >> 1) * p.in[1].sk, k)"})
    EXPECT_TRUE(has(h, line)) << line << "\n" << h;
  // the rule unless FXFUSE_GEMV_NIBBLES=0 turns it off (codegen.GemvNibblesKnob.Off runs this test so)
  const char* knob = std::getenv("FXFUSE_GEMV_NIBBLES");
  const bool on = !knob || std::string(knob) != "0";
  EXPECT_EQ(variantAt("gemv_int4_linear_group_scale_bias", 16, 4096, 4096), on ? "gemv" : "sm80_mma");
  EXPECT_EQ(variantAt("gemv_int4_linear_group_scale_bias", 128, 4096, 4096), "sm80_mma");  // decode rows only

  spec::ChainSpec kn = loadSpec("gemv_int4_kn_channel_scale_f16");
  b = analyzeB(kn);
  EXPECT_TRUE(b.nibbles && b.quant_scale && !b.kmajor);
  EXPECT_EQ(b.zero, 0);
  EXPECT_TRUE(has(generateHooks(kn, KernelConfig{"sm80_mma", 64, 128, 32, 2, 128}), "#define FX_B_ZERO 0\n"));
  // a zero point that is a fraction: not this path (a zero point tensor: under its knob, PackedInt4ZeroPointTensor;
  // eight nibbles to an i32: PackedInt4GptqWords)
  EXPECT_EQ(analyzeB(loadSpec("int4_u8_group_wise_zero_point_bias_gelu")).nibbles, zeroTensorKnobOn());
  spec::ChainSpec frac = nk;
  frac.values[3].constant = 7.5;
  EXPECT_FALSE(analyzeB(frac).nibbles);
  spec::ChainSpec wrapped = nk;  // `200 : i8` holds -56 in the generic hooks: not the gemv's 200
  wrapped.values[3].constant = 200;
  wrapped.values[3].dtype = spec::DType::I8;
  EXPECT_FALSE(analyzeB(wrapped).nibbles);
  wrapped.values[3].dtype = spec::DType::F32;
  EXPECT_TRUE(analyzeB(wrapped).nibbles);
}

TEST(Gemv, QuantScaleHookBodies) {
  spec::ChainSpec i8 = loadSpec("gemv_int8_linear_channel_scale_bias");
  OperandInfo b = analyzeB(i8);
  EXPECT_TRUE(b.quant && b.quant_scale);
  EXPECT_EQ(b.slot, 1);
  EXPECT_EQ(b.scale_value, 2);
  std::string h = generateHooks(i8, KernelConfig{"sm80_mma", 64, 128, 32, 2, 128});
  EXPECT_TRUE(has(h, "#define FX_B_SLOT 1\n"));  // the raw weight (what gemv streams)
  EXPECT_TRUE(has(h, "#define FX_B_RAW_SLOT 1\n"));
  EXPECT_TRUE(has(h, "using FxRawB = signed char;"));
  EXPECT_TRUE(has(h, "const float v2 = fx_ld_bf16(p.in[2].ptr, n * p.in[2].sn);  // %2 = input 2 bf16 [n,1]\n"
                     "  return v2;"));

  spec::ChainSpec f8 = loadSpec("gemv_fp8_e4m3_scalar_f32_scale");
  h = generateHooks(f8, KernelConfig{"sm80_mma", 64, 128, 32, 2, 128});
  // fp8 as cuda_fp8.h's class type: gemv decodes by type, and __nv_fp8_storage_t is u8.
  EXPECT_TRUE(has(h, "using FxRawB = __nv_fp8_e4m3;"));
  EXPECT_TRUE(has(h, "const float v1 = fx_cvt_f8e4m3(raw.__x);"));
  EXPECT_TRUE(has(h, "const float v2 = fx_ld_f32(p.in[2].ptr, 0);  // %2 = input 2 f32 []\n  return v2;"));

  // (w.float() * s).to(bf16): the f32 mul rounded once by the convert.
  spec::ChainSpec f8t = loadSpec("fp8_e4m3_per_tensor_scale");
  EXPECT_TRUE(analyzeB(f8t).quant_scale);
  EXPECT_EQ(analyzeB(f8t).scale_value, 2);
}

spec::ChainSpec quantSpec(const std::string& prologue, const std::string& bdtype = "bf16") {
  return spec::parseSpec("fxfuse.chain v1\ngemm mm\n%0 = input 0 " + bdtype + " [m,k]\n" + prologue + "output %6\n");
}

TEST(Gemv, QuantScaleHookRejectsInexactForms) {
  const std::string head = "%1 = input 1 i8 [n,k]\n%2 = input 2 bf16 [n]\n";
  auto scaleHook = [](const spec::ChainSpec& s) { return analyzeB(s).quant_scale; };
  // Accepted: either operand order; a const scale; a scale computed from (n) values.
  EXPECT_TRUE(scaleHook(quantSpec(head + "%3 = convert %1 : bf16\n%4 = mul %2 %3 : bf16\n%5 = mm %0 %4 : f32\n"
                                          "%6 = convert %5 : bf16\n")));
  EXPECT_TRUE(scaleHook(quantSpec("%1 = input 1 u8 [k,n]\n%2 = const 0.5 : f32\n%3 = convert %1 : f32\n"
                                  "%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n%6 = convert %5 : bf16\n")));
  EXPECT_TRUE(scaleHook(quantSpec(head + "%3 = reciprocal %2 : bf16\n%4 = convert %1 : bf16\n"
                                          "%5 = mul %4 %3 : bf16\n%6 = mm %0 %5 : bf16\n")));
  // Division: raw / s is not raw * (1 / s) in fp32.
  EXPECT_FALSE(scaleHook(quantSpec(head + "%3 = convert %1 : bf16\n%4 = div %3 %2 : bf16\n%5 = mm %0 %4 : f32\n"
                                           "%6 = convert %5 : bf16\n")));
  // Two roundings: the mul rounded to bf16, then converted to f16.
  EXPECT_FALSE(scaleHook(quantSpec(head + "%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = convert %4 : f16\n"
                                           "%6 = mm %0 %5 : f16\n", "f16")));
  // A scale that varies along k (group-wise) or an offset (zero point).
  EXPECT_FALSE(scaleHook(quantSpec("%1 = input 1 i8 [n,k]\n%2 = input 2 bf16 [1,k]\n%3 = convert %1 : bf16\n"
                                   "%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n%6 = convert %5 : bf16\n")));
  EXPECT_FALSE(scaleHook(quantSpec(head + "%3 = convert %1 : bf16\n%4 = sub %3 %2 : bf16\n%5 = mm %0 %4 : f32\n"
                                           "%6 = convert %5 : bf16\n")));
  // A 16-bit raw weight is not the 8-bit fast path.
  EXPECT_FALSE(scaleHook(loadSpec("f16_weight_to_bf16_group_scale")));
}

// ---- NVRTC -------------------------------------------------------------------------------

// Compiles are skipped only where FXFUSE_NO_NVRTC=1 says so (test_util.h REQUIRE_NVRTC): a missing
// NVRTC fails.
bool nvrtcUsable() { return !test::nvrtcOptedOut(); }

// No spills (ptxas of NVRTC 13.0): the kernel's launch bounds give ptxas the registers that the
// CTAs per SM its shared memory allows leave (255 at two on sm_90; the pipeline fits one on
// sm_80-89); told only the block size, ptxas aimed at three to six CTAs per SM and spilled 8-36
// bytes, around the out-of-line edge loader and in the main loop at M = 64 (bench/gemv/NOTES.md
// session 35). At three CTAs per SM (168 registers: 8-bit weights at N = 4096, Run AX) M = 64
// spills 4-8 bytes, one register held across the prologue (nvdisasm: before the first HMMA;
// bench/gemv/NOTES.md session 36): at most 8 there. Not every spec is spill-free on sm_80-86:
// fp8 e5m2 from M = 40 spills 24-36 bytes at 255 registers there (none of these cases).
void expectSpillsAtMost(const std::string& log, int bytes) {
  std::regex spill("([0-9]+) bytes spill (stores|loads)");
  int seen = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), spill); it != std::sregex_iterator(); ++it, ++seen)
    EXPECT_LE(std::stoi((*it)[1].str()), bytes) << "spill:\n" << log;
  EXPECT_GT(seen, 0) << "no ptxas statistics in the log:\n" << log;
}

// The product by wgmma compiles for every n it takes (8 kMT: M = 1-8, 9-16, 17-32, 33-64; the rule
// gives it 17-64 only, the knob FXFUSE_GEMV_WGMMA the others), for both 16-bit types, int8 and fp8 and plain 16-bit
// weights, K x N and N x K weights, 128 or 64 columns per CTA, as wgmma without spills or serialization.
TEST(Gemv, WgmmaProductCompilesForEveryRowTile) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  REQUIRE_NVRTC();
  spec::ChainSpec i8 = loadSpec("gemv_int8_kn_channel_scale_gelu");
  spec::ChainSpec i8f16 = spec::parseSpec(std::regex_replace(spec::printSpec(i8), std::regex("bf16"), "f16"));
  spec::ChainSpec fp8 = loadSpec("gemv_fp8_e4m3_scalar_f32_scale");
  // N x K weights (w8_nk_fragments): int8 by the packed conversion, fp8 by the fp32 one
  spec::ChainSpec i8nk = loadSpec("gemv_int8_linear_channel_scale_bias");
  spec::ChainSpec fp8nk = spec::parseSpec(std::regex_replace(spec::printSpec(fp8), std::regex("\\[k,n\\]"), "[n,k]"));
  ASSERT_TRUE(analyzeB(fp8nk).kmajor && analyzeB(i8nk).kmajor);
  // plain 16-bit weights (w16_fragments), both layouts and dtypes
  spec::ChainSpec b16 = loadSpec("gemv_bf16_kn_bias_gelu"), b16nk = loadSpec("gemv_bf16_nk_bias_gelu");
  spec::ChainSpec f16 = spec::parseSpec(std::regex_replace(spec::printSpec(b16), std::regex("bf16"), "f16"));
  for (const spec::ChainSpec* s : {&i8, &i8f16, &fp8, &i8nk, &fp8nk, &b16, &b16nk, &f16})
    for (auto [m, nt] : {std::pair<long long, int>{1, 128}, {16, 128}, {24, 128}, {64, 128}, {1, 64}, {64, 64}}) {
      // (the f32-product 16-bit chains take the gemv up to 16 rows: their row tile is set here)
      const bool dense = !analyzeB(*s).quant_scale;
      KernelConfig cfg = chooseConfig(*s, shapeFor(*s, dense ? std::min(m, 16LL) : m), 90);
      ASSERT_EQ(cfg.variant, "gemv");
      if (dense) cfg.bm = m <= 8 ? 8 : m <= 16 ? 16 : m <= 32 ? 32 : 64;
      cfg.wgmma = true;
      cfg.bn = nt;  // 64 columns per CTA (FX_GEMV_NT): one wgmma a k16 step
      KernelSource src = generate(*s, cfg);
      SCOPED_TRACE(fmt::format("M={} {}", m, describeConfig(cfg)));
      Cubin out;
      try {
        out = test::compileForStatistics(src, "sm_90a", /*want_ptx=*/true);
      } catch (const CompileError& e) {
        FAIL() << e.what();
      }
      EXPECT_NE(out.ptx.find(fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.", 8 * (cfg.bm / 8))), std::string::npos);
      EXPECT_EQ(out.ptx.find("mma.sync"), std::string::npos);
      expectSpillsAtMost(out.log, 0);
      // ptxas's warnings C7510-C7515 all say "wgmma.mma_async instructions are serialized ..."
      EXPECT_EQ(out.log.find("are serialized"), std::string::npos) << out.log;
    }
}

// 64 k per stage for the product by wgmma of 8-bit K x N weights (FX_GEMV_KT 64, knob FXFUSE_GEMV_KT=64):
// an 8 KB weight tile and a 128-byte A row (one descriptor half) a stage. Its shared memory is what the
// template lays out, it compiles for both row tiles the product takes and both register budgets without
// spills or serialization, and generate refuses it where the template has no such stage (N x K weights,
// 64 columns).
TEST(Gemv, WgmmaProductAt64KPerStage) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  spec::ChainSpec i8 = loadSpec("gemv_int8_kn_channel_scale_gelu");
  spec::ChainSpec i8f16 = spec::parseSpec(std::regex_replace(spec::printSpec(i8), std::regex("bf16"), "f16"));
  spec::ChainSpec fp8 = loadSpec("gemv_fp8_e4m3_scalar_f32_scale");
  spec::ChainSpec i8nk = loadSpec("gemv_int8_linear_channel_scale_bias");
  for (const spec::ChainSpec* s : {&i8nk, &i8}) {
    KernelConfig cfg = chooseConfig(*s, shapeFor(*s, 64), 90);
    ASSERT_EQ(cfg.variant, "gemv");
    cfg.wgmma = true;
    cfg.bk = 64;
    cfg.bn = s == &i8 ? 64 : 128;  // N x K at 128 columns, K x N at 64: neither has the stage
    EXPECT_THROW(generate(*s, cfg), CodegenError) << describeConfig(cfg);
  }
  const bool nvrtc = nvrtcUsable();
  // six stages forced (two CTAs per SM), then the autotune's own 64-k candidate (its pipeline as the rule
  // sizes it: four stages and three CTAs per SM at N = 4096, 168 registers at 64 rows)
  for (const spec::ChainSpec* s : {&i8, &i8f16, &fp8})
    for (auto [m, n, forced] : {std::tuple<long long, long long, bool>{24, 4096, true}, {64, 4096, true}, {64, 14336, true},
                                {40, 4096, false}, {64, 4096, false}, {64, 14336, false}}) {
      KernelConfig cfg = chooseConfig(*s, shapeFor(*s, m, n), 90);
      ASSERT_EQ(cfg.variant, "gemv");
      if (forced) {
        cfg.wgmma = true;
        cfg.bk = 64;
        cfg.stages = 6;
      } else {
        bool found = false;
        for (const KernelConfig& c : candidateConfigsForSize(*s, m, n, 4096, 1, 90))
          if (c.variant == "gemv" && c.wgmma && c.bk == 64) cfg = c, found = true;
        ASSERT_TRUE(found) << "no 64-k candidate at M=" << m << " N=" << n;
      }
      SCOPED_TRACE(fmt::format("M={} N={} {}", m, n, describeConfig(cfg)));
      const size_t stage = 128 * 64 + static_cast<size_t>(cfg.bm) * 64 * 2;
      EXPECT_EQ(dynamicSmemBytes(cfg),
                std::max<size_t>(cfg.stages * stage, static_cast<size_t>(cfg.bm) * 132 * 4) + 1024);
      KernelSource src = generate(*s, cfg);
      EXPECT_NE(src.code.find("#define FX_GEMV_KT 64\n"), std::string::npos);
      if (!nvrtc) continue;  // FXFUSE_NO_NVRTC=1
      Cubin out;
      try {
        out = test::compileForStatistics(src, "sm_90a", /*want_ptx=*/true);
      } catch (const CompileError& e) {
        FAIL() << e.what();
      }
      EXPECT_NE(out.ptx.find(fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.", cfg.bm)), std::string::npos);
      EXPECT_EQ(out.ptx.find("mma.sync"), std::string::npos);
      expectSpillsAtMost(out.log, 0);
      EXPECT_EQ(out.log.find("are serialized"), std::string::npos) << out.log;
    }
}

// A group-wise scale (GPTQ's [N, K/128]) takes the fast 8-bit path with the scale read per stage: the hook reads
// k's group by a shift, the planner gives it the gemv where groups cover whole stages (not with the knob
// FXFUSE_GEMV_GROUP_SCALES=0), and generate refuses a stage a group splits.
TEST(Gemv, GroupWiseScaleIsReadPerStage) {
  spec::ChainSpec g128 = loadSpec("gemv_int8_group_wise_scale_bias");
  OperandInfo b = analyzeB(g128);
  EXPECT_TRUE(b.quant && b.quant_scale && b.scale_in_elem);
  EXPECT_EQ(b.scale_group, 128);
  KernelConfig cfg = chooseConfig(loadSpec("gemv_int8_linear_channel_scale_bias"), shapeFor(g128, 16), 90);
  ASSERT_EQ(cfg.variant, "gemv");
  const std::string h = generateHooks(g128, cfg);
  EXPECT_TRUE(has(h, "#define FX_B_SCALE_GROUP 128\n")) << h;
  EXPECT_TRUE(has(h, "(k >> 7) * p.in[2].sk")) << h;
  const char* knob = std::getenv("FXFUSE_GEMV_GROUP_SCALES");
  if (!knob || std::string(knob) != "0") EXPECT_EQ(chooseConfig(g128, shapeFor(g128, 16), 90).variant, "gemv");
  spec::ChainSpec g64 = spec::parseSpec(std::regex_replace(spec::printSpec(g128), std::regex("kgroup 128"), "kgroup 64"));
  EXPECT_EQ(analyzeB(g64).scale_group, 64);
  EXPECT_NE(chooseConfig(g64, shapeFor(g64, 16), 90).variant, "gemv");  // groups of 64 split a 128-k stage
  EXPECT_THROW(generate(g64, cfg), CodegenError);
  if (!gemvBuiltIn() || !nvrtcUsable()) return;
  // the gemv's configs for the per-channel form of the same shapes, mma.sync and wgmma products, both layouts
  spec::ChainSpec g128kn = spec::parseSpec(std::regex_replace(
      std::regex_replace(spec::printSpec(g128), std::regex("\\[n,k\\]"), "[k,n]"), std::regex("\\[n,g\\]"), "[g,n]"));
  for (const spec::ChainSpec* s : {&g128, &g128kn})
    for (long long m : {1, 16, 64}) {
      const char* perChannel = s == &g128 ? "gemv_int8_linear_channel_scale_bias" : "gemv_int8_kn_channel_scale_gelu";
      KernelConfig c = chooseConfig(loadSpec(perChannel), shapeFor(*s, m), 90);
      ASSERT_EQ(c.variant, "gemv");
      for (bool wgmma : {false, true}) {
        c.wgmma = wgmma;
        SCOPED_TRACE(fmt::format("M={} {} {}", m, describeConfig(c), s == &g128 ? "[n,k]" : "[k,n]"));
        KernelSource src = generate(*s, c);
        Cubin out;
        try {
          out = test::compileForStatistics(src, "sm_90a", /*want_ptx=*/true);
        } catch (const CompileError& e) {
          FAIL() << e.what();
        }
        // (mma.sync at 64 rows and three CTAs, N x K, a config the rule does not take for this spec: the per-stage
        // scale read by shuffles, FX_GEMV_SCALE_SHFL, leaves one register spilled before the main loop and reloaded
        // once a stage, 12 bytes of loads, in a main loop of 1,005 instructions against 1,060: bench/gemv/NOTES.md
        // session 68)
        expectSpillsAtMost(out.log, c.bm == 64 && gemvCtasPerSm(c) >= 3 ? (!wgmma && s == &g128 ? 12 : 8) : 0);
        if (wgmma) EXPECT_EQ(out.log.find("are serialized"), std::string::npos) << out.log;
      }
    }
}

// Packed int4's pipeline (session 62): each stage holds the packed bytes (half the 8-bit tile) and the kernel one
// expanded 8-bit tile besides (kernels/gemv.cuh expand_stage), up to 8 stages; three CTAs per SM where their split-K
// reaches four, else two (config_table.cpp gemvPipelineCtasPerSm); the config says `nibbles` and generate refuses a
// config that disagrees with the spec. N x K weights expand in registers (FX_GEMV_NIBBLE_REGS 1) unless
// FXFUSE_GEMV_NIBBLE_REGS=0. A scale of the MMA type with a zero point in -128..128 takes the packed 16-bit conversion
// (FX_B_SCALE_IN_ELEM), unless FXFUSE_GEMV_NIBBLE_PAIRS=0.
// Packed int4 spec s's gemv at m rows (4096 x 4096) compiles for sm_90a; without spills, but for the product by wgmma at
// three CTAs per SM (168 registers): at most `three_ctas_spills` bytes there.
void expectPackedGemvCompiles(const spec::ChainSpec& s, long long m, int three_ctas_spills) {
  KernelConfig c = chooseConfig(s, shapeFor(s, m, 4096, 4096), 90);
  SCOPED_TRACE(fmt::format("M={} {} in_elem={}", m, describeConfig(c), analyzeB(s).scale_in_elem));
  ASSERT_EQ(c.variant, "gemv");
  Cubin out;
  try {
    out = test::compileForStatistics(generate(s, c), "sm_90a", /*want_ptx=*/false);
  } catch (const CompileError& e) {
    FAIL() << e.what();
  }
  // (the A/B knob FXFUSE_GEMV_NIBBLE_REGS_KN=1, K x N weights expanded in registers, unmeasured and not the rule: up to
  // 8 bytes at three CTAs per SM with a zero point tensor's fp32 route, codegen.GemvNibbleRegsKnFp32Knobs.On)
  const char* regs_kn = std::getenv("FXFUSE_GEMV_NIBBLE_REGS_KN");
  const int knob_form = regs_kn && std::string(regs_kn) == "1" && gemvCtasPerSm(c) >= 3 ? 8 : 0;
  expectSpillsAtMost(out.log, c.bm == 64 && gemvCtasPerSm(c) >= 3 ? three_ctas_spills : knob_form);
}

TEST(Gemv, PackedInt4StagesHoldPackedBytesAndOneTile) {
  const char* nibbles_knob = std::getenv("FXFUSE_GEMV_NIBBLES");
  if (nibbles_knob && std::string(nibbles_knob) == "0") GTEST_SKIP() << "FXFUSE_GEMV_NIBBLES=0: no packed gemv";
  spec::ChainSpec nk = loadSpec("gemv_int4_linear_group_scale_bias");
  // (M, N, CTAs per SM, stages, dynamic shared memory): stage = 8 KB packed + 8 M-tile rows x 128 k x 2 B; budget
  // min(100 KB, 228 KB / CTAs - 1 KB) - the 16 KB tile; 64 rows: the product by wgmma (N x K from 33 rows), 1 KB for
  // its alignment. N = 4096 (32 column tiles): three CTAs' split-K reaches 4 (M = 1: 5 stages, S 4) or 8; N = 14336
  // (112 column tiles): S 2 at three CTAs, so two
  struct Want {
    long long m, n;
    int ctas, stages;
    size_t smem;
  };
  for (const Want& w : {Want{1, 4096, 3, 5, 5 * 10240 + 16384}, Want{16, 4096, 3, 4, 4 * 12288 + 16384},
                        Want{64, 4096, 3, 2, 2 * 24576 + 16384 + 1024}, Want{1, 14336, 2, 8, 8 * 10240 + 16384},
                        Want{64, 14336, 2, 3, 3 * 24576 + 16384 + 1024}}) {
    SCOPED_TRACE("M=" + std::to_string(w.m) + " N=" + std::to_string(w.n));
    KernelConfig c = chooseConfig(nk, shapeFor(nk, w.m, w.n, 4096), 90);
    ASSERT_EQ(c.variant, "gemv");
    EXPECT_TRUE(c.nibbles);
    EXPECT_NE(describeConfig(c).find(" nibbles"), std::string::npos) << describeConfig(c);
    EXPECT_EQ(c.stages, w.stages);
    EXPECT_EQ(dynamicSmemBytes(c), w.smem);
    EXPECT_EQ(gemvCtasPerSm(c), w.ctas);
    const KernelSource src = generate(nk, c);
    EXPECT_EQ(src.smem_bytes, w.smem);
    // expanded in registers unless the A/B knob FXFUSE_GEMV_NIBBLE_REGS=0 (codegen.GemvNibbleRegsKnob.Off runs this
    // test so); the template takes that form only for the mma.sync product (kNibbleRegs)
    // (FXFUSE_GEMV_NIBBLE_REGS_KN=1, codegen.GemvNibbleRegsKnKnob.On: K x N weights too, the form 2)
    const char* regs_knob = std::getenv("FXFUSE_GEMV_NIBBLE_REGS");
    const char* regs_kn_knob = std::getenv("FXFUSE_GEMV_NIBBLE_REGS_KN");
    const bool tile = regs_knob && std::string(regs_knob) == "0";
    const int form = tile ? 0 : regs_kn_knob && std::string(regs_kn_knob) == "1" ? 2 : 1;
    EXPECT_TRUE(has(src.code, "#define FX_GEMV_NIBBLE_REGS " + std::to_string(form) + "\n"));
    KernelConfig unpacked = c;
    unpacked.nibbles = false;
    EXPECT_THROW(generate(nk, unpacked), CodegenError);
  }
  spec::ChainSpec i8 = loadSpec("gemv_int8_linear_channel_scale_bias");
  KernelConfig c8 = chooseConfig(i8, shapeFor(i8, 16), 90);
  EXPECT_FALSE(c8.nibbles);
  c8.nibbles = true;
  EXPECT_THROW(generate(i8, c8), CodegenError);

  const char* pairs_knob = std::getenv("FXFUSE_GEMV_NIBBLE_PAIRS");
  const bool pairs = !pairs_knob || std::string(pairs_knob) != "0";
  EXPECT_EQ(analyzeB(nk).scale_in_elem, pairs);                                      // bf16 scale, zero point 8
  EXPECT_EQ(analyzeB(loadSpec("gemv_int4_kn_channel_scale_f16")).scale_in_elem, pairs);  // f16 scale, no zero point
  spec::ChainSpec far = nk;  // 128 + 200 is not exact in bf16's form the conversion takes: the fp32 route
  far.values[3].constant = 200;
  EXPECT_TRUE(analyzeB(far).nibbles);
  EXPECT_FALSE(analyzeB(far).scale_in_elem);
  spec::ChainSpec low = nk;
  low.values[3].constant = -128;
  EXPECT_EQ(analyzeB(low).scale_in_elem, pairs);
  // an f32 scale (the product rounded in f32, then to bf16): the fp32 route
  spec::ChainSpec f32scale = spec::parseSpec(
      "fxfuse.chain v1\ngemm mm kgroup 128\n%0 = input 0 bf16 [m,k]\n%1 = input 1 u8 [n,p]\n%2 = convert %1 : f32\n"
      "%3 = const 8 : f32\n%4 = sub %2 %3 : f32\n%5 = input 2 f32 [n,g]\n%6 = mul %4 %5 : f32\n"
      "%7 = convert %6 : bf16\n%8 = mm %0 %7 : f32\noutput %8\n");
  EXPECT_TRUE(analyzeB(f32scale).nibbles);
  EXPECT_FALSE(analyzeB(f32scale).scale_in_elem);
  for (const std::string& line : {std::string("#define FX_B_SCALE_IN_ELEM ") + (pairs ? "1" : "0") + "\n"})
    EXPECT_TRUE(has(generateHooks(nk, chooseConfig(nk, shapeFor(nk, 1), 90)), line)) << line;
  if (!gemvBuiltIn() || !nvrtcUsable()) return;
  // both conversions, both layouts, mma.sync and wgmma row counts: compiled for sm_90a without spills
  spec::ChainSpec kn = loadSpec("gemv_int4_kn_channel_scale_f16");
  for (const spec::ChainSpec* s : {&nk, &kn, &f32scale})
    for (long long m : {1, 16, 64})
      // at 64 rows and three CTAs per SM (168 registers) the product by wgmma spills as 8-bit weights' does (at most
      // 8 bytes; session 62's measured three-CTA rows ran with them), the fp32 route 12 (unmeasured)
      expectPackedGemvCompiles(*s, m, analyzeB(*s).scale_in_elem ? 8 : 16);
}

// A zero point tensor (`(w - z) * s`, z per group or per column: AWQ's and HQQ's asymmetric int4; FX_B_ZERO_TENSOR)
// (the rule since session 65; FXFUSE_GEMV_ZERO_TENSOR=0, codegen.GemvZeroTensorKnob.Off, leaves it out): the hook
// fx_b_zero beside fx_b_scale, read per stage where either is group-wise; eager's sub rounded where it is at the MMA
// type (FX_B_ZERO_ROUND); the packed 16-bit conversion only where z, the sub and the scale are of the MMA type. Every
// form compiles for sm_90a without spills. Without the knob the chain keeps the element-wise path (not the gemv).
TEST(Gemv, PackedInt4ZeroPointTensor) {
  const std::string head = "fxfuse.chain v1\ngemm mm kgroup 128\n%0 = input 0 bf16 [m,k]\n";
  spec::ChainSpec grouped = loadSpec("int4_u8_group_wise_zero_point_bias_gelu");
  const char* nibbles_knob = std::getenv("FXFUSE_GEMV_NIBBLES");
  if (nibbles_knob && std::string(nibbles_knob) == "0") GTEST_SKIP() << "FXFUSE_GEMV_NIBBLES=0: no packed gemv";
  if (!zeroTensorKnobOn()) {
    EXPECT_FALSE(analyzeB(grouped).nibbles);
    EXPECT_EQ(variantAt("int4_u8_group_wise_zero_point_bias_gelu", 16, 4096, 4096), "sm80_mma");
    return;
  }
  const char* pairs_knob = std::getenv("FXFUSE_GEMV_NIBBLE_PAIRS");
  const bool pairs = !pairs_knob || std::string(pairs_knob) != "0";
  OperandInfo b = analyzeB(grouped);
  EXPECT_TRUE(b.nibbles && b.quant_scale && b.kmajor && b.zero_rounds);
  EXPECT_EQ(b.zero_value, 3);
  EXPECT_EQ(b.zero, 0);
  EXPECT_EQ(b.scale_value, 5);
  EXPECT_EQ(b.scale_group, 128);
  EXPECT_EQ(b.scale_in_elem, pairs);
  EXPECT_EQ(variantAt("int4_u8_group_wise_zero_point_bias_gelu", 16, 4096, 4096), "gemv");
  EXPECT_EQ(variantAt("int4_u8_group_wise_zero_point_bias_gelu", 128, 4096, 4096), "sm80_mma");
  const std::string h = generateHooks(grouped, chooseConfig(grouped, shapeFor(grouped, 1), 90));
  for (const char* line : {"#define FX_B_ZERO_TENSOR 1\n", "#define FX_B_ZERO_ROUND 1\n", "#define FX_B_ZERO 0\n",
                           "float fx_b_zero(const fxfuse::FxParams& p, long long b, long long k, long long n)",
                           "float fx_b_scale(const fxfuse::FxParams& p, long long b, long long k, long long n)"})
    EXPECT_TRUE(has(h, line)) << line << "\n" << h;
  // ((w.float() - z) * s).to(bf16), z and s f32: the difference not rounded, the fp32 route
  spec::ChainSpec f32 = spec::parseSpec(
      head + "%1 = input 1 u8 [n,p]\n%2 = convert %1 : f32\n%3 = input 2 f32 [n,g]\n%4 = sub %2 %3 : f32\n"
             "%5 = input 3 f32 [n,g]\n%6 = mul %4 %5 : f32\n%7 = convert %6 : bf16\n%8 = mm %0 %7 : f32\noutput %8\n");
  b = analyzeB(f32);
  EXPECT_TRUE(b.nibbles);
  EXPECT_FALSE(b.zero_rounds || b.scale_in_elem);
  EXPECT_TRUE(has(generateHooks(f32, chooseConfig(f32, shapeFor(f32, 1), 90)), "#define FX_B_ZERO_ROUND 0\n"));
  // `w.to(bf16) - z` with z f32: the sub at f32 (its operand the same exact nibble), the fp32 route
  spec::ChainSpec mixed = spec::parseSpec(
      head + "%1 = input 1 u8 [n,p]\n%2 = convert %1 : bf16\n%3 = input 2 f32 [n,g]\n%4 = sub %2 %3 : f32\n"
             "%5 = input 3 bf16 [n,g]\n%6 = mul %4 %5 : f32\n%7 = convert %6 : bf16\n%8 = mm %0 %7 : f32\noutput %8\n");
  EXPECT_TRUE(analyzeB(mixed).nibbles);
  EXPECT_FALSE(analyzeB(mixed).zero_rounds || analyzeB(mixed).scale_in_elem);
  // K x N, a zero point per column beside a group-wise scale: read per stage all the same
  spec::ChainSpec kn = spec::parseSpec(
      head + "%1 = input 1 u8 [p,n]\n%2 = convert %1 : bf16\n%3 = input 2 bf16 [n]\n%4 = sub %2 %3 : bf16\n"
             "%5 = input 3 bf16 [g,n]\n%6 = mul %4 %5 : bf16\n%7 = mm %0 %6 : bf16\noutput %7\n");
  b = analyzeB(kn);
  EXPECT_TRUE(b.nibbles && !b.kmajor && b.zero_rounds);
  EXPECT_EQ(b.scale_group, 128);
  EXPECT_EQ(b.scale_in_elem, pairs);
  // a group-wise zero point beside one scale per column: its groups are read per stage
  spec::ChainSpec column_scale = spec::parseSpec(
      head + "%1 = input 1 u8 [n,p]\n%2 = convert %1 : bf16\n%3 = input 2 bf16 [n,g]\n%4 = sub %2 %3 : bf16\n"
             "%5 = input 3 bf16 [n]\n%6 = mul %4 %5 : bf16\n%7 = mm %0 %6 : bf16\noutput %7\n");
  EXPECT_EQ(analyzeB(column_scale).scale_group, 128);
  // a ragged last stage (K = 1056) pads k with nibbles whose weight must be 0: the constant zero point's own nibble
  // (kernels/gemv.cuh kPadByte); no such nibble for a zero point tensor or a constant outside 0..15: no gemv there
  spec::ChainSpec column_zero = spec::parseSpec(
      head.substr(0, head.find(" kgroup")) + "\n%0 = input 0 bf16 [m,k]\n%1 = input 1 u8 [n,p]\n%2 = convert %1 : bf16\n"
      "%3 = input 2 bf16 [n]\n%4 = sub %2 %3 : bf16\n%5 = input 3 bf16 [n]\n%6 = mul %4 %5 : bf16\n%7 = mm %0 %6 : bf16\n"
      "output %7\n");
  EXPECT_TRUE(analyzeB(column_zero).nibbles);
  EXPECT_EQ(chooseConfig(column_zero, shapeFor(column_zero, 16, 4096, 4096), 90).variant, "gemv");
  EXPECT_EQ(chooseConfig(column_zero, shapeFor(column_zero, 16, 4096, 1056), 90).variant, "sm80_mma");
  for (double z : {0.0, 8.0, 15.0, -3.0, 16.0}) {
    spec::ChainSpec constant = spec::parseSpec(
        "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 u8 [n,p]\n%2 = convert %1 : bf16\n"
        "%3 = const " + fmt::format("{}", z) + " : f32\n%4 = sub %2 %3 : bf16\n%5 = input 2 bf16 [n]\n"
        "%6 = mul %4 %5 : bf16\n%7 = mm %0 %6 : bf16\noutput %7\n");
    EXPECT_EQ(chooseConfig(constant, shapeFor(constant, 16, 4096, 1056), 90).variant,
              z >= 0 && z <= 15 ? "gemv" : "sm80_mma") << z;
    EXPECT_EQ(chooseConfig(constant, shapeFor(constant, 16, 4096, 4096), 90).variant, "gemv") << z;
  }
  // not this path: the sub at f16 under a bf16 product; a zero point that varies along k itself
  spec::ChainSpec f16sub = spec::parseSpec(
      head + "%1 = input 1 u8 [n,p]\n%2 = convert %1 : f16\n%3 = input 2 f16 [n,g]\n%4 = sub %2 %3 : f16\n"
             "%5 = input 3 bf16 [n,g]\n%6 = mul %4 %5 : f32\n%7 = convert %6 : bf16\n%8 = mm %0 %7 : f32\noutput %8\n");
  EXPECT_FALSE(analyzeB(f16sub).nibbles);
  spec::ChainSpec along_k = spec::parseSpec(
      head + "%1 = input 1 u8 [n,p]\n%2 = convert %1 : bf16\n%3 = input 2 bf16 [n,k]\n%4 = sub %2 %3 : bf16\n"
             "%5 = input 3 bf16 [n,g]\n%6 = mul %4 %5 : bf16\n%7 = mm %0 %6 : bf16\noutput %7\n");
  EXPECT_FALSE(analyzeB(along_k).nibbles);
  if (!gemvBuiltIn() || !nvrtcUsable()) return;
  spec::ChainSpec f16_column = column_zero;  // f16 throughout, the zero point read once (per column)
  for (spec::Value& v : f16_column.values)
    if (v.dtype == spec::DType::BF16) v.dtype = spec::DType::F16;
  ASSERT_TRUE(analyzeB(f16_column).nibbles);
  for (const spec::ChainSpec* s : {&grouped, &f32, &kn, &column_scale, &column_zero, &f16_column})
    for (long long m : {1, 16, 64}) expectPackedGemvCompiles(*s, m, 16);
}

// GPTQ's int32 words (eight 4-bit values of k to an i32, K x N: FX_B_WORDS; docs/quantized_storage/README.md piece 6)
// take the packed path, expanded per stage from the words' layout. The GPTQ form as the pass writes it: the nibble's
// `.to(int8)`, then `w - z` of an i8 zero point at f32 (pass/operand_prologue.cpp computedInF32: exact), the scale's
// mul and the `.to(f16)` identity; under the zero point tensor knob, and with the packed 16-bit conversion (nibble - z
// of 8-bit integers is exact in either 16-bit type). An i8 sub (which may wrap: 15 - (-128)) and N x K words are not
// this path.
TEST(Gemv, PackedInt4GptqWords) {
  spec::ChainSpec constant = loadSpec("int4_i32_kn_channel_scale_f16");  // `convert(w) - 8`, one scale per column
  OperandInfo b = analyzeB(constant);
  EXPECT_TRUE(b.nibbles && b.words && !b.kmajor && b.quant_scale);
  EXPECT_EQ(b.zero, 8);
  EXPECT_EQ(b.raw, spec::DType::U8);
  EXPECT_TRUE(has(generateHooks(constant, chooseConfig(constant, shapeFor(constant, 1), 90)), "#define FX_B_WORDS 1\n"));
  EXPECT_FALSE(has(generateHooks(loadSpec("gemv_int4_kn_channel_scale_f16"),
                                 chooseConfig(loadSpec("gemv_int4_kn_channel_scale_f16"), shapeFor(constant, 1), 90)),
                   "FX_B_WORDS"));
  const char* nibbles_knob = std::getenv("FXFUSE_GEMV_NIBBLES");  // (codegen.GemvNibblesKnob.Off: none of them)
  const bool nibbles = !nibbles_knob || std::string(nibbles_knob) != "0";
  EXPECT_EQ(chooseConfig(constant, shapeFor(constant, 16, 4096, 4096), 90).variant, nibbles ? "gemv" : "sm80_mma");
  spec::ChainSpec nk = spec::parseSpec(std::regex_replace(spec::printSpec(constant), std::regex("\\[p,n\\]"), "[n,p]"));
  EXPECT_FALSE(analyzeB(nk).nibbles);  // words along k of an [N, K/8] tensor: no loader layout for them

  spec::ChainSpec gptq = loadSpec("gptq_words_group_zero_point_bias");
  b = analyzeB(gptq);
  EXPECT_EQ(b.nibbles, zeroTensorKnobOn());
  EXPECT_EQ(variantAt("gptq_words_group_zero_point_bias", 16, 4096, 4096),
            zeroTensorKnobOn() && nibbles ? "gemv" : "sm80_mma");
  // an i8 sub: 15 - (-128) wraps in eager's int8, where the gemv's fp32 difference would not
  spec::ChainSpec wraps = spec::parseSpec(
      "fxfuse.chain v1\ngemm mm kgroup 128\n%0 = input 0 f16 [m,k]\n%1 = input 1 f16 [g,n]\n%2 = input 2 i32 [p,n]\n"
      "%3 = convert %2 : i8\n%4 = input 3 i8 [g,n]\n%5 = sub %3 %4 : i8\n%6 = convert %5 : f16\n%7 = mul %1 %6 : f16\n"
      "%8 = mm %0 %7 : f16\noutput %8\n");
  EXPECT_FALSE(analyzeB(wraps).nibbles);
  if (!zeroTensorKnobOn()) return;
  const char* pairs_knob = std::getenv("FXFUSE_GEMV_NIBBLE_PAIRS");
  const bool pairs = !pairs_knob || std::string(pairs_knob) != "0";
  EXPECT_TRUE(b.words && !b.kmajor && b.quant_scale && b.zero_rounds);
  EXPECT_EQ(b.slot, 2);
  EXPECT_EQ(b.zero_value, 6);  // the i8 zero point's convert
  EXPECT_EQ(b.scale_value, 1);
  EXPECT_EQ(b.scale_group, 128);
  EXPECT_EQ(b.scale_in_elem, pairs);
  const std::string h = generateHooks(gptq, chooseConfig(gptq, shapeFor(gptq, 1), 90));
  for (const char* line : {"#define FX_B_WORDS 1\n", "#define FX_B_ZERO_TENSOR 1\n", "#define FX_B_ZERO_ROUND 1\n",
                           "float fx_b_zero(const fxfuse::FxParams& p, long long b, long long k, long long n)"})
    EXPECT_TRUE(has(h, line)) << line << "\n" << h;
  // GPTQ's zero points folded too (eight to an i32 along n: the spec's 'q'), as the pass writes the whole layer: the
  // hook reads the zero point's nibble of its word at n / 8
  spec::ChainSpec packed_zeros = loadSpec("gptq_words_packed_zero_points_bias");
  OperandInfo pz = analyzeB(packed_zeros);
  EXPECT_TRUE(pz.nibbles && pz.words && pz.zero_rounds && pz.zero_value >= 0);
  EXPECT_EQ(pz.scale_in_elem, pairs);
  EXPECT_TRUE(has(generateHooks(packed_zeros, chooseConfig(packed_zeros, shapeFor(packed_zeros, 1), 90)),
                  "fx_ld_nibble_i32(p.in[3].ptr, (k >> 7) * p.in[3].sk + ((n) >> 3) * p.in[3].sn, n)"));
  // a zero point tensor of another dtype than 8-bit integers keeps its own rounding rule (no packed conversion at f32)
  spec::ChainSpec f16zero = spec::parseSpec(std::regex_replace(spec::printSpec(gptq), std::regex("input 3 i8"),
                                                               "input 3 f16"));
  EXPECT_TRUE(analyzeB(f16zero).nibbles);
  EXPECT_FALSE(analyzeB(f16zero).zero_rounds || analyzeB(f16zero).scale_in_elem);
  if (!gemvBuiltIn() || !nvrtcUsable() || !nibbles) return;
  for (const spec::ChainSpec* s : {&constant, &gptq, &f16zero, &packed_zeros})
    for (long long m : {1, 16, 64}) expectPackedGemvCompiles(*s, m, 16);
}

// AWQ's words (`i32 [k,q] order 0 4 1 5 2 6 3 7`: eight 4-bit values of n to a word, K x N) take the gemv, the rule
// since their GPU tests passed in session 67 (FXFUSE_GEMV_NWORDS=0 turns it off: codegen.GemvNWordsKnob.Off): the
// hooks state the words and their order's nibble table (kernels/gemv.cuh expands a word with two byte permutes whose
// selectors it derives from the table), and the kernel compiles for sm_90a without spills at 1, 16 and 64 rows. Their
// zero points (`[g,q]` in the same order) are read per column through the table, as the generic kernel reads them.
// The product is mma.sync at every row count (bench/RESULTS.md session 67: wgmma was 1.1-1.6x its time at 32 and 64
// rows); the CTAs per SM follow the zero point tensors' rule.
TEST(Gemv, PackedInt4AwqWords) {
  const char* knob = std::getenv("FXFUSE_GEMV_NWORDS");
  const bool on = !knob || std::string(knob) != "0";
  const char* nibbles_knob = std::getenv("FXFUSE_GEMV_NIBBLES");  // (codegen.GemvNibblesKnob.Off: no packed gemv)
  const bool nibbles = !nibbles_knob || std::string(nibbles_knob) != "0";
  const spec::ChainSpec awq = loadSpec("awq_words_order_group_scale_bias");
  const OperandInfo b = analyzeB(awq);
  EXPECT_EQ(b.nibbles, on && zeroTensorKnobOn());
  EXPECT_EQ(variantAt("awq_words_order_group_scale_bias", 16, 4096, 4096),
            on && zeroTensorKnobOn() && nibbles ? "gemv" : "sm80_mma");
  if (!b.nibbles) return;
  EXPECT_TRUE(b.n_words && !b.words && !b.kmajor && b.quant_scale && b.zero_value >= 0);
  EXPECT_EQ(b.n_word_order, 0x73625140u);
  EXPECT_EQ(b.slot, 1);
  EXPECT_EQ(b.scale_group, 128);
  if (!gemvRuleKnobSet() && nibbles) {
    for (long long M : {1, 16, 24, 64})
      for (const auto& [N, K] : {std::pair<long long, long long>{14336, 4096}, {4096, 14336}}) {
        const KernelConfig c = chooseConfig(awq, shapeFor(awq, M, N, K), 90);
        ASSERT_EQ(c.variant, "gemv");
        EXPECT_FALSE(c.wgmma) << "M=" << M << " N=" << N;
        if (M <= 16) EXPECT_EQ(gemvCtasPerSm(c), 4) << "M=" << M << " N=" << N;
      }
  }
  const std::string h = generateHooks(awq, chooseConfig(awq, shapeFor(awq, 1), 90));
  for (const char* line : {"#define FX_B_NWORDS 1\n", "#define FX_B_NWORD_ORDER 0x73625140u\n",
                           "#define FX_B_ZERO_TENSOR 1\n", "((0x73625140u >> (((unsigned)(n) & 7u) << 2)) & 7u)"})
    EXPECT_TRUE(has(h, line)) << line << "\n" << h;
  EXPECT_FALSE(has(h, "FX_B_WORDS"));
  // the plain order (no `order` stated) has the plain table; the words' zero points alone (`[g,q]`, no k) are not B's
  // weight: a spec whose only packed input is them keeps the generic kernel
  const spec::ChainSpec plain = spec::parseSpec(std::regex_replace(
      spec::printSpec(awq), std::regex("input 1 i32 \\[k,q\\] order 0 4 1 5 2 6 3 7"), "input 1 i32 [k,q]"));
  EXPECT_EQ(analyzeB(plain).n_word_order, 0x76543210u);
  EXPECT_TRUE(has(generateHooks(plain, chooseConfig(plain, shapeFor(plain, 1), 90)), "#define FX_B_NWORD_ORDER 0x76543210u\n"));
  // words along n of an [N/8, K] tensor (n packed outermost): no loader layout for them
  const spec::ChainSpec nk = spec::parseSpec(std::regex_replace(spec::printSpec(awq), std::regex("i32 \\[k,q\\]"), "i32 [q,k]"));
  EXPECT_FALSE(analyzeB(nk).nibbles);
  if (!gemvBuiltIn() || !nvrtcUsable() || !nibbles) return;
  for (const spec::ChainSpec* s : {&awq, &plain})
    for (long long m : {1, 16, 64}) expectPackedGemvCompiles(*s, m, 16);
}

// Group-wise scales and zero points: each lane reads one column a stage and its MMA thread group shares them by
// shuffles (kernels/gemv.cuh FX_GEMV_SCALE_SHFL), the rule where session 68's A/B measured them faster; a 16-bit zero
// point tensor on packed bytes at 1-16 rows and AWQ's words at 9-16 rows read every column in every lane, as before
// (bench/RESULTS.md session 68). The knob FXFUSE_GEMV_SCALE_SHFL=0 turns the shuffles off everywhere. Read from the
// PTX: the kernel's only shfl.sync is the shuffles'.
TEST(Gemv, GroupWiseScalesSharedByShuffles) {
  if (!gemvBuiltIn() || !nvrtcUsable()) GTEST_SKIP() << "no NVRTC";
  const char* knob = std::getenv("FXFUSE_GEMV_SCALE_SHFL");
  const std::string k = knob ? knob : "";
  const char* nibbles_knob = std::getenv("FXFUSE_GEMV_NIBBLES");
  if (gemvRuleKnobSet() || !zeroTensorKnobOn() || (nibbles_knob && std::string(nibbles_knob) == "0"))
    GTEST_SKIP() << "a knob changes the configs";
  struct Case {
    const char* spec;
    long long m;
    bool shuffles;  // under the rule
  };
  const Case cases[] = {{"gptq_words_packed_zero_points_bias", 1, true},  {"gptq_words_packed_zero_points_bias", 16, true},
                        {"gptq_words_packed_zero_points_bias", 64, true}, {"awq_words_order_group_scale_bias", 1, true},
                        {"awq_words_order_group_scale_bias", 16, false},  {"awq_words_order_group_scale_bias", 64, true},
                        {"int4_u8_group_wise_zero_point_bias_gelu", 1, false},
                        {"int4_u8_group_wise_zero_point_bias_gelu", 16, false},
                        {"int4_u8_group_wise_zero_point_bias_gelu", 64, true},
                        {"gemv_int8_group_wise_scale_bias", 1, true},    {"gemv_int4_linear_group_scale_bias", 16, true},
                        {"gemv_int8_linear_channel_scale_bias", 1, false}};  // (one scale per column: read once)
  for (const Case& c : cases) {
    const spec::ChainSpec s = loadSpec(c.spec);
    const KernelConfig cfg = chooseConfig(s, shapeFor(s, c.m, 14336, 4096), 90);
    SCOPED_TRACE(fmt::format("{} M={} {}", c.spec, c.m, describeConfig(cfg)));
    ASSERT_EQ(cfg.variant, "gemv");
    Cubin out;
    try {
      out = test::compileForStatistics(generate(s, cfg), "sm_90a", /*want_ptx=*/true);
    } catch (const CompileError& e) {
      FAIL() << e.what();
    }
    const bool expected = k.empty() ? c.shuffles : (k != "0" && std::string(c.spec) != "gemv_int8_linear_channel_scale_bias");
    EXPECT_EQ(out.ptx.find("shfl.sync") != std::string::npos, expected);
  }
}

// Session 66's rule for GPTQ's words (bench/RESULTS.md session 66: the layer with its zero points, an H100): four CTAs
// per SM at 1-16 rows (a zero point tensor or the words), mma.sync at 64 rows with the usual CTA rule (two at 4096 x
// 14336, three at 14336 x 4096), 17-32 rows as before (wgmma); the symmetric form (a constant zero point) keeps wgmma
// at 64 rows.
TEST(Gemv, PackedInt4GptqWordsRule) {
  const char* nibbles_knob = std::getenv("FXFUSE_GEMV_NIBBLES");
  if (!gemvBuiltIn() || !zeroTensorKnobOn() || (nibbles_knob && std::string(nibbles_knob) == "0") ||
      std::getenv("FXFUSE_GEMV_STAGE_KB") || std::getenv("FXFUSE_GEMV_WGMMA"))
    GTEST_SKIP() << "the rule is measured with the knobs unset";
  const spec::ChainSpec gptq = loadSpec("gptq_words_group_zero_point_bias");
  auto config = [&](const spec::ChainSpec& s, long long M, long long N, long long K) {
    return chooseConfig(s, shapeFor(s, M, N, K), 90);
  };
  for (long long M : {1, 16})
    for (const auto& [N, K] : {std::pair<long long, long long>{14336, 4096}, {4096, 14336}}) {
      const KernelConfig c = config(gptq, M, N, K);
      ASSERT_EQ(c.variant, "gemv");
      EXPECT_EQ(gemvCtasPerSm(c), 4) << "M=" << M << " N=" << N;
      EXPECT_FALSE(c.wgmma);
    }
  const KernelConfig wide = config(gptq, 64, 14336, 4096), tall = config(gptq, 64, 4096, 14336);
  EXPECT_FALSE(wide.wgmma || tall.wgmma);
  EXPECT_EQ(gemvCtasPerSm(wide), 2);
  EXPECT_EQ(gemvCtasPerSm(tall), 3);
  EXPECT_TRUE(config(gptq, 24, 14336, 4096).wgmma);  // (17-32 rows: the rule before session 66)
  // GPTQ's symmetric form, `w - 8` (the words alone): the wgmma product at 64 rows
  const spec::ChainSpec sym = spec::parseSpec(
      "fxfuse.chain v1\ngemm mm kgroup 128\n%0 = input 0 f16 [m,k]\n%1 = input 1 f16 [g,n]\n%2 = input 2 i32 [p,n]\n"
      "%3 = convert %2 : i8\n%4 = convert %3 : f32\n%5 = const 8 : f32\n%6 = sub %4 %5 : f32\n%7 = mul %1 %6 : f16\n"
      "%8 = convert %7 : f16\n%9 = mm %0 %8 : f16\noutput %9\n");
  ASSERT_TRUE(analyzeB(sym).nibbles && analyzeB(sym).words && analyzeB(sym).zero_value < 0);
  EXPECT_TRUE(config(sym, 64, 14336, 4096).wgmma);
  EXPECT_EQ(gemvCtasPerSm(config(sym, 1, 14336, 4096)), 4);  // (the words: four at one row too)
}

// An 8-bit integer zero point tensor (GPTQ's `w - z`) whose magic + z is exact in the MMA type: pair_scaled subtracts
// magic + z from magic + n in one fma (FX_B_ZERO_INT; the exactness, exhaustively: tests/python/
// test_nibble_zero_int_exactness.py). i8 in f16 and bf16, u8 in f16; bf16 with a u8 zero point keeps two fmas.
TEST(Gemv, PackedInt4IntegerZeroPointInOneFma) {
  if (!zeroTensorKnobOn()) return;  // (codegen.GemvZeroTensorKnob.Off: no zero point tensor on the gemv)
  const char* pairs_knob = std::getenv("FXFUSE_GEMV_NIBBLE_PAIRS");
  const bool pairs = !pairs_knob || std::string(pairs_knob) != "0";
  const std::string gptq = spec::printSpec(loadSpec("gptq_words_group_zero_point_bias"));
  auto with = [&](const char* elem, const char* zero) {
    return spec::parseSpec(std::regex_replace(std::regex_replace(gptq, std::regex("f16"), elem),
                                              std::regex("input 3 i8"), std::string("input 3 ") + zero));
  };
  const spec::ChainSpec f16_i8 = with("f16", "i8"), bf16_i8 = with("bf16", "i8"), f16_u8 = with("f16", "u8"),
                        bf16_u8 = with("bf16", "u8");
  for (const auto& [s, one_fma] : {std::pair<const spec::ChainSpec*, bool>{&f16_i8, true}, {&bf16_i8, true},
                                   {&f16_u8, true}, {&bf16_u8, false}}) {
    const OperandInfo b = analyzeB(*s);
    ASSERT_TRUE(b.nibbles && b.zero_value >= 0) << spec::printSpec(*s);
    EXPECT_EQ(b.zero_integer, one_fma) << spec::printSpec(*s);
    const std::string h = generateHooks(*s, chooseConfig(*s, shapeFor(*s, 1), 90));
    EXPECT_TRUE(has(h, one_fma && pairs ? "#define FX_B_ZERO_INT 1\n" : "#define FX_B_ZERO_INT 0\n")) << h;
  }
  // a 16-bit zero point tensor is not an integer the hooks can see
  spec::ChainSpec f16zero = spec::parseSpec(std::regex_replace(gptq, std::regex("input 3 i8"), "input 3 f16"));
  EXPECT_FALSE(analyzeB(f16zero).zero_integer);
  // z's range is the convert's result's (a review's case): an i8 zero point converted to u8 wraps to 0..255, so
  // bf16's 128 + z is not exact; f16's 1024 + z is
  for (const char* elem : {"bf16", "f16"}) {
    const spec::ChainSpec wrapped = spec::parseSpec(std::regex_replace(
        std::regex_replace(gptq, std::regex("f16"), elem), std::regex("%6 = convert %4 : f32"), "%6 = convert %4 : u8"));
    const OperandInfo b = analyzeB(wrapped);
    ASSERT_TRUE(b.nibbles && b.zero_value >= 0) << spec::printSpec(wrapped);
    EXPECT_EQ(b.zero_integer, std::string(elem) == "f16") << spec::printSpec(wrapped);
  }
  const char* nibbles_knob = std::getenv("FXFUSE_GEMV_NIBBLES");  // (codegen.GemvNibblesKnob.Off: no packed gemv)
  if (!gemvBuiltIn() || !nvrtcUsable() || (nibbles_knob && std::string(nibbles_knob) == "0")) return;
  for (const spec::ChainSpec* s : {&f16_i8, &bf16_i8, &f16_u8, &bf16_u8})
    for (long long m : {1, 16}) expectPackedGemvCompiles(*s, m, 16);
}

struct GemvCompile {
  std::string spec;
  std::string arch;
  long long m;
  long long n = 4096;
};
void PrintTo(const GemvCompile& c, std::ostream* os) { *os << c.spec << " " << c.arch << " M=" << c.m << " N=" << c.n; }

class GemvCompileSpec : public ::testing::TestWithParam<GemvCompile> {};

// Every spec that selects gemv compiles for sm_90a with the largest m-tile it gets (dense:
// M = 16, quantized: M = 64), plus a representative sm_80 / M = 1 subset.
TEST_P(GemvCompileSpec, ToCubin) {
  if (!gemvBuiltIn()) GTEST_SKIP() << "kernels/gemv.cuh not built in";
  REQUIRE_NVRTC();
  const GemvCompile& c = GetParam();
  spec::ChainSpec s = loadSpec(c.spec);
  KernelConfig cfg = chooseConfig(s, shapeFor(s, c.m, c.n), c.arch == "sm_80" ? 80 : 90);
  if (cfg.variant != "gemv") GTEST_SKIP() << "gemv not selected";
  KernelSource src = generate(s, cfg);
  Cubin out;
  try {
    out = test::compileForStatistics(src, c.arch);
  } catch (const CompileError& e) {
    FAIL() << e.what();
  }
  EXPECT_EQ(out.image.substr(0, 4), std::string("\x7f" "ELF"));
  EXPECT_NE(out.log.find("Compiling entry function '" + src.name + "' for '" + c.arch + "'"), std::string::npos)
      << out.log;
  expectSpillsAtMost(out.log, c.arch == "sm_90a" && cfg.bm == 64 && gemvCtasPerSm(cfg) >= 3 ? 8 : 0);
}

// Only the cases where gemv is selected (so no skipped tests when it is not).
std::vector<GemvCompile> gemvCases() {
  std::vector<GemvCompile> all;
  for (const std::string& name : test::specNames())
    all.push_back({name, "sm_90a", analyzeB(loadSpec(name)).quant_scale ? 64 : 16});
  all.push_back({"gemv_int8_linear_channel_scale_bias", "sm_80", 64});
  all.push_back({"gemv_fp8_e4m3_scalar_f32_scale", "sm_80", 1});
  all.push_back({"gemv_bf16_kn_bias_gelu", "sm_90a", 1});
  all.push_back({"gemv_int8_linear_channel_scale_bias", "sm_90a", 1});
  all.push_back({"gemv_int8_linear_channel_scale_bias", "sm_90a", 64, 14336});  // two CTAs per SM
  all.push_back({"gemv_fp8_e4m3_scalar_f32_scale", "sm_90a", 64, 14336});
  all.push_back({"gemv_int4_linear_group_scale_bias", "sm_90a", 1});
  all.push_back({"gemv_int4_linear_group_scale_bias", "sm_90a", 32});  // the product by wgmma
  all.push_back({"gemv_int4_kn_channel_scale_f16", "sm_90a", 32});
  all.push_back({"gemv_int4_linear_group_scale_bias", "sm_80", 16});
  std::vector<GemvCompile> out;
  for (const GemvCompile& c : all) {
    spec::ChainSpec s = loadSpec(c.spec);
    if (chooseConfig(s, shapeFor(s, c.m, c.n), c.arch == "sm_80" ? 80 : 90).variant == "gemv") out.push_back(c);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Specs, GemvCompileSpec, ::testing::ValuesIn(gemvCases()), [](const auto& info) {
  return info.param.spec + "_" + info.param.arch + "_m" + std::to_string(info.param.m) +
         (info.param.n == 4096 ? "" : "_n" + std::to_string(info.param.n));
});

}  // namespace
}  // namespace fxfuse::codegen
