// The Hopper template's overlapped epilogue (FX_EPI_OVERLAP, kernels/sm90_wgmma_gemm.cuh): which
// chains have a 16-bit hand-off value (hooks.h epilogueHandoff), the hooks generated for it, the
// host's shared-memory and register arithmetic, the configs generate refuses, and the kernels
// NVRTC builds for sm_90a (no spills, the setmaxnreg budget kept). No GPU: the kernels' results
// are the GPU test test_hopper_overlapped_epilogue_on_every_tile's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "codegen/codegen.h"
#include "codegen/config_table.h"
#include "codegen/hooks.h"
#include "codegen/tma_desc.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

spec::ChainSpec parse(const std::string& body) { return spec::parseSpec("fxfuse.chain v1\ngemm mm\n" + body); }

// `x @ w + b`, GELU(tanh), then `* 0.5 + r` (the bench's residual chain as the pass emits it: mm : bf16)
const char* kResidualBf16Product =
    "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\n%3 = input 2 bf16 [n]\n"
    "%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\n%6 = const 0.5 : f32\n%7 = mul %5 %6 : bf16\n"
    "%8 = input 3 bf16 [m,n]\n%9 = add %7 %8 : bf16\noutput %9\n";
// F.linear with a bias (addmm: mm : f32, the bias added before the one rounding), then GELU
const char* kLinearBiasGelu =
    "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [n,k]\n%2 = mm %0 %1 : f32\n%3 = input 2 bf16 [n]\n"
    "%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\noutput %5\n";
// four column inputs around GELU, then a residual: the epilogue warps' heaviest measured register load
// (at 72 registers such chains spilled from three column inputs; bench/sm90/NOTES.md session 46)
const char* kFourColumnInputs =
    "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\n%3 = input 2 bf16 [n]\n"
    "%4 = add %2 %3 : bf16\n%5 = input 3 bf16 [n]\n%6 = mul %4 %5 : bf16\n%7 = gelu_tanh %6 : bf16\n"
    "%8 = input 4 bf16 [n]\n%9 = add %7 %8 : bf16\n%10 = input 5 bf16 [n]\n%11 = mul %9 %10 : bf16\n"
    "%12 = input 6 bf16 [m,n]\n%13 = add %11 %12 : bf16\noutput %13\n";
// the differential generator's seed 5001 (F.linear, bias, cos, sin, times a residual): ptxas 13.0 crashed
// (SIGSEGV, in-process under NVRTC) while the epilogue warps' pair-by-pair path called the out-of-line
// edge function (in the NVRTC worker since, a crash fails the test with CompilerCrashed)
const char* kSinCosResidual =
    "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [n,k]\n%2 = mm %0 %1 : f32\n%3 = input 2 bf16 [n]\n"
    "%4 = add %2 %3 : bf16\n%5 = cos %4 : bf16\n%6 = sin %5 : bf16\n%7 = input 3 bf16 [m,n]\n"
    "%8 = mul %7 %6 : bf16\noutput %8\n";
// addmm with alpha: the product scaled in f32, then the bias, rounded to f16 by the add
const char* kScaledAddmmF16 =
    "%0 = input 0 f16 [m,k]\n%1 = input 1 f16 [k,n]\n%2 = mm %0 %1 : f32\n%3 = const 0.5 : f32\n"
    "%4 = mul %2 %3 : f32\n%5 = input 2 f16 [n]\n%6 = add %4 %5 : f16\n%7 = relu %6 : f16\noutput %7\n";

TEST(EpilogueHandoff, IsTheFirst16BitValueAfterTheProduct) {
  EXPECT_EQ(epilogueHandoff(parse(kResidualBf16Product)), 2);  // the product itself
  EXPECT_EQ(epilogueHandoff(parse(kLinearBiasGelu)), 4);       // the bias add
  EXPECT_EQ(epilogueHandoff(parse(kScaledAddmmF16)), 6);       // through the f32 scale
}

