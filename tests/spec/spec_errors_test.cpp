// Malformed or invalid specs end in SpecError naming the line; nothing crashes.
#include <gtest/gtest.h>

#include <random>

#include "spec/chain_spec.h"

namespace fxfuse::spec {
namespace {

const std::string kHead = "fxfuse.chain v1\ngemm mm\n";
const std::string kMm = "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\n";
// an unrounded f32 product, the value a mark `addmm` may build on (lines 3-5)
const std::string kMmF32 = "%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n%2 = mm %0 %1 : f32\n";
const std::string kMmBf16ToF32 = "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n";
const std::string kBroken = "a value marked addmm is one eager addmm's result: ";

struct Case {
  const char* name;
  std::string text;
  std::string message;  // expected substring of what()
};

std::vector<Case> cases() {
  return {
      {"Empty", "", "line 1: empty spec"},
      {"BadVersion", "fxfuse.chain v2\ngemm mm\n", "line 1: unsupported spec version 'v2'"},
      {"BadHeader", "chain v1\n", "line 1: expected 'fxfuse.chain v1'"},
      {"BadGemm", "fxfuse.chain v1\ngemm conv\n", "line 2: expected 'gemm mm' or 'gemm bmm'"},
      {"MissingGemm", "fxfuse.chain v1\n", "missing 'gemm' line"},
      {"Numbering", kHead + "%1 = input 0 bf16 [m,k]\n", "line 3: expected %0"},
      {"ForwardRef", kHead + "%0 = input 0 bf16 [m,k]\n%1 = neg %1 : bf16\n", "line 4: operand %1"},
      {"UnknownOp", kHead + kMm + "%3 = frob %2 : bf16\noutput %3\n", "line 6: unknown op 'frob'"},
      {"Arity", kHead + kMm + "%3 = add %2 : bf16\noutput %3\n", "line 6: 'add' takes 2 operand(s), got 1"},
      {"UnknownDType", kHead + "%0 = input 0 bf15 [m,k]\n", "line 3: unknown dtype 'bf15'"},
      {"BadDims", kHead + "%0 = input 0 bf16 [m,,k]\n", "line 3: malformed dims"},
      {"UnknownDim", kHead + "%0 = input 0 bf16 [m,x]\n", "line 3: unknown dim 'x'"},
      {"DupDim", kHead + "%0 = input 0 bf16 [k,k]\n", "line 3: dim 'k' appears twice"},
      {"BadNumber", kHead + kMm + "%3 = const 1.5x : f32\n", "line 6: bad number '1.5x'"},
      {"BadConst", kHead + kMm + "%3 = const 1.5 f32\n", "line 6: expected '%i = const"},
      {"NoMm", kHead + "%0 = input 0 bf16 [m,n]\noutput %0\n", "no mm"},
      {"TwoMm", kHead + kMm + "%3 = mm %0 %1 : bf16\noutput %3\n", "line 6: a spec has exactly one mm"},
      {"NoOutput", kHead + kMm, "no output line"},
      {"OutputNotValue", kHead + kMm + "output %7\n", "line 6: output %7 is not a value"},
      {"ValueAfterOutput", kHead + kMm + "output %2\n%3 = neg %2 : bf16\n", "line 7: value line after"},
      {"MixedMmDtypes", kHead + "%0 = input 0 bf16 [m,k]\n%1 = input 1 f16 [k,n]\n%2 = mm %0 %1 : f32\noutput %2\n",
       "line 5: mm operands must share one dtype"},
      {"MmI8", kHead + "%0 = input 0 i8 [m,k]\n%1 = input 1 i8 [k,n]\n%2 = mm %0 %1 : f32\noutput %2\n",
       "line 5: mm operands must share"},
      {"MmResult", kHead + "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f16\noutput %2\n",
       "line 5: mm result must be f32 or the operand dtype bf16"},
      {"SwappedOperands", kHead + "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %1 %0 : bf16\noutput %2\n",
       "varies along 'n', which the A space"},
      {"KInEpilogue", kHead + kMm + "%3 = input 2 bf16 [k]\n%4 = add %2 %3 : bf16\noutput %4\n",
       "line 7: %4 varies along 'k', which the Out space"},
      {"BInMm", kHead + "%0 = input 0 bf16 [b,m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : bf16\noutput %2\n",
       "line 3: %0 varies along 'b', which the A space of a mm"},
      {"OutputInA", kHead + kMm + "output %0\n", "line 3: %0 is used in more than one space (A, Out)"},
      {"TwoSpaces", kHead + "%0 = input 0 bf16 [m]\n%1 = input 1 bf16 [m,k]\n%2 = mul %1 %0 : bf16\n"
                    "%3 = input 2 bf16 [k,n]\n%4 = mm %2 %3 : f32\n%5 = add %4 %0 : f32\noutput %5\n",
       "line 3: %0 is used in more than one space"},
      {"Unused", kHead + kMm + "%3 = neg %2 : bf16\noutput %2\n", "line 6: %3 is not used"},
      {"SlotSkip", kHead + "%0 = input 1 bf16 [m,k]\n", "line 3: input slot 1 skips slot 0"},
      {"SlotRedeclared",
       kHead + kMm + "%3 = input 0 f16 [m,n]\n%4 = add %2 %3 : bf16\noutput %4\n",
       "line 6: input slot 0 was declared as bf16"},
      {"ComparisonDtype", kHead + kMm + "%3 = const 0 : f32\n%4 = gt %2 %3 : bf16\noutput %4\n",
       "line 7: comparison 'gt' must produce bool"},
      {"BadRef", kHead + kMm + "output 2\n", "line 6: expected a value reference"},
      {"BadLine", kHead + kMm + "%3 add %2\n", "line 6: expected '%i = ...'"},
      // group-wise scales: a 'g' dim (k's group) and the gemm line's kgroup
      {"KGroupWord", "fxfuse.chain v1\ngemm mm groups 32\n", "line 2: expected 'gemm mm' or 'gemm bmm', then"},
      {"KGroupZero", "fxfuse.chain v1\ngemm mm kgroup 0\n", "line 2: kgroup size 0 is outside 1.."},
      {"KGroupHuge", "fxfuse.chain v1\ngemm mm kgroup 99999999\n", "line 2: kgroup size 99999999 is outside"},
      {"GWithoutKGroup", kHead + "%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = input 2 bf16 [g,n]\n",
       "line 5: a 'g' dim needs the gemm line's 'kgroup <size>'"},
      {"KGroupWithoutG", "fxfuse.chain v1\ngemm mm kgroup 32\n" + kMm + "output %2\n",
       "kgroup is given but no input has a 'g' dim"},
      {"GAndK", "fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 bf16 [g,k]\n",
       "line 3: an input has a 'k' dim or a 'g' dim (k's group), not both"},
      {"GInEpilogue", "fxfuse.chain v1\ngemm mm kgroup 32\n" + kMm + "%3 = input 2 bf16 [g,n]\n"
                      "%4 = add %2 %3 : bf16\noutput %4\n",
       "line 7: %4 varies along 'k', which the Out space"},
      // packed int4: a 'p' dim (k packed as 4-bit values) in u8 / i8 / i32 elements
      {"PackedHalf", kHead + "%0 = input 0 bf16 [m,k]\n%1 = input 1 f16 [n,p]\n",
       "line 4: a 'p' dim (k packed as 4-bit values) holds them in u8, i8 or i32 elements, not f16"},
      {"PackedAndK", kHead + "%0 = input 0 u8 [p,k]\n", "line 3: an input has at most one of a 'k', 'g' or 'p' dim"},
      {"PackedInEpilogue", kHead + kMm + "%3 = input 2 u8 [p,n]\n%4 = add %2 %3 : bf16\noutput %4\n",
       "line 7: %4 varies along 'k', which the Out space"},
      // n packed ('q': GPTQ's zero points, eight to an i32 along n), in B's prologue only
      {"PackedNHalf", kHead + "%0 = input 0 bf16 [m,k]\n%1 = input 1 f16 [k,q]\n",
       "line 4: a 'q' dim (n packed as 4-bit values) holds them in u8, i8 or i32 elements, not f16"},
      {"PackedNAndN", kHead + "%0 = input 0 i32 [q,n]\n", "line 3: an input has an 'n' dim or a 'q' dim (n packed), not both"},
      {"PackedKAndN", kHead + "%0 = input 0 i32 [p,q]\n", "line 3: an input has a 'p' dim or a 'q' dim, not both"},
      {"PackedNInEpilogue", kHead + kMm + "%3 = input 2 i32 [q]\n%4 = add %2 %3 : bf16\noutput %4\n",
       "line 6: a 'q' dim (n packed as 4-bit values) is read in B's prologue only, not the Out space"},
      // an order of 4-bit values (AWQ's words): a permutation of the element's, on a 'q' input only
      {"OrderNotPermutation", kHead + "%0 = input 0 i32 [k,q] order 0 4 1 5 2 6 3 3\n",
       "line 3: an order lists each of the element's 8 4-bit values once (0 to 7)"},
      {"OrderTooShort", kHead + "%0 = input 0 i32 [k,q] order 1 0\n",
       "line 3: an order lists each of the element's 8 4-bit values once (0 to 7)"},
      {"OrderWithoutQ", kHead + "%0 = input 0 i32 [p,n] order 1 0 2 3 4 5 6 7\n",
       "line 3: an order is given for an input with a 'q' dim only"},
      {"OrderWordMissing", kHead + "%0 = input 0 i32 [k,q] order\n", "line 3: expected '%i = input <slot> <dtype> [<dims>] [order <j> ...]'"},
      {"OrderSecondDeclaration", kHead + "%0 = input 0 bf16 [m,k]\n%1 = input 1 u8 [k,q] order 1 0\n%2 = input 1 u8 [k,q]\n",
       "line 5: input slot 1 was declared as u8 [k,q] order 1 0 before"},
      // expect lines: facts about op inputs after the values' (line 6 here: after kHead and kMm)
      {"ExpectSlot", kHead + kMm + "expect 3 i32 [1] values 0\noutput %2\n",
       "line 6: expect slot 3 must be 2 (the expect lines take the slots after the inputs', in order)"},
      {"ExpectSecondSlot", kHead + kMm + "expect 2 i32 [1] values 0\nexpect 2 i32 [1] values 0\noutput %2\n",
       "line 7: expect slot 2 must be 3"},
      {"ExpectDType", kHead + kMm + "expect 2 bf16 [1] values 0\noutput %2\n",
       "line 6: an expect line's dtype is i8, u8, i32 or i64, not bf16"},
      {"ExpectBool", kHead + kMm + "expect 2 bool [1] values 0\noutput %2\n", "line 6: an expect line's dtype"},
      {"ExpectCount", kHead + kMm + "expect 2 i32 [1,8] values 0 4 8 12 16 20 24\noutput %2\n",
       "line 6: sizes of 8 element(s) but 7 value(s)"},
      {"ExpectNoValues", kHead + kMm + "expect 2 i32 [0] values\noutput %2\n",
       "line 6: an expect line's sizes hold 1..64 elements, got 0"},
      {"ExpectTooMany", kHead + kMm + "expect 2 i32 [65] values 0\noutput %2\n",
       "line 6: an expect line's sizes hold 1..64 elements, got 65"},
      {"ExpectHugeSizes", kHead + kMm + "expect 2 i32 [999999999,999999999,999999999] values 0\noutput %2\n",
       "line 6: an expect line's sizes hold 1..64 elements, got more"},
      {"ExpectRange", kHead + kMm + "expect 2 u8 [2] values 255 256\noutput %2\n",
       "line 6: value 256 is outside u8's range"},
      {"ExpectBadInt", kHead + kMm + "expect 2 i32 [1] values 1.5\noutput %2\n", "line 6: bad integer '1.5'"},
      {"ExpectIntOverflow", kHead + kMm + "expect 2 i64 [1] values 9223372036854775808\noutput %2\n",
       "line 6: bad integer '9223372036854775808'"},
      {"ExpectBadSizes", kHead + kMm + "expect 2 i32 [1,,8] values 0\noutput %2\n", "line 6: bad size ''"},
      {"ExpectSizeLetter", kHead + kMm + "expect 2 i32 [n] values 0\noutput %2\n", "line 6: bad size 'n'"},
      {"ExpectNoBrackets", kHead + kMm + "expect 2 i32 1,8 values 0\noutput %2\n", "line 6: expected sizes like"},
      {"ExpectKind", kHead + kMm + "expect 2 i32 [1] equals 0\noutput %2\n",
       "line 6: expected 'expect <slot> <dtype> [<sizes>] values <v0> ...' or"},
      {"ExpectShort", kHead + kMm + "expect 2 i32\noutput %2\n", "line 6: expected 'expect <slot>"},
      {"KGroupsDims", "fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [g,n]\n"
                      "%2 = mm %0 %1 : bf16\nexpect 2 i32 [n] kgroups\noutput %2\n",
       "line 6: expected 'expect <slot> <dtype> [k] kgroups'"},
      {"KGroupsExtra", "fxfuse.chain v1\ngemm mm kgroup 32\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [g,n]\n"
                       "%2 = mm %0 %1 : bf16\nexpect 2 i32 [k] kgroups 0\noutput %2\n",
       "line 6: expected 'expect <slot> <dtype> [k] kgroups'"},
      {"KGroupsWithoutKGroup", kHead + kMm + "expect 2 i32 [k] kgroups\noutput %2\n",
       "line 6: a kgroups expect needs the gemm line's 'kgroup <size>'"},
      {"ValueAfterExpect", kHead + kMm + "expect 2 i32 [1] values 0\n%3 = neg %2 : bf16\noutput %3\n",
       "line 7: value line after an expect line"},
      {"ExpectAfterOutput", kHead + kMm + "output %2\nexpect 2 i32 [1] values 0\n",
       "line 7: expect line after the output lines"},
      // the mark `addmm`: the result of one eager addmm call, its parts in the form the CPU reference calls it from
      {"AddmmUnknownMark", kHead + kMmF32 + "%3 = input 2 f32 [n]\n%4 = add %2 %3 : f32 addnn\noutput %4\n",
       "line 7: unknown mark 'addnn' after the dtype (expected addmm)"},
      {"AddmmMarkWithoutDtype", kHead + kMmF32 + "%3 = input 2 f32 [n]\n%4 = add %2 %3 : addmm\noutput %4\n",
       "line 7: unknown dtype 'addmm'"},
      {"AddmmOnMm", kHead + "%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n%2 = mm %0 %1 : f32 addmm\noutput %2\n",
       "line 5: " + kBroken + "an add of the product and its bias, or a mul of the product and alpha"},
      {"AddmmOnRelu", kHead + kMmF32 + "%3 = relu %2 : f32 addmm\noutput %3\n",
       "line 6: " + kBroken + "an add of the product and its bias"},
      {"AddmmBiasComputed", kHead + kMmF32 + "%3 = input 2 f32 [n]\n%4 = neg %3 : f32\n%5 = add %2 %4 : f32 addmm\n"
                            "output %5\n",
       "line 8: " + kBroken + "an add's second operand is the bias or `mul <bias> <beta> : f32`"},
      {"AddmmBiasIsProduct", kHead + kMmF32 + "%3 = add %2 %2 : f32 addmm\noutput %3\n",
       "line 6: " + kBroken + "its bias is an input or a const"},
      {"AddmmProductReadElsewhere", kHead + kMmF32 + "%3 = input 2 f32 [n]\n%4 = add %2 %3 : f32 addmm\noutput %4\n"
                                    "output %2\n",
       "line 7: " + kBroken + "%2, a part of the call, is read by the call alone"},
      {"AddmmRoundedProduct", kHead + kMm + "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16 addmm\noutput %4\n",
       "line 7: " + kBroken + "its product (the mm) is f32, unrounded"},
      {"AddmmResultType", kHead + kMmF32 + "%3 = input 2 f32 [n]\n%4 = add %2 %3 : bf16 addmm\noutput %4\n",
       "line 7: " + kBroken + "of its operands' type f32, not bf16"},
      {"AddmmBiasType", kHead + kMmBf16ToF32 + "%3 = input 2 f32 [n]\n%4 = add %2 %3 : bf16 addmm\noutput %4\n",
       "line 7: " + kBroken + "its bias is of its operands' type bf16, not f32"},
      {"AddmmAlphaNotConst", kHead + kMmF32 + "%3 = input 2 f32 [m,n]\n%4 = mul %2 %3 : f32 addmm\noutput %4\n",
       "line 7: " + kBroken + "a mul is `mul <product> <alpha> : <type>`, alpha a nonzero f32 const"},
      {"AddmmAlphaZero", kHead + kMmF32 + "%3 = const 0 : f32\n%4 = mul %2 %3 : f32 addmm\noutput %4\n",
       "line 7: " + kBroken + "a mul is `mul <product> <alpha> : <type>`, alpha a nonzero f32 const"},
      {"AddmmAlphaRounded", kHead + kMmBf16ToF32 + "%3 = const 1.5 : f32\n%4 = mul %2 %3 : bf16\n"
                            "%5 = input 2 bf16 [n]\n%6 = add %4 %5 : bf16 addmm\noutput %6\n",
       "line 9: " + kBroken + "an add's first operand is the product or `mul <product> <alpha> : f32`"},
      {"AddmmBetaZero", kHead + kMmF32 + "%3 = input 2 f32 [n]\n%4 = const 0 : f32\n%5 = mul %3 %4 : f32\n"
                        "%6 = add %2 %5 : f32 addmm\noutput %6\n",
       "line 9: " + kBroken + "an add's second operand is the bias or `mul <bias> <beta> : f32`, beta a nonzero const"},
      {"AddmmTwice", kHead + kMmF32 + "%3 = input 2 f32 [n]\n%4 = add %2 %3 : f32 addmm\n%5 = add %4 %3 : f32 addmm\n"
                     "output %5\n",
       "line 8: a spec has at most one value marked addmm (%4 is)"},
  };
}

TEST(SpecErrors, EachNamesItsLine) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    try {
      parseSpec(c.text);
      ADD_FAILURE() << "no error for " << c.name;
    } catch (const SpecError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << "got: " << e.what();
    }
  }
}

