#include "pass/aten_ops.h"

#include <algorithm>
#include <set>

namespace fxfuse::pass {
namespace {

// "aten.add_.Tensor" -> "add_"; "higher_order.auto_functionalized" -> "auto_functionalized".
std::string opBaseName(const std::string& target) {
  size_t first = target.find('.');
  if (first == std::string::npos) return target;
  size_t second = target.find('.', first + 1);
  return target.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
}

// `aten.mul.out`, `aten.add.Scalar_out`: the overload (the target's third part) names an out= form.
bool isOutOverload(const std::string& target) {
  size_t first = target.find('.');
  size_t second = first == std::string::npos ? std::string::npos : target.find('.', first + 1);
  if (second == std::string::npos) return false;
  std::string overload = target.substr(second + 1);
  return overload == "out" || (overload.size() > 4 && overload.compare(overload.size() - 4, 4, "_out") == 0);
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
  // out= overloads (`aten.mul.out`, `aten.add.Scalar_out`) write their `out` argument
  if (node.kwarg("out") || isOutOverload(node.target)) return true;
  // detach_ and requires_grad_ change autograd's view of a tensor, not its values: export writes `torch.tensor(0.5)`
  // in forward as lift_fresh_copy then detach_, which had rejected the GEMM beside it as a mutation (session 56)
  if (base == "detach_" || base == "requires_grad_") return false;
  // ATen's in-place dunders (`w &= 15` in a non-decomposed export: aten.__iand__.Scalar; the session 64 hunt)
  for (const char* op : {"__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"})
    if (base == op) return true;
  // In-place overloads end in '_' (`add_`, `copy_`); the other dunder-style names never do in ATen.
  return base.size() > 1 && base.back() == '_' && base.compare(0, 2, "__") != 0;
}

int aliasRoot(const GraphIndex& index, int id) {
  // Ops whose result may be (a view of) their first argument. `to`, `contiguous`, `reshape` and
  // the like return their input itself when nothing changes; listing them keeps the check safe.
  static const std::set<std::string> kAliasing = {
      "alias", "as_strided", "detach", "diagonal", "expand", "expand_as", "movedim", "moveaxis",
      "narrow", "permute", "select", "slice", "split", "split_with_sizes", "tensor_split",
      "chunk", "unbind", "squeeze", "unsqueeze", "t", "transpose", "swapaxes", "swapdims",
      "unflatten", "unfold", "view", "view_as", "reshape", "reshape_as", "flatten",
      "_reshape_alias", "_unsafe_view", "contiguous", "to", "type_as", "real", "imag",
      "view_as_real", "view_as_complex", "numpy_T", "mT", "mH", "adjoint", "T", "H",
      "getitem", "lift_fresh", "detach_", "requires_grad_"};
  for (int guard = 0; id >= 0 && guard < index.size(); ++guard) {
    const ir::Node& n = index.node(id);
    if (n.op != ir::Node::Op::Call) return id;
    int next = -1;
    if (const ir::Arg* out = n.kwarg("out"); out && out->isValue()) {
      next = index.producer(*out);
    } else if (!n.args.empty() && (isMutating(n) || kAliasing.count(opBaseName(n.target)))) {
      next = index.producer(n.args[0]);
    }
    if (next < 0) return id;
    id = next;
  }
  return id;
}

bool writesAliasOf(const GraphIndex& index, int writer, const std::vector<int>& nodes) {
  std::set<int> roots;
  for (int n : nodes)
    if (n >= 0) roots.insert(aliasRoot(index, n));
  for (int p : index.operands(writer))
    if (roots.count(aliasRoot(index, p))) return true;
  return false;
}

bool isMetadataAssert(const ir::Node& node) { return node.isCall("aten._assert_tensor_metadata.default"); }

bool isReshape(const ir::Node& n) {
  // flatten / unflatten: the training IR's spellings (an export without run_decompositions: group-wise dequantization
  // written with them had folded only after decomposition; session 60's hunt)
  return n.isCall("aten.view.default") || n.isCall("aten.reshape.default") ||
         n.isCall("aten._unsafe_view.default") || n.isCall("aten.flatten.using_ints") ||
         n.isCall("aten.unflatten.int");
}

bool returnsAliasOfOperand(const ir::Node& n) {
  return isReshape(n) || n.isCall("aten.alias.default") || n.isCall("aten.detach.default") ||
         n.isCall("aten.dropout.default");
}

std::optional<double> numberArg(const ir::Arg& a) {
  if (!a.isExactNumber()) return std::nullopt;
  return a.number();
}

std::optional<int64_t> intArg(const ir::Arg& a) {
  if (a.kind != ir::Arg::Kind::Int) return std::nullopt;
  return a.i;
}

std::optional<size_t> gatherDim(const ir::Node& n) {
  if (!n.isCall("aten.index.Tensor") || n.args.size() != 2 || n.args[1].kind != ir::Arg::Kind::List) return std::nullopt;
  const std::vector<ir::Arg>& entries = n.args[1].list;
  if (entries.empty() || !entries.back().isValue()) return std::nullopt;
  for (size_t i = 0; i + 1 < entries.size(); ++i)
    if (entries[i].kind != ir::Arg::Kind::None) return std::nullopt;
  return entries.size() - 1;
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

size_t countM(const std::string& letters) {
  return static_cast<size_t>(std::count(letters.begin(), letters.end(), 'm'));
}

bool broadcastLetters(const std::vector<ir::Dim>& operand, const std::vector<ir::Dim>& result,
                      const std::string& resultLetters, std::string* out, bool keepRoles) {
  if (operand.size() > result.size() || result.size() != resultLetters.size()) return false;
  size_t offset = result.size() - operand.size();
  out->clear();
  // Does the operand span every 'm' dim of the result (same size at each)?
  bool spansM = true;
  for (size_t p = 0; p < result.size(); ++p)
    if (resultLetters[p] == 'm' && (p < offset || operand[p - offset] != result[p])) spansM = false;
  for (size_t i = 0; i < operand.size(); ++i) {
    const ir::Dim& r = result[i + offset];
    char letter = resultLetters[i + offset];
    if (operand[i] == r && !(operand[i].is(1) && !keepRoles && !(letter == 'm' && spansM))) {
      out->push_back(letter);
    } else if (operand[i].is(1)) {
      out->push_back('1');
    } else {
      return false;
    }
  }
  return true;
}

namespace {

// Size-1 dims of `sizes`, grouped by the non-1 dims between them: group g holds the
// positions of the size-1 dims after the g-th non-1 dim (group 0: before the first).
std::vector<std::vector<size_t>> onesBetweenNonOnes(const std::vector<ir::Dim>& sizes) {
  std::vector<std::vector<size_t>> groups(1);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i].is(1)) {
      groups.back().push_back(i);
    } else {
      groups.emplace_back();
    }
  }
  return groups;
}

// Letters of the input of a view that adds or drops size-1 dims (same non-1 dims, in order).
std::string reshapeInputLetters(const std::vector<ir::Dim>& in, const std::vector<ir::Dim>& out,
                                const std::string& outLetters, bool keepRoles) {
  std::string kept;
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].is(1)) kept.push_back(outLetters[i]);
  std::string letters;
  size_t next = 0;
  for (const ir::Dim& d : in) letters.push_back(d.is(1) ? '1' : kept[next++]);
  if (!keepRoles) return letters;
  // A size-1 dim the view keeps names the same thing on both sides: match the size-1 dims
  // between the same two non-1 dims, right aligned ([K,1] -> [1,K,1] named [b,k,n]: the
  // input is [k,n]; the leading b is added by the view and broadcasts).
  auto inGroups = onesBetweenNonOnes(in), outGroups = onesBetweenNonOnes(out);
  if (inGroups.size() != outGroups.size()) return letters;
  for (size_t g = 0; g < inGroups.size(); ++g) {
    const auto& ig = inGroups[g];
    const auto& og = outGroups[g];
    for (size_t j = 0; j < ig.size(); ++j) {
      size_t fromEnd = ig.size() - j;  // 1 for the last size-1 dim of the group
      if (fromEnd <= og.size()) letters[ig[j]] = outLetters[og[og.size() - fromEnd]];
    }
  }
  return letters;
}

}  // namespace

