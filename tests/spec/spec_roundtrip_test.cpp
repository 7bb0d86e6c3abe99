// Canonical specs survive parse → print unchanged, and parsing derives the documented
// spaces; a spec built in memory prints the same text.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>

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
    "%7 = add %5 %6 : bf16 addmm\n"
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
  EXPECT_EQ(markedAddmmResult(s), 7);
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

// GPTQ's zero points, eight to an i32 word along n ('q'), beside its weight's words along k ('p').
TEST(SpecRoundTrip, PackedAlongN) {
  const std::string text =
      "fxfuse.chain v1\n"
      "gemm mm kgroup 128\n"
      "%0 = input 0 f16 [m,k]\n"
      "%1 = input 1 i32 [p,n]\n"
      "%2 = convert %1 : f32\n"
      "%3 = input 2 i32 [g,q]\n"
      "%4 = convert %3 : f32\n"
      "%5 = sub %2 %4 : f16\n"
      "%6 = mm %0 %5 : f16\n"
      "output %6\n";
  ChainSpec s = parseSpec(text);
  EXPECT_EQ(printSpec(s), text);
  EXPECT_EQ(s.values[3].dims, "gq");
  EXPECT_EQ(s.values[3].space, Space::B);
  EXPECT_EQ(valueLetters(s, 3), "kn");  // 'g' varies along k, 'q' along n
}

