// canonicalizeActivations on spec text: what it rewrites, the renumbering it returns, and the
// spec-level conditions graph cases cannot reach (const dtypes, shared consts, prologue values).
// Graph-level cases (torch.compile's real forms, near misses) are in activations.ir.
#include <gtest/gtest.h>

#include "pass/activation_canonicalization.h"

namespace fxfuse::pass {
namespace {

const char* kHeader =
    "fxfuse.chain v1\n"
    "gemm mm\n"
    "%0 = input 0 bf16 [m,k]\n"
    "%1 = input 1 bf16 [n,k]\n"
    "%2 = mm %0 %1 : f32\n";

// Canonicalizes `body` (the values after kHeader) and returns the printed spec's body.
std::string canonical(const std::string& body, std::vector<int>* remap = nullptr) {
  spec::ChainSpec s = spec::parseSpec(kHeader + body);
  std::vector<int> r = canonicalizeActivations(s);
  if (remap) *remap = r;
  std::string text = spec::printSpec(s);
  spec::ChainSpec reparsed = spec::parseSpec(text);  // numbering and operands still valid
  EXPECT_EQ(spec::printSpec(reparsed), text);
  EXPECT_EQ(text.rfind(kHeader, 0), 0u) << text;
  return text.substr(std::string(kHeader).size());
}

// bf16 SiLU exactly as the pass emits Inductor's decomposition, followed by a residual add.
const char* kSiluBf16 =
    "%3 = convert %2 : bf16\n"
    "%4 = convert %3 : f32\n"
    "%5 = neg %4 : f32\n"
    "%6 = exp %5 : f32\n"
    "%7 = const 1 : f32\n"
    "%8 = add %6 %7 : f32\n"
    "%9 = div %4 %8 : f32\n"
    "%10 = convert %9 : bf16\n"
    "%11 = input 2 bf16 [m,n]\n"
    "%12 = add %10 %11 : bf16\n"
    "output %12\n"
    "output %10\n";

TEST(ActivationCanonicalization, SiluBf16RenumbersValuesAndOutputs) {
  std::vector<int> remap;
  EXPECT_EQ(canonical(kSiluBf16, &remap),
            "%3 = convert %2 : bf16\n"
            "%4 = silu %3 : bf16\n"
            "%5 = input 2 bf16 [m,n]\n"
            "%6 = add %4 %5 : bf16\n"
            "output %6\n"
            "output %4\n");
  // %0..%3 keep their ids, the pattern's values are gone, the final convert became the silu.
  EXPECT_EQ(remap, (std::vector<int>{0, 1, 2, 3, -1, -1, -1, -1, -1, -1, 4, 5, 6}));
}

TEST(ActivationCanonicalization, NothingToDoLeavesTheSpecAlone) {
  const std::string body =
      "%3 = relu %2 : f32\n"
      "%4 = neg %3 : f32\n"
      "%5 = exp %4 : f32\n"
      "output %5\n";
  std::vector<int> remap;
  EXPECT_EQ(canonical(body, &remap), body);
  EXPECT_EQ(remap, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

// GELU (erf) on an f32 GEMM value as torch decomposes it.
const char* kGeluErfF32 =
    "%3 = const 0.5 : f32\n"
    "%4 = mul %3 %2 : f32\n"
    "%5 = const 0.70710678118654757 : f32\n"
    "%6 = mul %5 %2 : f32\n"
    "%7 = erf %6 : f32\n"
    "%8 = const 1 : f32\n"
    "%9 = add %8 %7 : f32\n"
    "%10 = mul %9 %4 : f32\n"
    "output %10\n";

TEST(ActivationCanonicalization, GeluTanhAndErfOnF32) {
  EXPECT_EQ(canonical("%3 = const 0.5 : f32\n"
                      "%4 = mul %2 %3 : f32\n"
                      "%5 = mul %2 %2 : f32\n"
                      "%6 = mul %5 %2 : f32\n"
                      "%7 = const 0.044714999999999998 : f32\n"
                      "%8 = mul %6 %7 : f32\n"
                      "%9 = add %2 %8 : f32\n"
                      "%10 = const 0.79788456080286541 : f32\n"
                      "%11 = mul %9 %10 : f32\n"
                      "%12 = tanh %11 : f32\n"
                      "%13 = const 1 : f32\n"
                      "%14 = add %12 %13 : f32\n"
                      "%15 = mul %4 %14 : f32\n"
                      "output %15\n"),
            "%3 = gelu_tanh %2 : f32\noutput %3\n");
  EXPECT_EQ(canonical(kGeluErfF32), "%3 = gelu %2 : f32\noutput %3\n");
}

// A const of another dtype is not the f32 opmath constant eager uses.
TEST(ActivationCanonicalization, ConstMustBeF32) {
  const std::string body =
      "%3 = neg %2 : f32\n"
      "%4 = exp %3 : f32\n"
      "%5 = const 1 : bf16\n"
      "%6 = add %4 %5 : f32\n"
      "%7 = div %2 %6 : f32\n"
      "output %7\n";
  EXPECT_EQ(canonical(body), body);
}

// A const the pattern shares with a value outside it stays for that value.
TEST(ActivationCanonicalization, SharedConstStays) {
  EXPECT_EQ(canonical("%3 = const 1 : f32\n"
                      "%4 = neg %2 : f32\n"
                      "%5 = exp %4 : f32\n"
                      "%6 = add %5 %3 : f32\n"
                      "%7 = div %2 %6 : f32\n"
                      "%8 = add %7 %3 : f32\n"
                      "output %8\n"),
            "%3 = const 1 : f32\n"
            "%4 = silu %2 : f32\n"
            "%5 = add %4 %3 : f32\n"
            "output %5\n");
}

// x * sigmoid(x) whose product is read twice by one value: the top has two uses, so the 16-bit
// form (which needs one final convert) does not apply; the f32 form does.
TEST(ActivationCanonicalization, TopReadTwiceKeepsF32Form) {
  EXPECT_EQ(canonical("%3 = convert %2 : bf16\n"
                      "%4 = convert %3 : f32\n"
                      "%5 = sigmoid %4 : f32\n"
                      "%6 = mul %4 %5 : f32\n"
                      "%7 = mul %6 %6 : f32\n"
                      "output %7\n"),
            "%3 = convert %2 : bf16\n"
            "%4 = convert %3 : f32\n"
            "%5 = silu %4 : f32\n"
            "%6 = mul %5 %5 : f32\n"
            "output %6\n");
}

// An i8 value converted to f32 is not a 16-bit float x: the rounding back to i8 is no silu.
TEST(ActivationCanonicalization, SixteenBitFormOnlyForBf16AndF16) {
  EXPECT_EQ(canonical("%3 = convert %2 : i8\n"
                      "%4 = convert %3 : f32\n"
                      "%5 = sigmoid %4 : f32\n"
                      "%6 = mul %5 %4 : f32\n"
                      "%7 = convert %6 : i8\n"
                      "output %7\n"),
            "%3 = convert %2 : i8\n"
            "%4 = convert %3 : f32\n"
            "%5 = silu %4 : f32\n"
            "%6 = convert %5 : i8\n"
            "output %6\n");
}

// The GEMM operands' prologue is a spec like any other: an f16 SiLU on the A operand.
TEST(ActivationCanonicalization, PrologueValues) {
  spec::ChainSpec s = spec::parseSpec(
      "fxfuse.chain v1\n"
      "gemm mm\n"
      "%0 = input 0 f16 [m,k]\n"
      "%1 = convert %0 : f32\n"
      "%2 = sigmoid %1 : f32\n"
      "%3 = mul %1 %2 : f32\n"
      "%4 = convert %3 : f16\n"
      "%5 = input 1 f16 [k,n]\n"
      "%6 = mm %4 %5 : f16\n"
      "output %6\n");
  canonicalizeActivations(s);
  EXPECT_EQ(spec::printSpec(s),
            "fxfuse.chain v1\n"
            "gemm mm\n"
            "%0 = input 0 f16 [m,k]\n"
            "%1 = silu %0 : f16\n"
            "%2 = input 1 f16 [k,n]\n"
            "%3 = mm %1 %2 : f16\n"
            "output %3\n");
}

}  // namespace
}  // namespace fxfuse::pass
