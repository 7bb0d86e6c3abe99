#include "pass/integer_range.h"

#include <algorithm>
#include <limits>

#include "pass/aten_ops.h"

namespace fxfuse::pass {
namespace {

constexpr int kMaxDepth = 16;  // deep enough for any unpack; bounds the walk on adversarial graphs

std::optional<IntegerRange> dtypeRange(spec::DType d) {
  switch (d) {
    case spec::DType::Bool: return IntegerRange{0, 1};
    case spec::DType::U8: return IntegerRange{0, 255};
    case spec::DType::I8: return IntegerRange{-128, 127};
    case spec::DType::I32: return IntegerRange{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case spec::DType::I64: return IntegerRange{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    default: return std::nullopt;
  }
}

bool within(IntegerRange r, IntegerRange of) { return r.lo >= of.lo && r.hi <= of.hi; }

// Ops whose every output element is one of the input's elements.
bool keepsValues(const ir::Node& n) {
  if (isReshape(n)) return true;
  for (const char* op : {"aten.unsqueeze.default", "aten.expand.default", "aten.permute.default", "aten.t.default",
                         "aten.transpose.int", "aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default",
                         "aten.clone.default", "aten.alias.default", "aten.index.Tensor", "aten.slice.Tensor",
                         "aten.select.int", "aten.contiguous.default",
                         "aten.repeat_interleave.self_int"})
    if (n.isCall(op)) return true;
  return false;
}

std::optional<IntegerRange> rangeOf(const GraphIndex& index, int node, int depth);

// An operand's range: a tensor's (rangeOf), an int's own value; nullopt for anything else.
std::optional<IntegerRange> argRange(const GraphIndex& index, const ir::Arg& a, int depth) {
  if (a.isValue()) return rangeOf(index, index.producer(a), depth);
  if (a.kind == ir::Arg::Kind::Int) return IntegerRange{a.i, a.i};
  return std::nullopt;
}

// a - b or a + b over every pair of values (operands far inside int64: the callers bound them first).
IntegerRange sumRange(IntegerRange a, IntegerRange b, bool sub) {
  return sub ? IntegerRange{a.lo - b.hi, a.hi - b.lo} : IntegerRange{a.lo + b.lo, a.hi + b.hi};
}

std::optional<IntegerRange> rangeOf(const GraphIndex& index, int node, int depth) {
  const ir::TensorType* t = node >= 0 ? index.tensor(node) : nullptr;
  if (!t) return std::nullopt;
  const std::optional<IntegerRange> full = dtypeRange(t->dtype);
  if (!full) return std::nullopt;
  const ir::Node& n = index.node(node);
  if (n.op != ir::Node::Op::Call || n.args.empty() || depth >= kMaxDepth) return full;
  const int source = n.args[0].isValue() ? index.producer(n.args[0]) : -1;
  // x & m with m >= 0: 0..m whatever x holds
  if ((n.isCall("aten.bitwise_and.Scalar") || n.isCall("aten.__and__.Scalar")) && n.args.size() == 2) {
    const auto m = intArg(n.args[1]);
    if (m && *m >= 0 && within({0, *m}, *full)) return IntegerRange{0, *m};
    return full;
  }
  if (keepsValues(n) || convertTarget(n)) {
    const std::optional<IntegerRange> r = rangeOf(index, source, depth + 1);
    return r && within(*r, *full) ? *r : full;  // a conversion that may wrap: the type's range
  }
  // x >> s by a number s >= 0: monotonic, [lo >> s, hi >> s] (an arithmetic shift: the high nibble of a u8 is 0..15)
  if ((n.isCall("aten.__rshift__.Scalar") || n.isCall("aten.bitwise_right_shift.Tensor_Scalar")) && n.args.size() == 2) {
    const auto shift = intArg(n.args[1]);
    const std::optional<IntegerRange> r = rangeOf(index, source, depth + 1);
    if (!shift || *shift < 0 || *shift > 62 || !r) return full;
    const IntegerRange shifted{r->lo >> *shift, r->hi >> *shift};
    return within(shifted, *full) ? shifted : full;
  }
  // stack / cat: every element is one of its tensors' (a nibble unpack `stack([w & 15, w >> 4])`: review)
  if ((n.isCall("aten.stack.default") || n.isCall("aten.cat.default")) && n.args[0].kind == ir::Arg::Kind::List &&
      !n.args[0].list.empty()) {
    std::optional<IntegerRange> all;
    for (const ir::Arg& a : n.args[0].list) {
      const std::optional<IntegerRange> r = a.isValue() ? rangeOf(index, index.producer(a), depth + 1) : std::nullopt;
      if (!r) return full;
      all = all ? IntegerRange{std::min(all->lo, r->lo), std::max(all->hi, r->hi)} : *r;
    }
    return all && within(*all, *full) ? *all : full;
  }
  const bool sub = n.isCall("aten.sub.Tensor"), add = n.isCall("aten.add.Tensor");
  if ((sub || add) && n.args.size() == 2 && !n.kwarg("alpha")) {
    const auto a = rangeOf(index, source, depth + 1), b = argRange(index, n.args[1], depth + 1);
    // the operands' ranges are far inside int64 here (those that are not leave the type's range below)
    constexpr int64_t kSmall = int64_t(1) << 40;
    if (!a || !b || !within(*a, {-kSmall, kSmall}) || !within(*b, {-kSmall, kSmall})) return full;
    const IntegerRange r = sumRange(*a, *b, sub);
    return within(r, *full) ? r : full;
  }
  return full;
}

}  // namespace

std::optional<IntegerRange> integerRange(const GraphIndex& index, int node) { return rangeOf(index, node, 0); }

int inPlaceOperandSource(const GraphIndex& index, int node) {
  for (const ir::Arg& a : index.node(node).args) {
    int at = a.isValue() ? index.producer(a) : -1;
    for (int depth = 0; at >= 0 && depth < kMaxDepth; ++depth) {
      const ir::Node& n = index.node(at);
      if (isMutating(n)) return at;
      // written in place by a later node (`torch.bitwise_and(w, 15, out=w)`: the graph reads w, the out= op writes it)
      for (int user : index.users(at))
        if (isMutating(index.node(user))) return user;
      if (n.op != ir::Node::Op::Call || n.args.empty() || !(keepsValues(n) || convertTarget(n))) break;
      at = n.args[0].isValue() ? index.producer(n.args[0]) : -1;
    }
  }
  return -1;
}

bool conversionKeepsValues(const GraphIndex& index, int node) {
  const ir::Node& n = index.node(node);
  const ir::TensorType* t = index.tensor(node);
  if (!convertTarget(n) || n.args.empty() || !n.args[0].isValue() || !t) return false;
  const std::optional<IntegerRange> target = dtypeRange(t->dtype);
  const std::optional<IntegerRange> source = rangeOf(index, index.producer(n.args[0]), 0);
  return target && source && within(*source, *target);
}

bool integerArithmeticExactInFloat(const GraphIndex& index, int node) {
  const ir::Node& n = index.node(node);
  const bool sub = n.isCall("aten.sub.Tensor");
  if ((!sub && !n.isCall("aten.add.Tensor")) || n.args.size() != 2 || n.kwarg("alpha")) return false;
  const ir::TensorType* t = index.tensor(node);
  const std::optional<IntegerRange> full = t && t->dtype != spec::DType::Bool ? dtypeRange(t->dtype) : std::nullopt;
  if (!full) return false;
  constexpr int64_t kExactInFloat = int64_t(1) << 24;
  const IntegerRange exact{-kExactInFloat, kExactInFloat};
  std::optional<IntegerRange> ranges[2];
  for (int i = 0; i < 2; ++i) {
    const ir::Arg& a = n.args[static_cast<size_t>(i)];
    // eager refuses a bool operand of sub ("use the `^` operator"); add's is an or: neither is an integer op here
    const ir::TensorType* at = a.isValue() ? index.tensor(index.producer(a)) : nullptr;
    if ((at && at->dtype == spec::DType::Bool) || a.kind == ir::Arg::Kind::Bool) return false;
    ranges[i] = argRange(index, a, 0);
    if (!ranges[i] || !within(*ranges[i], exact)) return false;
  }
  const IntegerRange r = sumRange(*ranges[0], *ranges[1], sub);
  return within(r, *full) && within(r, exact);
}

}  // namespace fxfuse::pass