// AWQ's words: n packed in the order 0 4 1 5 2 6 3 7 within a word (the input's `order`), printed back as written.
TEST(SpecRoundTrip, PackedAlongNInAnOrder) {
  const std::string text =
      "fxfuse.chain v1\n"
      "gemm mm kgroup 128\n"
      "%0 = input 0 f16 [m,k]\n"
      "%1 = input 1 i32 [k,q] order 0 4 1 5 2 6 3 7\n"
      "%2 = convert %1 : i8\n"
      "%3 = input 2 f16 [g,n]\n"
      "%4 = convert %2 : f32\n"
      "%5 = mul %4 %3 : f16\n"
      "%6 = mm %0 %5 : f16\n"
      "expect 3 i64 [8] values 0 4 1 5 2 6 3 7\n"
      "output %6\n";
  ChainSpec s = parseSpec(text);
  EXPECT_EQ(printSpec(s), text);
  EXPECT_EQ(s.values[1].order, (std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_TRUE(s.values[3].order.empty());
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

// GPTQ's int4 weight: the folded chain reads the packed int32 words and the group-wise scale; the shift table `wf`
// and the group index `g_idx` it was folded for are op inputs after the values' (expect lines), checked by the op.
const char* kGptqExample =
    "fxfuse.chain v1\n"
    "gemm mm kgroup 128\n"
    "%0 = input 0 f16 [m,k]\n"
    "%1 = input 1 i32 [p,n]\n"
    "%2 = convert %1 : f16\n"
    "%3 = const 8 : f32\n"
    "%4 = sub %2 %3 : f16\n"
    "%5 = input 2 f16 [g,n]\n"
    "%6 = mul %4 %5 : f16\n"
    "%7 = mm %0 %6 : f16\n"
    "expect 3 i32 [1,8] values 0 4 8 12 16 20 24 28\n"
    "expect 4 i32 [k] kgroups\n"
    "output %7\n";

TEST(SpecRoundTrip, ExpectLines) {
  ChainSpec s = parseSpec(kGptqExample);
  EXPECT_EQ(printSpec(s), kGptqExample);
  EXPECT_EQ(s.numInputSlots(), 3);  // the kernels' inputs
  EXPECT_EQ(s.numOpInputs(), 5);    // what the op takes
  ASSERT_EQ(s.expects.size(), 2u);
  EXPECT_EQ(s.expects[0].slot, 3);
  EXPECT_EQ(s.expects[0].dtype, DType::I32);
  EXPECT_EQ(s.expects[0].kind, Expect::Kind::Values);
  EXPECT_EQ(s.expects[0].sizes, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(s.expects[0].values, (std::vector<int64_t>{0, 4, 8, 12, 16, 20, 24, 28}));
  EXPECT_EQ(s.expects[1].slot, 4);
  EXPECT_EQ(s.expects[1].kind, Expect::Kind::KGroups);
  EXPECT_TRUE(s.expects[1].sizes.empty());
  // without them the text is as it always was (a cache key)
  s.expects.clear();
  std::string plain = kGptqExample;
  plain.erase(plain.find("expect 3"), plain.find("output") - plain.find("expect 3"));
  EXPECT_EQ(printSpec(s), plain);
  EXPECT_EQ(s.numOpInputs(), 3);
}

TEST(SpecRoundTrip, ExpectValuesCanonically) {
  // 0-d, negative, the extremes of i64, several dims; a non-canonical number prints canonically
  const std::string head =
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n%2 = mm %0 %1 : f32\n";
  const std::string text = head +
                           "expect 2 i64 [] values -9223372036854775808\n"
                           "expect 3 i64 [2,1,2] values 9223372036854775807 -1 0 7\n"
                           "expect 4 u8 [1] values 255\n"
                           "expect 5 i8 [2] values -128 127\n"
                           "output %2\n";
  ChainSpec s = parseSpec(text);
  EXPECT_EQ(printSpec(s), text);
  EXPECT_EQ(s.expects[0].sizes.size(), 0u);
  EXPECT_EQ(s.expects[0].values[0], INT64_MIN);
  EXPECT_EQ(printSpec(parseSpec(head + "expect 2 i32 [2] values 007 -0\noutput %2\n")),
            head + "expect 2 i32 [2] values 7 0\noutput %2\n");
}

TEST(SpecRoundTrip, ExpectBuiltInMemory) {
  // How the pass adds one: the slots after the values' inputs, in order.
  ChainSpec s = parseSpec(
      "fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 bf16 [m,k]\n%1 = input 1 u8 [n,p]\n%2 = convert %1 : bf16\n"
      "%3 = input 2 bf16 [n,g]\n%4 = mul %2 %3 : bf16\n%5 = mm %0 %4 : bf16\noutput %5\n");
  Expect wf;
  wf.slot = s.numOpInputs();
  wf.dtype = DType::I32;
  wf.kind = Expect::Kind::Values;
  wf.sizes = {1, 2};
  wf.values = {0, 4};
  s.expects.push_back(wf);
  Expect gIdx;
  gIdx.slot = s.numOpInputs();
  gIdx.dtype = DType::I64;
  gIdx.kind = Expect::Kind::KGroups;
  s.expects.push_back(gIdx);
  validateSpec(s);
  const std::string text = printSpec(s);
  EXPECT_NE(text.find("%5 = mm %0 %4 : bf16\nexpect 3 i32 [1,2] values 0 4\nexpect 4 i64 [k] kgroups\noutput %5\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(printSpec(parseSpec(text)), text);
  // validateSpec names the expect line (by its index) of a bad one
  s.expects[1].slot = 7;
  try {
    validateSpec(s);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("expect line 1: expect slot 7 must be 4"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(integerHolds(DType::I32, INT32_MIN));
  EXPECT_FALSE(integerHolds(DType::I32, int64_t(INT32_MAX) + 1));
  EXPECT_FALSE(integerHolds(DType::U8, -1));
  EXPECT_FALSE(integerHolds(DType::F32, 0));
}

// The mark `addmm`: the value eager computed in one addmm call (an f32 F.linear with a bias here, its weight
// dequantized), printed after its dtype; the values before it are the call's parts.
TEST(SpecRoundTrip, AddmmMark) {
  const std::string text =
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 f32 [m,k]\n%1 = input 1 i8 [n,k]\n%2 = convert %1 : f32\n"
      "%3 = input 2 f32 [n,1]\n%4 = mul %2 %3 : f32\n%5 = mm %0 %4 : f32\n%6 = input 3 f32 [n]\n"
      "%7 = add %5 %6 : f32 addmm\n%8 = relu %7 : f32\noutput %8\n";
  ChainSpec s = parseSpec(text);
  EXPECT_EQ(printSpec(s), text);
  for (size_t i = 0; i < s.values.size(); ++i) EXPECT_EQ(s.values[i].addmmResult, i == 7) << i;
  EXPECT_EQ(markedAddmmResult(s), 7);
  const AddmmCall call = addmmCallAt(s, 7, nullptr);
  EXPECT_EQ(call.result, 7);
  EXPECT_EQ(call.product, 5);
  EXPECT_EQ(call.bias, 6);
  EXPECT_EQ(call.alphaMul, -1);
  EXPECT_EQ(call.betaMul, -1);
  // unmarked, the same ops are an mm and then an add (`x @ w + b`), as every spec printed before the mark
  s.values[7].addmmResult = false;
  validateSpec(s);
  EXPECT_EQ(markedAddmmResult(s), -1);
  std::string plain = text;
  plain.replace(plain.find(" addmm"), 6, "");
  EXPECT_EQ(printSpec(s), plain);
  // built in memory, the mark is checked as the parser checks it
  s.values[8].addmmResult = true;
  EXPECT_THROW(validateSpec(s), SpecError);
}

// addmm's alpha and beta: `mul %product %alpha : f32`, `mul %bias %beta : f32`, the add of the two marked; with beta
// 0 (no bias operand) the mul by alpha is the marked value. A baddbmm is marked the same way.
TEST(SpecRoundTrip, AddmmMarkWithAlphaAndBeta) {
  const std::string both =
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
      "%3 = const 1.5 : f32\n%4 = mul %2 %3 : f32\n%5 = input 2 bf16 [m,n]\n%6 = const 0.5 : f32\n"
      "%7 = mul %5 %6 : f32\n%8 = add %4 %7 : bf16 addmm\noutput %8\n";
  ChainSpec s = parseSpec(both);
  EXPECT_EQ(printSpec(s), both);
  AddmmCall call = addmmCallAt(s, 8, nullptr);
  EXPECT_EQ(call.result, 8);
  EXPECT_EQ(call.product, 2);
  EXPECT_EQ(call.alphaMul, 4);
  EXPECT_EQ(call.alpha, 3);
  EXPECT_EQ(call.betaMul, 7);
  EXPECT_EQ(call.beta, 6);
  EXPECT_EQ(call.bias, 5);

  const std::string alphaOnly =
      "fxfuse.chain v1\ngemm bmm\n%0 = input 0 f32 [b,m,k]\n%1 = input 1 f32 [b,k,n]\n%2 = mm %0 %1 : f32\n"
      "%3 = const 1.7 : f32\n%4 = mul %2 %3 : f32 addmm\n%5 = relu %4 : f32\noutput %5\n";
  s = parseSpec(alphaOnly);
  EXPECT_EQ(printSpec(s), alphaOnly);
  call = addmmCallAt(s, 4, nullptr);
  EXPECT_EQ(call.result, 4);
  EXPECT_EQ(call.alphaMul, 4);
  EXPECT_EQ(call.alpha, 3);
  EXPECT_EQ(call.bias, -1);
  EXPECT_EQ(call.beta, -1);
  std::string why;
  EXPECT_EQ(addmmCallAt(s, 5, &why).result, -1);  // relu: no such call
  EXPECT_NE(why.find("an add of the product and its bias"), std::string::npos) << why;
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