TEST(SpecErrors, ValidateSpecNamesTheValue) {
  ChainSpec s = parseSpec(kHead + kMm + "output %2\n");
  s.values[2].operands = {1, 0};
  try {
    validateSpec(s);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("%1: %1 varies along 'n'"), std::string::npos) << e.what();
  }
}

// `base` with one to three random byte edits (a replacement or an insertion from `alphabet`, or a deletion of 1-4
// bytes) at or after byte `from`: the mutation tests' inputs.
std::string mutated(const std::string& base, size_t from, const std::string& alphabet, std::mt19937& rng) {
  std::string s = base;
  for (int e = 0, edits = 1 + rng() % 3; e < edits; ++e) {
    const size_t pos = from + rng() % (s.size() - from);
    switch (rng() % 3) {
      case 0: s[pos] = alphabet[rng() % alphabet.size()]; break;
      case 1: s.erase(pos, 1 + rng() % 4); break;
      default: s.insert(pos, 1, alphabet[rng() % alphabet.size()]);
    }
    if (s.size() <= from) s += "x";
  }
  return s;
}

// Random byte edits of a valid spec: every outcome is a parsed spec or a SpecError.
TEST(SpecErrors, MutationsNeverCrash) {
  const std::string base =
      kHead + "%0 = input 0 bf16 [m,k]\n%1 = input 1 i8 [n,k]\n%2 = input 2 bf16 [n,1]\n"
              "%3 = convert %1 : bf16\n%4 = mul %3 %2 : bf16\n%5 = mm %0 %4 : f32\n"
              "%6 = input 3 bf16 [n]\n%7 = add %5 %6 : bf16\n%8 = gelu_tanh %7 : bf16\noutput %8\n";
  const std::string alphabet = "%=[],:0123456789 mknb1\nabcdefgilnoprstuvxz.-";
  std::mt19937 rng(1234);
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string s = mutated(base, 0, alphabet, rng);
    try {
      ChainSpec c = parseSpec(s);
      ++parsed;
      EXPECT_EQ(printSpec(parseSpec(printSpec(c))), printSpec(c));
    } catch (const SpecError&) {
    }
  }
  EXPECT_GT(parsed, 0);
}

