#include "pass/epilogue_region.h"

#include <algorithm>

#include "pass/aten_ops.h"

namespace fxfuse::pass {
namespace {

// Whether the mutating node may write a value of the region or an input the chain reads: one of its
// operands shares storage with one of them (a write through a view, `y[:, :6].mul_(0)`, included).
bool touchesAny(const GraphIndex& index, int node, const std::set<int>& values,
                const std::vector<std::string>& slotNodes) {
  std::vector<int> read(values.begin(), values.end());
  for (const std::string& name : slotNodes) read.push_back(index.find(name));
  return writesAliasOf(index, node, read);
}

// A 0-d `full`/`scalar_tensor` (post-grad's way to write `where(c, x, 0.0)`): its value.
std::optional<double> scalarTensorValue(const ir::Node& n, const ir::TensorType& t) {
  if (!t.sizes.empty() || n.args.size() < 2) return std::nullopt;
  if (n.isCall("aten.full.default") && n.args[0].kind == ir::Arg::Kind::List && n.args[0].list.empty())
    return numberArg(n.args[1]);
  if (n.isCall("aten.scalar_tensor.default")) return numberArg(n.args[0]);
  return std::nullopt;
}

// Whether an in-place op after `node` writes `node`'s storage or its first operand's (through any view of either).
bool writtenThroughLater(const GraphIndex& index, int node) {
  const int operand = index.node(node).args.empty() ? -1 : index.producer(index.node(node).args[0]);
  for (int j = node + 1; j < index.size(); ++j)
    if (isMutating(index.node(j)) && writesAliasOf(index, j, {node, operand})) return true;
  return false;
}

}  // namespace

std::set<int> regionSet(const GemmMatch& match, const std::vector<int>& nodes) {
  std::set<int> s(nodes.begin(), nodes.end());
  s.insert(match.anchor);
  s.insert(match.root);  // a 3-D linear's output view; its A-side view is x, no value of the chain
  return s;
}

bool EpilogueOperands::dependsOnRegion(int node) const {
  std::vector<int> stack{node};
  std::set<int> seen;
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (region_.count(n)) return true;
    if (n < match_.anchor || !seen.insert(n).second) continue;  // earlier nodes cannot
    for (int p : index_.operands(n)) stack.push_back(p);
  }
  return false;
}

// residual / bias / scale  ->  `input <slot> <dtype> [dims]` in the output space
int EpilogueOperands::tensor(const ir::Arg& arg) {
  int node = index_.producer(arg);
  if (node < 0) return -1;
  int bound = builder_.boundValue(index_.node(node).name);
  if (bound >= 0 && region_.count(node)) return bound;
  const ir::TensorType* t = index_.tensor(node);
  if (!t) return why_ = "an operand has no tensor meta", -1;
  if (dependsOnRegion(node)) return why_ = "an operand depends on the chain's own result", -1;
  std::string letters;
  // A tensor of the output's shape names its size-1 dims by role (B=1, M=1 or N=1 are still
  // b, m, n); one that broadcasts names them '1' (docs/spec.md).
  bool roles = t->sizes == match_.outShape;
  if (!broadcastLetters(t->sizes, match_.outShape, match_.outLetters, &letters, roles))
    return why_ = "an operand does not broadcast to the output", -1;
  // Peel broadcasting views: expand(unsqueeze(b, 0), [m, n]) is b read as `[n]`. Not down to a 0-d tensor from
  // a view with dims: eager's type promotion ranks the view as a tensor with dims (`y_bf16 > t_f32.view(1, 1)`
  // compares in f32), the 0-d source below it (`y_bf16 > t_f32`: in bf16) ranks lower (review, session 55).
  std::string inner;
  auto intoZeroDim = [&](int n) {
    return index_.tensor(index_.producer(index_.node(n).args[0]))->sizes.empty() && !index_.tensor(n)->sizes.empty();
  };
  while (index_.node(node).op == ir::Node::Op::Call && !isMutating(index_.node(node)) &&
         viewInputLetters(index_, node, letters, &inner, roles) &&
         index_.tensor(index_.producer(index_.node(node).args[0])) && !intoZeroDim(node)) {
    views_.push_back(node);
    node = index_.producer(index_.node(node).args[0]);
    letters = inner;
  }
  t = index_.tensor(node);
  // (a 0-d CPU tensor beside CUDA ones is read as a number by some kernels, by others in the tensor's type: it
  // stays outside, as a CPU 0-d input does)
  if (!t->sameDeviceAs(*index_.tensor(match_.anchor)))
    return why_ = "an operand on " + t->device + ", not the GEMM's device", -1;
  // (a 0-d f64 `full` too: the CPU kernel would compute its op in f64, where eager's f32 chain does not)
  if (t->dtype == spec::DType::F64) return why_ = "an f64 extra input", -1;
  if (auto v = scalarTensorValue(index_.node(node), *t)) {
    views_.push_back(node);
    return builder_.tensorConstant(*v, t->dtype);
  }
  // Several m dims flatten into M: an input must carry all of them or none.
  size_t ms = countM(letters);
  size_t outMs = countM(match_.outLetters);
  if (ms != 0 && ms != outMs) return why_ = "an operand broadcasts along part of the flattened M", -1;
  return builder_.input(index_.node(node).name, t->dtype, letters, spec::Space::Out);
}

