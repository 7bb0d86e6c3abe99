#include "pass/operand_prologue.h"

#include <algorithm>
#include <utility>

#include "pass/aten_ops.h"
#include "pass/common_dtype.h"
#include "pass/integer_range.h"
#include "pass/k_groups.h"
#include "pass/nibble_unpack.h"
#include "pass/word_unpack.h"

namespace fxfuse::pass {
namespace {

// Deep enough for any real dequantization chain; bounds the recursion on adversarial graphs.
constexpr int kMaxPrologueDepth = 24;

constexpr const char* kOtherPacking =
    "values unpacked from packed bits in a form the chain does not read (it reads two 4-bit values of k to a byte, "
    "low nibble first, unpacked as `w & 15` and `(w >> 4) [& 15]`, stacked and reshaped to [.., K, ..] before any "
    "conversion or split into groups: pass/nibble_unpack.h; and eight to an int32 word shifted by 0, 4, .., 28 where "
    "those shifts are known: an arange in the graph, or a buffer of an exported program, pass/word_unpack.h; along n "
    "also gathered by `arange(N).view(-1, 8)[:, c].view(-1)` with c a stated permutation of 0..7, AWQ's order)";

// A conversion, a scale or a zero point: the kinds of op a prologue folds (whether this one folds or not).
bool isPrologueKindOp(const ir::Node& n) {
  return convertTarget(n).has_value() || n.isCall("aten.mul.Tensor") || n.isCall("aten.div.Tensor") ||
         n.isCall("aten.sub.Tensor");
}

// An add of integers (GPTQ v1 checkpoints' `zeros + 1`): a prologue op where exact (isFoldableArithmetic); a float add
// is none.
bool isIntegerAdd(const GraphIndex& index, int node) {
  const ir::TensorType* t = index.tensor(node);
  return index.node(node).isCall("aten.add.Tensor") && t && !isFloating(t->dtype);
}

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
  const int source = index_.producer(index_.node(node).args[0]);
  const ir::TensorType* src = index_.tensor(source);
  // u8 only as a packed int4 weight's nibbles (pass/nibble_unpack.h): the kernels' fast 8-bit paths take i8 / fp8
  const bool from = src && (isConvertSource(src->dtype) || (src->dtype == spec::DType::U8 && readsNibbles(index_, source)));
  return from && src->sizes == index_.tensor(node)->sizes && isConvertSource(*to) && isFloating(*to);
}

bool OperandPrologue::isFoldableArithmetic(int node) const {
  const ir::Node& n = index_.node(node);
  if (unrounded_ && unrounded_->count(n.name)) return false;
  bool plain = n.isCall("aten.mul.Tensor") || n.isCall("aten.div.Tensor") ||
               (n.isCall("aten.sub.Tensor") && !n.kwarg("alpha") && n.args.size() == 2);
  if ((!plain && !isIntegerAdd(index_, node)) || n.args.size() != 2) return false;
  const ir::TensorType* t = index_.tensor(node);
  // integer arithmetic only where computing it in floating point cannot differ (GPTQ's int8 `w - z[g]` of nibbles)
  return t && (isFloating(t->dtype) || integerArithmeticExactInFloat(index_, node));
}

bool OperandPrologue::computedInF32(int node) const {
  // An integer sub or add exact in float (isFoldableArithmetic) whose every value is an integer of magnitude <= 256 is the
  // same number in f32 and in every type a later op converts it to (bf16 holds the integers to 256): computed at f32,
  // as the gemv's zero point form reads it (GPTQ's int8 `w - z[g]`: codegen/hooks.cpp detectNibbleScale). Its i8
  // result would have said nothing of its range, so a kernel could not tell it from a sub that wraps.
  if (isFloating(index_.tensor(node)->dtype)) return false;
  const std::optional<IntegerRange> r = integerRange(index_, node);
  return r && r->lo >= -256 && r->hi <= 256;
}

// x, viewed/converted/scaled  ->  the spec values computing it, leaves as inputs.
int OperandPrologue::fold(int node, const std::string& letters, int depth, bool roles) {
  if (node < 0) return -1;
  const ir::Node& n = index_.node(node);
  if (claimed_[node] || n.op != ir::Node::Op::Call || !index_.tensor(node)) return leaf(node, letters);
  if (depth >= kMaxPrologueDepth)
    return stopAt(node, letters, "the prologue is deeper than " + std::to_string(kMaxPrologueDepth) + " ops");
  if (isMutating(n)) return stopAt(node, letters, "an in-place op");

  // permute(x) as B  ->  x read with its dims named `[n,k]`: a layout, not a prologue op; so is w.view(N, K/G, G)
  // inside a group-wise dequantization (w read as [n,k], pass/k_groups.h)
  std::string inLetters;
  bool layout = viewInputLetters(index_, node, letters, &inLetters, roles);
  if (auto split = layout ? std::nullopt : kSplitIntoGroups(index_, node, letters, builder_.kGroup())) {
    inLetters = *split;
    layout = true;
  }
  if (layout) {
    int v = fold(index_.producer(n.args[0]), inLetters, depth + 1, roles);
    if (v < 0) return -1;
    result_.absorbed.push_back(node);
    return v;
  }
  if (auto unpack = nibbleUnpack(index_, node)) return foldNibbles(node, letters, *unpack, depth, roles);
  if (auto words = wordUnpack(index_, node)) return foldNibbles(node, letters, *words, depth, roles);
  if (auto ordered = orderedWordUnpack(index_, node)) return foldNibbles(node, letters, *ordered, depth, roles);
  if (auto table = kGroupIndex(index_, node, letters)) return foldKGroupIndex(node, letters, *table, depth, roles);
  if (auto repeat = kGroupRepeat(index_, node, letters)) return foldKGroupIndex(node, letters, *repeat, depth, roles);
  if (isReshape(n) && unpacksBits(index_, node))  // not a region of k's groups of 2 (the hunt's misleading stop)
    return stopAt(node, letters, kOtherPacking);
  if (auto merge = groupsMergedIntoK(index_, node, letters)) return foldKGroups(node, letters, *merge, depth, roles);
  // Under Inductor, a 16-bit value other nodes read too stays a leaf (sharedStayBuffers_): kept in the graph for
  // them only it is no longer a buffer, and Inductor, fusing it into a reader, skips its rounding (session 58's hunt:
  // a bf16 bias gradient's sum then read g * gelu'(y) unrounded, 22 of 48 elements off eager and Inductor).
  if (sharedStayBuffers_ && index_.users(node).size() > 1 && spec::isHalfFloat(index_.tensor(node)->dtype)) {
    // named only where a prologue op would have folded it (a relu two GEMMs read is no prologue op: review)
    if (!ops_ || !(isFoldableConvert(node) || isFoldableArithmetic(node))) return leaf(node, letters);
    return stopAt(node, letters, "a 16-bit value other nodes also read stays a buffer under Inductor");
  }
  if (ops_ && isFoldableConvert(node)) {
    // convert(w_i8 -> bf16)  ->  `%w = input i8`, `convert %w : bf16`
    const int source = index_.producer(n.args[0]);
    const bool nibbles = index_.tensor(source)->dtype == spec::DType::U8;  // only a packed weight's (above)
    Checkpoint before = checkpoint();
    int x = fold(source, letters, depth + 1, roles);
    if (x < 0) return -1;
    if (nibbles && builder_.spec().values[x].dims.find('p') == std::string::npos) {
      // the unpack did not fold (split along another dim than k): a u8 tensor is no operand the kernels convert
      restoreKeepingStop(std::move(before));
      return stopAt(node, letters, "a conversion of u8 values that are not a packed 4-bit weight's, unpacked along k");
    }
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
      if (!at) {
        const int producer = index_.producer(n.args[i]);
        const ir::Type* type = producer >= 0 ? &index_.node(producer).type : nullptr;
        return stopAt(node, letters, type && type->isTensor() && !type->tensor.otherDtype.empty()
                                         ? "an operand of dtype " + type->tensor.otherDtype + ", which chains do not hold"
                                         : "an operand without tensor meta");
      }
      if (!broadcastLetters(at->sizes, t->sizes, letters, &argLetters[i], argRoles[i]))
        return stopAt(node, letters, "an operand that varies along part of a dim (a group-wise scale)");
      // an f64 scale stays outside with its op, as the epilogue leaves an f64 input out (the CUDA kernels have no
      // f64 type: a chain reading one could not be generated)
      if (at->dtype == spec::DType::F64 && t->dtype != spec::DType::F64)
        return stopAt(node, letters, "an f64 operand (the kernels have no f64 type)");
    }
    // An argument that fails to fold (e.g. a zero point `[S,1]` against a `[B,S,K]`
    // activation: it covers part of the flattened M, which no input dims can say) leaves the
    // whole node an input of the chain: undo what its other arguments emitted.
    Checkpoint before = checkpoint();
    std::vector<int> operands;
    for (size_t i = 0; i < n.args.size(); ++i) {
      const ir::Arg& a = n.args[i];
      operands.push_back(a.isExactNumber() ? builder_.constant(a.number(), spec::DType::F32)
                         : a.isNumber() ? -1  // an int beyond 2^53: the node stays outside
                                        : fold(index_.producer(a), argLetters[i], depth + 1, argRoles[i]));
      if (operands.back() < 0) {
        restoreKeepingStop(std::move(before));  // a group-wise region's operand names itself (k_groups.h)
        return stopAt(node, letters, "an operand the chain cannot read (one varying along part of M, or on another "
                                     "device)");
      }
    }
    result_.absorbed.push_back(node);
    return emitArithmetic(node, std::move(operands));
  }
  // Not folded: say why where the node is one of the prologue's kinds of op.
  const bool arithmetic = (isPrologueKindOp(n) || isIntegerAdd(index_, node)) && !convertTarget(n);
  if (isPrologueKindOp(n) && !ops_) return stopAt(node, letters, "the prologue option is off");
  if (arithmetic && unrounded_ && unrounded_->count(n.name))
    return stopAt(node, letters, "a step of an eager op that Inductor writes as several 16-bit steps");
  const int inPlace = arithmetic && !isFloating(index_.tensor(node)->dtype) ? inPlaceOperandSource(index_, node) : -1;
  if (inPlace >= 0)
    return stopAt(node, letters, "integer arithmetic on a value computed in place (%" + index_.node(inPlace).name +
                                     ": the prologue does not read through in-place ops; ep.run_decompositions() "
                                     "makes them functional)");
  if (arithmetic && !isFloating(index_.tensor(node)->dtype))
    return stopAt(node, letters, "integer arithmetic that may wrap or exceed float32's exact integers (the prologue "
                                 "computes in floating point: it takes a sub or add of masked values, `(w & 15) - (z & "
                                 "15)`)");
  if (arithmetic) return stopAt(node, letters, "an arithmetic form the prologue does not fold (an alpha, a number)");
  // integer arithmetic of other forms on a quantized weight (`8 - w`, `-w`): named, not silent (hunt)
  bool otherArithmetic = false;
  for (const char* op : {"aten.rsub.Scalar", "aten.rsub.Tensor", "aten.neg.default", "aten.add.Scalar",
                         "aten.sub.Scalar", "aten.mul.Scalar"})
    otherArithmetic = otherArithmetic || n.isCall(op);
  if (otherArithmetic && !isFloating(index_.tensor(node)->dtype))
    return stopAt(node, letters, "integer arithmetic in a form the prologue does not fold (it folds an integer sub or "
                                 "add whose operands' ranges keep it exact, `(w & 15) - (z & 15)`)");
  if (convertTarget(n) && unpacksBits(index_, index_.producer(n.args[0]))) return stopAt(node, letters, kOtherPacking);
  if (convertTarget(n)) return stopAt(node, letters, "a conversion between dtypes the kernels do not convert");
  // the bits of a packed weight unpacked otherwise (a mask after the reshape, 3-bit storage): named, not silent (hunt)
  if (!isReshape(n) && unpacksBits(index_, node)) return stopAt(node, letters, kOtherPacking);
  // a gather along k by an index the pass knows nothing of: ATen gathers, the chain reads the result (hunt)
  if (n.isCall("aten.index.Tensor") && n.args.size() == 2 && n.args[1].kind == ir::Arg::Kind::List &&
      !n.args[1].list.empty() && n.args[1].list.size() <= letters.size() &&
      letters[n.args[1].list.size() - 1] == 'k')
    return stopAt(node, letters, "a gather along k by an index whose contents the pass does not know (an act-order "
                                 "g_idx, or a graph whose buffers' contents are not stated: the torch.compile backend, "
                                 "a torch.cond branch); ATen gathers it and the chain reads the result");
  // a reshape of what a prologue op computes (a group-wise dequantization's [N, K/g, g] back to [N, K]); of a plain
  // input (a classifier head's flatten) it ends nothing a prologue would have taken (review)
  if (isReshape(n) && reshapesAComputedValue(n))
    return stopAt(node, letters, "a reshape that splits or merges the operand's dims");
  if (slicesAComputedValue(n))
    return stopAt(node, letters, "a slice of a computed value (the chain reads its inputs whole: a weight sliced "
                                 "before its dequantization folds)");
  return leaf(node, letters);
}

