#include "codegen/pointwise_table.h"

#include <gtest/gtest.h>

#include <cmath>

#include "codegen/codegen.h"

namespace fxfuse::codegen {
namespace {

std::vector<PointwiseArg> vars(int n) {
  std::vector<PointwiseArg> a;
  for (int i = 0; i < n; ++i) a.push_back({"v" + std::to_string(i), std::nullopt});
  return a;
}

TEST(PointwiseTable, CoversEverySpecOp) {
  for (const std::string& op : spec::allOpNames()) {
    EXPECT_TRUE(hasPointwiseExpr(op)) << op;
    EXPECT_NO_THROW(pointwiseExpr(op, vars(spec::opArity(op)))) << op;
  }
  EXPECT_FALSE(hasPointwiseExpr("mm"));
  EXPECT_THROW(pointwiseExpr("frob", vars(1)), CodegenError);
}

TEST(PointwiseTable, Expressions) {
  EXPECT_EQ(pointwiseExpr("add", vars(2)), "(v0 + v1)");
  EXPECT_EQ(pointwiseExpr("gelu_tanh", vars(1)), "fx_gelu_tanh(v0)");
  EXPECT_EQ(pointwiseExpr("maximum", vars(2)), "fx_maximum(v0, v1)");  // NaN-propagating helper
  EXPECT_EQ(pointwiseExpr("relu", vars(1)), "fx_relu(v0)");
  EXPECT_EQ(pointwiseExpr("where", vars(3)), "(v0 ? v1 : v2)");
  EXPECT_EQ(pointwiseExpr("ge", vars(2)), "(v0 >= v1)");
  EXPECT_EQ(pointwiseExpr("convert", vars(1)), "v0");
}

TEST(PointwiseTable, ClampNanBoundMeansNoBound) {
  const double nan = std::nan("");
  std::vector<PointwiseArg> a = {{"x", std::nullopt}, {"lo", nan}, {"hi", 6.0}};
  EXPECT_EQ(pointwiseExpr("clamp", a), "fx_clamp_max(x, hi)");
  a = {{"x", std::nullopt}, {"lo", 0.0}, {"hi", nan}};
  EXPECT_EQ(pointwiseExpr("clamp", a), "fx_clamp_min(x, lo)");
  a = {{"x", std::nullopt}, {"lo", nan}, {"hi", nan}};
  EXPECT_EQ(pointwiseExpr("hardtanh", a), "x");
  EXPECT_EQ(pointwiseExpr("clamp", vars(3)), "fx_clamp(v0, v1, v2)");  // tensor bounds propagate NaN
}

TEST(PointwiseTable, PowSpecializesLikeAten) {
  auto pw = [](double e) { return pointwiseExpr("pow", {{"x", std::nullopt}, {"e", e}}); };
  EXPECT_EQ(pw(2), "(x * x)");
  EXPECT_EQ(pw(3), "(x * x * x)");
  EXPECT_EQ(pw(0.5), "sqrtf(x)");
  EXPECT_EQ(pw(-0.5), "rsqrtf(x)");
  EXPECT_EQ(pw(-1), "(1.0f / x)");
  EXPECT_EQ(pw(-2), "(1.0f / (x * x))");
  EXPECT_EQ(pw(1.5), "powf(x, e)");
}

TEST(PointwiseTable, RoundingAndMemoryHelpers) {
  using spec::DType;
  EXPECT_EQ(roundTo(DType::F32, "x"), "x");
  EXPECT_EQ(roundTo(DType::BF16, "x"), "fx_round_bf16(x)");
  EXPECT_EQ(roundTo(DType::F8E4M3, "x"), "fx_round_f8e4m3(x)");
  EXPECT_EQ(roundTo(DType::Bool, "x"), "fx_round_bool(x)");
  EXPECT_EQ(loadFn(DType::I8), "fx_ld_i8");
  EXPECT_EQ(storeFn(DType::F16), "fx_st_f16");
  EXPECT_STREQ(valueCType(DType::Bool), "bool");
  EXPECT_STREQ(valueCType(DType::I64), "float");
  EXPECT_STREQ(storageCType(DType::BF16), "__nv_bfloat16");
  EXPECT_THROW(roundTo(DType::F64, "x"), CodegenError);
}

TEST(PointwiseTable, FloatLiterals) {
  EXPECT_EQ(floatLiteral(0.5), "0.5f");
  EXPECT_EQ(floatLiteral(-3), "-3.0f");
  EXPECT_EQ(floatLiteral(0.1), "0.100000001f");  // (float)0.1, exactly
  EXPECT_EQ(floatLiteral(1e30), "1.00000002e+30f");
  EXPECT_EQ(floatLiteral(INFINITY), "__int_as_float(0x7f800000)");
  EXPECT_EQ(floatLiteral(-INFINITY), "__int_as_float(0xff800000)");
  EXPECT_EQ(floatLiteral(std::nan("")), "__int_as_float(0x7fffffff)");
  EXPECT_EQ(floatLiteral(1e300), "__int_as_float(0x7f800000)");  // as (float)1e300 in eager
}

}  // namespace
}  // namespace fxfuse::codegen
