#include "pass/aten_ops.h"

#include <algorithm>

namespace fxfuse::pass {
namespace {

// "aten.add_.Tensor" -> "add_"; "higher_order.auto_functionalized" -> "auto_functionalized".
std::string opBaseName(const std::string& target) {
  size_t first = target.find('.');
  if (first == std::string::npos) return target;
  size_t second = target.find('.', first + 1);
  return target.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
}

bool sameShapeIgnoringOnes(const std::vector<ir::Dim>& a, const std::vector<ir::Dim>& b) {
  std::vector<ir::Dim> x, y;
  for (const ir::Dim& d : a)
    if (!d.is(1)) x.push_back(d);
  for (const ir::Dim& d : b)
    if (!d.is(1)) y.push_back(d);
  return x == y;
}

int normalizeDim(int64_t d, size_t rank) {
  return static_cast<int>(d < 0 ? d + static_cast<int64_t>(rank) : d);
}

}  // namespace

bool isMutating(const ir::Node& node) {
  if (node.op != ir::Node::Op::Call) return false;
  std::string base = opBaseName(node.target);
  if (base.rfind("auto_functionalized", 0) == 0) return true;
  // In-place overloads end in '_' (`add_`, `copy_`); dunder-style names never do in ATen.
  return base.size() > 1 && base.back() == '_' && base.compare(0, 2, "__") != 0;
}

bool isReshape(const ir::Node& n) {
  return n.isCall("aten.view.default") || n.isCall("aten.reshape.default") ||
         n.isCall("aten._unsafe_view.default");
}

std::optional<double> numberArg(const ir::Arg& a) {
  if (!a.isNumber()) return std::nullopt;
  return a.number();
}

std::optional<int64_t> intArg(const ir::Arg& a) {
  if (a.kind != ir::Arg::Kind::Int) return std::nullopt;
  return a.i;
}

std::optional<std::vector<int64_t>> intListArg(const ir::Arg& a) {
  if (a.kind != ir::Arg::Kind::List) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::Arg& x : a.list) {
    if (x.kind != ir::Arg::Kind::Int) return std::nullopt;
    out.push_back(x.i);
  }
  return out;
}

std::optional<ir::DType> convertTarget(const ir::Node& n) {
  if (n.args.empty()) return std::nullopt;
  if (n.isCall("prims.convert_element_type.default") || n.isCall("aten.to.dtype")) {
    if (n.args.size() < 2 || n.args[1].kind != ir::Arg::Kind::DType) return std::nullopt;
    return n.args[1].dtype;
  }
  if (n.isCall("aten._to_copy.default")) {
    const ir::Arg* dt = n.kwarg("dtype");
    if (!dt || dt->kind != ir::Arg::Kind::DType || n.args.size() != 1) return std::nullopt;
    for (const ir::NamedArg& kw : n.kwargs) {
      // A device or layout change is not a conversion the kernel can do.
      if (kw.name != "dtype" && kw.value.kind != ir::Arg::Kind::None &&
          !(kw.name == "memory_format" && kw.value.s == "preserve_format") &&
          !(kw.name == "non_blocking" || kw.name == "copy"))
        return std::nullopt;
    }
    return dt->dtype;
  }
  return std::nullopt;
}

bool broadcastLetters(const std::vector<ir::Dim>& operand, const std::vector<ir::Dim>& result,
                      const std::string& resultLetters, std::string* out) {
  if (operand.size() > result.size() || result.size() != resultLetters.size()) return false;
  size_t offset = result.size() - operand.size();
  out->clear();
  for (size_t i = 0; i < operand.size(); ++i) {
    const ir::Dim& r = result[i + offset];
    if (operand[i] == r) {
      out->push_back(resultLetters[i + offset]);
    } else if (operand[i].is(1)) {
      out->push_back('1');
    } else {
      return false;
    }
  }
  return true;
}

bool viewInputLetters(const GraphIndex& index, int view, const std::string& outLetters,
                      std::string* inLetters) {
  const ir::Node& n = index.node(view);
  if (n.op != ir::Node::Op::Call || n.args.empty()) return false;
  int src = index.producer(n.args[0]);
  const ir::TensorType* in = index.tensor(src);
  const ir::TensorType* out = index.tensor(view);
  if (!in || !out || out->sizes.size() != outLetters.size()) return false;
  size_t rank = in->sizes.size();

  if (n.isCall("aten.clone.default") || n.isCall("aten.alias.default")) {
    if (rank != outLetters.size()) return false;
    *inLetters = outLetters;
    return true;
  }
  if (n.isCall("aten.permute.default") && n.args.size() == 2) {
    auto perm = intListArg(n.args[1]);
    if (!perm || perm->size() != rank || outLetters.size() != rank) return false;
    std::string letters(rank, '?');
    for (size_t i = 0; i < rank; ++i) {
      int d = normalizeDim((*perm)[i], rank);
      if (d < 0 || d >= static_cast<int>(rank) || letters[d] != '?') return false;
      letters[d] = outLetters[i];
    }
    *inLetters = letters;
    return true;
  }
  if ((n.isCall("aten.transpose.int") && n.args.size() == 3) ||
      (n.isCall("aten.t.default") && rank == 2)) {
    int d0 = 0, d1 = 1;
    if (n.args.size() == 3) {
      auto a = intArg(n.args[1]), b = intArg(n.args[2]);
      if (!a || !b) return false;
      d0 = normalizeDim(*a, rank);
      d1 = normalizeDim(*b, rank);
    }
    if (rank != outLetters.size() || d0 < 0 || d1 < 0 || d0 >= int(rank) || d1 >= int(rank))
      return false;
    *inLetters = outLetters;
    std::swap((*inLetters)[d0], (*inLetters)[d1]);
    return true;
  }
  if (n.isCall("aten.expand.default")) {
    return broadcastLetters(in->sizes, out->sizes, outLetters, inLetters);
  }
  bool dropsOrAddsOnes = isReshape(n) || n.isCall("aten.unsqueeze.default") ||
                         n.isCall("aten.squeeze.dim") || n.isCall("aten.squeeze.dims") ||
                         n.isCall("aten.squeeze.default");
  if (dropsOrAddsOnes && sameShapeIgnoringOnes(in->sizes, out->sizes)) {
    // Non-1 dims keep their order; their letters carry over, size-1 input dims broadcast.
    std::string kept;
    for (size_t i = 0; i < out->sizes.size(); ++i)
      if (!out->sizes[i].is(1)) kept.push_back(outLetters[i]);
    inLetters->clear();
    size_t next = 0;
    for (const ir::Dim& d : in->sizes) inLetters->push_back(d.is(1) ? '1' : kept[next++]);
    return true;
  }
  return false;
}

}  // namespace fxfuse::pass

