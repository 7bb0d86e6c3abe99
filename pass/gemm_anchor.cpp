#include "pass/gemm_anchor.h"

#include <algorithm>

#include "pass/aten_ops.h"
#include "pass/tensor_layout.h"

namespace fxfuse::pass {
namespace {

std::string repeat(char c, size_t n) { return std::string(n, c); }

// addmm(bias, a, b, beta=, alpha=) / baddbmm(...): the scalars, 1 when absent.
bool readBetaAlpha(const ir::Node& n, GemmMatch* m) {
  const ir::Arg* beta = n.args.size() > 3 ? &n.args[3] : n.kwarg("beta");
  const ir::Arg* alpha = n.args.size() > 4 ? &n.args[4] : n.kwarg("alpha");
  if (beta) {
    if (!beta->isExactNumber()) return false;
    m->beta = beta->number();
  }
  if (alpha) {
    if (!alpha->isExactNumber()) return false;
    m->alpha = alpha->number();
  }
  return true;
}

// 3-D linear after AOT: a = view(x, [B*S, K]) and the product's only user is
// view(out, [B, S, N]). Both views become transparent: A is x with dims [m,m,k] and the
// output space is [B, S, N]. Without the second view the first one stays a plain input.
void absorbLeadingViews(const GraphIndex& index, GemmMatch* m) {
  int aView = index.producer(m->a);
  if (aView < 0 || !isReshape(index.node(aView)) || index.users(m->anchor).size() != 1 ||
      index.usedByGraphOutput(m->anchor))
    return;
  int outView = index.users(m->anchor)[0];
  const ir::Node& ov = index.node(outView);
  if (!isReshape(ov) || ov.args.empty() || index.node(aView).args.empty() ||
      index.producer(ov.args[0]) != m->anchor)
    return;
  const ir::TensorType* x = index.tensor(index.producer(index.node(aView).args[0]));
  const ir::TensorType* out = index.tensor(outView);
  if (!x || !out || x->sizes.size() < 3 || out->sizes.size() != x->sizes.size()) return;
  size_t lead = x->sizes.size() - 1;
  for (size_t i = 0; i < lead; ++i)
    if (x->sizes[i] != out->sizes[i]) return;
  if (x->sizes.back() != m->k || out->sizes.back() != m->n) return;
  m->a = index.node(aView).args[0];
  m->aLetters = repeat('m', lead) + "k";
  m->root = outView;
  m->transparentViews = {aView, outView};
  m->outShape = out->sizes;
  m->outLetters = repeat('m', lead) + "n";
}

}  // namespace

namespace {
// The ATen GEMMs the pass matches, as .default ("aten.<kind>.default"); their other overloads are named.
// linalg_matmul is matmul under another name (torch.linalg.matmul; export keeps it undecomposed): matched as matmul
constexpr const char* kAnchorKinds[] = {"mm", "addmm", "bmm", "baddbmm", "linear", "matmul", "linalg_matmul"};

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// `target` names the op `name`: any overload ("aten.mv.default"), or the op itself (a graph holds
// Inductor's mkl._mkl_linear without one).
bool namesOp(std::string_view target, const std::string& name) { return target == name || startsWith(target, name + "."); }
}  // namespace

bool isGemmAnchorTarget(std::string_view target) {
  for (const char* kind : kAnchorKinds)
    if (target == "aten." + std::string(kind) + ".default") return true;
  return false;
}

std::string otherGemmTarget(std::string_view target) {
  static const std::pair<const char*, const char*> kOthers[] = {
      {"aten._int_mm", "an int8 x int8 -> int32 GEMM (torch._int_mm)"},
      {"aten._scaled_mm", "a scaled fp8 GEMM (torch._scaled_mm)"},
      {"aten._weight_int8pack_mm", "a GEMM on packed int8 weights"},
      {"aten._weight_int4pack_mm", "a GEMM on packed int4 weights"},
      {"aten._weight_int4pack_mm_for_cpu", "a GEMM on packed int4 weights"},
      {"aten._addmm_activation", "addmm with its activation (Inductor's)"},
      {"aten.addbmm", "a batched GEMM summed over its batch (addbmm)"},
      {"aten.mv", "a matrix-vector product"},
      {"aten.addmv", "a matrix-vector product"},
      {"aten.tensordot", "a tensordot"},
      {"aten.bilinear", "a bilinear form"},
      {"aten._trilinear", "a bilinear form (F.bilinear's _trilinear)"},
      {"aten.linalg_multi_dot", "a chain of matrix products (torch.linalg.multi_dot)"},
      {"aten.chain_matmul", "a chain of matrix products (torch.chain_matmul)"},
      {"aten.inner", "an inner product over the last dims (torch.inner)"},
      // Inductor's CPU freezing puts linears on prepacked weights before its post-grad passes (it fuses their
      // pointwise ops itself)
      {"mkl._mkl_linear", "an MKL linear on prepacked weights (Inductor's CPU freezing)"},
      {"mkldnn._linear_pointwise", "a oneDNN linear on prepacked weights (Inductor's CPU freezing)"},
      {"onednn.qlinear_pointwise", "a quantized oneDNN linear (Inductor's CPU freezing)"},
  };
  if (isGemmAnchorTarget(target)) return "";
  for (const auto& [name, what] : kOthers)
    if (namesOp(target, name)) return what;
  // the GEMM targets' other overloads (aten.mm.dtype: mm with an output dtype)
  for (const char* kind : kAnchorKinds)
    if (namesOp(target, "aten." + std::string(kind))) return "an overload of a GEMM the pass matches only as .default";
  return "";
}

bool isGemmTarget(std::string_view target) { return isGemmAnchorTarget(target) || !otherGemmTarget(target).empty(); }

bool isGemmAnchor(const ir::Node& n) { return n.op == ir::Node::Op::Call && isGemmAnchorTarget(n.target); }

namespace {
// An einsum equation ("bij,bjk->bik", "ij,jk,kl->il") that sums over an index two of its operands carry while an
// operand keeps an index of its own: a matrix product. Not an elementwise einsum, nor a dot ("i,i->", a reduction,
// as aten.dot is not counted).
bool contractsOperands(const std::string& equation) {
  std::string eq;
  for (char c : equation)
    if (c != ' ' && c != '.') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> operands(1);
  for (char c : lhs) {
    if (c == ',') operands.emplace_back();
    else operands.back() += c;
  }
  if (operands.size() < 2) return false;
  auto holders = [&](char c) {
    return std::count_if(operands.begin(), operands.end(), [&](const std::string& o) { return o.find(c) != std::string::npos; });
  };
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {  // implicit output: the indices that occur once
    for (char c : lhs)
      if (c != ',' && std::count(lhs.begin(), lhs.end(), c) == 1) out += c;
  }
  bool contracted = false, ownIndex = false;
  for (char c : lhs) {
    if (c == ',') continue;
    if (holders(c) >= 2 && out.find(c) == std::string::npos) contracted = true;
    if (holders(c) == 1 && out.find(c) != std::string::npos) ownIndex = true;
  }
  return contracted && ownIndex;
}
}  // namespace

std::string otherGemmOp(const ir::Node& n) {
  if (n.op != ir::Node::Op::Call) return "";
  // export without decompositions keeps an einsum whole (session 59's hunts: an MoE expert einsum read "no GEMM in
  // this graph"); after run_decompositions() the pass matches its mm / bmm, which views around them may still leave
  // bare (review)
  if (n.target == "aten.einsum.default" && !n.args.empty() && n.args[0].kind == ir::Arg::Kind::String &&
      contractsOperands(n.args[0].s))
    return "an einsum, which export keeps whole (after run_decompositions() the pass sees its mm / bmm)";
  // Inductor's CPU weight-only int8 pattern replaces `x @ w_i8.to(dtype) * s` before the pass runs
  if (n.target.find("woq_int8") != std::string::npos)
    return "Inductor's weight-only int8 lowering (its pattern takes the form before the pass)";
  return otherGemmTarget(n.target);
}

std::optional<GemmMatch> matchGemm(const GraphIndex& index, int anchor, std::string* why) {
  const ir::Node& n = index.node(anchor);
  GemmMatch m;
  m.anchor = anchor;
  m.root = anchor;
  m.anchorKind = n.target.substr(5, n.target.rfind('.') - 5);  // "aten.<kind>.default"
  if (m.anchorKind == "linalg_matmul") m.anchorKind = "matmul";
  const ir::TensorType* out = index.tensor(anchor);
  if (!out) {
    *why = "the GEMM has no tensor meta";
    return std::nullopt;
  }
  bool withBias = m.anchorKind == "addmm" || m.anchorKind == "baddbmm";
  size_t first = withBias ? 1 : 0;
  if (n.args.size() < first + 2 || !n.args[first].isValue() || !n.args[first + 1].isValue()) {
    *why = "operands are not tensors";
    return std::nullopt;
  }
  m.a = n.args[first];
  m.b = n.args[first + 1];
  if (withBias) {
    m.bias = n.args[0];
    if (!readBetaAlpha(n, &m)) {
      *why = "beta/alpha are not numbers";
      return std::nullopt;
    }
    // As BLAS, eager never evaluates the product when alpha is 0 (an inf in A or B gives no NaN); the
    // chain would multiply it by 0.
    if (m.alpha == 0.0) {
      *why = "alpha = 0 (eager does not evaluate the product)";
      return std::nullopt;
    }
  }
  const ir::TensorType* a = index.tensor(index.producer(m.a));
  const ir::TensorType* b = index.tensor(index.producer(m.b));
  if (!a || !b) {
    *why = "an operand has no tensor meta";
    return std::nullopt;
  }
  size_t ra = a->sizes.size(), rb = b->sizes.size();
  m.outShape = out->sizes;
  if (m.anchorKind == "linear") {
    if (n.args.size() > 2 && n.args[2].kind != ir::Arg::Kind::None) m.bias = n.args[2];
    if (ra < 2 || rb != 2) {
      *why = "linear with a 1-D input or weight";
      return std::nullopt;
    }
    m.aLetters = repeat('m', ra - 1) + "k";
    m.bLetters = "nk";
    // at::linear adds a bias inside addmm (one rounding) for a 2-D input and for a contiguous one of more dims
    // with a contiguous [N] bias; a non-contiguous input goes through matmul, whose product is rounded before the
    // bias is added (the hunt of session 58: 20-30 % of the elements one rounding off, e.g. a Mixer's token MLP
    // on a transposed input, or a 1x1 convolution as a linear over an NHWC permute). For a contiguous input with
    // another bias (0-d, expanded, strided, [1,N]) torch versions differ (2.13 takes matmul then add; earlier ones
    // addmm for every 3-D input; review of session 58): such a chain is refused, as are strides the IR's text
    // does not settle.
    if (m.bias && ra >= 3) {
      const ir::TensorType* bias = index.tensor(index.producer(*m.bias));
      const Contiguity layout = contiguity(*a);
      const bool plainBias = bias && bias->sizes.size() == 1 &&
                             (bias->sizes[0].is(1) || (bias->hasStrides && bias->strides[0].is(1)));
      if (layout == Contiguity::Unknown || !bias) {
        *why = "linear of a " + std::to_string(ra) + "-D input whose strides the graph does not settle (eager rounds "
               "the product before the bias unless the input is contiguous)";
        return std::nullopt;
      }
      if (layout == Contiguity::Contiguous && !plainBias) {
        *why = "linear of a contiguous " + std::to_string(ra) + "-D input with a bias other than a contiguous [N] "
               "(whether eager rounds the product before it depends on the torch version)";
        return std::nullopt;
      }
      m.biasAfterRoundedProduct = layout == Contiguity::NotContiguous;
    }
  } else if (m.anchorKind == "bmm" || m.anchorKind == "baddbmm" ||
             (m.anchorKind == "matmul" && ra == 3 && rb == 3)) {
    if (ra != 3 || rb != 3 || a->sizes[0] != b->sizes[0]) {
      *why = "batched operands without a common batch";
      return std::nullopt;
    }
    m.kind = spec::GemmKind::Bmm;
    m.aLetters = "bmk";
    m.bLetters = "bkn";
  } else if (m.anchorKind == "matmul") {
    if (ra < 2 || rb != 2) {
      // (session 59's hunt: q @ k^T on 4-D heads had read "broadcasts or has a 1-D operand")
      const bool sameBatch = ra == rb && ra > 3 && std::equal(a->sizes.begin(), a->sizes.end() - 2, b->sizes.begin());
      *why = ra < 2 || rb < 2 ? "matmul with a 1-D operand"
             : sameBatch      ? "matmul of " + std::to_string(ra) + "-D batches (the chain takes one batch dim)"
                              : "matmul that broadcasts its batch dims";
      return std::nullopt;
    }
    m.aLetters = repeat('m', ra - 1) + "k";
    m.bLetters = "kn";
  } else {  // mm, addmm
    if (ra != 2 || rb != 2) {
      *why = "mm operands are not 2-D";
      return std::nullopt;
    }
    m.aLetters = "mk";
    m.bLetters = "kn";
  }
  size_t minRank = m.kind == spec::GemmKind::Bmm ? 3 : 2;
  if (out->sizes.size() < minRank) {
    *why = "unexpected output rank";
    return std::nullopt;
  }
  m.k = a->sizes.back();
  m.n = out->sizes.empty() ? ir::Dim::concrete(0) : out->sizes.back();
  m.outLetters = (m.kind == spec::GemmKind::Bmm ? "b" : "") +
                 repeat('m', out->sizes.size() - (m.kind == spec::GemmKind::Bmm ? 2 : 1)) + "n";
  if (m.kind == spec::GemmKind::Mm && ra == 2) absorbLeadingViews(index, &m);
  return m;
}

}  // namespace fxfuse::pass