bool OperandPrologue::reshapesAComputedValue(const ir::Node& n) const {
  // through further reshapes ([N, K/G, G] -> [N K/G, G] -> [N, K]: the hunt's silent report)
  int source = n.args.empty() ? -1 : index_.producer(n.args[0]);
  for (int depth = 0; source >= 0 && isReshape(index_.node(source)) && depth < kMaxPrologueDepth; ++depth)
    source = index_.node(source).args.empty() ? -1 : index_.producer(index_.node(source).args[0]);
  return source >= 0 && isPrologueKindOp(index_.node(source));
}

bool OperandPrologue::slicesAComputedValue(const ir::Node& n) const {
  // a QKV weight dequantized once, then split (session 59's hunt): getitem(split(dequant)) or slice(dequant)
  const bool slice = n.isCall("aten.slice.Tensor") || n.isCall("aten.narrow.default") || n.isCall("aten.select.int");
  const bool piece = n.isCall("operator.getitem");
  if ((!slice && !piece) || n.args.empty()) return false;
  int source = index_.producer(n.args[0]);
  if (piece && source >= 0) {
    const ir::Node& split = index_.node(source);
    const bool isSplit = split.isCall("aten.split.Tensor") || split.isCall("aten.split_with_sizes.default") ||
                         split.isCall("aten.chunk.default") || split.isCall("aten.unbind.int");
    source = isSplit && !split.args.empty() ? index_.producer(split.args[0]) : -1;
  }
  return source >= 0 && isPrologueKindOp(index_.node(source));
}

