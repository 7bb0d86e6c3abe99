#include "pass/word_unpack.h"

#include "pass/aten_ops.h"

namespace fxfuse::pass {
namespace {

constexpr int64_t kPerWord = 8;  // 4-bit values to an i32 word

bool isIntegerType(spec::DType d) {
  return d == spec::DType::I8 || d == spec::DType::U8 || d == spec::DType::I32 || d == spec::DType::I64;
}

// A conversion to an integer type: the nibble is in the low 8 bits of every one of them, before or after the `& 15`.
bool isIntegerConvert(const ir::Node& n) {
  const auto to = convertTarget(n);
  return to && isIntegerType(*to);
}

bool isShift(const ir::Node& n) {
  return (n.isCall("aten.bitwise_right_shift.Tensor") || n.isCall("aten.__rshift__.Tensor")) && n.args.size() == 2;
}

// `arange(0, 32, 4)` in the graph: the shifts without a buffer.
bool isShiftArange(const ir::Node& n) {
  if (!n.isCall("aten.arange.start_step") || n.args.size() < 3) return false;
  const auto start = intArg(n.args[0]), end = intArg(n.args[1]), step = intArg(n.args[2]);
  return start == 0 && end == 4 * kPerWord && step == 4;
}

bool holdsShifts(const ir::KnownValues& k) {
  if (k.kind != ir::KnownValues::Kind::List || k.list.size() != kPerWord) return false;
  for (int64_t j = 0; j < kPerWord; ++j)
    if (k.list[static_cast<size_t>(j)] != 4 * j) return false;
  return true;
}

// The shift operand: 0, 4, .., 28 along dim `at` of the shifted value (rank `rank`), 1 everywhere else (broadcast
// from the right), reached through views that keep the elements' order (added to `views`, so that the rewrite can drop
// them with the unpack). Sets *table to the buffer whose stated values these are (-1 for an arange). False otherwise.
bool shiftsAlong(const GraphIndex& index, int node, size_t at, size_t rank, int* table, std::vector<int>* views) {
  const ir::TensorType* t = node >= 0 ? index.tensor(node) : nullptr;
  if (!t || t->sizes.size() > rank) return false;
  const size_t pad = rank - t->sizes.size();
  for (size_t i = 0; i < t->sizes.size(); ++i)
    if (!t->sizes[i].is(pad + i == at ? kPerWord : 1)) return false;
  if (at < pad) return false;
  // eight elements whatever the views: their row-major order is the order along `at`
  for (int depth = 0; node >= 0 && depth < 8; ++depth) {
    const ir::Node& n = index.node(node);
    if (n.op != ir::Node::Op::Call) {
      *table = node;
      return holdsShifts(n.known);
    }
    if (isShiftArange(n)) {
      *table = -1;
      views->push_back(node);
      return true;
    }
    const bool orderKept = isReshape(n) || n.isCall("aten.unsqueeze.default") || n.isCall("aten.squeeze.dim") ||
                           n.isCall("aten.squeeze.default") || n.isCall("aten.squeeze.dims") ||
                           n.isCall("aten.clone.default") || n.isCall("aten.alias.default");
    if (!orderKept || n.args.empty()) return false;
    views->push_back(node);
    node = index.producer(n.args[0]);
  }
  return false;
}

}  // namespace

std::optional<NibbleUnpack> wordUnpack(const GraphIndex& index, int node) {
  const ir::Node& n = index.node(node);
  if (!isReshape(n) || n.args.empty()) return std::nullopt;
  const int split = index.producer(n.args[0]);
  const ir::TensorType* in = split >= 0 ? index.tensor(split) : nullptr;
  const ir::TensorType* out = index.tensor(node);
  // [.., K/8, 8, ..] -> [.., K, ..]: the 8 is the words' dim
  const std::optional<size_t> pos = mergedPackedDim(index, node, kPerWord);
  if (!pos || !in || !out) return std::nullopt;
  NibbleUnpack u;
  u.pos = *pos;
  u.nodes.push_back(node);
  // down to the shift: integer conversions and exactly one `& 15`
  int at = split;
  bool masked = false;
  while (at >= 0 && !isShift(index.node(at))) {
    const ir::Node& step = index.node(at);
    if (isAnd15(step) && !masked) {
      masked = true;
    } else if (!isIntegerConvert(step)) {
      return std::nullopt;
    }
    if (step.args.empty()) return std::nullopt;
    u.nodes.push_back(at);
    at = index.producer(step.args[0]);
  }
  if (at < 0 || !masked) return std::nullopt;
  const ir::Node& shift = index.node(at);
  const ir::TensorType* shifted = index.tensor(at);
  if (!shifted || shifted->dtype != spec::DType::I32 || shifted->sizes != in->sizes) return std::nullopt;
  u.nodes.push_back(at);
  // the words: q.unsqueeze(d + 1), expanded to 8 along it or broadcast by the shift
  int words = index.producer(shift.args[0]);
  if (words >= 0 && index.node(words).isCall("aten.expand.default")) {
    u.nodes.push_back(words);
    words = index.node(words).args.empty() ? -1 : index.producer(index.node(words).args[0]);
  }
  if (words < 0 || !index.node(words).isCall("aten.unsqueeze.default") || index.node(words).args.size() != 2)
    return std::nullopt;
  const ir::TensorType* unsqueezed = index.tensor(words);
  const auto dim = intArg(index.node(words).args[1]);
  const int64_t rank = static_cast<int64_t>(in->sizes.size());
  if (!unsqueezed || !dim || (*dim < 0 ? *dim + rank : *dim) != static_cast<int64_t>(u.pos + 1)) return std::nullopt;
  u.nodes.push_back(words);
  const int packed = index.producer(index.node(words).args[0]);
  const ir::TensorType* p = packed >= 0 ? index.tensor(packed) : nullptr;
  // q is [.., K/8, ..] i32: the split's sizes without the 8
  if (!p || p->dtype != spec::DType::I32 || p->sizes.size() != out->sizes.size()) return std::nullopt;
  for (size_t i = 0; i < p->sizes.size(); ++i)
    if (p->sizes[i] != in->sizes[i <= u.pos ? i : i + 1]) return std::nullopt;
  if (!shiftsAlong(index, index.producer(shift.args[1]), u.pos + 1, in->sizes.size(), &u.shiftTable, &u.nodes))
    return std::nullopt;
  u.packed = packed;
  return u;
}

}  // namespace fxfuse::pass