TEST(EpilogueHandoff, RefusesWhereA16BitHandOffWouldChangeResultsOrMoveWork) {
  struct Case {
    const char* body;
    const char* why;
  };
  const Case cases[] = {
      // a residual added to the f32 product: the consumers would read it
      {"%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n%3 = input 2 bf16 [m,n]\n"
       "%4 = add %2 %3 : bf16\noutput %4\n",
       "along m"},
      // SiLU before the first rounding: the consumers would run it
      {"%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n%3 = silu %2 : bf16\noutput %3\n",
       "other than add"},
      // the f32 product used twice
      {"%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n%3 = add %2 %2 : f32\n"
       "%4 = mul %2 %3 : bf16\noutput %4\n",
       "two ops"},
      // two outputs
      {"%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\n%3 = relu %2 : bf16\noutput %2\n"
       "output %3\n",
       "one 16-bit tensor"},
      // an f32 output
      {"%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\noutput %2\n", "one 16-bit tensor"},
  };
  for (const Case& c : cases) {
    std::string why;
    EXPECT_EQ(epilogueHandoff(parse(c.body), &why), -1) << c.body;
    EXPECT_NE(why.find(c.why), std::string::npos) << c.body << "\n" << why;
  }
}

KernelConfig overlapped(int bn, int stages) {
  KernelConfig c{"sm90_wgmma", 128, bn, 64, stages, 384};
  c.epilogue_overlap = true;
  return c;
}

// The heuristic's rule (config_table.cpp overlapRule, bench/RESULTS.md Runs BI, BL): the overlapped epilogue
// on the 128x256 cooperative tile from three tiles per SM, and from 256 tiles at K <= 4096; the last tile's
// epilogue shared by the consumers up to four tiles per SM; in place of ping-pong for chains that read a
// residual at K <= 8192 from three tiles per SM; not below 256 tiles, not for other chains' ping-pong, not
// at K = 14336, not without a hand-off.
// Unsets a measurement knob the rule reads for one test, and restores what the environment had.
struct KnobUnset {
  explicit KnobUnset(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v, had_ = true;
    ::unsetenv(name);
  }
  ~KnobUnset() {
    if (had_) ::setenv(name_, saved_.c_str(), 1);
    else ::unsetenv(name_);
  }
  const char* name_;
  std::string saved_;
  bool had_ = false;
};