int OperandPrologue::foldKGroups(int node, const std::string& letters, const KGroupMerge& merge, int depth,
                                 bool roles) {
  if (merge.group > spec::kMaxKGroup) return stopAt(node, letters, "a group of k larger than a chain holds");
  // undone if the region does not fold whole (an operand varying along k % G alone, which no spec dim names)
  Checkpoint saved = checkpoint();
  auto groupInputs = [&] { return spec::groupInputCount(builder_.spec()); };
  const int before = groupInputs();
  builder_.setKGroup(static_cast<int>(merge.group));
  const int v = fold(index_.producer(index_.node(node).args[0]), merge.inputLetters, depth + 1, roles);
  std::string why;
  if (v < 0) {
    why = "a group-wise dequantization (groups of " + std::to_string(merge.group) +
          " along k) whose operands do not fold" + (result_.stop.empty() ? "" : ": " + result_.stop);
  } else if (groupInputs() > before && saved.builder.kGroup() != 0 && saved.builder.kGroup() != merge.group) {
    // one chain has one group size (a region that reads no group's operand folds beside another size: review)
    why = "a second group size in one chain (" + std::to_string(merge.group) + " after " +
          std::to_string(saved.builder.kGroup()) + ")";
  }
  if (!why.empty()) {
    builder_ = std::move(saved.builder);  // (the region's own stop is in `why`)
    result_ = std::move(saved.result);
    return stopAt(node, letters, why);
  }
  // a region without a group's operand (a per-channel scale, a number, a bare view round trip): no 'g' input, so no
  // kgroup either (a spec gives one only where an input reads it; the hunt's `internal_error`)
  if (groupInputs() == before) builder_.setKGroup(saved.builder.kGroup());
  result_.absorbed.push_back(node);
  return v;
}

