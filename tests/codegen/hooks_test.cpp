// Structure of generated sources: operand analysis, hooks present, names deterministic,
// config selection, user errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "codegen/codegen.h"
#include "codegen/embedded_sources.h"
#include "codegen/hooks.h"
#include "codegen/hopper_tile_choice.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

using test::loadSpec;

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

KernelConfig generic16() { return {"sm80_mma", 128, 128, 32, 2, 256}; }

TEST(Hooks, Int8WeightIsQuantizedB) {
  spec::ChainSpec s = loadSpec("doc_example_int8_gelu");
  OperandInfo a = analyzeA(s), b = analyzeB(s);
  EXPECT_TRUE(a.plain);
  EXPECT_EQ(a.slot, 0);
  EXPECT_TRUE(a.kmajor);
  EXPECT_FALSE(b.plain);
  EXPECT_TRUE(b.quant);
  EXPECT_EQ(b.slot, 1);
  EXPECT_EQ(b.raw, spec::DType::I8);
  EXPECT_TRUE(b.kmajor);  // [n,k]
  std::string h = generateHooks(s, generic16());
  EXPECT_TRUE(has(h, "#define FX_B_QUANT 1"));
  EXPECT_TRUE(has(h, "using FxRawB = signed char;"));
  EXPECT_TRUE(has(h, "fx_dequant_b(const fxfuse::FxParams& p, long long b, long long k, long long n, FxRawB raw)"));
  EXPECT_TRUE(has(h, "const float v1 = fx_cvt_i8(raw);  // %1 = input 1 i8 [n,k]"));
  EXPECT_TRUE(has(h, "const float v2 = fx_ld_bf16(p.in[2].ptr, n * p.in[2].sn);  // %2 = input 2 bf16 [n,1]"));
  // the output, used by nothing else: rounded by its store only
  EXPECT_TRUE(has(h, "const float v8 = fx_gelu_tanh(v7);  // %8 = gelu_tanh %7 : bf16"));
}

// AWQ's words (n packed in the order 0 4 1 5 2 6 3 7): column n reads the 4-bit value order[n % 8] of word n / 8, the
// order a nibble table (0x73625140: value j of it is order[j]) indexed by n % 8, in the generic kernels' element-wise
// hooks (the gemv's packed path reads the words itself: gemv_test PackedInt4AwqWords).
TEST(Hooks, WordsInAnOrderReadTheirTable) {
  spec::ChainSpec s = loadSpec("awq_words_order_group_scale_bias");
  const std::string h = generateHooks(s, generic16());
  EXPECT_TRUE(has(h, "fx_ld_nibble_i32(p.in[1].ptr, k * p.in[1].sk + ((n) >> 3) * p.in[1].sn, "
                     "((0x73625140u >> (((unsigned)(n) & 7u) << 2)) & 7u))"))
      << h;
  EXPECT_TRUE(has(h, "fx_ld_nibble_i32(p.in[2].ptr, (k >> 7) * p.in[2].sk + ((n) >> 3) * p.in[2].sn, "
                     "((0x73625140u >> (((unsigned)(n) & 7u) << 2)) & 7u))"))
      << h;
  // the plain order reads value n % 8 (GPTQ's zero points)
  spec::ChainSpec plain = spec::parseSpec(std::regex_replace(spec::printSpec(s), std::regex(" order 0 4 1 5 2 6 3 7"), ""));
  EXPECT_TRUE(has(generateHooks(plain, generic16()),
                  "fx_ld_nibble_i32(p.in[1].ptr, k * p.in[1].sk + ((n) >> 3) * p.in[1].sn, n)"));
}

TEST(Hooks, PlainOperandsAndLayouts) {
  spec::ChainSpec s = loadSpec("transposed_a_col_bias_i8_input");
  EXPECT_FALSE(analyzeA(s).kmajor);  // [k,m]
  EXPECT_FALSE(analyzeB(s).kmajor);  // [k,n]
  EXPECT_TRUE(analyzeB(s).plain);
  std::string h = generateHooks(s, generic16());
  EXPECT_TRUE(has(h, "#define FX_A_PLAIN 1"));
  EXPECT_TRUE(has(h, "#define FX_A_KMAJOR 0"));
  EXPECT_TRUE(has(h, "#define FX_B_QUANT 0"));
  EXPECT_TRUE(has(h, "return reinterpret_cast<const FxElemA*>(p.in[0].ptr) + (k * p.in[0].sk + m * p.in[0].sm);"));
  EXPECT_TRUE(has(h, "const bool v8 = fx_ld_bool(p.in[4].ptr, n * p.in[4].sn);"));
}

TEST(Hooks, APrologueIsNotPlain) {
  spec::ChainSpec s = loadSpec("a_prologue_row_scale");
  EXPECT_FALSE(analyzeA(s).plain);
  std::string h = generateHooks(s, generic16());
  EXPECT_TRUE(has(h, "#define FX_A_PLAIN 0"));
  EXPECT_TRUE(has(h, "const float v1 = fx_ld_f32(p.in[1].ptr, m * p.in[1].sm);  // %1 = input 1 f32 [m,1]"));
  EXPECT_TRUE(has(h, "return __float2bfloat16_rn(v5);"));
}

TEST(Hooks, BatchedOutputsUseBatchStride) {
  std::string h = generateHooks(loadSpec("bmm_shared_b_f32_and_f16_out"), generic16());
  EXPECT_TRUE(has(h, "#define FX_BATCHED 1"));
  EXPECT_TRUE(has(h, "fx_st_f32(p.out[0].ptr, b * p.out[0].sb + m * p.out[0].sm + n * p.out[0].sn, o.o0);"));
  EXPECT_TRUE(has(h, "fx_ld_bf16(p.in[2].ptr, b * p.in[2].sb + n * p.in[2].sn)"));
  // B has no batch dim: shared by every batch.
  EXPECT_TRUE(has(h, "reinterpret_cast<const FxElemB*>(p.in[1].ptr) + (k * p.in[1].sk + n * p.in[1].sn)"));
}