bool viewInputLetters(const GraphIndex& index, int view, const std::string& outLetters,
                      std::string* inLetters, bool keepRoles) {
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
    // Several m dims flatten in the tensor's own order: a permute may not reorder them.
    int lastM = -1;
    for (size_t i = 0; i < rank; ++i) {
      if (outLetters[i] != 'm') continue;  // size-1 ones too: the op lays its output out in A's own order
      int d = normalizeDim((*perm)[i], rank);
      if (d < lastM) return false;
      lastM = d;
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
    // Swapping two m dims reorders the flattened M, and of size 1 too the op's output dims (A's own order)
    if (d0 != d1 && outLetters[d0] == 'm' && outLetters[d1] == 'm') return false;
    *inLetters = outLetters;
    std::swap((*inLetters)[d0], (*inLetters)[d1]);
    return true;
  }
  if (n.isCall("aten.expand.default")) {
    return broadcastLetters(in->sizes, out->sizes, outLetters, inLetters, keepRoles);
  }
  bool dropsOrAddsOnes = isReshape(n) || n.isCall("aten.unsqueeze.default") ||
                         n.isCall("aten.squeeze.dim") || n.isCall("aten.squeeze.dims") ||
                         n.isCall("aten.squeeze.default");
  if (dropsOrAddsOnes && sameShapeIgnoringOnes(in->sizes, out->sizes)) {
    // Non-1 dims keep their order and their letters; size-1 dims as reshapeInputLetters says.
    *inLetters = reshapeInputLetters(in->sizes, out->sizes, outLetters, keepRoles);
    return true;
  }
  return false;
}

}  // namespace fxfuse::pass