int OperandPrologue::foldNibbles(int node, const std::string& letters, const NibbleUnpack& unpack, int depth,
                                 bool roles) {
  if (!ops_) return stopAt(node, letters, "the prologue option is off");
  // (a packed activation: the kernels' fast paths read packed weights only, and a chain needs one operand with k)
  if (space_ != spec::Space::B) return stopAt(node, letters, "packed 4-bit values in A (the chain reads packed weights)");
  // packed along k (the spec's 'p': a weight) or along n ('q': GPTQ's zero points, eight to a word along n)
  const char along = letters.size() > unpack.pos ? letters[unpack.pos] : '\0';
  if ((along != 'k' && along != 'n') || letters.find(along, unpack.pos + 1) != std::string::npos)
    return stopAt(node, letters, "4-bit values unpacked along another dim than k or n (the chain reads them packed "
                                 "along k or n only)");
  if (!unpack.order.empty() && along != 'n')
    return stopAt(node, letters, "4-bit values gathered along k in a stated order (the chain reads an order along n "
                                 "only)");
  for (int v : unpack.nodes)
    if (claimed_[v]) return leaf(node, letters);
  std::string packedLetters = letters;
  packedLetters[unpack.pos] = along == 'k' ? 'p' : 'q';
  Checkpoint before = checkpoint();
  // (the packed tensor's leaf takes it: an input with an order; the plain order 0, 1, .. is none, one spec text)
  const bool plainOrder = std::is_sorted(unpack.order.begin(), unpack.order.end());  // (a permutation: 0, 1, ..)
  const std::vector<int> order = plainOrder ? std::vector<int>{} : unpack.order;
  pendingOrder_ = order;
  const int v = fold(unpack.packed, packedLetters, depth + 1, roles);
  pendingOrder_.clear();
  if (v < 0) return -1;
  if (!order.empty() && (builder_.spec().values[v].kind != spec::ValueKind::Input ||
                         builder_.spec().values[v].order != order)) {
    restoreKeepingStop(std::move(before));
    return stopAt(node, letters, "4-bit values in a stated order of a computed tensor (the chain reads the order of an "
                                 "input's words)");
  }
  // the shifts' values and the order's (AWQ's lifted constant) are the fold's premise: the op checks them at each call
  if (unpack.shiftTable >= 0) {
    const ir::Node& table = index_.node(unpack.shiftTable);
    const std::optional<spec::Expect> fact = expectOf(table);
    if (!fact) {
      restoreKeepingStop(std::move(before));
      return stopAt(node, letters, "a shift table the chain cannot state (symbolic sizes)");
    }
    builder_.expect(table.name, *fact);
  }
  if (unpack.orderTable >= 0) {  // (its eight values as word_unpack read them, also from the IR's `kgroups 1`)
    spec::Expect fact;
    fact.dtype = index_.tensor(unpack.orderTable)->dtype;
    fact.sizes = {static_cast<int64_t>(unpack.order.size())};
    fact.values.assign(unpack.order.begin(), unpack.order.end());
    builder_.expect(index_.node(unpack.orderTable).name, fact);
  }
  result_.absorbed.insert(result_.absorbed.end(), unpack.nodes.begin(), unpack.nodes.end());
  // the nibble at the unpack's own type (GPTQ's int8 from int32 words): exact, 0..15; GPTQ v1's `+ 1` on it, each
  // add at its operand's type (any integer type holds 0..15) as the arithmetic fold emits it
  auto as = [&](int x, spec::DType d) { return d == builder_.dtypeOf(x) ? x : builder_.op("convert", {x}, d); };
  int value = v;
  for (auto it = unpack.arithmetic.rbegin(); it != unpack.arithmetic.rend(); ++it) {
    const ir::Node& a = index_.node(*it);
    value = emitArithmetic(*it, {as(value, index_.tensor(index_.producer(a.args[0]))->dtype),
                                 builder_.constant(a.args[1].number(), spec::DType::F32)});
  }
  return as(value, index_.tensor(node)->dtype);
}