TEST(Hooks, ZeroDimScaleReadsElementZero) {
  std::string h = generateHooks(loadSpec("fp8_e4m3_per_tensor_scale"), generic16());
  EXPECT_TRUE(has(h, "const float v2 = fx_ld_f32(p.in[2].ptr, 0);  // %2 = input 2 f32 []"));
  // cuda_fp8.h's class type (not __nv_fp8_storage_t, which is unsigned char): templates tell fp8 from u8.
  EXPECT_TRUE(has(h, "using FxRawB = __nv_fp8_e4m3;"));
  EXPECT_TRUE(has(h, "fx_cvt_f8e4m3(raw.__x)"));
  std::string code = generate(loadSpec("fp8_e4m3_per_tensor_scale"), generic16()).code;
  EXPECT_TRUE(has(code, "#include <cuda_fp8.h>"));
  EXPECT_FALSE(has(generate(loadSpec("bare_bf16_mm"), generic16()).code, "cuda_fp8.h"));
}

// The Hopper template's fast epilogue takes the values that depend on (b, n) only from FxCol,
// computed once per column pair by fx_epilogue_cols (16-bit inputs along n by one 4-byte load,
// which fx_epilogue2_vec_ok checks): the per-element function then loads nothing of them.
// The text from `start` to the end of its function (`end` "\n}\n") or struct ("\n};\n").
std::string body(const std::string& h, const std::string& start, const char* end = "\n}\n") {
  size_t a = h.find(start);
  if (a == std::string::npos) return "";
  size_t b = h.find(end, a);
  return h.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

TEST(Hooks, ColumnValuesAreComputedOncePerColumnPair) {
  spec::ChainSpec s = spec::parseSpec(
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
      "%3 = input 2 bf16 [n]\n%4 = input 3 f32 [n]\n%5 = const 2 : f32\n%6 = mul %4 %5 : f32\n"
      "%7 = add %2 %3 : f32\n%8 = mul %7 %6 : f32\n%9 = input 4 bf16 [m,n]\n%10 = add %8 %9 : bf16\noutput %10\n");
  std::string h = generateHooks(s, generic16());
  const std::string col = body(h, "struct FxCol {", "\n};\n");
  EXPECT_TRUE(has(col, "float v3;"));  // bias: read by the m-varying add
  EXPECT_TRUE(has(col, "float v6;"));  // scale * 2: the op, not its input
  EXPECT_FALSE(has(col, "v4;"));
  EXPECT_FALSE(has(col, "v5;"));       // constants fold where they are used
  EXPECT_FALSE(has(col, "v9;"));       // the [m,n] residual varies along m
  const std::string cols = body(h, "__device__ __forceinline__ void fx_epilogue_cols(");
  EXPECT_TRUE(has(cols, "const float2 in3 = fx_ld2_bf16(p.in[2].ptr, n);"));  // sn == 1 (vec_ok)
  EXPECT_TRUE(has(cols, "c0 = fx_epilogue_col(p, b, n, in3.x);"));
  EXPECT_TRUE(has(cols, "c1 = fx_epilogue_col(p, b, n + 1, in3.y);"));
  const std::string one = body(h, "__device__ __forceinline__ FxCol fx_epilogue_col(");
  EXPECT_TRUE(has(one, "const float v4 = fx_ld_f32(p.in[3].ptr, n * p.in[3].sn);"));  // f32: per column
  EXPECT_TRUE(has(one, "const float v6 = (v4 * v5);"));
  EXPECT_TRUE(has(one, "return FxCol{v3, v6};"));
  // both elements of the pair side by side, from the two columns' values
  const std::string values = body(h, "__device__ __forceinline__ unsigned int fx_epilogue2_packed(");
  EXPECT_TRUE(has(values, "const float v3_0 = c0.v3, v3_1 = c1.v3;"));
  EXPECT_TRUE(has(values, "const float v6_0 = c0.v6, v6_1 = c1.v6;"));
  EXPECT_FALSE(has(values, "p.in[2]"));
  EXPECT_FALSE(has(values, "p.in[3]"));
  EXPECT_FALSE(has(values, "v4"));
  EXPECT_TRUE(has(values, "const float v9_0 = in9.x, v9_1 = in9.y;"));  // the residual: a paired load
  const std::string ok = body(h, "__device__ __forceinline__ bool fx_epilogue2_vec_ok(");
  EXPECT_TRUE(has(ok, "p.in[2].sn == 1 && fx_aligned4(p.in[2].ptr, 0, 2)"));
  EXPECT_FALSE(has(ok, "p.in[3]"));  // f32: loaded per column, any layout
  // the residual is staged with the output (16-byte loads): aligned like it
  EXPECT_TRUE(has(ok, "p.in[4].sn == 1 && p.in[4].sm % 8 == 0 && fx_aligned16(p.in[4].ptr)"));
}

TEST(Hooks, ResidualPairsAreOneLoadOnTheFastPath) {
  spec::ChainSpec s = spec::parseSpec(
      "fxfuse.chain v1\ngemm bmm\n%0 = input 0 bf16 [b,m,k]\n%1 = input 1 bf16 [b,k,n]\n%2 = mm %0 %1 : f32\n"
      "%3 = input 2 bf16 [b,m,n]\n%4 = add %2 %3 : bf16\n%5 = input 3 f32 [b,m,n]\n%6 = mul %4 %5 : bf16\n"
      "%7 = input 4 bf16 [b,n,m]\n%8 = add %6 %7 : bf16\noutput %8\n");
  std::string h = generateHooks(s, generic16());
  // one bf16 output: the pair is packed (the Hopper template stages it for 16-byte stores), and
  // the one bf16 input along m and n is staged with it: the pair comes in as a word
  EXPECT_TRUE(has(h, "#define FX_EPI_STAGED_IN 1"));
  const std::string packed = body(h, "__device__ __forceinline__ unsigned int fx_epilogue2_packed(");
  EXPECT_TRUE(has(packed, "const FxCol& c0, const FxCol& c1, unsigned int in_pair)"));
  EXPECT_TRUE(has(packed, "const float2 in3 = fx_unpack2_bf16(in_pair);"));
  EXPECT_TRUE(has(packed, "const float v3_0 = in3.x, v3_1 = in3.y;"));
  // each bf16 rounding of the pair by one conversion (the residual add, the multiply)
  EXPECT_TRUE(has(packed, "fx_round2_bf16((v2_0 + v3_0), (v2_1 + v3_1), v4_0, v4_1);"));
  EXPECT_TRUE(has(packed, "fx_round2_bf16((v4_0 * v5_0), (v4_1 * v5_1), v6_0, v6_1);"));
  EXPECT_TRUE(has(packed, "return fx_pack2_bf16(o0.o0, o1.o0);"));
  EXPECT_TRUE(has(body(h, "__device__ __forceinline__ const char* fx_staged_in("),
                  "return (const char*)p.in[2].ptr + 2 * (b * p.in[2].sb + m * p.in[2].sm + n);"));
  // unstaged (FX_SM90_STAGED_STORE=0): one 4-byte load for both columns; the output's sn == 1 is
  // in fx_epilogue2_vec_ok: its offset has no n stride (the multiply cost a 64-bit IMAD per
  // store, and ptxas spills with it in the residual chains)
  const std::string vec = body(h, "__device__ __forceinline__ void fx_epilogue2_vec(");
  EXPECT_TRUE(has(vec, "fx_st_u32(p.out[0].ptr, b * p.out[0].sb + m * p.out[0].sm + n, fx_epilogue2_packed(p, b, m, "
                       "n, acc0, acc1, c0, c1, fx_ld_u32(p.in[2].ptr, b * p.in[2].sb + m * p.in[2].sm + n)));"));
  // f32, and a 16-bit input contiguous along m: per element, any layout (column n, then n + 1)
  EXPECT_TRUE(has(packed, "fx_ld_f32(p.in[3].ptr, b * p.in[3].sb + m * p.in[3].sm + n * p.in[3].sn)"));
  EXPECT_TRUE(has(packed, "fx_ld_f32(p.in[3].ptr, b * p.in[3].sb + m * p.in[3].sm + (n + 1) * p.in[3].sn)"));
  EXPECT_TRUE(has(packed, "fx_ld_bf16(p.in[4].ptr, b * p.in[4].sb + n * p.in[4].sn + m * p.in[4].sm)"));
  EXPECT_TRUE(has(packed, "fx_ld_bf16(p.in[4].ptr, b * p.in[4].sb + (n + 1) * p.in[4].sn + m * p.in[4].sm)"));
  const std::string ok = body(h, "__device__ __forceinline__ bool fx_epilogue2_vec_ok(");
  EXPECT_TRUE(has(ok, "p.in[2].sn == 1 && p.in[2].sm % 8 == 0 && fx_aligned16(p.in[2].ptr) && p.in[2].sb % 8 == 0"));
  EXPECT_FALSE(has(ok, "p.in[3]"));
  EXPECT_FALSE(has(ok, "p.in[4]"));
  // the edge path (fx_epilogue2) keeps the per-element loads
  const std::string edge = body(h, "__device__ __forceinline__ FxOutValues fx_epilogue_values(");
  EXPECT_TRUE(has(edge, "fx_ld_bf16(p.in[2].ptr, b * p.in[2].sb + m * p.in[2].sm + n * p.in[2].sn)"));
}

TEST(Hooks, OneSixteenBitOutputIsStagedForWideStores) {
  const char* head = "fxfuse.chain v1\ngemm bmm\n%0 = input 0 f16 [b,m,k]\n%1 = input 1 f16 [b,k,n]\n%2 = mm %0 %1 : f32\n";
  spec::ChainSpec one = spec::parseSpec(std::string(head) + "%3 = relu %2 : f16\noutput %3\n");
  EXPECT_TRUE(stagedStore(one));
  std::string h = generateHooks(one, generic16());
  EXPECT_TRUE(has(h, "#define FX_EPI_STAGED 1"));
  EXPECT_TRUE(has(body(h, "__device__ __forceinline__ unsigned int fx_epilogue2_packed("), "return fx_pack2_f16(o0.o0, o1.o0);"));
  EXPECT_TRUE(has(body(h, "__device__ __forceinline__ char* fx_staged_out("),
                  "return (char*)p.out[0].ptr + 2 * (b * p.out[0].sb + m * p.out[0].sm + n);"));
  // 16-byte stores of 8 elements: aligned base, row and batch strides multiples of 8 elements
  EXPECT_TRUE(has(body(h, "__device__ __forceinline__ bool fx_epilogue2_vec_ok("),
                  "p.out[0].sn == 1 && p.out[0].sm % 8 == 0 && fx_aligned16(p.out[0].ptr) && p.out[0].sb % 8 == 0"));
  // two residuals: neither is staged (each keeps its 4-byte pair loads and their alignment terms)
  spec::ChainSpec two_in = spec::parseSpec(std::string(head) +
                                           "%3 = input 2 f16 [b,m,n]\n%4 = input 3 f16 [b,m,n]\n%5 = add %2 %3 : f32\n"
                                           "%6 = add %5 %4 : f16\noutput %6\n");
  const std::string h2 = generateHooks(two_in, generic16());
  EXPECT_TRUE(has(h2, "#define FX_EPI_STAGED 1"));
  EXPECT_FALSE(has(h2, "FX_EPI_STAGED_IN"));
  EXPECT_TRUE(has(body(h2, "__device__ __forceinline__ unsigned int fx_epilogue2_packed("),
                  "const float2 in3 = fx_ld2_f16(p.in[2].ptr, b * p.in[2].sb + m * p.in[2].sm + n);"));
  EXPECT_TRUE(has(body(h2, "__device__ __forceinline__ bool fx_epilogue2_vec_ok("),
                  "p.in[3].sn == 1 && p.in[3].sm % 2 == 0 && fx_aligned4(p.in[3].ptr, 0, 2) && p.in[3].sb % 2 == 0"));
  // two outputs, or a 32-bit one: the pairs are stored from the fragment as before
  for (const char* tail : {"%3 = relu %2 : f16\noutput %3\noutput %2\n", "%3 = relu %2 : f32\noutput %3\n"}) {
    spec::ChainSpec s = spec::parseSpec(std::string(head) + tail);
    EXPECT_FALSE(stagedStore(s)) << tail;
    const std::string hs = generateHooks(s, generic16());
    EXPECT_FALSE(has(hs, "FX_EPI_STAGED")) << tail;
    EXPECT_TRUE(has(hs, "__device__ __forceinline__ void fx_epilogue2_vec(")) << tail;
  }
}

TEST(Hooks, BatchedColumnInputPairsNeedAnEvenBatchStride) {
  spec::ChainSpec s = spec::parseSpec(
      "fxfuse.chain v1\ngemm bmm\n%0 = input 0 f16 [b,m,k]\n%1 = input 1 f16 [b,k,n]\n%2 = mm %0 %1 : f32\n"
      "%3 = input 2 f16 [b,1,n]\n%4 = add %2 %3 : f16\noutput %4\n");
  std::string h = generateHooks(s, generic16());
  const std::string ok = body(h, "__device__ __forceinline__ bool fx_epilogue2_vec_ok(");
  EXPECT_TRUE(has(ok, "p.in[2].sn == 1 && fx_aligned4(p.in[2].ptr, 0, 2) && p.in[2].sb % 2 == 0"));
  const std::string cols = body(h, "__device__ __forceinline__ void fx_epilogue_cols(");
  EXPECT_TRUE(has(cols, "const float2 in3 = fx_ld2_f16(p.in[2].ptr, b * p.in[2].sb + n);"));
  EXPECT_TRUE(has(body(h, "struct FxCol {", "\n};\n"), "float v3;"));
}

// gemv's packed int8 conversion is asked for only when the scale's values are exact in the
// MMA type: a scale of that dtype (kernels/gemv.cuh, i8pair_scaled).
TEST(Hooks, ScaleInElemOnlyForAScaleOfTheMmaDtype) {
  const std::string head = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [n,k]\n";
  struct Case {
    std::string rest;
    int want;
  };
  for (const Case& c :
       {Case{"%2 = input 2 bf16 [n,1]\n%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n"
             "%6 = convert %5 : bf16\noutput %6\n", 1},
        Case{"%2 = input 2 f32 [n,1]\n%3 = convert %1 : f32\n%4 = mul %3 %2 : f32\n%5 = convert %4 : bf16\n"
             "%6 = mm %0 %5 : f32\n%7 = convert %6 : bf16\noutput %7\n", 0},
        Case{"%2 = input 2 f16 [n,1]\n%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n"
             "%6 = convert %5 : bf16\noutput %6\n", 0}}) {
    SCOPED_TRACE(c.rest);
    const spec::ChainSpec s = spec::parseSpec(head + c.rest);
    ASSERT_TRUE(analyzeB(s).quant_scale);
    EXPECT_EQ(analyzeB(s).scale_in_elem, c.want == 1);
    EXPECT_TRUE(has(generateHooks(s, generic16()), "#define FX_B_SCALE_IN_ELEM " + std::to_string(c.want) + "\n"));
  }
}

TEST(Generate, NamesAreDeterministicAndDistinct) {
  spec::ChainSpec s = loadSpec("bf16_linear3d_bias_gelu");
  KernelSource a = generate(s, generic16()), b = generate(s, generic16());
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.code, b.code);
  EXPECT_EQ(a.name.size(), std::string("fxfuse_").size() + 16);
  KernelConfig other = generic16();
  other.bm = 64;
  other.threads = 128;
  EXPECT_NE(generate(s, other).name, a.name);
  EXPECT_NE(generate(loadSpec("bare_bf16_mm"), generic16()).name, a.name);
  EXPECT_TRUE(has(a.code, "extern \"C\" __global__ void __launch_bounds__(FX_THREADS) FX_KERNEL_NAME("));
  EXPECT_TRUE(has(a.code, "#define FX_KERNEL_NAME " + a.name));
  EXPECT_EQ(a.grid, GridPolicy::Tiles);
}