EpilogueGrowth growEpilogue(const GraphIndex& index, const GemmMatch& match, ChainBuilder& builder,
                            const std::vector<bool>& claimed, const PassOptions& options) {
  EpilogueGrowth g;
  std::set<int> region = regionSet(match, {});
  for (int id = match.root + 1; id < index.size(); ++id) {
    const ir::Node& n = index.node(id);
    if (isMutating(n)) {
      if (!touchesAny(index, id, region, builder.opInputNodes())) continue;
      g.mutationOfResult |= writesAliasOf(index, id, {match.root, match.anchor});
      g.notes.push_back("region ends at %" + n.name + ", which writes a value the chain reads");
      break;
    }
    const LowerFn* lower = findElementwiseLowering(n.target);
    const ir::TensorType* t = index.tensor(id);
    if (claimed[id]) continue;
    // only a node that reads the chain's value is a candidate, and only its refusal is a note (the report line
    // quotes the first: an unrelated node's named the wrong reason; review, session 53)
    std::vector<ir::Arg> tensors = tensorArguments(n);
    bool readsRegion = std::any_of(tensors.begin(), tensors.end(),
                                   [&](const ir::Arg& a) { return region.count(index.producer(a)) > 0; });
    if (!readsRegion) continue;
    const bool unrounded = options.unroundedGroups.count(n.name) > 0;
    if (!lower || !t || t->sizes != match.outShape || t->dtype == spec::DType::F64 || unrounded) {
      if (g.firstUnlowered.empty())
        g.firstUnlowered = "%" + n.name + " (" + n.target + "), which " +
                           (unrounded ? "is a step of one eager op whose 16-bit intermediates eager does not round "
                                        "(left to Inductor, which computes them as eager does)"
                            : !lower ? "has no chain form"
                            : !t   ? "has no tensor meta"
                            : t->dtype == spec::DType::F64 ? "computes in f64"
                                                           : "does not keep the output's shape");
      continue;
    }
    // The CUDA kernels compute every value in float32: an int32 / int64 result of integer arithmetic
    // (`.to(int32) + 1`) above 2^24 would lose its low bits. A conversion from a float is exact (a
    // float that large is an integer), so only those are absorbed.
    if (t->onCuda() && (t->dtype == spec::DType::I32 || t->dtype == spec::DType::I64) && !convertTarget(n)) {
      g.notes.push_back("%" + n.name + " not fused: integer arithmetic in " + spec::dtypeName(t->dtype) +
                        " (the CUDA kernels compute in float32)");
      continue;
    }
    auto inexact = [](const ir::Arg& a) { return a.isNumber() && !a.isExactNumber(); };
    if (std::any_of(n.args.begin(), n.args.end(), inexact)) {
      g.notes.push_back("%" + n.name + " not fused: an integer constant beyond 2^53 (chain specs hold doubles)");
      continue;
    }

    // an op that returns an alias of its operand (a view, detach, dropout outside training) binds to the operand's
    // value: where an in-place op later writes through either, the two would be separate buffers after the
    // rewrite and the write would reach one of them (review, session 56: `y.view(8, 64).add_(b); return y`)
    if (returnsAliasOfOperand(n) && writtenThroughLater(index, id)) {
      g.notes.push_back("%" + n.name + " not fused: an in-place op later writes through it or its operand");
      continue;
    }
    ChainBuilder trial = builder;
    const size_t valuesBefore = trial.spec().values.size();
    region.insert(id);  // so that the node's own operands check against the grown region
    EpilogueOperands operands(index, match, trial, region);
    LoweringContext ctx(n, trial, operands);
    std::optional<int> value = (*lower)(ctx);
    region.erase(id);
    if (!value) {
      if (!operands.whyNot().empty()) g.notes.push_back("%" + n.name + " not fused: " + operands.whyNot());
      else if (g.firstUnlowered.empty())  // its arguments: dropout in training, a parameter eager refuses, ...
        g.firstUnlowered = "%" + n.name + " (" + n.target + "), which the chain does not take with these arguments";
      continue;
    }
    if (trial.numSlots() > options.maxInputs) {
      g.notes.push_back("%" + n.name + " not fused: more than " + std::to_string(options.maxInputs) +
                        " inputs (too_many_inputs)");
      continue;
    }
    if (trial.spec().values.size() == valuesBefore) g.passThrough.insert(id);
    trial.bind(n.name, *value);
    builder = std::move(trial);
    region.insert(id);
    g.nodes.push_back(id);
  }
  return g;
}

bool emitEpilogue(const GraphIndex& index, const GemmMatch& match, ChainBuilder& builder,
                  const std::vector<int>& nodes, std::vector<int>* views) {
  std::set<int> region = regionSet(match, nodes);
  EpilogueOperands operands(index, match, builder, region);
  for (int id : nodes) {
    const ir::Node& n = index.node(id);
    const LowerFn* lower = findElementwiseLowering(n.target);
    if (!lower) return false;
    LoweringContext ctx(n, builder, operands);
    std::optional<int> value = (*lower)(ctx);
    if (!value) return false;
    builder.bind(n.name, *value);
  }
  views->insert(views->end(), operands.absorbedViews().begin(), operands.absorbedViews().end());
  return true;
}

}  // namespace fxfuse::pass
