// ATen/prims elementwise ops -> spec ops. One table (elementwise_lowering.cpp), one line per
// target; the few ops with attributes (alpha, approximate, clamp bounds) have a small named
// lowering function. Every lowered op's result dtype is the graph node's dtype, so rounding
// happens exactly where the graph rounds.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pass/chain_builder.h"
#include "pass/common_dtype.h"
#include "pass/ir.h"

namespace fxfuse::pass {

// What a lowering needs from its caller: turning arguments into spec values.
class OperandResolver {
 public:
  virtual ~OperandResolver() = default;
  // A tensor argument as a spec value, or -1 when it cannot be an operand of this chain
  // (a non-broadcastable tensor, a value computed from the chain's own outputs, …).
  virtual int tensor(const ir::Arg& arg) = 0;
};

// Resolves operands (tensors through `resolver`, numbers as consts typed the way eager
// promotes a wrapped scalar: f32 next to a floating operand or result, else i64/bool) and
// emits ops whose result dtype is the node's. nullopt when an operand does not resolve.
class LoweringContext {
 public:
  LoweringContext(const ir::Node& node, ChainBuilder& builder, OperandResolver& resolver);
  // `comparison`: a number beside a 16-bit float tensor is typed as that tensor (as common_dtype.h converts a 0-d
  // input); also for add / sub with alpha on the CPU (roundsScalarsToResult).
  std::optional<std::vector<int>> operands(const std::vector<ir::Arg>& args, bool comparison = false);
  int emit(const std::string& op, std::vector<int> operands);
  // An intermediate (an alpha multiply): f32 opmath for floating results.
  int emitIntermediate(const std::string& op, std::vector<int> operands);
  // An op of a given result dtype (a comparison inside a composite activation).
  int emitAs(const std::string& op, std::vector<int> operands, spec::DType dtype);
  // A number as a constant of `dtype` (f32 by default; a 16-bit one holds the number rounded to that type).
  int floatConstant(double v, spec::DType dtype = spec::DType::F32);
  // The node's one tensor operand (`self`), where it has the node's dtype (an op that returns its input's type).
  std::optional<int> selfOfResultType();
  // common_dtype.h's convertToCommonDtype for this node's result.
  void convertToCommonDtype(std::vector<int>* operands, CpuScalars cpuScalars, size_t first = 0);
  // add / sub's alpha, a number, typed as operands() types one (on the CPU in 16 bits only alpha = -1 is fused,
  // which ATen's rounding to the tensor's type leaves as it is).
  int alphaConstant(double alpha);
  // Whether ATen rounds add / sub's alpha and one-element operands to the result's type: a 16-bit result on the CPU.
  bool roundsScalarsToResult() const;
  // Whether the node runs on the CPU, where some of ATen's kernels compute otherwise than their CUDA ones.
  bool onCpu() const { return node_.type.tensor.device == "cpu"; }
  const ir::Node& node() const { return node_; }
  bool isTensorConstant(int value) const { return builder_.isTensorConstant(value); }
  double constantValue(int value) const { return builder_.spec().values[value].constant; }
  // Positional argument `i`, else keyword `name`, else `fallback`.
  ir::Arg arg(size_t i, const char* name, ir::Arg fallback) const;

 private:
  const ir::Node& node_;
  ChainBuilder& builder_;
  OperandResolver& resolver_;
};

using LowerFn = std::function<std::optional<int>(LoweringContext&)>;

// The lowering for a target, or nullptr when the target is not a fusible elementwise op.
const LowerFn* findElementwiseLowering(const std::string& target);

// The tensor-valued arguments a lowering reads (positions in node.args or kwargs), so the
// region builder can check them before lowering: every Value argument of the node.
std::vector<ir::Arg> tensorArguments(const ir::Node& node);

}  // namespace fxfuse::pass