// The programmatic-launch test's hook (FXFUSE_PDL_TRIGGER_AT_START, read on every generate) must be
// defined before the prelude whose fx_grid_dependency_wait reads it; defined after it, the trigger
// was compiled out and the GPU test's overlapping cases overlapped nothing (Run BD call 3).
TEST(Generate, PdlTriggerTestHookReachesThePrelude) {
  ::setenv("FXFUSE_PDL_TRIGGER_AT_START", "1", 1);
  const std::string code = generate(loadSpec("bf16_linear3d_bias_gelu"), generic16()).code;
  ::unsetenv("FXFUSE_PDL_TRIGGER_AT_START");
  const size_t define = code.find("#define FX_PDL_TRIGGER_AT_START 1\n");
  const size_t reader = code.find("#if defined(FX_PDL_TRIGGER_AT_START)");
  ASSERT_NE(define, std::string::npos);
  ASSERT_NE(reader, std::string::npos);
  EXPECT_LT(define, reader);
  // and only while it is set
  EXPECT_EQ(generate(loadSpec("bf16_linear3d_bias_gelu"), generic16()).code.find("#define FX_PDL_TRIGGER_AT_START"),
            std::string::npos);
}

TEST(Generate, UserErrors) {
  const std::string head = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n"
                           "%2 = mm %0 %1 : bf16\n";
  spec::ChainSpec f64 = spec::parseSpec(head + "%3 = convert %2 : f64\noutput %3\n");
  EXPECT_THROW(generate(f64, generic16()), CodegenError);
  spec::ChainSpec five = spec::parseSpec(head + "output %2\noutput %2\noutput %2\noutput %2\noutput %2\n");
  EXPECT_THROW(generate(five, generic16()), CodegenError);
  KernelConfig unknown{"tensor_magic", 128, 128, 32, 2, 256};
  EXPECT_THROW(generate(loadSpec("bare_bf16_mm"), unknown), CodegenError);
  spec::ChainSpec broken = loadSpec("bare_bf16_mm");
  broken.outputs = {0};
  EXPECT_THROW(generate(broken, generic16()), spec::SpecError);
}

