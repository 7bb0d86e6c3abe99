#include "pass/operand_prologue.h"

#include "pass/aten_ops.h"
#include "pass/common_dtype.h"

namespace fxfuse::pass {
namespace {

// Deep enough for any real dequantization chain; bounds the recursion on adversarial graphs.
constexpr int kMaxPrologueDepth = 24;

bool isConvertSource(spec::DType d) {
  switch (d) {
    case spec::DType::I8:
    case spec::DType::F8E4M3:
    case spec::DType::F8E5M2:
    case spec::DType::F16:
    case spec::DType::BF16:
    case spec::DType::F32: return true;
    default: return false;
  }
}

}  // namespace

PrologueResult OperandPrologue::build(const ir::Arg& operand, const std::string& letters, spec::Space space) {
  space_ = space;
  operandMs_ = countM(letters);
  operandType_ = index_.tensor(index_.producer(operand));
  result_ = PrologueResult{};
  result_.value = fold(index_.producer(operand), letters, 0, true);
  return result_;
}

bool OperandPrologue::isFoldableConvert(int node) const {
  auto to = convertTarget(index_.node(node));  // nullopt unless there is an input argument
  if (!to) return false;
  const ir::TensorType* src = index_.tensor(index_.producer(index_.node(node).args[0]));
  return src && src->sizes == index_.tensor(node)->sizes && isConvertSource(src->dtype) &&
         isConvertSource(*to) && isFloating(*to);
}

bool OperandPrologue::isFoldableArithmetic(int node) const {
  const ir::Node& n = index_.node(node);
  if (unrounded_ && unrounded_->count(n.name)) return false;
  bool plain = n.isCall("aten.mul.Tensor") || n.isCall("aten.div.Tensor") ||
               (n.isCall("aten.sub.Tensor") && !n.kwarg("alpha") && n.args.size() == 2);
  if (!plain || n.args.size() != 2) return false;
  const ir::TensorType* t = index_.tensor(node);
  return t && isFloating(t->dtype);
}

// x, viewed/converted/scaled  ->  the spec values computing it, leaves as inputs.
int OperandPrologue::fold(int node, const std::string& letters, int depth, bool roles) {
  if (node < 0) return -1;
  const ir::Node& n = index_.node(node);
  if (depth >= kMaxPrologueDepth || claimed_[node] || n.op != ir::Node::Op::Call ||
      !index_.tensor(node) || isMutating(n))
    return leaf(node, letters);

  std::string inLetters;
  if (viewInputLetters(index_, node, letters, &inLetters, roles)) {
    // permute(x) as B  ->  x read with its dims named `[n,k]`: a layout, not a prologue op.
    int v = fold(index_.producer(n.args[0]), inLetters, depth + 1, roles);
    if (v < 0) return -1;
    result_.absorbed.push_back(node);
    return v;
  }
  // Under Inductor, a 16-bit value other nodes read too stays a leaf (sharedStayBuffers_): kept in the graph for
  // them only it is no longer a buffer, and Inductor, fusing it into a reader, skips its rounding (session 58's hunt:
  // a bf16 bias gradient's sum then read g * gelu'(y) unrounded, 22 of 48 elements off eager and Inductor).
  if (sharedStayBuffers_ && index_.users(node).size() > 1 && spec::isHalfFloat(index_.tensor(node)->dtype))
    return leaf(node, letters);
  if (ops_ && isFoldableConvert(node)) {
    // convert(w_i8 -> bf16)  ->  `%w = input i8`, `convert %w : bf16`
    int x = fold(index_.producer(n.args[0]), letters, depth + 1, roles);
    if (x < 0) return -1;
    result_.absorbed.push_back(node);
    result_.ops.push_back("convert");
    return builder_.op("convert", {x}, index_.tensor(node)->dtype);
  }
  if (ops_ && isFoldableArithmetic(node)) {
    // mul(w, unsqueeze(scale))  ->  `mul %w %scale` with scale read as `[n]`
    const ir::TensorType* t = index_.tensor(node);
    std::vector<std::string> argLetters(n.args.size());
    std::vector<bool> argRoles(n.args.size(), false);
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (n.args[i].isNumber()) continue;
      const ir::TensorType* at = index_.tensor(index_.producer(n.args[i]));
      argRoles[i] = roles && at && at->sizes == t->sizes;
      if (!at || !broadcastLetters(at->sizes, t->sizes, letters, &argLetters[i], argRoles[i]))
        return leaf(node, letters);
      // an f64 scale stays outside with its op, as the epilogue leaves an f64 input out (the CUDA kernels have no
      // f64 type: a chain reading one could not be generated)
      if (at->dtype == spec::DType::F64 && t->dtype != spec::DType::F64) return leaf(node, letters);
    }
    // An argument that fails to fold (e.g. a zero point `[S,1]` against a `[B,S,K]`
    // activation: it covers part of the flattened M, which no input dims can say) leaves the
    // whole node an input of the chain: undo what its other arguments emitted.
    ChainBuilder saved = builder_;
    PrologueResult savedResult = result_;
    std::vector<int> operands;
    for (size_t i = 0; i < n.args.size(); ++i) {
      const ir::Arg& a = n.args[i];
      operands.push_back(a.isExactNumber() ? builder_.constant(a.number(), spec::DType::F32)
                         : a.isNumber() ? -1  // an int beyond 2^53: the node stays outside
                                        : fold(index_.producer(a), argLetters[i], depth + 1, argRoles[i]));
      if (operands.back() < 0) {
        builder_ = std::move(saved);
        result_ = std::move(savedResult);
        return leaf(node, letters);
      }
    }
    result_.absorbed.push_back(node);
    std::string op = n.target.substr(5, 3);  // "mul", "div", "sub"
    result_.ops.push_back(op);
    // a 0-d f32 scale beside a bf16 weight is read as bf16 on CUDA; an i32 zero point with dims on every device
    convertToCommonDtype(builder_, *t, &operands, CpuScalars::LeftToAten);
    return builder_.op(op, operands, t->dtype);
  }
  return leaf(node, letters);
}

int OperandPrologue::leaf(int node, const std::string& letters) {
  const ir::TensorType* t = index_.tensor(node);
  // Inconsistent meta (a convert whose input has another rank) must not index past dims.
  if (!t || t->sizes.size() != letters.size()) return -1;
  // Several m dims flatten into M: an A-space input must have all of them or none.
  size_t ms = countM(letters);
  if (space_ == spec::Space::A && ms != 0 && ms != operandMs_) return -1;
  // a CPU 0-d scale of a CUDA weight: the arithmetic node that reads it stays outside, as a leaf
  if (operandType_ && !t->sameDeviceAs(*operandType_)) return -1;
  result_.leaves.push_back(OperandLeaf{node, letters});
  return builder_.input(index_.node(node).name, t->dtype, letters, space_);
}

}  // namespace fxfuse::pass
