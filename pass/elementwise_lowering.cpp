#include "pass/elementwise_lowering.h"

#include <cmath>
#include <unordered_map>

#include "pass/aten_ops.h"
#include "pass/composite_activations.h"
#include "pass/round_decimals.h"

namespace fxfuse::pass {

LoweringContext::LoweringContext(const ir::Node& node, ChainBuilder& builder, OperandResolver& resolver)
    : node_(node), builder_(builder), resolver_(resolver) {}

ir::Arg LoweringContext::arg(size_t i, const char* name, ir::Arg fallback) const {
  if (i < node_.args.size()) return node_.args[i];
  if (const ir::Arg* kw = node_.kwarg(name)) return *kw;
  return fallback;
}

namespace {
// A 16-bit float value with dims (a chain value of the output's shape, or an input of rank >= 1): beside it eager
// types a number as its type in a comparison.
bool dimensioned16(const spec::ChainSpec& spec, int id) {
  const spec::Value& v = spec.values[id];
  const bool hasDims = v.kind == spec::ValueKind::Op || v.kind == spec::ValueKind::Mm ||
                       (v.kind == spec::ValueKind::Input && !v.dims.empty());
  return hasDims && spec::isHalfFloat(v.dtype);
}

bool isIntegerType(spec::DType d) { return !isFloating(d) && d != spec::DType::Bool; }

// The type eager gives a Python int beside integer tensors of these types: theirs (an int number does not
// widen an integer tensor: `int32 < 2**40` compares with 2**40 wrapped to int32), the wider of two of one
// signedness, else i64 (no integer tensor, or u8 beside a signed one: the spec has no i16).
spec::DType integerNumberType(const std::vector<spec::DType>& tensors) {
  std::optional<spec::DType> common;
  for (spec::DType d : tensors) {
    if (!isIntegerType(d)) continue;
    if (!common) {
      common = d;
    } else if ((d == spec::DType::U8) != (*common == spec::DType::U8)) {
      return spec::DType::I64;
    } else if (spec::dtypeBytes(d) > spec::dtypeBytes(*common)) {
      common = d;
    }
  }
  return common.value_or(spec::DType::I64);
}
}  // namespace

std::optional<std::vector<int>> LoweringContext::operands(const std::vector<ir::Arg>& args, bool comparison) {
  std::vector<int> ids(args.size(), -1);
  std::vector<spec::DType> tensorTypes;
  bool floating = isFloating(node_.type.tensor.dtype);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].isValue()) {
      ids[i] = resolver_.tensor(args[i]);
      if (ids[i] < 0) return std::nullopt;
      tensorTypes.push_back(builder_.dtypeOf(ids[i]));
      floating = floating || isFloating(tensorTypes.back());
    } else if (!args[i].isExactNumber()) {
      return std::nullopt;  // a list, string, … where an operand belongs, or an int beyond 2^53
    }
  }
  std::optional<spec::DType> common16;
  if (comparison)
    for (int id : ids)
      if (id >= 0 && dimensioned16(builder_.spec(), id)) common16 = builder_.dtypeOf(id);
  for (size_t i = 0; i < args.size(); ++i) {
    if (ids[i] >= 0) continue;
    const ir::Arg& a = args[i];
    spec::DType dt = spec::DType::F32;
    if (!floating && a.kind != ir::Arg::Kind::Float)
      dt = a.kind == ir::Arg::Kind::Bool ? spec::DType::Bool : integerNumberType(tensorTypes);
    if (common16 && a.kind != ir::Arg::Kind::Bool) dt = *common16;
    ids[i] = builder_.constant(a.number(), dt);
  }
  return ids;
}

int LoweringContext::emit(const std::string& op, std::vector<int> operands) {
  return builder_.op(op, std::move(operands), node_.type.tensor.dtype);
}

void LoweringContext::convertToCommonDtype(std::vector<int>* operands, CpuScalars cpuScalars, size_t first) {
  pass::convertToCommonDtype(builder_, node_.type.tensor, operands, cpuScalars, first);
}

bool LoweringContext::roundsScalarsToResult() const {
  return spec::isHalfFloat(node_.type.tensor.dtype) && onCpu();
}

int LoweringContext::alphaConstant(double alpha) {
  const ir::TensorType& t = node_.type.tensor;
  return builder_.constant(alpha, isFloating(t.dtype) || std::trunc(alpha) != alpha ? spec::DType::F32 : spec::DType::I64);
}

int LoweringContext::emitAs(const std::string& op, std::vector<int> operands, spec::DType dtype) {
  return builder_.op(op, std::move(operands), dtype);
}