TEST(ChooseConfig, Table) {
  ProblemShape big;
  big.M = big.N = big.K = 4096;
  spec::ChainSpec bf16 = loadSpec("bf16_linear3d_bias_gelu"), f32 = loadSpec("f32_addmm_relu");
  EXPECT_EQ(chooseConfig(bf16, big, 80).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(f32, big, 90).variant, "simt");
  std::string hopper = embeddedFile("kernels/sm90_wgmma_gemm.cuh") ? "sm90_wgmma" : "sm80_mma";
  // GELU(tanh): the Hopper kernel up to K = 4096 (Run L had it losing beyond; since session 25 from
  // 512 rows of one matrix up to K = 11008, since session 28 to 14336, below): past that generic, which the runtime serves
  // unfused. erf-GELU (bf16_linear3d_bias_gelu) was never measured fused: generic at any K. A
  // cheap epilogue takes the Hopper kernel at any K.
  spec::ChainSpec tanh_gelu = bf16;
  for (spec::Value& v : tanh_gelu.values)
    if (v.op == "gelu") v.op = "gelu_tanh";
  EXPECT_EQ(chooseConfig(tanh_gelu, big, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(bf16, big, 90).variant, "sm80_mma");
  ProblemShape deep = big;
  deep.K = 14336;
  EXPECT_EQ(chooseConfig(bf16, deep, 90).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(loadSpec("bare_bf16_mm"), deep, 90).variant, hopper);
  // Session 25 (bench/RESULTS.md Run AN, stored compare_tiles cells): from 512 rows of one matrix
  // GELU(tanh) then a residual up to K = 14336 (end to end Run AO), GELU(tanh) alone up to K =
  // 11008, since session 28 to 14336 (Run AQ, interleaved: 1.09-1.11x eager at seven shapes)
  EXPECT_EQ(chooseConfig(tanh_gelu, deep, 90).variant, hopper);
  ProblemShape k11008 = big;
  k11008.K = 11008;
  EXPECT_EQ(chooseConfig(tanh_gelu, k11008, 90).variant, hopper);
  ProblemShape batched = k11008;
  batched.B = 2;
  batched.M = 2048;
  EXPECT_EQ(chooseConfig(tanh_gelu, batched, 90).variant, "sm80_mma");  // batches: unmeasured
  ProblemShape past = deep;
  past.K = 16384;
  const spec::ChainSpec gelu_residual = spec::parseSpec(
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
      "%3 = gelu_tanh %2 : bf16\n%4 = input 2 bf16 [m,n]\n%5 = add %3 %4 : bf16\noutput %5\n");
  EXPECT_EQ(chooseConfig(gelu_residual, deep, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(gelu_residual, past, 90).variant, "sm80_mma");  // past the longest K measured
  EXPECT_EQ(chooseConfig(tanh_gelu, past, 90).variant, "sm80_mma");
  // SiLU alone from 1025 rows (session 25; refused in session 26 after block-timed losses; Run AQ,
  // interleaved: 1.02-1.11x eager at nine shapes, K = 4864-14336), not at 512-1024 rows
  // (unmeasured); a residual without GELU(tanh) not at all (unmeasured at a long K)
  const spec::ChainSpec silu_alone = spec::parseSpec(
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
      "%3 = silu %2 : bf16\noutput %3\n");
  EXPECT_EQ(chooseConfig(silu_alone, deep, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(silu_alone, past, 90).variant, "sm80_mma");
  ProblemShape k8192 = big;
  k8192.M = 8192;
  k8192.K = 8192;
  EXPECT_EQ(chooseConfig(silu_alone, k8192, 90).variant, hopper);
  k8192.M = 1024;
  EXPECT_EQ(chooseConfig(silu_alone, k8192, 90).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(tanh_gelu, k8192, 90).variant, hopper);
  k8192.M = 8192;
  EXPECT_EQ(chooseConfig(gelu_residual, k8192, 90).variant, hopper);
  ProblemShape deep_1024 = deep;
  deep_1024.M = 1024;
  EXPECT_EQ(chooseConfig(gelu_residual, deep_1024, 90).variant, hopper);
  // A residual the fast path cannot stage (not 16-byte aligned, or not contiguous along n)
  // would send the whole launch to the per-element edge path: the unfused path instead.
  const spec::ChainSpec residual = spec::parseSpec(
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
      "%3 = input 2 bf16 [m,n]\n%4 = add %2 %3 : bf16\noutput %4\n");
  EXPECT_EQ(chooseConfig(residual, big, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(residual, deep, 90).variant, "sm80_mma");  // without GELU(tanh): K > 4096 unmeasured
  ProblemShape unstaged = big;
  unstaged.align_bytes_residual = 4;
  EXPECT_EQ(chooseConfig(residual, unstaged, 90).variant, "sm80_mma");
  // The same for a 16-bit bias the fast path cannot pair, whatever the epilogue.
  ProblemShape odd_bias = big;
  odd_bias.align_bytes_columns = 2;
  const char* head = "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n";
  const spec::ChainSpec bias_relu = spec::parseSpec(std::string(head) +
                                                    "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = relu %4 : bf16\noutput %5\n");
  EXPECT_EQ(chooseConfig(bias_relu, big, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(bias_relu, odd_bias, 90).variant, "sm80_mma");
  // Only what was measured fused: one GELU(tanh) or SiLU, M >= 512 (B x M) or a decode batch whose
  // 64-row tiles fill the SMs (decodeBatchFillsSms).
  for (const char* tail : {"%3 = sigmoid %2 : bf16\noutput %3\n", "%3 = tanh %2 : bf16\noutput %3\n",
                           "%3 = silu %2 : f32\n%4 = gelu_tanh %3 : bf16\noutput %4\n"})
    EXPECT_EQ(chooseConfig(spec::parseSpec(std::string(head) + tail), big, 90).variant, "sm80_mma") << tail;
  const spec::ChainSpec silu = spec::parseSpec(std::string(head) + "%3 = silu %2 : bf16\noutput %3\n");
  EXPECT_EQ(chooseConfig(silu, big, 90).variant, hopper);
  const spec::ChainSpec gelu_tanh = spec::parseSpec(std::string(head) + "%3 = gelu_tanh %2 : bf16\noutput %3\n");
  ProblemShape small_m = big;
  small_m.M = 256;
  EXPECT_EQ(chooseConfig(gelu_tanh, small_m, 90).variant, hopper);  // 4 x 32 tiles of 64x128
  // SiLU alone where the heuristic's tile is one round of at least 96 tiles (Run AQ: 256 x 4096 x
  // 4096 1.17-1.20x eager on 128 tiles of 64x128)
  EXPECT_EQ(chooseConfig(silu, small_m, 90).variant, hopper);
  small_m.N = 11008;  // 64x128 in three rounds: 0.98x eager (Run AQ)
  EXPECT_EQ(chooseConfig(silu, small_m, 90).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(gelu_tanh, small_m, 90).variant, hopper);
  small_m.M = 128;
  small_m.N = 4096;  // 64 tiles of 64x128, refused for every chain (SiLU 0.95x eager, Run AQ)
  EXPECT_EQ(chooseConfig(silu, small_m, 90).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(gelu_tanh, small_m, 90).variant, "sm80_mma");
  small_m.N = 14336;  // 112 tiles of 64x256 in one round: 1.05-1.06x eager (Run AQ); since Run AT
  // 128x128 cooperative (2 % faster with SiLU at 128 x 4096 x 16384)
  EXPECT_EQ(sm90::chooseConfig(128, 14336, 4096, 1, 132).bn, 128);
  EXPECT_EQ(chooseConfig(silu, small_m, 90).variant, hopper);
  small_m.M = 256;
  small_m.N = 2048;
  EXPECT_EQ(chooseConfig(gelu_tanh, small_m, 90).variant, "sm80_mma");  // 4 x 16
  EXPECT_EQ(chooseConfig(silu, small_m, 90).variant, "sm80_mma");
  small_m.B = 2;  // 2 x 256 rows: as many as one 512-row matrix
  EXPECT_EQ(chooseConfig(silu, small_m, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(gelu_tanh, small_m, 90).variant, hopper);
  // A decode batch whose 64-row tiles fill the SMs keeps GELU(tanh) at a long K (Run AD: 256 x
  // 14336 x 4096, 128 tiles), and SiLU alone on 64x128 in one round from 192 rows (Run AO:
  // 1.03-1.30x eager at 192-256 rows, K = 8192-28672; Run AQ at K = 4096-8192), its wider tiles at
  // K = 4096 only (above); beyond K = 28672, with too few tiles (128 rows: 64) the K > 4096 refusal
  // stands (from 512 rows of one matrix: past K = 14336, above).
  ProblemShape long_k = big;
  long_k.M = 256;
  long_k.K = 14336;
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(silu, long_k, 90).variant, hopper);
  ProblemShape silu_rows = long_k;
  silu_rows.M = 128;
  silu_rows.N = 8192;  // 128 tiles of 64x128 (128 x 14336 x 8192: GELU measured, Run AK)
  EXPECT_EQ(chooseConfig(gelu_tanh, silu_rows, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, "sm80_mma");  // 128 rows on 64x128: unmeasured
  silu_rows.M = 192;
  silu_rows.N = 4096;
  silu_rows.K = 8192;
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, hopper);  // 192 x 8192 x 4096: 1.30x eager
  const spec::ChainSpec silu_then_residual = spec::parseSpec(
      std::string(head) + "%3 = silu %2 : bf16\n%4 = input 2 bf16 [m,n]\n%5 = add %3 %4 : bf16\noutput %5\n");
  EXPECT_EQ(chooseConfig(silu_then_residual, silu_rows, 90).variant, "sm80_mma");  // unmeasured
  silu_rows.K = 6144;  // between the measured K = 4096 and 8192 on 64x128
  EXPECT_EQ(chooseConfig(gelu_tanh, silu_rows, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, hopper);
  silu_rows.K = 4096;  // 192 x 4096 x 4096: 1.23x eager (Run AQ)
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, hopper);
  silu_rows.K = 2048;  // under the least K measured
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(gelu_tanh, silu_rows, 90).variant, hopper);
  silu_rows.K = 4096;
  // the wider tiles of a wider N in one round: SiLU on 64x256 and 128x256 won at K = 4096 (Run AQ:
  // 192 x 4096 x 11008 1.16x eager, 256 x 4096 x 14336 1.09-1.10x), unmeasured at a longer K
  silu_rows.N = 11008;  // 64x256 ping-pong, 129 tiles
  EXPECT_EQ(sm90::chooseConfig(192, 11008, 4096, 1, 132).bn, 256);
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, hopper);
  silu_rows.K = 14336;
  EXPECT_EQ(sm90::chooseConfig(192, 11008, 14336, 1, 132).bn, 256);
  EXPECT_EQ(chooseConfig(gelu_tanh, silu_rows, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, "sm80_mma");
  silu_rows.M = 256;
  silu_rows.N = 14336;  // 128x256 cooperative
  EXPECT_EQ(sm90::chooseConfig(256, 14336, 14336, 1, 132).bm, 128);
  EXPECT_EQ(chooseConfig(gelu_tanh, silu_rows, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, "sm80_mma");
  silu_rows.K = 4096;
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, hopper);
  silu_rows.M = 192;  // 64x128 in three rounds: 0.96x eager (Run AQ)
  EXPECT_EQ(sm90::chooseConfig(192, 14336, 4096, 1, 132).bn, 128);
  EXPECT_EQ(chooseConfig(silu, silu_rows, 90).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(gelu_tanh, silu_rows, 90).variant, hopper);
  long_k.K = 28672;  // one round of 64x128 (Run AL: 256 x 28672 x 4096, 1.04-1.07x mm against 1.08-1.11x)
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, hopper);
  long_k.K = 28736;
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, "sm80_mma");
  // the heuristic's tile in one round decides, not 64x128's: 256 x 28672 x 8192 takes 64x256 (128
  // tiles; 64x128 would take two rounds), 1.01-1.03x cuBLAS mm alone against cuBLAS + the
  // epilogue kernel's 1.05-1.07x (Run AL); 256 x 14336 x 6144 takes 128x128 cooperative in one
  // round (96 tiles; 64x128 in two ran 1.21-1.28x, 128x128 1.05-1.10x against 1.11-1.16x); with
  // fewer than 96 of them (N = 5120: 80) 64x128 in two rounds, refused
  long_k.K = 28672;
  long_k.N = 8192;
  EXPECT_EQ(sm90::chooseConfig(256, 8192, 28672, 1, 132).bn, 256);
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, hopper);
  long_k.K = 14336;
  long_k.N = 6144;
  EXPECT_EQ(sm90::chooseConfig(256, 6144, 14336, 1, 132).bm, 128);
  EXPECT_FALSE(sm90::chooseConfig(256, 6144, 14336, 1, 132).pingpong);
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, hopper);
  EXPECT_EQ(sm90::chooseConfig(256, 6144, 4096, 1, 132).bm, 64);  // K = 4096: more rounds won (Run AD)
  long_k.N = 5120;
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, "sm80_mma");
  // 128x256 cooperative in one round on two whole row tiles (256 x 14336 at K = 14336: 112 tiles,
  // all three tiles tie): 1.02-1.05x cuBLAS mm alone against the unfused path's 1.07-1.11x (Run AM)
  long_k.N = 14336;
  EXPECT_EQ(sm90::chooseConfig(256, 14336, 14336, 1, 132).bn, 256);
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, hopper);
  // ... but not on a partial last row tile (224 rows: unmeasured at a long K)
  long_k.M = 224;
  EXPECT_EQ(sm90::chooseConfig(224, 14336, 14336, 1, 132).bn, 256);
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, "sm80_mma");
  // one 128-row tile (128 x 14336 x 12288, 96 tiles of 128x128 in one round, the tile the
  // heuristic takes) lost to the unfused path (1.07-1.20x against 1.08-1.13x, Run AM): refused
  long_k.M = 128;
  long_k.N = 12288;
  EXPECT_EQ(sm90::chooseConfig(128, 12288, 14336, 1, 132).bm, 128);
  EXPECT_FALSE(sm90::chooseConfig(128, 12288, 14336, 1, 132).pingpong);
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, "sm80_mma");
  long_k.M = 192;  // 128x128's last row tile half empty: 64x128 in two rounds, refused (Run AK)
  long_k.N = 8192;
  EXPECT_EQ(sm90::chooseConfig(192, 8192, 14336, 1, 132).bm, 64);
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, "sm80_mma");
  long_k.N = 4096;
  long_k.M = 128;
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, "sm80_mma");
  long_k.M = 512;  // one matrix of 512 rows: GELU(tanh) alone to K = 14336 since session 28
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, hopper);
  // 64x128 tiles in more than one round (192 x 14336 x 8192: 192 tiles) at K >= 8192: unfused,
  // cheap epilogues too (Run AK: every tile tied or lost to cuBLAS + the epilogue kernel)
  long_k.M = 192;
  long_k.N = 8192;
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, "sm80_mma");
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, "sm80_mma");
  long_k.K = 4096;  // more rounds won at K = 4096 (Run AD: M x K x N = 192 x 4096 x 14336; N = 8192 unmeasured)
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, hopper);
  // rule edges: 256 rows at K = 14336, 132 tiles (N = 4224) kept, 136 (4352) refused; 257 rows
  // are no decode batch, and their last 128-row tile holds one real row (the work share refuses
  // them; one round at K >= 8192 is taken only with that tile at least half real, Run AR)
  long_k.M = 256;
  long_k.K = 14336;
  long_k.N = 4224;
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, hopper);
  long_k.N = 4352;
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, "sm80_mma");
  long_k.N = 4096;
  long_k.M = 257;
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, "sm80_mma");
  long_k.M = 192;  // 96 tiles, the decode batch's least (Run AL: 5-10 % ahead at K = 14336)
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, hopper);
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, hopper);
  long_k.M = 129;  // 96 tiles too, the last row tile one row: no decode batch, refused (Run AE)
  EXPECT_EQ(chooseConfig(bias_relu, long_k, 90).variant, "sm80_mma");
  long_k.M = 240;  // 4 x 32 = 128 tiles, the last row tile 48 of 64 real: whole tiles only
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, "sm80_mma");
  // a K-major B (nn.Linear's weight) with 16-byte output rows keeps the kernel (unmeasured)
  ProblemShape rows16_kmajor = big;
  rows16_kmajor.M = 8192;
  rows16_kmajor.N = 2200;
  rows16_kmajor.b_kmajor = true;
  EXPECT_EQ(chooseConfig(bias_relu, rows16_kmajor, 90).variant, hopper);
  // one 64-row tile at K = 14336 (64 x 14336 x 14336, 112 tiles): GELU lost by 2-3 % (Run AK)
  long_k.M = 64;
  long_k.K = 14336;
  long_k.N = 14336;
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, "sm80_mma");
  long_k.M = 128;
  long_k.N = 8192;  // two row tiles, 128 tiles: won (Run AK, 1.06-1.15x eager)
  EXPECT_EQ(chooseConfig(gelu_tanh, long_k, 90).variant, hopper);
  // SiLU alone from 1025 rows, against eager's SiLU (the pass's question; Run AH): a larger work
  // share than the op's own unfused path needs, K / (K + 700), 85 % at K = 4096
  EXPECT_NE(siluAgainstEagerRefusal(silu, 8192, 640, 4096, 1)
                .find("SiLU alone: 64x256 tiles do 78 % of their slots' work, under the 85 %"),
            std::string::npos);  // 384 tiles of 64x256 in three rounds
  // 8192 x 1152: 64x256 in five rounds since session 21, 84.7 % (ran 0.95x eager, Run AJ)
  EXPECT_NE(siluAgainstEagerRefusal(silu, 8192, 1152, 4096, 1), "");
  EXPECT_EQ(siluAgainstEagerRefusal(silu, 4096, 1408, 4096, 1), "");  // 86.2 % (1.08-1.10x eager)
  ProblemShape wide = big;
  wide.M = 8192;
  wide.N = 1152;
  EXPECT_EQ(chooseConfig(silu, wide, 90).variant, hopper);  // the op keeps it: its own unfused path is slower
  EXPECT_NE(siluAgainstEagerRefusal(silu, 4096, 2304, 4096, 1), "");  // 84.7 %: ran at par with eager (Run AH)
  EXPECT_EQ(siluAgainstEagerRefusal(silu, 2048, 2048, 4096, 1), "");  // 97 % (1.04-1.11x eager)
  // N <= 128 on 128x128 in one round: refused under a share of 0.29 (8512 x 64: 0.24, 0.96-0.98x
  // eager in Runs AH, AI, AQ); 12288 x 64 (0.34) and 10240 x 128 (0.57) won (Runs AH, AQ)
  EXPECT_NE(siluAgainstEagerRefusal(silu, 8512, 64, 4096, 1).find("under the 29 %"), std::string::npos);
  EXPECT_EQ(siluAgainstEagerRefusal(silu, 12288, 64, 4096, 1), "");
  EXPECT_EQ(siluAgainstEagerRefusal(silu, 10240, 128, 4096, 1), "");
  EXPECT_EQ(siluAgainstEagerRefusal(silu, 4096, 64, 4096, 1), "");  // split-K there (1.04x eager, Run AQ)
  // at a long K the threshold counts K to 8192 (0.921): 64x256's 0.94 taken at K = 14336 (1.02-1.03x
  // eager, Run AQ), K / (K + 700) would have been 0.953
  EXPECT_EQ(siluAgainstEagerRefusal(silu, 4096, 4096, 14336, 1), "");
  EXPECT_NE(siluAgainstEagerRefusal(silu, 2048, 2432, 8192, 1), "");  // 0.745: 0.85x eager (Run AQ call 9)
  EXPECT_EQ(siluAgainstEagerRefusal(gelu_tanh, 8192, 1152, 4096, 1), "");  // not SiLU
  const spec::ChainSpec bias_silu =
      spec::parseSpec(std::string(head) + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = silu %4 : bf16\noutput %5\n");
  EXPECT_NE(siluAgainstEagerRefusal(bias_silu, 8192, 640, 4096, 1), "");  // SiLU the one expensive op
  const spec::ChainSpec silu_resid = spec::parseSpec(
      std::string(head) + "%3 = silu %2 : bf16\n%4 = input 2 bf16 [m,n]\n%5 = add %3 %4 : bf16\noutput %5\n");
  EXPECT_EQ(siluAgainstEagerRefusal(silu_resid, 8192, 1152, 4096, 1), "");  // a residual: not SiLU alone
  EXPECT_EQ(chooseConfig(loadSpec("bare_bf16_mm"), big, 90).variant, hopper);
  // A prologue on A rules out wgmma's TMA path.
  EXPECT_EQ(chooseConfig(loadSpec("a_prologue_row_scale"), big, 90).variant, "sm80_mma");
  ProblemShape small = big;
  small.M = 16;
  small.b_kmajor = true;  // bf16_linear3d_bias_gelu's weight is [n,k] (the runtime derives this from the spec)
  std::string smallVariant = embeddedFile("kernels/gemv.cuh") ? "gemv" : "sm80_mma";
  EXPECT_EQ(chooseConfig(bf16, small, 90).variant, smallVariant);
  if (smallVariant == "sm80_mma") EXPECT_EQ(chooseConfig(bf16, small, 90).bm, 64);
  ProblemShape misaligned = big;
  misaligned.align_bytes_a = 2;
  EXPECT_EQ(chooseConfig(bf16, misaligned, 90).variant, "sm80_mma");
  // Rows of B and the output 16-byte but not 32-byte aligned (N % 16 == 8), from 1025 rows at
  // K >= 4096: cuBLAS + the epilogue kernel (Run AK: 128x256 behind it in all 20 cells); rows
  // 32-byte aligned keep the kernel (N = 2192 and 4304 ran ahead).
  ProblemShape rows16 = big;
  rows16.M = 8192;
  for (long long n : {2184LL, 2200LL, 4296LL, 4312LL}) {
    rows16.N = n;
    EXPECT_EQ(chooseConfig(bias_relu, rows16, 90).variant, "sm80_mma") << n;
    if (hopper == "sm90_wgmma")
      EXPECT_NE(hopperRefusalForSize(bias_relu, 8192, n, 4096, 1, 90).find("a multiple of 16 but not of 32"),
                std::string::npos)
          << n;
  }
  for (long long n : {2192LL, 2208LL, 4304LL}) {
    rows16.N = n;
    EXPECT_EQ(chooseConfig(bias_relu, rows16, 90).variant, hopper) << n;
  }
  // Unmeasured below K = 4096 and at 1024 rows or fewer: the other rules decide.
  EXPECT_EQ(hopperRefusalForSize(bias_relu, 8192, 2200, 2048, 1, 90).find("not of 32"), std::string::npos);
  EXPECT_EQ(hopperRefusalForSize(bias_relu, 1024, 2200, 4096, 1, 90).find("not of 32"), std::string::npos);
}

