#include "pass/nibble_unpack.h"

#include "pass/aten_ops.h"

namespace fxfuse::pass {
namespace {

// Deep enough for any real unpack-then-split chain of reshapes; bounds the walk on adversarial graphs.
constexpr int kMaxReshapes = 8;

// A dim argument (positional at `at`, or the keyword `dim`, default 0) normalized against `rank`.
std::optional<size_t> dimArg(const ir::Node& n, size_t at, size_t rank) {
  const ir::Arg* a = at < n.args.size() ? &n.args[at] : n.kwarg("dim");
  int64_t d = 0;
  if (a) {
    if (a->kind != ir::Arg::Kind::Int) return std::nullopt;
    d = a->i;
  }
  if (d < 0) d += static_cast<int64_t>(rank);
  if (d < 0 || d >= static_cast<int64_t>(rank)) return std::nullopt;
  return static_cast<size_t>(d);
}

bool scalarIs(const ir::Node& n, int64_t v) {
  return n.args.size() == 2 && n.args[1].kind == ir::Arg::Kind::Int && n.args[1].i == v;
}

bool isShiftBy4(const ir::Node& n) {
  return (n.isCall("aten.__rshift__.Scalar") || n.isCall("aten.bitwise_right_shift.Tensor_Scalar")) &&
         scalarIs(n, 4);
}

// The packed tensor of the low nibble `w & 15`, and of the high `w >> 4` (u8) or `(w >> 4) & 15`; -1 otherwise.
int lowSource(const GraphIndex& index, int node, std::vector<int>* nodes) {
  if (node < 0 || !isAnd15(index.node(node))) return -1;
  nodes->push_back(node);
  return index.producer(index.node(node).args[0]);
}

int highSource(const GraphIndex& index, int node, std::vector<int>* nodes) {
  if (node < 0) return -1;
  bool masked = false;
  if (isAnd15(index.node(node))) {
    nodes->push_back(node);
    node = index.producer(index.node(node).args[0]);
    masked = true;
  }
  if (node < 0 || !isShiftBy4(index.node(node))) return -1;
  nodes->push_back(node);
  const int source = index.producer(index.node(node).args[0]);
  const ir::TensorType* t = source >= 0 ? index.tensor(source) : nullptr;
  // an i8 byte shifted right keeps its sign: its high nibble is (w >> 4) & 15
  if (!t || (t->dtype != spec::DType::U8 && !(t->dtype == spec::DType::I8 && masked))) return -1;
  return source;
}

// The two halves of the stack: [lo, hi] of `stack(dim)`, of `cat([lo.unsqueeze(dim), hi.unsqueeze(dim)], dim)`, or
// of `cat([lo, hi], dim).view(.., 2, ..)` (the decomposition of a stack along a dim that is not the last), dim the
// interleave's (the packed dim + 1).
bool halves(const GraphIndex& index, int node, size_t interleave, int* lo, int* hi, std::vector<int>* nodes) {
  bool viewed = false;  // the third form: `node` is the view of the cat
  const ir::TensorType* stacked = index.tensor(node);
  if (isReshape(index.node(node)) && !index.node(node).args.empty()) {
    const int cat = index.producer(index.node(node).args[0]);
    const ir::TensorType* ct = cat >= 0 ? index.tensor(cat) : nullptr;
    // [.., K/2, 2 X, ..] -> [.., K/2, 2, X, ..]
    if (!ct || !stacked || ct->sizes.size() + 1 != stacked->sizes.size() || interleave + 1 >= stacked->sizes.size())
      return false;
    for (size_t i = 0; i < ct->sizes.size(); ++i) {
      const bool split = i == interleave;
      if (split ? ct->sizes[i].symbolic || stacked->sizes[i + 1].symbolic ||
                      ct->sizes[i].value != 2 * stacked->sizes[i + 1].value
                : ct->sizes[i] != stacked->sizes[i < interleave ? i : i + 1])
        return false;
    }
    nodes->push_back(node);
    node = cat;
    viewed = true;
  }
  const ir::Node& n = index.node(node);
  const bool stack = !viewed && n.isCall("aten.stack.default");
  if ((!stack && !n.isCall("aten.cat.default")) || n.args.empty() || n.args[0].kind != ir::Arg::Kind::List ||
      n.args[0].list.size() != 2)
    return false;
  const ir::TensorType* out = index.tensor(node);
  if (!out || dimArg(n, 1, out->sizes.size()) != interleave) return false;
  nodes->push_back(node);
  int parts[2];
  for (int i = 0; i < 2; ++i) {
    parts[i] = index.producer(n.args[0].list[i]);
    if (parts[i] < 0) return false;
    if (stack || viewed) continue;
    const ir::Node& u = index.node(parts[i]);
    const ir::TensorType* ut = index.tensor(parts[i]);
    if (!u.isCall("aten.unsqueeze.default") || !ut || dimArg(u, 1, ut->sizes.size()) != interleave) return false;
    nodes->push_back(parts[i]);
    parts[i] = index.producer(u.args[0]);
    if (parts[i] < 0) return false;
  }
  *lo = parts[0];
  *hi = parts[1];
  return true;
}

}  // namespace

bool isAnd15(const ir::Node& n) {
  return (n.isCall("aten.bitwise_and.Scalar") || n.isCall("aten.__and__.Scalar")) && scalarIs(n, 15);
}

std::optional<size_t> mergedPackedDim(const GraphIndex& index, int node, int64_t per) {
  const ir::Node& n = index.node(node);
  if (!isReshape(n) || n.args.empty()) return std::nullopt;
  const int source = index.producer(n.args[0]);
  const ir::TensorType* in = source >= 0 ? index.tensor(source) : nullptr;
  const ir::TensorType* out = index.tensor(node);
  if (!in || !out || in->sizes.size() != out->sizes.size() + 1) return std::nullopt;
  for (size_t d = 0; d < out->sizes.size(); ++d) {
    if (!in->sizes[d + 1].is(per) || in->sizes[d].symbolic || !out->sizes[d].is(per * in->sizes[d].value)) continue;
    bool rest = true;
    for (size_t i = 0; i < out->sizes.size(); ++i)
      if (i != d) rest = rest && out->sizes[i] == in->sizes[i < d ? i : i + 1];
    if (rest) return d;
  }
  return std::nullopt;
}

std::optional<NibbleUnpack> nibbleUnpack(const GraphIndex& index, int node) {
  const ir::Node& n = index.node(node);
  if (!isReshape(n) || n.args.empty()) return std::nullopt;
  const int stacked = index.producer(n.args[0]);
  const ir::TensorType* in = stacked >= 0 ? index.tensor(stacked) : nullptr;
  const ir::TensorType* out = index.tensor(node);
  // [.., K/2, 2, ..] -> [.., K, ..]: the 2 is the interleave's dim
  const std::optional<size_t> pos = mergedPackedDim(index, node, 2);
  if (!pos || !in || !out) return std::nullopt;
  NibbleUnpack u;
  u.pos = *pos;
  u.nodes.push_back(node);
  int lo = -1, hi = -1;
  if (!halves(index, stacked, u.pos + 1, &lo, &hi, &u.nodes)) return std::nullopt;
  const int packed = lowSource(index, lo, &u.nodes);
  if (packed < 0 || highSource(index, hi, &u.nodes) != packed) return std::nullopt;
  // the bytes are the halves' shape, each nibble of the bytes' dtype (no promotion on the way)
  const ir::TensorType* p = index.tensor(packed);
  if (!p || p->sizes.size() != out->sizes.size()) return std::nullopt;
  for (size_t i = 0; i < p->sizes.size(); ++i)
    if (p->sizes[i] != in->sizes[i < u.pos + 1 ? i : i + 1]) return std::nullopt;
  for (int v : u.nodes)
    if (!index.tensor(v) || index.tensor(v)->dtype != p->dtype) return std::nullopt;
  u.packed = packed;
  return u;
}

bool unpacksBits(const GraphIndex& index, int node) {
  auto bitOp = [](const ir::Node& n) {
    for (const char* op : {"bitwise_and", "__and__", "bitwise_or", "__or__", "__rshift__", "bitwise_right_shift",
                           "__lshift__", "bitwise_left_shift"})
      if (n.op == ir::Node::Op::Call && n.target.rfind(std::string("aten.") + op + ".", 0) == 0) return true;
    return false;
  };
  for (int depth = 0; node >= 0 && depth < kMaxReshapes; ++depth) {
    const ir::Node& n = index.node(node);
    if (bitOp(n)) return true;
    if ((n.isCall("aten.stack.default") || n.isCall("aten.cat.default")) && !n.args.empty() &&
        n.args[0].kind == ir::Arg::Kind::List) {
      for (const ir::Arg& part : n.args[0].list) {
        int p = index.producer(part);
        // through an unsqueeze and a conversion of each part (the hunt's per-nibble `.to(bf16)`)
        for (int step = 0; step < 2 && p >= 0; ++step)
          if ((index.node(p).isCall("aten.unsqueeze.default") || convertTarget(index.node(p))) &&
              !index.node(p).args.empty())
            p = index.producer(index.node(p).args[0]);
        if (p >= 0 && bitOp(index.node(p))) return true;
      }
      return false;
    }
    const bool through = isReshape(n) || n.isCall("aten.unsqueeze.default") || convertTarget(n).has_value();
    if (!through || n.args.empty()) return false;
    node = index.producer(n.args[0]);
  }
  return false;
}

// A view that changes only the layout or the broadcast of its input, as the prologue folds them (viewInputLetters).
bool isLayoutView(const ir::Node& n) {
  for (const char* op : {"aten.t.default", "aten.permute.default", "aten.transpose.int", "aten.unsqueeze.default",
                         "aten.expand.default", "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default"})
    if (n.isCall(op)) return true;
  return false;
}

bool readsNibbles(const GraphIndex& index, int node) {
  for (int depth = 0; node >= 0 && depth < kMaxReshapes; ++depth) {
    if (nibbleUnpack(index, node)) return true;
    const ir::Node& n = index.node(node);
    // through reshapes (the group-wise split) and layout views (a transposed unpacked weight: the hunt's r1)
    if ((!isReshape(n) && !isLayoutView(n)) || n.args.empty()) return false;
    node = index.producer(n.args[0]);
  }
  return false;
}

}  // namespace fxfuse::pass