int OperandPrologue::emitArithmetic(int node, std::vector<int> operands) {
  const ir::Node& n = index_.node(node);
  std::string op = n.target.substr(5, 3);  // "mul", "div", "sub", "add"
  result_.ops.push_back(op);
  if (computedInF32(node)) {
    for (int& x : operands)
      if (builder_.spec().values[x].dtype != spec::DType::F32) x = builder_.op("convert", {x}, spec::DType::F32);
    return builder_.op(op, operands, spec::DType::F32);
  }
  // a 0-d f32 scale beside a bf16 weight is read as bf16 on CUDA; an i32 zero point with dims on every device
  convertToCommonDtype(builder_, *index_.tensor(node), &operands, CpuScalars::LeftToAten);
  return builder_.op(op, operands, index_.tensor(node)->dtype);
}

std::optional<spec::Expect> OperandPrologue::expectOf(const ir::Node& table) const {
  const ir::TensorType* t = table.type.isTensor() ? &table.type.tensor : nullptr;
  if (!t) return std::nullopt;
  spec::Expect e;
  e.dtype = t->dtype;
  if (table.known.kind == ir::KnownValues::Kind::KGroups) {
    e.kind = spec::Expect::Kind::KGroups;
    return e;
  }
  if (table.known.kind != ir::KnownValues::Kind::List) return std::nullopt;
  e.kind = spec::Expect::Kind::Values;
  int64_t count = 1;
  for (const ir::Dim& d : t->sizes) {
    if (d.symbolic) return std::nullopt;
    e.sizes.push_back(d.value);
    count *= d.value;
  }
  if (count != static_cast<int64_t>(table.known.list.size())) return std::nullopt;
  e.values = table.known.list;
  return e;
}