TEST(ChooseConfig, LaunchDims) {
  KernelSource src = generate(loadSpec("bare_bf16_mm"), generic16());
  ProblemShape s;
  s.B = 3;
  s.M = 300;
  s.N = 129;
  s.K = 7;
  LaunchDims d = launchDims(src, s, 132);
  EXPECT_EQ(d.grid[0], 2u);
  EXPECT_EQ(d.grid[1], 3u);
  EXPECT_EQ(d.grid[2], 3u);
  EXPECT_EQ(d.block, 256u);
  EXPECT_EQ(d.smem_bytes, 0u);
}

// The epilogue-alone kernel: grid.x over one row's column pairs, grid.y over the rows, about 16
// blocks per SM in all; never more rows than exist, never over the y limit, at least one block.
TEST(ChooseConfig, LaunchDimsOfTheEpilogueAloneKernel) {
  const KernelSource src = generate(loadSpec("bare_bf16_mm"), pointwiseConfig());
  const auto dims = [&](long long B, long long M, long long N) {
    ProblemShape s;
    s.B = B;
    s.M = M;
    s.N = N;
    s.K = 64;
    return launchDims(src, s, 132);
  };
  LaunchDims d = dims(1, 256, 14336);  // 7168 pairs a row: 28 blocks of 256; 2112 / 28 = 75 rows
  EXPECT_EQ(d.grid[0], 28u);
  EXPECT_EQ(d.grid[1], 75u);
  EXPECT_EQ(d.grid[2], 1u);
  EXPECT_EQ(d.block, 256u);
  d = dims(1, 16, 14336);  // fewer rows than the target: every row its own
  EXPECT_EQ(d.grid[1], 16u);
  d = dims(3, 5, 7);  // one block covers a row (4 pairs); 15 rows
  EXPECT_EQ(d.grid[0], 1u);
  EXPECT_EQ(d.grid[1], 15u);
  d = dims(1, 4, 1 << 22);  // a row wider than the target: x capped at 2112, y at least 1
  EXPECT_EQ(d.grid[0], 2112u);
  EXPECT_EQ(d.grid[1], 1u);
  d = dims(1000, 1000, 2);  // a million rows of one pair: y at the target
  EXPECT_EQ(d.grid[0], 1u);
  EXPECT_EQ(d.grid[1], 2112u);
}

TEST(Embedded, TemplatesAndSupportFiles) {
  EXPECT_NE(embeddedFile("kernels/generic_gemm.cuh"), nullptr);
  EXPECT_NE(embeddedFile("kernel_abi.h"), nullptr);
  EXPECT_NE(embeddedFile("device/fx_prelude.cuh"), nullptr);
  EXPECT_EQ(embeddedFile("kernels/nope.cuh"), nullptr);
  EXPECT_EQ(std::string(embeddedFile("kernel_abi.h")), test::readFile(test::testDir() + "/../../codegen/kernel_abi.h"));
}

}  // namespace
}  // namespace fxfuse::codegen