TEST(EpilogueOverlap, TheRuleTakesItWhereMeasuredAhead) {
  if (!test::hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  const KnobUnset unset("FXFUSE_SM90_LAST_EPILOGUE_SHARED");  // read per decision: the rule's own choice here
  const spec::ChainSpec gelu = test::biasGeluTanh();
  const spec::ChainSpec resid = parse(kResidualBf16Product);
  const auto plan = [](const spec::ChainSpec& s, long long m, long long n, long long k) {
    return describeConfig(chooseConfigForSize(s, m, n, k, 1, 90));
  };
  EXPECT_EQ(plan(gelu, 4096, 4096, 4096), "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared");
  EXPECT_EQ(plan(resid, 4096, 4096, 4096), "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared");
  // 256 tiles: the overlap alone lost 0.7-4 %, with the shared last tile at or ahead of the plain tile
  EXPECT_EQ(plan(resid, 2048, 4096, 4096), "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared");
  EXPECT_EQ(plan(gelu, 2048, 4096, 11008), "sm90_wgmma 128x256x64 s4 t384");  // K > 4096: not measured
  EXPECT_EQ(plan(gelu, 1024, 4096, 4096), "sm90_wgmma 128x256x64 s4 t384");   // 128 tiles: one round
  // a residual (session 51, Run BM on an H100): from 224 tiles, to K = 8192 with the shared last tile
  EXPECT_EQ(plan(resid, 1792, 4096, 4096), "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared");
  EXPECT_EQ(plan(gelu, 1792, 4096, 4096), "sm90_wgmma 128x256x64 s4 t384");
  EXPECT_EQ(plan(resid, 2048, 4096, 8192), "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared");
  EXPECT_EQ(plan(resid, 1280, 5120, 4096), "sm90_wgmma 128x256x64 s4 t384");  // 200 tiles: not measured
  EXPECT_EQ(plan(resid, 2048, 4096, 11008), "sm90_wgmma 128x256x64 s4 t384");  // K > 8192: not measured
  EXPECT_EQ(plan(resid, 1800, 4096, 4096), "sm90_wgmma 128x256x64 s4 t384");   // a partial row tile: not measured
  // a batch of two 896-row matrices: 224 tiles, not measured
  EXPECT_EQ(describeConfig(chooseConfigForSize(resid, 896, 4096, 4096, 2, 90)).find("epioverlap"), std::string::npos);
  // more than four tiles per SM: the overlap alone (4096 x 4304: 544 tiles)
  EXPECT_EQ(plan(gelu, 4096, 4304, 4096), "sm90_wgmma 128x256x64 s3 t384 epioverlap");
  // (m, n, k): the residual chain where the rule's ping-pong tile lost to it; at K = 14336 a tie on the H200,
  // 15 % on an H100 (Run BM), without the shared last tile (K > 8192 for a residual: unmeasured)
  EXPECT_EQ(plan(resid, 8192, 8192, 8192), "sm90_wgmma 128x256x64 s3 t384 epioverlap");
  EXPECT_EQ(plan(resid, 4096, 14336, 4096), "sm90_wgmma 128x256x64 s3 t384 epioverlap");
  EXPECT_EQ(plan(resid, 4096, 4096, 14336), "sm90_wgmma 128x256x64 s3 t384 epioverlap");
  // GELU(tanh) without a residual in place of 64x256 ping-pong (session 51: Runs BI, BM)
  EXPECT_EQ(plan(gelu, 8192, 8192, 8192), "sm90_wgmma 128x256x64 s3 t384 epioverlap");
  EXPECT_EQ(plan(gelu, 4096, 14336, 4096), "sm90_wgmma 128x256x64 s3 t384 epioverlap");
  const spec::ChainSpec silu = parse("%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\n"
                                     "%3 = silu %2 : bf16\noutput %3\n");
  EXPECT_EQ(plan(silu, 8192, 8192, 8192), "sm90_wgmma 64x256x64 s5 t384 pingpong");  // keeps ping-pong
  // no hand-off (two outputs): the plain tile
  const spec::ChainSpec two = test::loadSpec("f16_residual_silu_two_outputs");
  EXPECT_EQ(describeConfig(chooseConfigForSize(two, 4096, 4096, 4096, 1, 90)).find("epioverlap"), std::string::npos);
}

TEST(EpilogueOverlap, SharedMemoryAndRegisterBudget) {
  sm90::GemmConfig g = sm90ConfigOf(overlapped(256, 3));
  EXPECT_EQ(g.threads(), 384);  // the producer warpgroup's other warps run the epilogue
  // three 48 KB stages, 128 rows of (512 + 16) bytes of hand-off, the alignment slack
  EXPECT_EQ(g.dynSmemBytes(), 3 * 384 * 64 * 2 + 128 * 528 + 1024);
  EXPECT_TRUE(g.fitsSharedMemory());
  g.stages = 4;
  EXPECT_FALSE(g.fitsSharedMemory());
  sm90::GemmConfig h = sm90ConfigOf(overlapped(128, 5));
  EXPECT_EQ(h.dynSmemBytes(), 5 * 256 * 64 * 2 + 128 * 272 + 1024);
  EXPECT_TRUE(h.fitsSharedMemory());
  h.stages = 6;
  EXPECT_FALSE(h.fitsSharedMemory());
  // the producer warpgroup at 88, the consumers at 208: 88 + 2 x 208 = 3 x 168
  EXPECT_EQ(g.producerRegs(), 88);
  EXPECT_EQ(sm90::entryRegs(g), 168);
  EXPECT_EQ(sm90::safeConsumerRegs(g, 168), 208);
  EXPECT_TRUE(sm90::setmaxnregSafe(g, 168));
  EXPECT_FALSE(sm90::setmaxnregSafe(g, 160));
  EXPECT_NE(sm90::configDefines(g).find("#define FX_EPI_OVERLAP 1"), std::string::npos);
}

// The hand-off's hooks: fx_handoff2 computes the hand-off value from the accumulators (the
// addmm's bias read there), and the epilogue functions start from it: nothing after the
// hand-off reads the bias again.
TEST(EpilogueOverlap, HooksStartTheEpilogueFromTheHandOff) {
  const std::string code = generate(parse(kLinearBiasGelu), overlapped(256, 3)).code;
  EXPECT_NE(code.find("#define FX_EPI_OVERLAP 1"), std::string::npos);
  EXPECT_NE(code.find("#define FX_EPI_HANDOFF 1"), std::string::npos);
  EXPECT_NE(code.find("#define FX_HANDOFF_F16 0"), std::string::npos);
  const size_t handoff = code.find("fx_handoff2(const fxfuse::FxParams& p");
  ASSERT_NE(handoff, std::string::npos);
  const size_t hooks_begin = code.find("// ---- hooks for this chain ----");
  const size_t hooks_end = code.find("// ---- kernels/sm90_wgmma_gemm.cuh ----");
  ASSERT_LT(hooks_begin, hooks_end);
  // the bias (input 2) is read in fx_handoff2 only: the hand-off function is the hooks' last
  const std::string before = code.substr(hooks_begin, handoff - hooks_begin);
  const std::string in_handoff = code.substr(handoff, hooks_end - handoff);
  EXPECT_EQ(before.find("p.in[2]"), std::string::npos) << before;
  EXPECT_NE(in_handoff.find("p.in[2]"), std::string::npos) << in_handoff;
  // without the overlap the same chain's hooks have no hand-off
  KernelConfig plain = overlapped(256, 4);
  plain.epilogue_overlap = false;
  EXPECT_EQ(generateHooks(parse(kLinearBiasGelu), plain).find("fx_handoff2"), std::string::npos);
  EXPECT_NE(generateHooks(parse(kLinearBiasGelu), overlapped(256, 3)).find("fx_handoff2"), std::string::npos);
}

TEST(EpilogueOverlap, GenerateRefusesOtherTilesAndChainsWithoutAHandOff) {
  KernelConfig pingpong = overlapped(128, 5);
  pingpong.pingpong = true;
  KernelConfig split = overlapped(128, 5);
  split.bm = 64;
  split.split_k = 2;
  for (const KernelConfig& c : {pingpong, split})
    EXPECT_THROW(generate(parse(kLinearBiasGelu), c), CodegenError) << describeConfig(c);
  KernelConfig shared_plain{"sm90_wgmma", 128, 256, 64, 4, 384};  // the shared last tile without the overlap
  shared_plain.last_epilogue_shared = true;
  try {
    generate(parse(kLinearBiasGelu), shared_plain);
    ADD_FAILURE() << "the shared last tile was generated without the overlap";
  } catch (const CodegenError& e) {
    EXPECT_NE(std::string(e.what()).find("shared last tile"), std::string::npos) << e.what();
  }
  try {
    generate(parse("%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n%3 = silu %2 : bf16\n"
                   "output %3\n"),
             overlapped(256, 3));
    ADD_FAILURE() << "SiLU before the first rounding was generated";
  } catch (const CodegenError& e) {
    EXPECT_NE(std::string(e.what()).find("hand-off"), std::string::npos) << e.what();
  }
}

// Each overlapped tile NVRTC builds for sm_90a for chains with each kind of hand-off (the product,
// an addmm's bias add, an f16 one through an f32 scale) and a staged residual: no spills, and
// ptxas allocated the 168 registers the setmaxnreg budget (88 + 2 x 208) assumes.
TEST(EpilogueOverlap, CompilesWithoutSpills) {
  if (!test::hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  REQUIRE_NVRTC();
  for (const char* body : {kResidualBf16Product, kLinearBiasGelu, kScaledAddmmF16, kFourColumnInputs, kSinCosResidual})
    for (const KernelConfig& c : {overlapped(256, 3), overlapped(128, 5)}) {
      const Cubin out = test::compileForStatistics(generate(parse(body), c), "sm_90a");
      EXPECT_EQ(out.log.find("warning"), std::string::npos) << describeConfig(c) << "\n" << out.log;
      EXPECT_EQ(test::maxSpillBytes(out.log), 0) << describeConfig(c) << "\n" << body << out.log;
      EXPECT_EQ(test::registersUsed(out.log), 168) << describeConfig(c) << "\n" << out.log;
      EXPECT_TRUE(sm90::setmaxnregSafe(sm90ConfigOf(c), test::registersUsed(out.log))) << describeConfig(c);
    }
}

int countOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The shared last tile (KernelConfig::last_epilogue_shared: the consumers run the CTA's last tile's
// epilogue beside the epilogue warps): compiled in, and still without spills at the same registers, on the
// chains with the most column inputs, a residual, and sin / cos (the chain that crashed ptxas 13.0 with a
// call in the setmaxnreg.dec region); and the epilogue's code is there once, as without it: its hand-off
// loads (ld.shared.v4) are no more (a second inlined copy had 7 against 4, and cost 25 % more compile
// time, bench/sm90/NOTES.md sessions 48-49).
TEST(EpilogueOverlap, TheSharedLastTileCompilesWithoutSpills) {
  if (!test::hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  REQUIRE_NVRTC();
  const auto shared = [](int bn, int stages) {
    KernelConfig c = overlapped(bn, stages);
    c.last_epilogue_shared = true;
    return c;
  };
  std::string shared_ptx;
  for (const char* body : {kResidualBf16Product, kFourColumnInputs, kSinCosResidual})
    for (const KernelConfig& c : {shared(256, 3), shared(128, 5)}) {
      const KernelSource src = generate(parse(body), c);
      EXPECT_NE(src.code.find("#define FX_EPI_LAST_SHARED 1"), std::string::npos);
      const bool keep_ptx = shared_ptx.empty();
      const Cubin out = test::compileForStatistics(src, "sm_90a", keep_ptx);
      EXPECT_EQ(out.log.find("warning"), std::string::npos) << describeConfig(c) << "\n" << out.log;
      EXPECT_EQ(test::maxSpillBytes(out.log), 0) << describeConfig(c) << "\n" << body << out.log;
      EXPECT_EQ(test::registersUsed(out.log), 168) << describeConfig(c) << "\n" << out.log;
      if (keep_ptx) shared_ptx = out.ptx;
    }
  const KernelSource plain = generate(parse(kResidualBf16Product), overlapped(256, 3));
  EXPECT_NE(plain.code.find("#define FX_EPI_LAST_SHARED 0"), std::string::npos);
  const std::string plain_ptx = test::compileForStatistics(plain, "sm_90a", true).ptx;
  ASSERT_GT(countOf(plain_ptx, "ld.shared.v4"), 0);
  EXPECT_LE(countOf(shared_ptx, "ld.shared.v4"), countOf(plain_ptx, "ld.shared.v4"));
}

// The measurement knob FXFUSE_SM90_LAST_EPILOGUE_SHARED acts on the config, so the tile's name says what
// runs: "1" gives the rule's overlapped tile above four tiles per SM the shared last tile, "0" takes it
// from the rule's at 4096^3; neither touches a tile without the overlap.
TEST(EpilogueOverlap, TheSharedLastTileKnobNamesTheTile) {
  if (!test::hopperBuiltIn()) GTEST_SKIP() << "built without the Hopper template";
  const spec::ChainSpec resid = parse(kResidualBf16Product);
  const auto plan = [&](long long m, long long n, long long k) {
    return describeConfig(chooseConfigForSize(resid, m, n, k, 1, 90));
  };
  const KnobUnset unset("FXFUSE_SM90_LAST_EPILOGUE_SHARED");  // restored also when an expectation throws
  ::setenv("FXFUSE_SM90_LAST_EPILOGUE_SHARED", "1", 1);
  EXPECT_EQ(plan(8192, 8192, 8192), "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared");
  EXPECT_EQ(plan(4096, 4096, 14336), "sm90_wgmma 128x256x64 s3 t384 epioverlap lastshared");  // K > 4096
  EXPECT_EQ(plan(1024, 4096, 4096), "sm90_wgmma 128x256x64 s4 t384");  // no overlap (128 tiles): not touched
  ::setenv("FXFUSE_SM90_LAST_EPILOGUE_SHARED", "0", 1);
  EXPECT_EQ(plan(4096, 4096, 4096), "sm90_wgmma 128x256x64 s3 t384 epioverlap");
  const KernelConfig c = chooseConfigForSize(resid, 4096, 4096, 4096, 1, 90);
  EXPECT_NE(generate(resid, c).code.find("#define FX_EPI_LAST_SHARED 0"), std::string::npos);
  ::setenv("FXFUSE_SM90_LAST_EPILOGUE_SHARED", "yes", 1);
  EXPECT_THROW(plan(4096, 4096, 4096), CodegenError);
}

}  // namespace
}  // namespace fxfuse::codegen
