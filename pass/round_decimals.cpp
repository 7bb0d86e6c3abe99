#include "pass/round_decimals.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <vector>

namespace fxfuse::pass {
namespace {

using spec::DType;
using spec::Value;
using spec::ValueKind;

// The largest |d| lowered or folded: 10^22 is the last power of ten a double holds exactly, so up to there p and the
// decomposition's constants are the numbers eager computes with.
constexpr int kMaxDecimals = 22;

bool roundsLikeEager(DType d) { return d == DType::BF16 || d == DType::F16 || d == DType::F32; }

// The type eager's kernel computes the first step in (see the header): f32 on the CPU, the tensor's own on CUDA.
DType firstStepType(DType result, bool cpu) { return cpu ? DType::F32 : result; }

// aten.round.decimals(x, decimals=d): the formula of the node's device, the last op at the result's type.
std::optional<int> lowerRoundDecimals(LoweringContext& c) {
  const ir::Arg decimals = c.arg(1, "decimals", ir::Arg::integer(0));
  const DType result = c.node().type.tensor.dtype;
  if (decimals.kind != ir::Arg::Kind::Int || std::llabs(decimals.i) > kMaxDecimals || !roundsLikeEager(result))
    return std::nullopt;
  auto x = c.selfOfResultType();
  if (!x) return std::nullopt;
  if (decimals.i == 0) return c.emit("round", {*x});
  const DType first = firstStepType(result, c.onCpu());
  const int p = c.floatConstant(std::pow(10.0, static_cast<double>(std::llabs(decimals.i))), first);
  // the CPU reads the 16-bit operand in f32 (an exact conversion: the product is what rounds differently)
  const int operand = first == result ? *x : c.emitAs("convert", {*x}, first);
  const bool positive = decimals.i > 0;
  const int scaled = c.emitAs(positive ? "mul" : "div", {operand, p}, first);
  const int rounded = c.emitAs("round", {scaled}, first);
  return c.emit(positive ? "div" : "mul", {rounded, p});
}

// Which d has 10.0**d (Python's float power, correctly rounded) held in `c1` (a constant stores its number as its
// dtype holds it: 0.1 as an f32 const is 0.100000001490116), 0 where none in [-kMaxDecimals, kMaxDecimals].
int decimalsOf(const Value& c1) {
  for (int d = 1; d <= kMaxDecimals; ++d) {
    if (c1.constant == spec::heldAs(std::pow(10.0, d), c1.dtype)) return d;
    if (c1.constant == spec::heldAs(std::pow(10.0, -d), c1.dtype)) return -d;
  }
  return 0;
}

// `v` is an op `name` of dtype `t`; returns its operands.
const std::vector<int>* opOf(const spec::ChainSpec& s, int v, const char* name, DType t) {
  const Value& val = s.values[v];
  if (val.kind != ValueKind::Op || val.op != name || val.dtype != t) return nullptr;
  return &val.operands;
}

// A mul's operand that is a const, and the other one; false where neither or both are.
bool splitConst(const spec::ChainSpec& s, const std::vector<int>& ops, int* other, int* constant) {
  if (ops.size() != 2) return false;
  const bool c0 = s.values[ops[0]].kind == ValueKind::Const, c1 = s.values[ops[1]].kind == ValueKind::Const;
  if (c0 == c1) return false;
  *constant = c0 ? ops[0] : ops[1];
  *other = c0 ? ops[1] : ops[0];
  return true;
}

}  // namespace

void addRoundDecimals(std::unordered_map<std::string, LowerFn>& table) {
  table["aten.round.decimals"] = lowerRoundDecimals;
}

void foldRoundDecimals(spec::ChainSpec& spec, bool cpu) {
  const int n = static_cast<int>(spec.values.size());
  std::vector<int> uses(n, 0);
  for (const Value& v : spec.values)
    for (int o : v.operands) ++uses[o];
  for (int o : spec.outputs) uses[o] += 2;  // an output is read outside: never an intermediate here
  for (int top = 0; top < n; ++top) {
    const DType t = spec.values[top].dtype;
    if (!roundsLikeEager(t)) continue;
    const std::vector<int>* last = opOf(spec, top, "mul", t);
    int rounded = -1, c2 = -1, scaled = -1, c1 = -1, x = -1;
    if (!last || !splitConst(spec, *last, &rounded, &c2) || uses[rounded] != 1 || uses[c2] != 1) continue;
    const std::vector<int>* round = opOf(spec, rounded, "round", t);
    if (!round || uses[(*round)[0]] != 1) continue;
    scaled = (*round)[0];
    const std::vector<int>* first = opOf(spec, scaled, "mul", t);
    if (!first || !splitConst(spec, *first, &x, &c1) || uses[c1] != 1 || spec.values[x].dtype != t) continue;
    const int d = decimalsOf(spec.values[c1]);
    // Inductor's decomposition: 10.0**d, then 1.0 / 10.0**d (torch/_inductor/decomposition.py round_dec)
    if (d == 0 || spec.values[c2].constant != spec::heldAs(1.0 / std::pow(10.0, d), spec.values[c2].dtype)) continue;
    const DType firstType = firstStepType(t, cpu);
    const double p = std::pow(10.0, std::abs(d));
    for (int k : {c1, c2}) {
      spec.values[k].dtype = firstType;
      spec.values[k].constant = spec::heldAs(p, firstType);
    }
    spec.values[scaled].op = d > 0 ? "mul" : "div";
    spec.values[scaled].dtype = firstType;
    spec.values[rounded].dtype = firstType;
    spec.values[top].op = d > 0 ? "div" : "mul";
  }
}

}  // namespace fxfuse::pass
