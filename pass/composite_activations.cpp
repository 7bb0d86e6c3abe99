#include "pass/composite_activations.h"

#include <cmath>
#include <optional>
#include <vector>

namespace fxfuse::pass {
namespace {

using ir::Arg;

// ATen reads each Scalar argument as opmath_t (float here): the constant the kernel multiplies by.
float asFloat(double v) { return static_cast<float>(v); }

// The activation's tensor operand in f32, or nullopt where it is not lowered: a result other than bf16 / f16 / f32,
// or an operand of another dtype (eager's activations return their input's dtype).
std::optional<int> operandInFloat(LoweringContext& c) {
  const spec::DType result = c.node().type.tensor.dtype;
  if (result != spec::DType::BF16 && result != spec::DType::F16 && result != spec::DType::F32) return std::nullopt;
  auto x = c.selfOfResultType();
  if (!x) return std::nullopt;
  return result == spec::DType::F32 ? *x : c.emitAs("convert", {*x}, spec::DType::F32);
}

// `x * k` in f32, or x itself where k is 1 (exact either way).
int timesConstant(LoweringContext& c, int x, float k) {
  return k == 1.0f ? x : c.emitIntermediate("mul", {x, c.floatConstant(k)});
}

// A finite number beyond float's range: eager raises converting it to its f32 opmath ("value cannot be converted
// to type float without overflow"), so the op is left to eager (review, session 56: the chain computed with inf).
bool overflowsFloat(double v) { return std::isfinite(v) && std::isinf(asFloat(v)); }

// A number argument, or nullopt where the graph passes something else or one eager refuses.
std::optional<double> numberArg(LoweringContext& c, size_t i, const char* name, double fallback) {
  const Arg a = c.arg(i, name, Arg::real(fallback));
  if (!a.isExactNumber() || overflowsFloat(a.number())) return std::nullopt;
  return a.number();
}

// hardsigmoid(x) = min(max(x + 3, 0), 6) * (1.0f / 6.0f) on CUDA; ATen's CPU kernel divides by 6 instead (an f32
// result differs in the last bit at a fifth of the elements between the two)
std::optional<int> lowerHardsigmoid(LoweringContext& c) {
  auto x = operandInFloat(c);
  if (!x) return std::nullopt;
  const int shifted = c.emitIntermediate("add", {*x, c.floatConstant(3.0)});
  const int clamped = c.emitIntermediate("hardtanh", {shifted, c.floatConstant(0.0), c.floatConstant(6.0)});
  if (c.onCpu()) return c.emit("div", {clamped, c.floatConstant(6.0)});
  return c.emit("mul", {clamped, c.floatConstant(1.0f / 6.0f)});
}

// softplus(x, beta=1, threshold=20) = x * beta > threshold ? x : log1p(exp(x * beta)) / beta
std::optional<int> lowerSoftplus(LoweringContext& c) {
  auto beta = numberArg(c, 1, "beta", 1.0), threshold = numberArg(c, 2, "threshold", 20.0);
  if (!beta || !threshold) return std::nullopt;
  auto x = operandInFloat(c);
  if (!x) return std::nullopt;
  const int scaled = timesConstant(c, *x, asFloat(*beta));
  const int above = c.emitAs("gt", {scaled, c.floatConstant(asFloat(*threshold))}, spec::DType::Bool);
  int smooth = c.emitIntermediate("log1p", {c.emitIntermediate("exp", {scaled})});
  if (asFloat(*beta) != 1.0f) smooth = c.emitIntermediate("div", {smooth, c.floatConstant(asFloat(*beta))});
  return c.emit("where", {above, *x, smooth});
}

// mish(x) = x * tanh(log1p(exp(x)))
std::optional<int> lowerMish(LoweringContext& c) {
  auto x = operandInFloat(c);
  if (!x) return std::nullopt;
  const int softplus = c.emitIntermediate("log1p", {c.emitIntermediate("exp", {*x})});
  return c.emit("mul", {*x, c.emitIntermediate("tanh", {softplus})});
}

// elu(x, alpha, scale, input_scale) = x > 0 ? x * scale : expm1(x * input_scale) * (alpha * scale), the product of
// the two f32 coefficients rounded to f32, as ATen's kernel computes it once before the loop. At x = +-0 the CUDA
// kernel takes the second branch and the CPU's the first (x < 0 ? ... : x * scale), which differ in the sign of the
// zero (or NaN for a NaN alpha) where a coefficient is negative: each device's own test (review, session 56).
std::optional<int> eluOf(LoweringContext& c, double alpha, double scale, double inputScale) {
  auto x = operandInFloat(c);
  if (!x) return std::nullopt;
  const float negative = asFloat(alpha) * asFloat(scale);
  const bool cpu = c.onCpu();
  const int test = c.emitAs(cpu ? "lt" : "gt", {*x, c.floatConstant(0.0)}, spec::DType::Bool);
  const int exponential = c.emitIntermediate("expm1", {timesConstant(c, *x, asFloat(inputScale))});
  const int below = timesConstant(c, exponential, negative);
  const int above = timesConstant(c, *x, asFloat(scale));
  return c.emit("where", cpu ? std::vector<int>{test, below, above} : std::vector<int>{test, above, below});
}

std::optional<int> lowerElu(LoweringContext& c) {
  auto alpha = numberArg(c, 1, "alpha", 1.0), scale = numberArg(c, 2, "scale", 1.0),
       inputScale = numberArg(c, 3, "input_scale", 1.0);
  if (!alpha || !scale || !inputScale) return std::nullopt;
  return eluOf(c, *alpha, *scale, *inputScale);
}

// selu(x) = elu(x, SELU_ALPHA, SELU_SCALE): ATen's constants, as doubles
std::optional<int> lowerSelu(LoweringContext& c) {
  return eluOf(c, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0);
}

// celu(x, alpha=1) = elu(x, alpha, 1, 1 / alpha), 1 / alpha computed in double as ATen's celu does
std::optional<int> lowerCelu(LoweringContext& c) {
  auto alpha = numberArg(c, 1, "alpha", 1.0);
  // alpha 0 (eager raises), or an input scale 1 / alpha past float's range: left to eager
  if (!alpha || *alpha == 0.0 || overflowsFloat(1.0 / *alpha)) return std::nullopt;
  return eluOf(c, *alpha, 1.0, 1.0 / *alpha);
}

// log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|))
std::optional<int> lowerLogSigmoid(LoweringContext& c) {
  auto x = operandInFloat(c);
  if (!x) return std::nullopt;
  const int low = c.emitIntermediate("minimum", {*x, c.floatConstant(0.0)});
  const int decay = c.emitIntermediate("exp", {c.emitIntermediate("neg", {c.emitIntermediate("abs", {*x})})});
  return c.emit("sub", {low, c.emitIntermediate("log1p", {decay})});
}

}  // namespace

void addCompositeActivations(std::unordered_map<std::string, LowerFn>& table) {
  table["aten.hardsigmoid.default"] = lowerHardsigmoid;
  table["aten.softplus.default"] = lowerSoftplus;
  table["aten.mish.default"] = lowerMish;
  table["aten.elu.default"] = lowerElu;
  table["aten.selu.default"] = lowerSelu;
  table["aten.celu.default"] = lowerCelu;
  table["aten.log_sigmoid.default"] = lowerLogSigmoid;
}

}  // namespace fxfuse::pass
