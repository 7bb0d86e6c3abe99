// The one table of elementwise ops (docs/spec.md): each row is an fp32 CUDA expression over
// operands {0}, {1}, {2}; helpers it calls live in device/fx_prelude.cuh. Adding an op is a
// row here, a row in spec/op_table.cpp, and a test spec.
#include "codegen/pointwise_table.h"

#include <fmt/args.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "codegen/codegen.h"

namespace fxfuse::codegen {
namespace {

struct PointwiseRow {
  const char* op;
  const char* expr;
};

constexpr PointwiseRow kTable[] = {
    // unary
    {"neg", "(-{0})"},
    {"abs", "fabsf({0})"},
    {"reciprocal", "(1.0f / {0})"},
    {"sqrt", "sqrtf({0})"},
    {"rsqrt", "rsqrtf({0})"},
    {"exp", "fx_exp({0})"},
    {"log", "logf({0})"},
    {"tanh", "fx_tanh({0})"},
    {"erf", "erff({0})"},
    {"sigmoid", "fx_sigmoid({0})"},
    {"sin", "sinf({0})"},
    {"cos", "cosf({0})"},
    {"relu", "fx_relu({0})"},
    {"gelu", "fx_gelu({0})"},
    {"gelu_tanh", "fx_gelu_tanh({0})"},
    {"silu", "fx_silu({0})"},
    {"hardswish", "fx_hardswish({0})"},
    {"convert", "{0}"},  // the rounding to the result dtype is the whole op
    {"log1p", "fx_log1p({0})"},
    {"expm1", "fx_expm1({0})"},
    {"sign", "fx_sign({0})"},
    {"round", "rintf({0})"},  // torch.round: half to even, as rint in the default rounding mode
    {"floor", "floorf({0})"},
    {"ceil", "ceilf({0})"},
    {"trunc", "truncf({0})"},
    // binary
    {"add", "({0} + {1})"},
    {"sub", "({0} - {1})"},
    {"mul", "({0} * {1})"},
    {"div", "({0} / {1})"},
    {"maximum", "fx_maximum({0}, {1})"},
    {"minimum", "fx_minimum({0}, {1})"},
    {"pow", "powf({0}, {1})"},
    {"lt", "({0} < {1})"},
    {"le", "({0} <= {1})"},
    {"gt", "({0} > {1})"},
    {"ge", "({0} >= {1})"},
    {"eq", "({0} == {1})"},
    {"ne", "({0} != {1})"},
    {"leaky_relu", "fx_leaky_relu({0}, {1})"},
    // ternary
    {"where", "({0} ? {1} : {2})"},
    {"clamp", "fx_clamp({0}, {1}, {2})"},
    {"hardtanh", "fx_clamp({0}, {1}, {2})"},
};

const char* lookup(const std::string& op) {
  for (const PointwiseRow& r : kTable)
    if (op == r.op) return r.expr;
  return nullptr;
}

bool isConst(const PointwiseArg& a, double v) { return a.constant && *a.constant == v; }
bool isNanConst(const PointwiseArg& a) { return a.constant && std::isnan(*a.constant); }

// Rows that depend on constant operands. Returns "" when the table row applies as is.
//  - clamp/hardtanh: a const nan bound means "no bound" (docs/spec.md).
//  - pow with a const exponent: ATen's pow_tensor_scalar special-cases these exponents, and
//    the results differ from powf in the last bit, so they are spelled the same way here.
std::string specialized(const std::string& op, const std::vector<PointwiseArg>& a) {
  if (op == "clamp" || op == "hardtanh") {
    bool noLo = isNanConst(a[1]), noHi = isNanConst(a[2]);
    if (noLo && noHi) return a[0].expr;
    if (noLo) return fmt::format("fx_clamp_max({}, {})", a[0].expr, a[2].expr);
    if (noHi) return fmt::format("fx_clamp_min({}, {})", a[0].expr, a[1].expr);
  }
  if (op == "pow") {
    const std::string& x = a[0].expr;
    if (isConst(a[1], 0.5)) return fmt::format("sqrtf({})", x);
    if (isConst(a[1], 2.0)) return fmt::format("({0} * {0})", x);
    if (isConst(a[1], 3.0)) return fmt::format("({0} * {0} * {0})", x);
    if (isConst(a[1], -0.5)) return fmt::format("rsqrtf({})", x);
    if (isConst(a[1], -1.0)) return fmt::format("(1.0f / {})", x);
    if (isConst(a[1], -2.0)) return fmt::format("(1.0f / ({0} * {0}))", x);
  }
  return "";
}

struct DTypeNames {
  spec::DType dtype;
  const char* suffix;   // fx_round_<suffix>, fx_ld_<suffix>, fx_st_<suffix>
  const char* storage;  // element type in memory
};

constexpr DTypeNames kDTypes[] = {
    {spec::DType::Bool, "bool", "bool"},
    {spec::DType::I8, "i8", "signed char"},
    {spec::DType::U8, "u8", "unsigned char"},
    {spec::DType::I32, "i32", "int"},
    {spec::DType::I64, "i64", "long long"},
    {spec::DType::F16, "f16", "__half"},
    {spec::DType::BF16, "bf16", "__nv_bfloat16"},
    {spec::DType::F32, "f32", "float"},
    {spec::DType::F8E4M3, "f8e4m3", "__nv_fp8_storage_t"},
    {spec::DType::F8E5M2, "f8e5m2", "__nv_fp8_storage_t"},
};

const DTypeNames& names(spec::DType d) {
  for (const DTypeNames& n : kDTypes)
    if (n.dtype == d) return n;
  // f64 is the only dtype without a row: the pass rejects fp64 chains (docs/spec.md).
  throw CodegenError(std::string("unsupported_dtype: codegen has no ") + spec::dtypeName(d) + " support");
}

}  // namespace

bool hasPointwiseExpr(const std::string& op) { return lookup(op) != nullptr; }

std::string pointwiseExpr(const std::string& op, const std::vector<PointwiseArg>& args) {
  const char* row = lookup(op);
  if (!row) throw CodegenError("codegen has no expression for op '" + op + "'");
  if (static_cast<int>(args.size()) != spec::opArity(op))
    throw std::logic_error("fxfuse internal error: '" + op + "' given the wrong operand count (please report a bug)");
  std::string special = specialized(op, args);
  if (!special.empty()) return special;
  fmt::dynamic_format_arg_store<fmt::format_context> store;
  for (const PointwiseArg& a : args) store.push_back(a.expr);
  return fmt::vformat(row, store);
}

const char* valueCType(spec::DType d) { return d == spec::DType::Bool ? "bool" : "float"; }

const char* storageCType(spec::DType d) { return names(d).storage; }

std::string roundTo(spec::DType d, const std::string& expr) {
  if (d == spec::DType::F32) return expr;  // fp32 is the compute type: nothing to round
  return fmt::format("fx_round_{}({})", names(d).suffix, expr);
}

std::string loadFn(spec::DType d) { return std::string("fx_ld_") + names(d).suffix; }
std::string storeFn(spec::DType d) { return std::string("fx_st_") + names(d).suffix; }

std::string floatLiteral(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  std::string s = fmt::format("{:.9g}", f);  // 9 significant digits round-trip every float
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

}  // namespace fxfuse::codegen
