#include "pass/word_unpack.h"

#include "pass/aten_ops.h"
#include "pass/integer_range.h"

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

// An arange's values, start + step j for j < count: aten's arange (`arange(0, N)` exports as start_step with two
// arguments, as every `arange(N, dtype=...)` does after run_decompositions; the step positional, a keyword, or 1), or
// prims.iota(count, start=, step=), Inductor's post-grad form of it.
struct Arange {
  int64_t start = 0, step = 1, count = 0;
};
std::optional<Arange> arangeOf(const ir::Node& n) {
  auto keyword = [&](const char* name, int64_t otherwise) -> std::optional<int64_t> {
    const ir::Arg* a = n.kwarg(name);
    return a ? intArg(*a) : std::optional<int64_t>(otherwise);
  };
  std::optional<int64_t> start, end, step;
  if (n.isCall("prims.iota.default") && !n.args.empty()) {
    const auto count = intArg(n.args[0]);
    start = keyword("start", 0), step = keyword("step", 1);
    if (!count || !start || !step) return std::nullopt;
    return Arange{*start, *step, *count};
  }
  if (n.isCall("aten.arange.default") && !n.args.empty()) {
    start = 0, end = intArg(n.args[0]), step = 1;
  } else if ((n.isCall("aten.arange.start") || n.isCall("aten.arange.start_step")) && n.args.size() >= 2) {
    start = intArg(n.args[0]), end = intArg(n.args[1]);
    step = n.args.size() >= 3 ? intArg(n.args[2]) : keyword("step", 1);
  } else {
    return std::nullopt;
  }
  if (!start || !end || !step || *step <= 0 || *end < *start) return std::nullopt;
  return Arange{*start, *step, (*end - *start + *step - 1) / *step};
}

