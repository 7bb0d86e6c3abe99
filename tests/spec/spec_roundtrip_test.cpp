// Canonical specs survive parse → print unchanged, and parsing derives the documented
// spaces; a spec built in memory prints the same text.
#include <gtest/gtest.h>

#include <cmath>

#include "spec/chain_spec.h"

namespace fxfuse::spec {
namespace {

const char* kDocExample =
    "fxfuse.chain v1\n"
    "gemm mm\n"
    "%0 = input 0 bf16 [m,k]\n"
    "%1 = input 1 i8 [n,k]\n"
    "%2 = input 2 bf16 [n,1]\n"
    "%3 = convert %1 : bf16\n"
    "%4 = mul %3 %2 : bf16\n"
    "%5 = mm %0 %4 : f32\n"
    "%6 = input 3 bf16 [n]\n"
    "%7 = add %5 %6 : bf16\n"
    "%8 = gelu_tanh %7 : bf16\n"
    "output %8\n";

TEST(SpecRoundTrip, DocExample) {
  ChainSpec s = parseSpec(kDocExample);
  EXPECT_EQ(printSpec(s), kDocExample);
  EXPECT_EQ(s.mmIndex(), 5);
  EXPECT_EQ(s.numInputSlots(), 4);
  EXPECT_EQ(s.values[0].space, Space::A);
  EXPECT_EQ(s.values[1].space, Space::B);
  EXPECT_EQ(s.values[2].space, Space::B);
  EXPECT_EQ(s.values[4].space, Space::B);
  EXPECT_EQ(s.values[5].space, Space::Out);
  EXPECT_EQ(s.values[6].space, Space::Out);
  EXPECT_EQ(s.values[8].space, Space::Out);
  EXPECT_EQ(s.values[1].dims, "nk");
  EXPECT_EQ(valueLetters(s, 4), "kn");
  EXPECT_EQ(valueLetters(s, 8), "mn");
}

// A group-wise dequantized weight: the scale [N, K/32] read at (n, k / 32).
TEST(SpecRoundTrip, GroupWiseScale) {
  const std::string text =
      "fxfuse.chain v1\n"
      "gemm mm kgroup 32\n"
      "%0 = input 0 bf16 [m,k]\n"
      "%1 = input 1 i8 [n,k]\n"
      "%2 = convert %1 : bf16\n"
      "%3 = input 2 bf16 [n,g]\n"
      "%4 = mul %2 %3 : bf16\n"
      "%5 = mm %0 %4 : bf16\n"
      "output %5\n";
  ChainSpec s = parseSpec(text);
  EXPECT_EQ(printSpec(s), text);
  EXPECT_EQ(s.kGroup, 32);
  EXPECT_EQ(s.values[3].dims, "ng");
  EXPECT_EQ(s.values[3].space, Space::B);
  EXPECT_EQ(valueLetters(s, 3), "kn");  // 'g' varies along k
  // without a group the gemm line is as it always was: the cache keys of every other chain stay
  s.kGroup = 0;
  s.values[3].dims = "n";
  EXPECT_EQ(printSpec(s).substr(0, 25), "fxfuse.chain v1\ngemm mm\n%");
}

// A packed int4 weight: two 4-bit values of k to a byte, read at (n, k / 2); an int32 word holds eight.
TEST(SpecRoundTrip, PackedFourBitWeight) {
  const std::string text =
      "fxfuse.chain v1\n"
      "gemm mm\n"
      "%0 = input 0 bf16 [m,k]\n"
      "%1 = input 1 u8 [n,p]\n"
      "%2 = convert %1 : bf16\n"
      "%3 = mm %0 %2 : bf16\n"
      "output %3\n";
  ChainSpec s = parseSpec(text);
  EXPECT_EQ(printSpec(s), text);
  EXPECT_EQ(s.values[1].dims, "np");
  EXPECT_EQ(s.values[1].space, Space::B);
  EXPECT_EQ(valueLetters(s, 1), "kn");  // 'p' varies along k
  EXPECT_EQ(nibblesPerElement(DType::U8), 2);
  EXPECT_EQ(nibblesPerElement(DType::I8), 2);
  EXPECT_EQ(nibblesPerElement(DType::I32), 8);
  EXPECT_EQ(nibblesPerElement(DType::BF16), 0);
}

TEST(SpecRoundTrip, ConstantsPrintCanonically) {
  const char* text =
      "fxfuse.chain v1\n"
      "gemm bmm\n"
      "%0 = input 0 f16 [b,m,k]\n"
      "%1 = input 1 f16 [b,k,n]\n"
      "%2 = mm %0 %1 : f16\n"
      "%3 = const 0.10000000000000001 : f32\n"
      "%4 = const -3 : f32\n"
      "%5 = const nan : f32\n"
      "%6 = const -inf : f32\n"
      "%7 = const inf : f32\n"
      "%8 = mul %2 %3 : f16\n"
      "%9 = clamp %8 %5 %4 : f16\n"
      "%10 = clamp %9 %6 %7 : f16\n"
      "output %10\n"
      "output %2\n";
  ChainSpec s = parseSpec(text);
  EXPECT_EQ(printSpec(s), text);
  EXPECT_TRUE(std::isnan(s.values[5].constant));
  EXPECT_EQ(s.outputs.size(), 2u);
}

TEST(SpecRoundTrip, NonCanonicalNumberBecomesCanonical) {
  std::string text =
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n"
      "%2 = mm %0 %1 : f32\n%3 = const 0.1 : f32\n%4 = mul %2 %3 : f32\noutput %4\n";
  std::string printed = printSpec(parseSpec(text));
  EXPECT_NE(printed.find("const 0.10000000000000001 : f32"), std::string::npos);
  EXPECT_EQ(printSpec(parseSpec(printed)), printed);
}

TEST(SpecRoundTrip, BuiltInMemoryMatchesText) {
  ChainSpec s;
  auto input = [&](int slot, DType d, const char* dims) {
    Value v;
    v.kind = ValueKind::Input;
    v.slot = slot;
    v.dtype = d;
    v.dims = dims;
    s.values.push_back(v);
  };
  auto op = [&](const char* name, std::vector<int> ops, DType d) {
    Value v;
    v.kind = std::string(name) == "mm" ? ValueKind::Mm : ValueKind::Op;
    v.op = name;
    v.operands = ops;
    v.dtype = d;
    s.values.push_back(v);
  };
  input(0, DType::BF16, "mmk");
  input(1, DType::BF16, "kn");
  op("mm", {0, 1}, DType::BF16);
  input(2, DType::BF16, "mn");  // residual
  op("add", {2, 3}, DType::BF16);
  op("silu", {4}, DType::BF16);
  s.outputs = {5, 4};
  validateSpec(s);
  EXPECT_EQ(s.values[3].space, Space::Out);
  EXPECT_EQ(printSpec(s),
            "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,m,k]\n%1 = input 1 bf16 [k,n]\n"
            "%2 = mm %0 %1 : bf16\n%3 = input 2 bf16 [m,n]\n%4 = add %2 %3 : bf16\n"
            "%5 = silu %4 : bf16\noutput %5\noutput %4\n");
  EXPECT_EQ(printSpec(parseSpec(printSpec(s))), printSpec(s));
}

TEST(SpecRoundTrip, SameSlotInTwoSpaces) {
  // A [n] bias used by both B's prologue and the epilogue: one input line per use space.
  const char* text =
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n"
      "%2 = input 2 bf16 [n]\n%3 = mul %1 %2 : bf16\n%4 = mm %0 %3 : f32\n"
      "%5 = input 2 bf16 [n]\n%6 = add %4 %5 : f32\n%7 = const 0.5 : f32\n"
      "%8 = mul %6 %7 : f32\n%9 = mul %0 %7 : bf16\noutput %8\n";
  // %9 is unused: rejected. Without it the spec is fine.
  EXPECT_THROW(parseSpec(text), SpecError);
  std::string ok = text;
  ok.erase(ok.find("%9 = mul"), std::string("%9 = mul %0 %7 : bf16\n").size());
  ChainSpec s = parseSpec(ok);
  EXPECT_EQ(s.values[2].space, Space::B);
  EXPECT_EQ(s.values[5].space, Space::Out);
  EXPECT_EQ(s.numInputSlots(), 3);
}

TEST(SpecRoundTrip, ConstSharedAcrossSpaces) {
  const char* text =
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 f16 [m,k]\n%1 = const 2 : f32\n"
      "%2 = mul %0 %1 : f16\n%3 = input 1 f16 [k,n]\n%4 = mm %2 %3 : f16\n"
      "%5 = mul %4 %1 : f16\noutput %5\n";
  ChainSpec s = parseSpec(text);
  EXPECT_EQ(printSpec(s), text);
  EXPECT_EQ(s.values[2].space, Space::A);
}

TEST(SpecHelpers, DTypes) {
  for (DType d : {DType::Bool, DType::I8, DType::U8, DType::I32, DType::I64, DType::F16, DType::BF16,
                  DType::F32, DType::F64, DType::F8E4M3, DType::F8E5M2}) {
    DType back;
    ASSERT_TRUE(parseDType(dtypeName(d), &back)) << dtypeName(d);
    EXPECT_EQ(back, d);
  }
  EXPECT_FALSE(parseDType("float", nullptr));
  EXPECT_EQ(dtypeBytes(DType::BF16), 2);
  EXPECT_EQ(dtypeBytes(DType::I64), 8);
  EXPECT_EQ(dtypeBytes(DType::F8E4M3), 1);
  EXPECT_TRUE(isFloating(DType::F8E5M2));
  EXPECT_FALSE(isFloating(DType::U8));
}

TEST(SpecHelpers, OpArity) {
  EXPECT_EQ(opArity("gelu_tanh"), 1);
  EXPECT_EQ(opArity("leaky_relu"), 2);
  EXPECT_EQ(opArity("where"), 3);
  EXPECT_EQ(opArity("mm"), -1);
  EXPECT_EQ(opArity("frobnicate"), -1);
  EXPECT_TRUE(isComparisonOp("ge"));
  EXPECT_FALSE(isComparisonOp("add"));
  EXPECT_EQ(opArity("log1p"), 1);
  EXPECT_EQ(opArity("round"), 1);
  EXPECT_EQ(allOpNames().size(), 42u);
}

}  // namespace
}  // namespace fxfuse::spec