// The same with the mark `addmm` on an addmm with alpha and beta (mutated marks, operands, types and scalars).
TEST(SpecErrors, AddmmMarkMutationsNeverCrash) {
  const std::string base =
      kHead + "%0 = input 0 f32 [m,k]\n%1 = input 1 f32 [k,n]\n%2 = mm %0 %1 : f32\n%3 = const 1.5 : f32\n"
              "%4 = mul %2 %3 : f32\n%5 = input 2 f32 [n]\n%6 = const 0.5 : f32\n%7 = mul %5 %6 : f32\n"
              "%8 = add %4 %7 : f32 addmm\n%9 = relu %8 : f32\noutput %9\n";
  ASSERT_EQ(printSpec(parseSpec(base)), base);
  const std::string alphabet = "%0123456789 :addmmulbf16f32\n.-";
  std::mt19937 rng(5678);
  int parsed = 0, marked = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string s = mutated(base, base.find("%3 ="), alphabet, rng);  // edits in the call's values
    try {
      ChainSpec c = parseSpec(s);
      ++parsed;
      EXPECT_EQ(printSpec(parseSpec(printSpec(c))), printSpec(c));
      if (const int result = markedAddmmResult(c); result >= 0) {
        ++marked;
        EXPECT_EQ(addmmCallAt(c, result, nullptr).result, result) << printSpec(c);  // the parser checked its form
      }
    } catch (const SpecError&) {
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(marked, 0);
}

// The same with expect lines (mutated numbers, sizes, kinds, slots and line order).
TEST(SpecErrors, ExpectMutationsNeverCrash) {
  const std::string base =
      "fxfuse.chain v1\ngemm mm kgroup 128\n%0 = input 0 f16 [m,k]\n%1 = input 1 i32 [p,n]\n%2 = convert %1 : f16\n"
      "%3 = input 2 f16 [g,n]\n%4 = mul %2 %3 : f16\n%5 = mm %0 %4 : f16\n"
      "expect 3 i32 [1,8] values 0 4 8 12 16 20 24 28\nexpect 4 i32 [k] kgroups\nexpect 5 i8 [] values -3\n"
      "output %5\n";
  ASSERT_EQ(printSpec(parseSpec(base)), base);
  const std::string alphabet = "[],0123456789 -kexpectvaluesgroupsi8u3264\n";
  std::mt19937 rng(4321);
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string s = mutated(base, base.find("expect"), alphabet, rng);  // edits in the expect lines
    try {
      ChainSpec c = parseSpec(s);
      ++parsed;
      EXPECT_EQ(printSpec(parseSpec(printSpec(c))), printSpec(c));
      EXPECT_EQ(c.numOpInputs(), c.numInputSlots() + static_cast<int>(c.expects.size()));
    } catch (const SpecError&) {
    }
  }
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace fxfuse::spec
