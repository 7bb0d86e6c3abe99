// The spec evaluated with ATen, value by value: the CPU kernel (the reference every generated
// kernel is tested against) and the CUDA fallback when no kernel can be compiled. Each op
// follows eager PyTorch's rounding: operands to the op-math type (fp32; int64 when every
// operand and the result are integral), compute, round to the value's dtype; an op eager called
// on one 16-bit tensor of its own type (and scalars) is called on that tensor (callsAsEagerDid).
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <utility>

#include <ATen/ATen.h>

#include "runtime/gemm_chain.h"
#include "runtime/kernel_loader.h"
#include "runtime/torch_types.h"

namespace fxfuse::runtime {
namespace {

using spec::ChainSpec;
using spec::GemmKind;
using spec::Value;
using spec::ValueKind;

struct Operand {
  at::Tensor t;            // converted to the op-math type
  const Value* value;      // its spec value (constants are read as scalars by some ops)
  bool isConst() const { return value->kind == ValueKind::Const; }
  double constant() const { return value->constant; }
};

// `t` in dtype `d`. Tensor::to returns `t` itself when it already is, but only after a
// dispatcher call, and this path would make several per op.
at::Tensor toType(const at::Tensor& t, at::ScalarType d) {
  return t.scalar_type() == d ? t : t.to(d);
}

using OpFn = std::function<at::Tensor(const std::vector<Operand>&)>;

// Whether every float type but f64 holds `v` (it is NaN or within f16's largest, 65504): past that a float
// constant overflows one of them, and is made in double and converted (+-inf, as eager has it).
bool heldByEveryFloatType(double v) { return !std::isfinite(v) || std::fabs(v) <= 65504.0; }

// `v` rounded to the 16-bit float type T, as a double.
template <class T>
double roundedThrough(double v) { return static_cast<float>(T(static_cast<float>(v))); }

// A spec constant as eager passed it: a Python scalar (callsAsEagerDid says why it matters), an int
// where the spec types it integral (an integer tensor and a double Scalar compute in float32:
// `int32 + 1` was off by one above 2^24).
// A 16-bit constant is the 16-bit number (the pass types add / sub's alpha so on the CPU, where ATen rounds it:
// read unrounded, `add(y, r_int64, alpha=0.3)` was off eager; review, session 53).
at::Scalar scalarOf(const Operand& o) {
  const double v = o.constant();
  const at::ScalarType type = toScalarType(o.value->dtype);
  if (at::isIntegralType(type, /*includeBool=*/false) && std::trunc(v) == v && std::fabs(v) < 9.2e18)
    return at::Scalar(static_cast<int64_t>(v));
  if (type == at::kBFloat16) return at::Scalar(roundedThrough<c10::BFloat16>(v));
  if (type == at::kHalf) return at::Scalar(roundedThrough<c10::Half>(v));
  return at::Scalar(v);
}

// scalarOf for an op whose result is of type `to`: ATen's Scalar overloads (where) check a float
// constant against `to`'s range and raise, where eager's `where(c, y, -1e39)` gives -inf: past the
// range the constant is what the cast to `to` makes of it.
at::Scalar scalarFor(const Operand& o, at::ScalarType to) {
  const at::Scalar s = scalarOf(o);
  if (!s.isFloatingPoint() || !at::isFloatingType(to) || to == at::kDouble || heldByEveryFloatType(s.toDouble()))
    return s;
  return at::scalar_tensor(s, at::TensorOptions().dtype(at::kDouble)).to(to).item();
}

// Ops whose eager form takes a Python scalar (pow's exponent, leaky_relu's slope, clamp's
// bounds) use the Scalar overloads when the operand is a spec constant, as eager did.
std::optional<at::Scalar> boundOf(const Operand& o) {
  if (std::isnan(o.constant())) return std::nullopt;  // `nan` bound: none
  return scalarOf(o);
}

// clamp(x, lo, hi) = min(max(x, lo), hi), one side at a time so that a constant bound is a
// Scalar (constants are CPU 0-dim tensors, which clamp.Tensor does not take with device
// tensors); a `nan` constant bound means none, as in the spec.
at::Tensor clampOp(const std::vector<Operand>& x) {
  at::Tensor r = x[0].t;
  if (x[1].isConst() && x[2].isConst()) return at::clamp(r, boundOf(x[1]), boundOf(x[2]));
  if (!x[1].isConst()) r = at::clamp_min(r, x[1].t);
  else if (auto lo = boundOf(x[1])) r = at::clamp_min(r, *lo);
  if (!x[2].isConst()) r = at::clamp_max(r, x[2].t);
  else if (auto hi = boundOf(x[2])) r = at::clamp_max(r, *hi);
  return r;
}

const std::unordered_map<std::string, OpFn>& opTable() {
  // One row per op of docs/spec.md (spec/op_table.cpp lists the same names).
  static const std::unordered_map<std::string, OpFn> table = {
      {"neg", [](auto& x) { return at::neg(x[0].t); }},
      {"abs", [](auto& x) { return at::abs(x[0].t); }},
      {"reciprocal", [](auto& x) { return at::reciprocal(x[0].t); }},
      {"sqrt", [](auto& x) { return at::sqrt(x[0].t); }},
      {"rsqrt", [](auto& x) { return at::rsqrt(x[0].t); }},
      {"exp", [](auto& x) { return at::exp(x[0].t); }},
      {"log", [](auto& x) { return at::log(x[0].t); }},
      {"tanh", [](auto& x) { return at::tanh(x[0].t); }},
      {"erf", [](auto& x) { return at::erf(x[0].t); }},
      {"sigmoid", [](auto& x) { return at::sigmoid(x[0].t); }},
      {"sin", [](auto& x) { return at::sin(x[0].t); }},
      {"cos", [](auto& x) { return at::cos(x[0].t); }},
      {"relu", [](auto& x) { return at::relu(x[0].t); }},
      {"gelu", [](auto& x) { return at::gelu(x[0].t, "none"); }},
      {"gelu_tanh", [](auto& x) { return at::gelu(x[0].t, "tanh"); }},
      {"silu", [](auto& x) { return at::silu(x[0].t); }},
      {"hardswish", [](auto& x) { return at::hardswish(x[0].t); }},
      {"log1p", [](auto& x) { return at::log1p(x[0].t); }},
      {"expm1", [](auto& x) { return at::expm1(x[0].t); }},
      {"sign", [](auto& x) { return at::sign(x[0].t); }},
      {"round", [](auto& x) { return at::round(x[0].t); }},
      {"floor", [](auto& x) { return at::floor(x[0].t); }},
      {"ceil", [](auto& x) { return at::ceil(x[0].t); }},
      {"trunc", [](auto& x) { return at::trunc(x[0].t); }},
      {"add", [](auto& x) { return x[1].isConst() ? at::add(x[0].t, scalarOf(x[1])) : at::add(x[0].t, x[1].t); }},
      {"sub", [](auto& x) { return x[1].isConst() ? at::sub(x[0].t, scalarOf(x[1])) : at::sub(x[0].t, x[1].t); }},
      {"mul", [](auto& x) { return x[1].isConst() ? at::mul(x[0].t, scalarOf(x[1])) : at::mul(x[0].t, x[1].t); }},
      {"div", [](auto& x) { return x[1].isConst() ? at::div(x[0].t, scalarOf(x[1])) : at::div(x[0].t, x[1].t); }},
      {"maximum", [](auto& x) { return at::maximum(x[0].t, x[1].t); }},
      {"minimum", [](auto& x) { return at::minimum(x[0].t, x[1].t); }},
      {"pow",
       [](auto& x) {
         if (x[1].isConst()) return at::pow(x[0].t, scalarOf(x[1]));
         if (x[0].isConst()) return at::pow(scalarOf(x[0]), x[1].t);
         return at::pow(x[0].t, x[1].t);
       }},
      {"lt", [](auto& x) { return at::lt(x[0].t, x[1].t); }},
      {"le", [](auto& x) { return at::le(x[0].t, x[1].t); }},
      {"gt", [](auto& x) { return at::gt(x[0].t, x[1].t); }},
      {"ge", [](auto& x) { return at::ge(x[0].t, x[1].t); }},
      {"eq", [](auto& x) { return at::eq(x[0].t, x[1].t); }},
      {"ne", [](auto& x) { return at::ne(x[0].t, x[1].t); }},
      {"leaky_relu",
       [](auto& x) {
         if (x[1].isConst()) return at::leaky_relu(x[0].t, scalarOf(x[1]));
         return at::where(x[0].t > 0, x[0].t, x[0].t * x[1].t);
       }},
      {"where",
       [](auto& x) {
         if (x[0].isConst()) return x[0].constant() != 0 ? x[1].t : x[2].t;  // later ops broadcast
         const at::Tensor c = toType(x[0].t, at::kBool);
         if (x[1].isConst() && x[2].isConst())
           return at::where(c, scalarFor(x[1], at::kFloat), scalarFor(x[2], at::kFloat)).to(x[1].t.scalar_type());
         if (x[1].isConst()) return at::where(c, scalarFor(x[1], x[2].t.scalar_type()), x[2].t);
         if (x[2].isConst()) return at::where(c, x[1].t, scalarFor(x[2], x[1].t.scalar_type()));
         return at::where(c, x[1].t, x[2].t);
       }},
      {"clamp", clampOp},
      {"hardtanh",
       [](auto& x) {
         if (x[1].isConst() && x[2].isConst())
           return at::hardtanh(x[0].t, x[1].constant(), x[2].constant());
         return clampOp(x);
       }},
  };
  return table;
}

bool isIntegral(at::ScalarType t) { return at::isIntegralType(t, /*includeBool=*/true); }

// The type an op computes in. `where`'s condition does not take part.
at::ScalarType opMathType(const Value& v, const std::vector<at::Tensor>& values) {
  const at::ScalarType result = toScalarType(v.dtype);
  bool allIntegral = isIntegral(result) || spec::isComparisonOp(v.op);
  bool anyDouble = result == at::kDouble;
  for (size_t i = v.op == "where" ? 1 : 0; i < v.operands.size(); ++i) {
    const at::ScalarType t = values[v.operands[i]].scalar_type();
    allIntegral = allIntegral && isIntegral(t);
    anyDouble = anyDouble || t == at::kDouble;
  }
  if (allIntegral) return at::kLong;
  return anyDouble ? at::kDouble : at::kFloat;
}

// Binary ops whose ATen kernel (TensorIterator) converts its operands to their promoted type
// and, with an out= tensor, rounds to that tensor's dtype as it stores. evalOp lets them:
// one kernel instead of up to four (two operand conversions, the op, the rounding), which on
// CUDA means up to three fewer launches and allocations per op. The values are the same: the
// casts inside the kernel are the ones .to() does, the op computes in the same type, and the
// store rounds as .to() does.
using BinaryOut = at::Tensor& (*)(at::Tensor& out, const at::Tensor& a, const at::Tensor& b);
BinaryOut binaryOut(const std::string& op) {
  static const std::unordered_map<std::string, BinaryOut> table = {
      {"add", [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) -> at::Tensor& { return at::add_out(o, a, b); }},
      {"sub", [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) -> at::Tensor& { return at::sub_out(o, a, b); }},
      {"mul", [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) -> at::Tensor& { return at::mul_out(o, a, b); }},
      {"div", [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) -> at::Tensor& { return at::div_out(o, a, b); }},
      {"maximum", [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) -> at::Tensor& { return at::maximum_out(o, a, b); }},
      {"minimum", [](at::Tensor& o, const at::Tensor& a, const at::Tensor& b) -> at::Tensor& { return at::minimum_out(o, a, b); }},
  };
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

bool isSixteenBitFloat(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

bool plainFloat(at::ScalarType t) {  // float8 types take no part in ATen's type promotion
  return t == at::kFloat || t == at::kDouble || t == at::kBFloat16 || t == at::kHalf;
}

// Converts at most one of `a`, `b` so that ATen's type promotion of the pair gives exactly
// `math`, or returns false. Promotion gives the widest type among operands with dims (0-dim
// tensors, the spec's constants, do not raise it), and neither operand is wider than `math`
// (opMathType), so one operand with dims in `math` is enough.
bool promoteToMath(at::Tensor& a, at::Tensor& b, at::ScalarType math) {
  if (math != at::kFloat && math != at::kDouble) return false;
  if (!plainFloat(a.scalar_type()) || !plainFloat(b.scalar_type())) return false;
  if ((a.dim() > 0 && a.scalar_type() == math) || (b.dim() > 0 && b.scalar_type() == math)) return true;
  at::Tensor& t = a.dim() > 0 ? a : b;
  if (t.dim() == 0) return false;  // two constants
  t = t.to(math);
  return true;
}

// Whether `v` is an op eager called on one 16-bit tensor of its result's type, its other
// operands Python scalars: a unary op, or pow / leaky_relu / clamp / hardtanh / add / sub / mul /
// div with constant arguments after the tensor (their table entries pass constants as Scalars,
// as eager's calls did: ATen's 16-bit CPU add and sub round the scalar to the tensor's type
// first, so an fp32 copy of the tensor gave another answer for up to 17 % of the elements:
// tests/reliability/scan_16bit_kernels.py).
bool callsAsEagerDid(const ChainSpec& spec, const Value& v, const std::vector<at::Tensor>& values,
                     at::ScalarType result) {
  if (!isSixteenBitFloat(result) || v.operands.empty()) return false;
  const int first = v.operands[0];
  if (spec.values[first].kind == ValueKind::Const || values[first].scalar_type() != result) return false;
  if (v.operands.size() == 1) return true;
  static const char* const kScalarArgs[] = {"pow", "leaky_relu", "clamp", "hardtanh", "add", "sub", "mul", "div"};
  if (std::none_of(std::begin(kScalarArgs), std::end(kScalarArgs), [&](const char* op) { return v.op == op; }))
    return false;
  return std::all_of(v.operands.begin() + 1, v.operands.end(),
                     [&](int o) { return spec.values[o].kind == ValueKind::Const; });
}

// Whether `v` is an add / sub / mul / div of a 16-bit tensor of its result's type and a one-element operand (a
// constant, a 0-d input, or an input whose every dim is 1), in either order, on the CPU. ATen's 16-bit CPU
// kernels round such an operand to the tensor's type in some positions and not in others (add / sub: both;
// mul / div: the first only), so the op is called in the spec's order, as eager called it; the fp32 upcast
// below had `0.3 - y` and `s * y` off eager's CPU answer by 1-6 ulps (hunt A, session 53), and a [1]-shaped
// int32 divisor rounded to bf16 where eager divides by it unrounded (session 55). This path is the CPU's only;
// the pass leaves these operands unconverted for it (pass/common_dtype.h).
bool readAsScalar(const Value& v) { return v.kind == ValueKind::Const || spec::isOneElementInput(v); }

bool oneElementOperandAsEagerDid(const ChainSpec& spec, const Value& v, const std::vector<at::Tensor>& values,
                                 at::ScalarType result) {
  if (!isSixteenBitFloat(result) || v.operands.size() != 2) return false;
  if (v.op != "add" && v.op != "sub" && v.op != "mul" && v.op != "div") return false;
  auto ofResult = [&](int o) {
    return !readAsScalar(spec.values[o]) && values[o].scalar_type() == result && values[o].is_cpu();
  };
  const int a = v.operands[0], b = v.operands[1];
  return (ofResult(a) && readAsScalar(spec.values[b])) || (readAsScalar(spec.values[a]) && ofResult(b));
}

at::Tensor evalOp(const ChainSpec& spec, const Value& v, const std::vector<at::Tensor>& values) {
  const at::ScalarType result = toScalarType(v.dtype);
  if (v.op == "convert") return toType(values[v.operands[0]], result);  // one rounding, like eager
  auto it = opTable().find(v.op);
  TORCH_CHECK(it != opTable().end(), "fxfuse::gemm_chain: op '", v.op,
              "' has no CPU implementation");
  if (callsAsEagerDid(spec, v, values, result) || oneElementOperandAsEagerDid(spec, v, values, result)) {
    // The call eager made, on the 16-bit tensor itself. ATen computes in fp32 inside and rounds
    // once, as the upcast below does, but its Half and BFloat16 CPU kernels are not its Float
    // ones at every point (BUG-6: f16 gelu(+inf) is +inf, the Float kernel's NaN; f16
    // pow(-inf, 0.5) is +inf, not NaN; bf16 erf(1e-8) is 0).
    std::vector<Operand> operands;
    // a 0-d input is read as [1, 1] (logicalView), which ATen's type promotion would count as a tensor (a
    // one-element input with dims: an integer one promotes as its 0-d form does beside the 16-bit tensor, and a
    // float one with dims would have made the result its type)
    for (int o : v.operands)
      operands.push_back({readAsScalar(spec.values[o]) ? values[o].reshape({}) : values[o], &spec.values[o]});
    return toType(it->second(operands), result);
  }
  const at::ScalarType math = opMathType(v, values);
  if (const BinaryOut out = binaryOut(v.op); out && plainFloat(result)) {
    at::Tensor a = values[v.operands[0]], b = values[v.operands[1]];
    if (promoteToMath(a, b, math)) {
      // On a's device unless a is a constant (a CPU scalar next to device tensors).
      at::Tensor r = at::empty({0}, (a.dim() > 0 ? a : b).options().dtype(result));  // resized by the op
      return out(r, a, b);
    }
  }
  std::vector<Operand> operands;
  for (size_t i = 0; i < v.operands.size(); ++i) {
    const at::Tensor& t = values[v.operands[i]];
    const bool isCond = v.op == "where" && i == 0;
    operands.push_back({isCond ? t : toType(t, math), &spec.values[v.operands[i]]});
  }
  return toType(it->second(operands), result);
}

// The GEMM's operands at their full shapes ([B,]M,K and [B,]K,N). They usually are already (expand, a view, is
// another dispatch). `bKMajor` (evaluateReference: a computed B whose weight is stored [N, K]): B given eager's
// strides, F.linear's W.t() (1, K), where the chain's ops left it otherwise. ATen's CPU mm picks its kernel by B's
// strides: a weight dequantized with a scale per group of k came out [K, N]-contiguous, at N = 1 another kernel than
// eager's, one ulp off (session 61's hunt, tests/reliability/hunt_session61/r6).
std::pair<at::Tensor, at::Tensor> fullOperands(const at::Tensor& a, const at::Tensor& b, const ChainShape& shape,
                                               GemmKind gemm, bool bKMajor = false) {
  const int64_t B = shape.B.expect_int(), M = shape.M.expect_int();
  const int64_t N = shape.N.expect_int(), K = shape.K.expect_int();
  std::vector<int64_t> aShape{M, K}, bShape{K, N};
  if (gemm == GemmKind::Bmm) {
    aShape.insert(aShape.begin(), B);
    bShape.insert(bShape.begin(), B);
  }
  at::Tensor y = b.sizes() == c10::IntArrayRef(bShape) ? b : b.expand(bShape);
  if (bKMajor && gemm == GemmKind::Mm && y.is_cpu() && K > 0 && (y.stride(0) != 1 || y.stride(1) != K)) {
    at::Tensor t = at::empty_strided({K, N}, {1, K}, y.options());
    t.copy_(y);
    y = t;
  }
  return {a.sizes() == c10::IntArrayRef(aShape) ? a : a.expand(aShape), y};
}

// Eager's addmm / baddbmm call that `call` stands for (addmmCall): the product of the mm's operands times alpha, plus
// the bias times beta, summed and rounded by ATen's (BLAS's) kernel in its own order, where an mm and then a mul and
// an add rounded otherwise: 1-2 ulps off eager at up to 40 % of an f32 linear's elements and at most of them with an
// alpha (tests/python/test_addmm_bits.py), one ulp at a few 16-bit ones (session 57's hunt).
at::Tensor evalAddmm(const ChainSpec& spec, const spec::AddmmCall& call, const std::vector<at::Tensor>& values,
                     const ChainShape& shape, bool bKMajor) {
  const Value& mm = spec.values[call.product];
  const auto [x, y] = fullOperands(values[mm.operands[0]], values[mm.operands[1]], shape, spec.gemm, bKMajor);
  const at::Scalar alpha = call.alpha >= 0 ? spec.values[call.alpha].constant : 1.0;
  at::Scalar beta = call.beta >= 0 ? spec.values[call.beta].constant : 1.0;
  at::Tensor bias;
  if (call.bias < 0) {
    beta = 0.0;  // no bias: eager's beta 0, with which ATen reads none
    bias = at::zeros({}, x.options());
  } else {
    bias = values[call.bias];
    // a constant, a CPU 0-d tensor (its value already of the bias's type): made on x's device by a fill, not copied
    // from the host at each call (a copy that CUDA graph capture refuses)
    if (bias.device() != x.device()) bias = at::scalar_tensor(bias.item(), x.options().dtype(bias.scalar_type()));
  }
  return spec.gemm == GemmKind::Bmm ? at::baddbmm(bias, x, y, beta, alpha) : at::addmm(bias, x, y, beta, alpha);
}

// The input values `value` is computed from (itself, if an input), each once.
std::vector<int> inputsBehind(const ChainSpec& spec, int value) {
  std::vector<int> found, todo{value};
  std::vector<bool> seen(spec.values.size());
  while (!todo.empty()) {
    const int id = todo.back();
    todo.pop_back();
    if (seen[id]) continue;
    seen[id] = true;
    const Value& v = spec.values[id];
    if (v.kind == ValueKind::Input) found.push_back(id);
    todo.insert(todo.end(), v.operands.begin(), v.operands.end());
  }
  return found;
}

// Whether `value` is a cast (the spec's `convert`) of one value.
bool isConvert(const ChainSpec& spec, int value) {
  const Value& v = spec.values[value];
  return v.kind == ValueKind::Op && v.op == "convert" && v.operands.size() == 1;
}

// The value behind `value`'s converts to the dtype it already has: eager's `w.float()` of an f32 `w` is `w` itself
// (its requires_grad, its layout), where the spec writes `convert`.
int behindNoOpConverts(const ChainSpec& spec, int value) {
  while (isConvert(spec, value) && spec.values[spec.values[value].operands[0]].dtype == spec.values[value].dtype)
    value = spec.values[value].operands[0];
  return value;
}

// Whether eager's weight (the mm's B) required grad, which decides its matmul's form (unfoldedEagerA): a raw input's own
// flag (an nn.Parameter's, also under no_grad); a weight the chain computes only while grad mode is on and one of the
// inputs it is computed from requires grad.
bool weightRequiresGrad(const ChainSpec& spec, int value, at::TensorList inputs) {
  value = behindNoOpConverts(spec, value);
  if (spec.values[value].kind == ValueKind::Input) return inputs[spec.values[value].slot].requires_grad();
  if (!CallerGradMode::enabled()) return false;
  for (int id : inputsBehind(spec, value))
    if (inputs[spec.values[id].slot].requires_grad()) return true;
  return false;
}

// The strides of an elementwise op's result over operands of these strides, each expanded to `sizes` (a broadcast dim's
// stride 0), as ATen's TensorIterator lays it out (reorder_dimensions, then a dense output in that order): the dims
// sorted innermost first by an insertion sort in which the operands, in the op's order, decide each pair: the first
// whose two strides are both non-zero and differ puts the larger stride outward; at equal strides a larger size goes
// outward, else the next operand decides; none deciding leaves the pair as it is.
std::vector<int64_t> elementwiseResultStrides(c10::IntArrayRef sizes, const std::vector<std::vector<int64_t>>& operands) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  std::vector<int64_t> order(rank);  // innermost first; the last dim first to begin with
  for (int64_t i = 0; i < rank; ++i) order[i] = rank - 1 - i;
  auto outward = [&](int64_t inner, int64_t outer) {  // +1: `inner` belongs outside `outer`; -1: inside; 0: cannot tell
    for (const std::vector<int64_t>& st : operands) {
      if (st[inner] == 0 || st[outer] == 0) continue;
      if (st[inner] != st[outer]) return st[inner] > st[outer] ? 1 : -1;
      if (sizes[inner] > sizes[outer]) return 1;
    }
    return 0;
  };
  for (int64_t i = 1; i < rank; ++i) {
    int64_t placed = i;
    for (int64_t at = i - 1; at >= 0; --at) {
      const int c = outward(order[at], order[placed]);
      if (c < 0) break;
      if (c > 0) {
        std::swap(order[at], order[placed]);
        placed = at;
      }
    }
  }
  std::vector<int64_t> dense(rank);
  int64_t step = 1;
  for (int64_t d : order) {
    dense[d] = step;
    if (sizes[d] > 1) step *= sizes[d];
  }
  return dense;
}

// The strides an elementwise result (TensorIterator's output, `.to()`'s copy of a non-dense tensor) takes from one input
// of these sizes and strides: dense, the dims in the input's order of strides (ATen's infer_dense_strides gives the
// same order as TensorIterator's sort of one operand).
std::vector<int64_t> denseStridesLike(c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  return elementwiseResultStrides(sizes, {std::vector<int64_t>(strides.begin(), strides.end())});
}

// Eager's layout of A where its prologue is one elementwise op over the activation and another row-wise input (a
// per-token scale, `x * ts`), each operand an input or an input's cast, then casts: the op's result strides
// (elementwiseResultStrides) over its operands as eager had them, a cast of a non-dense input dense in its order
// (denseStridesLike), of a dense one as it was; a cast of that result keeps it. Empty where A is any other form.
std::vector<int64_t> rowWiseProloguesStrides(const ChainSpec& spec, int aValue, at::TensorList inputs,
                                             c10::IntArrayRef sizes) {
  int top = aValue;
  while (isConvert(spec, top)) top = spec.values[top].operands[0];
  const Value& op = spec.values[top];
  if (op.kind != ValueKind::Op) return {};
  const int64_t rank = static_cast<int64_t>(sizes.size());
  std::vector<std::vector<int64_t>> operands;
  for (int id : op.operands) {
    int in = behindNoOpConverts(spec, id);
    const bool cast = isConvert(spec, in);
    if (cast) in = behindNoOpConverts(spec, spec.values[in].operands[0]);
    if (spec.values[in].kind == ValueKind::Const) continue;  // a 0-d value: strides 0, never decides
    if (spec.values[in].kind != ValueKind::Input) return {};
    const at::Tensor& raw = inputs[spec.values[in].slot];
    const std::vector<int64_t> own = cast && !raw.is_non_overlapping_and_dense()
                                         ? denseStridesLike(raw.sizes(), raw.strides())
                                         : std::vector<int64_t>(raw.strides().begin(), raw.strides().end());
    std::vector<int64_t> expanded(rank, 0);  // right-aligned broadcast to the result's sizes
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t j = i - (rank - raw.dim());
      if (j < 0 || (raw.size(j) == 1 && sizes[i] != 1)) continue;
      if (raw.size(j) != sizes[i]) return {};
      expanded[i] = own[j];
    }
    operands.push_back(std::move(expanded));
  }
  return elementwiseResultStrides(sizes, operands);
}

// Eager's matmul of an input of 3+ dims (F.linear's, `x @ w`) by a 2-D weight folds the input's rows into one mm only
// where the weight requires grad or the leading dims can be viewed as one (ATen's should_fold); else it runs bmm over
// the leading dims with the weight expanded, whose sums on the CPU differ from one mm's of the same rows: 1-2 ulps at
// 40-50 % of the elements with 2-3 rows a batch and K of 1024-4096 (session 69). Eager's A where it took bmm, laid out
// as eager had it; else undefined (the rows' one mm). That A is the raw activation as the caller gave it, or computed
// from it by the prologue's elementwise ops (`x * s`, `x.float()`), whose result is dense in the activation's order of
// strides (a transposed one's); over two row-wise inputs (a per-token scale) in the order its operands' strides give
// (rowWiseProloguesStrides), where its form is one op over inputs and casts (else the one mm, not followed).
// Only for an mm whose operands are of its result's type, as eager's were (evalMm's native product).
at::Tensor unfoldedEagerA(const ChainSpec& spec, const Value& mm, at::TensorList inputs,
                          const std::vector<at::Tensor>& values) {
  const int aValue = mm.operands[0], bValue = mm.operands[1];
  if (spec.gemm != GemmKind::Mm || spec.values[aValue].dtype != mm.dtype || spec.values[bValue].dtype != mm.dtype)
    return {};
  // the activation: the one input of A's values with rows and k (an 'm' dim, 'k' last); any other with rows is a
  // row-wise input broadcast along k (a per-token scale); the rest broadcast along the rows
  int activation = -1, rowWise = 0;
  for (int id : inputsBehind(spec, aValue)) {
    const std::string& dims = spec.values[id].dims;
    if (dims.find('m') == std::string::npos) continue;
    if (dims.back() != 'k') {
      ++rowWise;
      continue;
    }
    if (activation >= 0) return {};
    activation = id;
  }
  if (activation < 0) return {};
  const Value& a = spec.values[activation];
  const at::Tensor& raw = inputs[a.slot];
  const size_t rank = static_cast<size_t>(raw.dim());
  // the rows' leading dims then k (chosen above for its last dim k), every one the tensor's own
  if (rank < 3 || !a.order.empty() || a.dims.size() != rank || a.dims.find_first_not_of('m') != rank - 1) return {};
  if (raw.numel() == 0 || weightRequiresGrad(spec, bValue, inputs)) return {};
  // eager's A: the activation as given, or an elementwise result of it, dense in its order of strides (with a row-wise
  // input beside it, in the order its operands' strides give)
  const bool computed = activation != behindNoOpConverts(spec, aValue);
  const std::vector<int64_t> strides =
      rowWise ? rowWiseProloguesStrides(spec, aValue, inputs, raw.sizes())
      : computed ? denseStridesLike(raw.sizes(), raw.strides())
                 : std::vector<int64_t>(raw.strides().begin(), raw.strides().end());
  if (strides.empty()) return {};
  bool folds = true;
  for (int64_t i = 0; i + 2 < raw.dim(); ++i) folds = folds && strides[i] == strides[i + 1] * raw.size(i + 1);
  if (folds) return {};
  if (!computed) return raw;
  const at::Tensor& value = values[aValue];  // [M, K], the rows in the activation's logical order
  return at::empty_strided(raw.sizes(), strides, value.options()).copy_(value.reshape(raw.sizes()));
}

// mm in fp32 accumulation, rounded once to the value's dtype. A native half-precision mm
// already accumulates in fp32 and rounds once, so it is used when the dtypes allow.
// unfoldedA (unfoldedEagerA): eager's A of an mm it computed as bmm, which is made so where the operands are of the
// result's type (as eager's were).
at::Tensor evalMm(const Value& v, const at::Tensor& a, const at::Tensor& b,
                  const ChainShape& shape, GemmKind gemm, bool bKMajor = false, const at::Tensor& unfoldedA = {}) {
  const at::ScalarType result = toScalarType(v.dtype);
  auto [x, y] = fullOperands(a, b, shape, gemm, bKMajor);
  const bool native = x.scalar_type() == result && y.scalar_type() == result &&
                      at::isFloatingType(result) && result != at::kDouble;
  if (native && unfoldedA.defined() && unfoldedA.scalar_type() == result) {
    // matmul's own steps: the leading dims as one batch (a view unless they cannot be), the weight expanded over it
    const int64_t K = shape.K.expect_int(), N = shape.N.expect_int(), rows = unfoldedA.size(-2);
    const int64_t batch = unfoldedA.numel() / (rows * K);
    return at::bmm(unfoldedA.reshape({batch, rows, K}), y.expand({batch, K, N})).reshape({shape.M.expect_int(), N});
  }
  const bool half = x.scalar_type() == y.scalar_type() &&
                    (x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf);
  if (!native && half && result == at::kFloat && x.is_cuda()) {
    // 16-bit operands, unrounded fp32 result: cuBLAS's mm.dtype accumulates in fp32 and writes
    // fp32, as the fused kernel does. Upcasting the operands instead would run an fp32 GEMM,
    // ten times slower, on the path that exists so that a chain is never slower than unfused.
    try {
      return gemm == GemmKind::Bmm ? at::bmm(x, y, at::kFloat) : at::mm(x, y, at::kFloat);
    } catch (const c10::Error&) {
      // older torch without mm.dtype on this device: the exact fp32 path below
    }
  }
  if (!native) {
    x = toType(x, at::kFloat);
    y = toType(y, at::kFloat);
  }
  at::Tensor r = gemm == GemmKind::Bmm ? at::bmm(x, y) : at::mm(x, y);
  return toType(r, result);
}

// The add that makes one addmm, as eager called it (F.linear with a bias, torch.addmm), of the product before it:
// the product unrounded (f32) from 16-bit operands of the add's type, read by this add alone, plus a bias of that
// type along n. It is evaluated as that one at::addmm: the f32 product plus the bias rounded once is the same
// math in another summation order, which on the CPU was one ulp off eager at 7-81 of 131,072 bf16 elements
// (session 57's hunt). A 16-bit `x @ w + b` written as two ops rounds its product (mm : bf16) and is not this.
// -1 where the chain has no such add. The rule of specs printed before the `addmm` mark (addmmCall): the pass
// marks this add since, and an f32 one, which the types cannot tell from `x @ w + b`.
int addmmAdd(const ChainSpec& spec) {
  if (spec.gemm != GemmKind::Mm) return -1;
  const int mm = spec.mmIndex();
  const Value& product = spec.values[mm];
  const spec::DType type = spec.values[product.operands[0]].dtype;
  if (product.dtype != spec::DType::F32 || !spec::isHalfFloat(type) || spec.values[product.operands[1]].dtype != type)
    return -1;
  if (std::find(spec.outputs.begin(), spec.outputs.end(), mm) != spec.outputs.end()) return -1;
  int user = -1;
  for (size_t i = 0; i < spec.values.size(); ++i)
    for (int operand : spec.values[i].operands)
      if (operand == mm) {
        if (user != -1) return -1;  // a second user, or the same one twice
        user = static_cast<int>(i);
      }
  if (user < 0) return -1;
  const Value& add = spec.values[user];
  if (add.op != "add" || add.operands.size() != 2 || add.operands[0] != mm || add.dtype != type) return -1;
  const Value& bias = spec.values[add.operands[1]];
  return bias.kind == ValueKind::Input && bias.dtype == type && bias.dims == "n" ? user : -1;
}

// The values the reference computes as one eager addmm / baddbmm call (evalAddmm): the value the pass marked addmm
// (spec::AddmmCall: the parser has checked its form), or in a spec without the mark the 16-bit add of addmmAdd.
// Result -1: none.
spec::AddmmCall addmmCall(const ChainSpec& spec) {
  if (const int marked = spec::markedAddmmResult(spec); marked >= 0) return spec::addmmCallAt(spec, marked, nullptr);
  spec::AddmmCall call;
  if (const int add = addmmAdd(spec); add >= 0) {
    call.result = add;
    call.product = spec.mmIndex();
    call.bias = spec.values[add].operands[1];
  }
  return call;
}

}  // namespace

std::vector<at::Tensor> evaluateReference(const ChainSpec& spec, at::TensorList inputs,
                                          const ChainShape& shape) {
  const at::Device device = inputs[0].device();
  std::vector<at::Tensor> values;
  values.reserve(spec.values.size());
  const spec::AddmmCall addmm = addmmCall(spec);
  // (a raw B is multiplied as the caller laid it out, as eager does; on CUDA the result is compared by relative
  // error: no copy there)
  const bool bKMajor = device.is_cpu() && spec.values[spec.values[spec.mmIndex()].operands[1]].kind != ValueKind::Input &&
                       operandKMajor(spec, 1);
  for (int id = 0; id < static_cast<int>(spec.values.size()); ++id) {
    const Value& v = spec.values[id];
    if (id == addmm.result) {
      values.push_back(evalAddmm(spec, addmm, values, shape, bKMajor));
      continue;
    }
    if (id == addmm.product || id == addmm.alphaMul || id == addmm.betaMul) {
      values.emplace_back();  // computed inside the call (evalAddmm), which alone reads it
      continue;
    }
    switch (v.kind) {
      case ValueKind::Input:
        values.push_back(logicalView(inputs[v.slot], v.dims, v.space, spec.gemm, spec.kGroup, v.order));
        break;
      case ValueKind::Const:
        // A 0-dim CPU tensor: ATen's ops take it with device tensors as a scalar argument (no
        // allocation or fill kernel on the device per call, nothing for CUDA graph capture to
        // record), and it still takes part in the op-math conversions below.
        // Beyond f16's range (where a float type may overflow), made in double and converted: +-inf, as
        // eager's `y * 1e39` has it, where at::scalar_tensor(1e39, kFloat) raised; else one dispatch per call.
        values.push_back(!heldByEveryFloatType(v.constant)
                             ? at::scalar_tensor(v.constant, at::TensorOptions().dtype(at::kDouble)).to(toScalarType(v.dtype))
                             : at::scalar_tensor(v.constant, at::TensorOptions().dtype(toScalarType(v.dtype))));
        break;
      case ValueKind::Op:
        values.push_back(evalOp(spec, v, values));
        break;
      case ValueKind::Mm:
        TORCH_INTERNAL_ASSERT(v.operands.size() == 2, "mm takes two operands");
        values.push_back(evalMm(v, values[v.operands[0]], values[v.operands[1]], shape, spec.gemm, bKMajor,
                                device.is_cpu() ? unfoldedEagerA(spec, v, inputs, values) : at::Tensor()));
        break;
    }
  }
  std::vector<int64_t> full{shape.M.expect_int(), shape.N.expect_int()};
  if (spec.gemm == GemmKind::Bmm) full.insert(full.begin(), shape.B.expect_int());
  std::vector<int64_t> outShape;
  for (const c10::SymInt& s : shape.outputShape()) outShape.push_back(s.expect_int());
  std::vector<at::Tensor> outputs;
  for (int id : spec.outputs) {
    at::Tensor r = values[id];
    if (r.device() != device) r = r.to(device);  // a constant (or all-constant) output
    TORCH_INTERNAL_ASSERT(r.scalar_type() == toScalarType(spec.values[id].dtype));
    // Outputs never alias an input or each other (an output may be a plain input value, or be
    // listed twice), and are contiguous and of the full shape. The usual output, the last op's
    // fresh result, already is all that: returned as it is, without a copy kernel.
    // (exact contiguous strides, not is_contiguous(), which ignores size-1 dims: the Meta
    // kernel declares contiguous strides and Inductor may check them)
    bool fresh = r.sizes() == c10::IntArrayRef(full) && r.strides() == c10::IntArrayRef(c10::contiguous_strides(full));
    for (const at::Tensor& t : inputs) fresh = fresh && !r.is_alias_of(t);
    for (const at::Tensor& t : outputs) fresh = fresh && !r.is_alias_of(t);
    if (!fresh) r = r.expand(full).clone(at::MemoryFormat::Contiguous);
    outputs.push_back(full == outShape ? r : r.view(outShape));
  }
  return outputs;
}

at::Tensor chainProduct(const ChainSpec& spec, at::TensorList inputs, const ChainShape& shape) {
  const Value& mm = spec.values[spec.mmIndex()];
  const Value& a = spec.values[mm.operands[0]];
  const Value& b = spec.values[mm.operands[1]];
  TORCH_INTERNAL_ASSERT(a.kind == ValueKind::Input && b.kind == ValueKind::Input,
                        "chainProduct needs raw A and B (codegen::pointwiseApplies)");
  Value product = mm;  // 16-bit: rounded once by cuBLAS, as the hooks would; else unrounded fp32
  if (mm.dtype != spec::DType::BF16 && mm.dtype != spec::DType::F16) product.dtype = spec::DType::F32;
  // (an operand read along k's groups, a repeated scale as the weight itself, is expanded as the CPU kernel does)
  return evalMm(product, logicalView(inputs[a.slot], a.dims, a.space, spec.gemm, spec.kGroup, a.order),
                logicalView(inputs[b.slot], b.dims, b.space, spec.gemm, spec.kGroup, b.order), shape, spec.gemm)
      .contiguous();
}

}  // namespace fxfuse::runtime