// `arange(0, 32, 4)` in the graph: the shifts without a buffer.
bool isShiftArange(const ir::Node& n) {
  const std::optional<Arange> a = arangeOf(n);
  return a && a->start == 0 && a->step == 4 && a->count == kPerWord;
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

// The words' unpack ending at the reshape `node` (wordUnpack's form); *masked_out: its `& 15` is there (the ordered
// form may mask after its gather instead).
std::optional<NibbleUnpack> wordsUnpackedAt(const GraphIndex& index, int node, bool* masked_out) {
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
  // down to the shift: integer conversions, exactly one `& 15`, and above it adds / subs of a number that cannot wrap
  // (GPTQ v1 checkpoints' zero points, `(z & 15) + 1` before their reshape). The fold emits the adds alone: every
  // conversion above one must keep its values (`((z & 15) + 250).to(uint8)` wraps in eager: a review's case)
  int at = split;
  bool masked = false;
  std::vector<int> convertsAbove;  // integer conversions met before the lowest add so far (above it)
  while (at >= 0 && !isShift(index.node(at))) {
    const ir::Node& step = index.node(at);
    if (isAnd15(step) && !masked) {
      masked = true;
    } else if (!masked && step.args.size() == 2 && step.args[0].isValue() && step.args[1].isExactNumber() &&
               integerArithmeticExactInFloat(index, at)) {
      u.arithmetic.push_back(at);
      for (int c : convertsAbove)
        if (!conversionKeepsValues(index, c)) return std::nullopt;
    } else if (!isIntegerConvert(step)) {
      return std::nullopt;
    } else if (!masked) {
      convertsAbove.push_back(at);
    }
    if (step.args.empty()) return std::nullopt;
    u.nodes.push_back(at);
    at = index.producer(step.args[0]);
  }
  if (at < 0) return std::nullopt;
  *masked_out = masked;
  const ir::Node& shift = index.node(at);
  const ir::TensorType* shifted = index.tensor(at);
  // (i64 where the shifts are: AWQ's `arange(0, 32, 4)` promotes the words; their nibbles are the same)
  if (!shifted || (shifted->dtype != spec::DType::I32 && shifted->dtype != spec::DType::I64) ||
      shifted->sizes != in->sizes)
    return std::nullopt;
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

// The values of an order constant the IR states: a list, or `kgroups 1` (the exporter's form for 0, 1, .., 7).
std::optional<std::vector<int64_t>> statedOrder(const ir::KnownValues& known, int64_t count) {
  if (known.kind == ir::KnownValues::Kind::List) return known.list;
  if (known.kind == ir::KnownValues::Kind::KGroups && known.group == 1) {
    std::vector<int64_t> identity(static_cast<size_t>(count));
    for (int64_t j = 0; j < count; ++j) identity[static_cast<size_t>(j)] = j;
    return identity;
  }
  return std::nullopt;
}

// `node` is AWQ's order index: view(index(view(arange(N), [N/8, 8]), [none, c]), [N]), whose element n is
// 8 (n / 8) + c[n % 8], c a constant stated by the IR holding a permutation of 0..7. Sets *order to c's values and
// *table to c's node, adds the index's own nodes to *nodes (not c's: the chain expects it).
bool wordOrderIndex(const GraphIndex& index, int node, int64_t N, std::vector<int>* order, int* table,
                    std::vector<int>* nodes) {
  const ir::TensorType* t = node >= 0 ? index.tensor(node) : nullptr;
  if (!t || t->sizes.size() != 1 || !t->sizes[0].is(N) || N % kPerWord != 0 || !isReshape(index.node(node)) ||
      index.node(node).args.empty())
    return false;
  const int gather = index.producer(index.node(node).args[0]);
  if (gather < 0) return false;
  const ir::Node& g = index.node(gather);
  if (gatherDim(g) != size_t{1}) return false;
  const int grid = index.producer(g.args[0]);
  const ir::TensorType* gt = grid >= 0 ? index.tensor(grid) : nullptr;
  if (!gt || gt->sizes.size() != 2 || !gt->sizes[0].is(N / kPerWord) || !gt->sizes[1].is(kPerWord) ||
      !isReshape(index.node(grid)) || index.node(grid).args.empty())
    return false;
  const int arange = index.producer(index.node(grid).args[0]);
  if (arange < 0) return false;
  const std::optional<Arange> a = arangeOf(index.node(arange));
  if (!a || a->start != 0 || a->step != 1 || a->count != N) return false;
  // c, through copies and conversions between integer types (export's lift_fresh_copy of a lifted constant)
  int c = index.producer(g.args[1].list[1]);
  std::vector<int> copies;
  for (int depth = 0; c >= 0 && index.node(c).op == ir::Node::Op::Call && depth < 4; ++depth) {
    const ir::Node& step = index.node(c);
    const bool copy = step.isCall("aten.lift_fresh_copy.default") || step.isCall("aten.clone.default") ||
                      step.isCall("aten.alias.default") || isIntegerConvert(step);
    if (!copy || step.args.empty()) return false;
    copies.push_back(c);
    c = index.producer(step.args[0]);
  }
  if (c < 0) return false;
  const ir::TensorType* ct = index.tensor(c);
  const std::optional<std::vector<int64_t>> stated = statedOrder(index.node(c).known, kPerWord);
  if (!stated || stated->size() != kPerWord || !ct || !isIntegerType(ct->dtype) || ct->sizes.size() != 1 ||
      !ct->sizes[0].is(kPerWord))
    return false;
  for (int64_t j : *stated)
    if (j < 0 || j >= kPerWord) return false;
  order->assign(stated->begin(), stated->end());
  if (!spec::isNibbleOrder(*order, kPerWord)) return false;
  *table = c;
  nodes->insert(nodes->end(), {node, gather, grid, arange});
  nodes->insert(nodes->end(), copies.begin(), copies.end());
  return true;
}

}  // namespace

std::optional<NibbleUnpack> wordUnpack(const GraphIndex& index, int node) {
  bool masked = false;
  auto u = wordsUnpackedAt(index, node, &masked);
  return u && masked ? u : std::nullopt;
}

std::optional<NibbleUnpack> orderedWordUnpack(const GraphIndex& index, int node) {
  const ir::Node& top = index.node(node);
  const bool topMask = isAnd15(top);
  const int gather = topMask ? (top.args.empty() ? -1 : index.producer(top.args[0])) : node;
  if (gather < 0) return std::nullopt;
  const ir::Node& g = index.node(gather);
  const std::optional<size_t> along = gatherDim(g);
  if (!along) return std::nullopt;
  const int words = index.producer(g.args[0]);
  bool masked = false;
  auto u = words >= 0 ? wordsUnpackedAt(index, words, &masked) : std::nullopt;
  const ir::TensorType *in = words >= 0 ? index.tensor(words) : nullptr, *out = index.tensor(gather);
  // gathered along the unpacked dim, the sizes kept
  // (an add below the gather's mask would add to the unmasked value: the fold emits adds on the nibble)
  if (!u || !(masked || topMask) || (topMask && !u->arithmetic.empty()) || *along != u->pos || !in || !out ||
      in->sizes != out->sizes || in->sizes[u->pos].symbolic)
    return std::nullopt;
  std::vector<int> orderNodes;
  if (!wordOrderIndex(index, index.producer(g.args[1].list.back()), in->sizes[u->pos].value, &u->order, &u->orderTable,
                      &orderNodes))
    return std::nullopt;
  std::vector<int> nodes;
  if (topMask) nodes.push_back(node);
  nodes.push_back(gather);
  nodes.insert(nodes.end(), u->nodes.begin(), u->nodes.end());
  nodes.insert(nodes.end(), orderNodes.begin(), orderNodes.end());
  u->nodes = std::move(nodes);
  return u;
}

}  // namespace fxfuse::pass
