#include "pass/round_decimals.h"

#include <cmath>
#include <cstdlib>
#include <optional>

namespace fxfuse::pass {
namespace {

using spec::DType;

// The largest |d| lowered: 10^22 is the last power of ten a double holds exactly, so up to there p is the number
// eager computes with.
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

}  // namespace

void addRoundDecimals(std::unordered_map<std::string, LowerFn>& table) {
  table["aten.round.decimals"] = lowerRoundDecimals;
}

}  // namespace fxfuse::pass