int OperandPrologue::foldKGroupIndex(int node, const std::string& letters, const KGroupIndex& table, int depth,
                                     bool roles) {
  if (!ops_) return stopAt(node, letters, "the prologue option is off");
  if (table.group > spec::kMaxKGroup) return stopAt(node, letters, "a group of k larger than a chain holds");
  const int current = builder_.kGroup();
  if (current != 0 && current != table.group)
    return stopAt(node, letters, "a second group size in one chain (" + std::to_string(table.group) + " after " +
                                     std::to_string(current) + ")");
  // (a repeat_interleave has no table: nothing to expect)
  const std::optional<spec::Expect> fact = table.table >= 0 ? expectOf(index_.node(table.table)) : std::nullopt;
  if (table.table >= 0 && !fact) return stopAt(node, letters, "a table of k's groups the chain cannot state");
  Checkpoint before = checkpoint();
  const int groupInputs = spec::groupInputCount(builder_.spec());
  builder_.setKGroup(static_cast<int>(table.group));
  const int v = fold(table.source, table.inputLetters, depth + 1, roles);
  if (v < 0) {
    restoreKeepingStop(std::move(before));
    return -1;
  }
  if (spec::groupInputCount(builder_.spec()) == groupInputs) {
    // t folded to inputs without a 'g' dim (an [N] scale expanded to [K/G, N], then indexed): no group to read, and a
    // spec gives `kgroup` only where an input reads it; the index stays outside, as ATen computes it (review)
    restoreKeepingStop(std::move(before));
    return leaf(node, letters);
  }
  if (fact) builder_.expect(index_.node(table.table).name, *fact);
  result_.absorbed.insert(result_.absorbed.end(), table.nodes.begin(), table.nodes.end());
  return v;
}

void OperandPrologue::restoreKeepingStop(Checkpoint&& c) {
  std::string inner = std::move(result_.stop);
  builder_ = std::move(c.builder);
  result_ = std::move(c.result);
  if (!inner.empty() && result_.stop.empty()) result_.stop = std::move(inner);
}

int OperandPrologue::stopAt(int node, const std::string& letters, const std::string& why) {
  if (result_.stop.empty()) result_.stop = "%" + index_.node(node).name + " (" + index_.node(node).target + "): " + why;
  return leaf(node, letters);
}

int OperandPrologue::leaf(int node, const std::string& letters) {
  const ir::TensorType* t = index_.tensor(node);
  // Inconsistent meta (a convert whose input has another rank) must not index past dims.
  if (!t || t->sizes.size() != letters.size()) return -1;
  // inside a group-wise region (pass/k_groups.h): a value along k % G without its group has no spec dims
  if (letters.find('r') != std::string::npos) {
    const ir::Node& n = index_.node(node);
    if (result_.stop.empty())
      result_.stop = "%" + n.name + (n.target.empty() ? "" : " (" + n.target + ")") +
                     ": a value of the group-wise region read as [..., K/G, G] (the chain reads only [N, K] tensors "
                     "and scales per group)";
    return -1;
  }
  // Several m dims flatten into M: an A-space input must have all of them or none.
  size_t ms = countM(letters);
  if (space_ == spec::Space::A && ms != 0 && ms != operandMs_) return -1;
  // a CPU 0-d scale of a CUDA weight: the arithmetic node that reads it stays outside, as a leaf
  if (operandType_ && !t->sameDeviceAs(*operandType_)) return -1;
  result_.leaves.push_back(OperandLeaf{node, letters});
  return builder_.input(index_.node(node).name, t->dtype, letters, space_, std::exchange(pendingOrder_, {}));
}

}  // namespace fxfuse::pass