std::optional<int> LoweringContext::selfOfResultType() {
  auto v = operands({arg(0, "self", ir::Arg::none())});
  if (!v || builder_.dtypeOf((*v)[0]) != node_.type.tensor.dtype) return std::nullopt;
  return (*v)[0];
}

int LoweringContext::floatConstant(double v, spec::DType dtype) { return builder_.constant(v, dtype); }

int LoweringContext::emitIntermediate(const std::string& op, std::vector<int> operands) {
  spec::DType dt = node_.type.tensor.dtype;
  return builder_.op(op, std::move(operands), isFloating(dt) ? spec::DType::F32 : dt);
}

namespace {

using ir::Arg;

// f(x)  ->  `op %x`
LowerFn unary(const char* op) {
  return [op](LoweringContext& c) -> std::optional<int> {
    auto v = c.operands({c.arg(0, "self", Arg::none())});
    if (!v) return std::nullopt;
    return c.emit(op, *v);
  };
}

// f(x, y)  ->  `op %x %y` (either may be a scalar const)
LowerFn binary(const char* op, CpuScalars cpuScalars) {
  return [op, cpuScalars](LoweringContext& c) -> std::optional<int> {
    auto v = c.operands({c.arg(0, "self", Arg::none()), c.arg(1, "other", Arg::none())});
    if (!v) return std::nullopt;
    c.convertToCommonDtype(&*v, cpuScalars);
    return c.emit(op, *v);
  };
}

// lt/le/gt/ge/eq/ne(x, y)  ->  `op %x %y`, in eager's common dtype (convertToCommonDtype)
LowerFn comparison(const char* op) {
  return [op](LoweringContext& c) -> std::optional<int> {
    auto v = c.operands({c.arg(0, "self", Arg::none()), c.arg(1, "other", Arg::none())}, /*comparison=*/true);
    if (!v) return std::nullopt;
    c.convertToCommonDtype(&*v, CpuScalars::Converted);
    return c.emit(op, *v);
  };
}

// add/sub(x, y, alpha=a)  ->  `mul %y a : f32`, `op %x %mul` (spec.md: alpha is not an attribute)
// rsub(x, y, alpha=a)     ->  the same with x and y swapped: y - a*x
LowerFn withAlpha(const char* op, bool reversed) {
  return [op, reversed](LoweringContext& c) -> std::optional<int> {
    Arg x = c.arg(0, "self", Arg::none()), y = c.arg(1, "other", Arg::none());
    if (reversed) std::swap(x, y);
    Arg alpha = c.arg(2, "alpha", Arg::integer(1));
    if (!alpha.isExactNumber()) return std::nullopt;
    bool scaled = alpha.number() != 1.0;
    // A float alpha other than -1 ends the chain, except on a 16-bit CUDA result (its kernel computes x + alpha * y
    // in fp32 and rounds once to 16 bits, as the chain's mul and add do up to the fp32 rounding the 16-bit one hides):
    //  - eager's float32 / float64 add rounds `x + alpha * y` once (a fused multiply-add): the chain's mul then add
    //    rounds twice, and where alpha * y overflows gives NaN for eager's inf (bug hunt, session 54);
    //  - ATen's 16-bit CPU add is not one formula: its vector body computes `x + bf16(alpha) * y` in fp32, its scalar
    //    tail (past the last full vector) rounds `alpha * y` to 16 bits first, so eager's own answer depends on the
    //    tensor's size (bf16 -3.75 + 3 * 167: 496 at 8 x 16, 498 at 8 x 64; bug hunt, session 55).
    // alpha = -1 is exact in every one of these.
    const spec::DType result = c.node().type.tensor.dtype;
    const bool cudaHalf = spec::isHalfFloat(result) && !c.roundsScalarsToResult();
    if (scaled && alpha.number() != -1.0 && isFloating(result) && !cudaHalf) return std::nullopt;
    // Scaled (by -1) on the CPU in 16 bits, a number or 0-d operand is rounded to the tensor's type, as ATen's add
    // does (without alpha the CPU kernel calls ATen's add itself; the alpha multiply would hide the 0-d operand)
    const bool round = scaled && c.roundsScalarsToResult();
    auto v = c.operands({x, y}, /*comparison=*/round);
    if (!v) return std::nullopt;
    c.convertToCommonDtype(&*v, round ? CpuScalars::Converted : CpuScalars::LeftToAten);
    int rhs = scaled ? c.emitIntermediate("mul", {(*v)[1], c.alphaConstant(alpha.number())}) : (*v)[1];
    return c.emit(op, {(*v)[0], rhs});
  };
}

// div(x, y, rounding_mode=None) -> `div %x %y`; floor/trunc division is not true division.
std::optional<int> lowerDiv(LoweringContext& c) {
  if (c.arg(2, "rounding_mode", Arg::none()).kind != Arg::Kind::None) return std::nullopt;
  return binary("div", CpuScalars::LeftToAten)(c);
}

// pow(x, e) with a scalar exponent -> `pow %x e`
std::optional<int> lowerPow(LoweringContext& c) {
  if (!c.arg(1, "exponent", Arg::none()).isNumber()) return std::nullopt;
  auto v = c.operands({c.arg(0, "self", Arg::none()), c.arg(1, "exponent", Arg::none())});
  if (!v) return std::nullopt;
  return c.emit("pow", *v);
}

// A missing clamp bound is the const nan ("none", docs/spec.md).
Arg boundOrNan(Arg a) { return a.kind == Arg::Kind::None ? Arg::real(NAN) : a; }

// clamp(x, lo, hi) / clamp_min(x, lo) / clamp_max(x, hi) -> `clamp %x %lo %hi`
LowerFn clampLike(bool hasMin, bool hasMax) {
  return [hasMin, hasMax](LoweringContext& c) -> std::optional<int> {
    Arg lo = Arg::none(), hi = Arg::none();
    if (hasMin && hasMax) {
      lo = c.arg(1, "min", Arg::none());
      hi = c.arg(2, "max", Arg::none());
    } else if (hasMin) {
      lo = c.arg(1, "min", Arg::none());
    } else {
      hi = c.arg(1, "max", Arg::none());
    }
    // a NaN bound makes eager's result NaN, but NaN is how the spec writes "no bound": not fused
    for (const Arg& bound : {lo, hi})
      if (bound.isNumber() && std::isnan(bound.number())) return std::nullopt;
    auto v = c.operands({c.arg(0, "self", Arg::none()), boundOrNan(lo), boundOrNan(hi)});
    if (!v) return std::nullopt;
    // nor a NaN `full((), nan)` bound, which would read as the const nan too (review, session 55)
    for (size_t i = 1; i < 3; ++i)
      if (c.isTensorConstant((*v)[i]) && std::isnan(c.constantValue((*v)[i]))) return std::nullopt;
    c.convertToCommonDtype(&*v, CpuScalars::Converted);
    return c.emit("clamp", *v);
  };
}

// hardtanh(x, min_val=-1, max_val=1) -> `hardtanh %x lo hi`
std::optional<int> hardtanh(LoweringContext& c, Arg lo, Arg hi) {
  auto v = c.operands({c.arg(0, "self", Arg::none()), lo, hi});
  if (!v) return std::nullopt;
  return c.emit("hardtanh", *v);
}

std::optional<int> lowerHardtanh(LoweringContext& c) {
  return hardtanh(c, c.arg(1, "min_val", Arg::real(-1.0)), c.arg(2, "max_val", Arg::real(1.0)));
}

// relu6(x) -> `hardtanh %x 0 6`: ATen's relu6 is hardtanh(x, 0, 6)
std::optional<int> lowerRelu6(LoweringContext& c) { return hardtanh(c, Arg::real(0.0), Arg::real(6.0)); }

// leaky_relu(x, negative_slope=0.01) -> `leaky_relu %x slope`
std::optional<int> lowerLeakyRelu(LoweringContext& c) {
  auto v = c.operands({c.arg(0, "self", Arg::none()), c.arg(1, "negative_slope", Arg::real(0.01))});
  if (!v) return std::nullopt;
  return c.emit("leaky_relu", *v);
}

// gelu(x, approximate="none"|"tanh") -> `gelu %x` | `gelu_tanh %x`
std::optional<int> lowerGelu(LoweringContext& c) {
  Arg approx = c.arg(1, "approximate", Arg::string("none"));
  if (approx.kind != Arg::Kind::String || (approx.s != "none" && approx.s != "tanh")) return std::nullopt;
  return unary(approx.s == "tanh" ? "gelu_tanh" : "gelu")(c);
}

// where(cond, a, b) -> `where %cond %a %b` (any of a, b may be a scalar)
std::optional<int> lowerWhere(LoweringContext& c) {
  auto v = c.operands({c.arg(0, "condition", Arg::none()), c.arg(1, "self", Arg::none()),
                       c.arg(2, "other", Arg::none())});
  if (!v) return std::nullopt;
  c.convertToCommonDtype(&*v, CpuScalars::Converted, /*first=*/1);  // not the condition
  return c.emit("where", *v);
}

// Ops that give their operand's values unchanged: clone, alias, detach, dropout outside training (nn.Dropout of
// an eval-mode model), and a view or reshape, which the region takes only where its result has the chain's output
// shape and reads a chain value (epilogue_region.cpp growEpilogue): every chain value is that shape's elements in
// row-major order, so the view reorders nothing. They bind the node to the operand's value and emit nothing; they
// had ended the chain, so a Linear -> Dropout -> ReLU fused nothing (review, session 56). The chain's values are
// contiguous, so a clone to the preserved or contiguous format changes nothing either; one to another layout
// (channels_last) is left outside.
std::optional<int> identity(LoweringContext& c) {
  const ir::Node& n = c.node();
  if (n.isCall("aten.dropout.default")) {
    const Arg train = c.arg(2, "train", Arg::none());
    if (train.kind != Arg::Kind::Bool || train.b) return std::nullopt;
  }
  if (const ir::Arg* format = n.kwarg("memory_format");
      format && format->kind != Arg::Kind::None && format->s != "preserve_format" && format->s != "contiguous_format")
    return std::nullopt;
  return c.selfOfResultType();
}

// convert_element_type(x, dt) / _to_copy(x, dtype=dt) / to(x, dt) -> `convert %x : dt`
std::optional<int> lowerConvert(LoweringContext& c) {
  if (!convertTarget(c.node())) return std::nullopt;
  return unary("convert")(c);
}

const std::unordered_map<std::string, LowerFn>& table() {
  static const std::unordered_map<std::string, LowerFn> t = [] {
    std::unordered_map<std::string, LowerFn> m;
    for (const char* op : {"neg", "abs", "reciprocal", "sqrt", "rsqrt", "exp", "log", "tanh",
                           "erf", "sigmoid", "sin", "cos", "relu", "silu", "hardswish", "log1p", "expm1", "sign", "round", "floor", "ceil", "trunc"})
      m[std::string("aten.") + op + ".default"] = unary(op);
    for (const char* op : {"lt", "le", "gt", "ge", "eq", "ne"}) {
      m[std::string("aten.") + op + ".Tensor"] = comparison(op);
      m[std::string("aten.") + op + ".Scalar"] = comparison(op);
    }
    m["aten.maximum.default"] = binary("maximum", CpuScalars::Converted);
    m["aten.minimum.default"] = binary("minimum", CpuScalars::Converted);
    m["aten.mul.Tensor"] = binary("mul", CpuScalars::LeftToAten);
    m["aten.mul.Scalar"] = binary("mul", CpuScalars::LeftToAten);
    m["aten.add.Tensor"] = withAlpha("add", false);
    m["aten.add.Scalar"] = withAlpha("add", false);
    m["aten.sub.Tensor"] = withAlpha("sub", false);
    m["aten.sub.Scalar"] = withAlpha("sub", false);
    m["aten.rsub.Tensor"] = withAlpha("sub", true);
    m["aten.rsub.Scalar"] = withAlpha("sub", true);
    m["aten.div.Tensor"] = lowerDiv;
    m["aten.div.Scalar"] = lowerDiv;
    m["aten.div.Tensor_mode"] = lowerDiv;
    m["aten.pow.Tensor_Scalar"] = lowerPow;
    m["aten.clamp.default"] = clampLike(true, true);
    m["aten.clamp.Tensor"] = clampLike(true, true);
    m["aten.clamp_min.default"] = clampLike(true, false);
    m["aten.clamp_min.Tensor"] = clampLike(true, false);
    m["aten.clamp_max.default"] = clampLike(false, true);
    m["aten.clamp_max.Tensor"] = clampLike(false, true);
    m["aten.hardtanh.default"] = lowerHardtanh;
    m["aten.relu6.default"] = lowerRelu6;
    m["aten.leaky_relu.default"] = lowerLeakyRelu;
    m["aten.gelu.default"] = lowerGelu;
    m["aten.where.self"] = lowerWhere;
    m["aten.where.ScalarSelf"] = lowerWhere;
    m["aten.where.ScalarOther"] = lowerWhere;
    m["aten.where.Scalar"] = lowerWhere;
    addCompositeActivations(m);
    addRoundDecimals(m);
    for (const char* op : {"aten.clone.default", "aten.alias.default", "aten.detach.default", "aten.dropout.default",
                           "aten.view.default", "aten.reshape.default", "aten._unsafe_view.default"})
      m[op] = identity;
    m["prims.convert_element_type.default"] = lowerConvert;
    m["aten._to_copy.default"] = lowerConvert;
    m["aten.to.dtype"] = lowerConvert;
    return m;
  }();
  return t;
}

}  // namespace

const LowerFn* findElementwiseLowering(const std::string& target) {
  auto it = table().find(target);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<ir::Arg> tensorArguments(const ir::Node& node) {
  std::vector<ir::Arg> out;
  for (const ir::Arg& a : node.args)
    if (a.isValue()) out.push_back(a);
  for (const ir::NamedArg& a : node.kwargs)
    if (a.value.isValue()) out.push_back(a.value);
  return out;
}

}  // namespace fxfuse::pass
