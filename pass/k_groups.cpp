#include "pass/k_groups.h"

#include "pass/aten_ops.h"

namespace fxfuse::pass {
namespace {

// `wide` is `narrow` with its dim `at` split in two (wide[at] * wide[at + 1] == narrow[at], both known), every
// other dim equal.
bool splitsOneDim(const std::vector<ir::Dim>& narrow, const std::vector<ir::Dim>& wide, size_t at) {
  if (wide.size() != narrow.size() + 1 || at + 1 >= wide.size()) return false;
  for (size_t i = 0; i < narrow.size(); ++i)
    if (i != at && narrow[i] != wide[i < at ? i : i + 1]) return false;
  const ir::Dim &whole = narrow[at], &outer = wide[at], &inner = wide[at + 1];
  return !whole.symbolic && !outer.symbolic && !inner.symbolic && inner.value > 0 &&
         outer.value * inner.value == whole.value;
}

// The node's input and output types when it is a reshape of a tensor.
bool reshapeTypes(const GraphIndex& index, int node, const ir::TensorType** in, const ir::TensorType** out) {
  const ir::Node& n = index.node(node);
  if (!isReshape(n) || n.args.empty()) return false;
  *in = index.tensor(index.producer(n.args[0]));
  *out = index.tensor(node);
  return *in && *out;
}

}  // namespace

std::optional<KGroupMerge> groupsMergedIntoK(const GraphIndex& index, int node, const std::string& outLetters) {
  const ir::TensorType *in = nullptr, *out = nullptr;
  if (!reshapeTypes(index, node, &in, &out) || out->sizes.size() != outLetters.size()) return std::nullopt;
  // not inside another group's region, and one k
  if (outLetters.find_first_of("gr") != std::string::npos) return std::nullopt;
  const size_t k = outLetters.find('k');
  if (k == std::string::npos || outLetters.find('k', k + 1) != std::string::npos) return std::nullopt;
  if (!splitsOneDim(out->sizes, in->sizes, k)) return std::nullopt;
  KGroupMerge merge;
  merge.inputLetters = outLetters.substr(0, k) + "gr" + outLetters.substr(k + 1);
  merge.group = in->sizes[k + 1].value;
  return merge;
}

std::optional<std::string> kSplitIntoGroups(const GraphIndex& index, int node, const std::string& outLetters,
                                            int64_t group) {
  const ir::TensorType *in = nullptr, *out = nullptr;
  if (!reshapeTypes(index, node, &in, &out) || out->sizes.size() != outLetters.size()) return std::nullopt;
  const size_t g = outLetters.find("gr");
  if (g == std::string::npos || !splitsOneDim(in->sizes, out->sizes, g) || !out->sizes[g + 1].is(group))
    return std::nullopt;
  return outLetters.substr(0, g) + "k" + outLetters.substr(g + 2);
}

std::optional<KGroupIndex> kGroupIndex(const GraphIndex& index, int node, const std::string& outLetters) {
  const ir::Node& n = index.node(node);
  // one index tensor, at dim d, every entry before it `none` (none after it: the list is as long as it needs)
  const std::optional<size_t> along = gatherDim(n);
  if (!along) return std::nullopt;
  const size_t d = *along;
  const std::vector<ir::Arg>& entries = n.args[1].list;
  const ir::TensorType* out = index.tensor(node);
  KGroupIndex g;
  g.source = index.producer(n.args[0]);
  const ir::TensorType* t = g.source >= 0 ? index.tensor(g.source) : nullptr;
  if (!out || !t || t->sizes.size() != out->sizes.size() || outLetters.size() != out->sizes.size() ||
      d >= out->sizes.size() || outLetters[d] != 'k' || out->sizes[d].symbolic || t->sizes[d].symbolic)
    return std::nullopt;
  for (size_t i = 0; i < out->sizes.size(); ++i)
    if (i != d && out->sizes[i] != t->sizes[i]) return std::nullopt;
  // the table, through conversions between integer types (GPTQ's `g_idx.long()`)
  int table = index.producer(entries.back());
  std::vector<int> conversions;
  for (int depth = 0; table >= 0 && index.node(table).op == ir::Node::Op::Call && depth < 4; ++depth) {
    const ir::Node& c = index.node(table);
    const auto to = convertTarget(c);
    if (!to || (*to != spec::DType::I32 && *to != spec::DType::I64) || c.args.empty()) return std::nullopt;
    conversions.push_back(table);
    table = index.producer(c.args[0]);
  }
  if (table < 0 || index.node(table).known.kind != ir::KnownValues::Kind::KGroups) return std::nullopt;
  const ir::TensorType* tt = index.tensor(table);
  // an index of another type is not a gather by position (a u8 or bool one is a mask)
  if (!tt || (conversions.empty() && tt->dtype != spec::DType::I32 && tt->dtype != spec::DType::I64))
    return std::nullopt;
  const int64_t K = out->sizes[d].value, G = index.node(table).known.group;
  // a table of K entries; K a multiple of G, t holding K / G groups (a ragged last group is no spec 'g' dim)
  if (!tt || tt->sizes.size() != 1 || !tt->sizes[0].is(K) || K % G != 0 || !t->sizes[d].is(K / G)) return std::nullopt;
  g.inputLetters = outLetters;
  g.inputLetters[d] = 'g';
  g.group = G;
  g.table = table;
  g.nodes.push_back(node);
  g.nodes.insert(g.nodes.end(), conversions.begin(), conversions.end());
  return g;
}

std::optional<KGroupIndex> kGroupRepeat(const GraphIndex& index, int node, const std::string& outLetters) {
  const ir::Node& n = index.node(node);
  // (self, repeats, dim[, output_size]): an int count and a dim; a tensor of counts, or no dim (a flattening), is not
  if (!n.isCall("aten.repeat_interleave.self_int") || n.args.size() < 3 || n.args.size() > 4) return std::nullopt;
  const auto repeats = intArg(n.args[1]), dim = intArg(n.args[2]);
  const ir::TensorType* out = index.tensor(node);
  KGroupIndex g;
  g.source = n.args[0].isValue() ? index.producer(n.args[0]) : -1;
  const ir::TensorType* t = g.source >= 0 ? index.tensor(g.source) : nullptr;
  if (!repeats || !dim || *repeats < 1 || !out || !t || t->sizes.size() != out->sizes.size() ||
      outLetters.size() != out->sizes.size())
    return std::nullopt;
  const int64_t rank = static_cast<int64_t>(out->sizes.size());
  const int64_t d = *dim < 0 ? *dim + rank : *dim;
  if (d < 0 || d >= rank || outLetters[static_cast<size_t>(d)] != 'k') return std::nullopt;
  const ir::Dim& groups = t->sizes[static_cast<size_t>(d)];
  if (groups.symbolic || !out->sizes[static_cast<size_t>(d)].is(groups.value * *repeats)) return std::nullopt;
  for (int64_t i = 0; i < rank; ++i)
    if (i != d && out->sizes[static_cast<size_t>(i)] != t->sizes[static_cast<size_t>(i)]) return std::nullopt;
  g.inputLetters = outLetters;
  g.inputLetters[static_cast<size_t>(d)] = 'g';
  g.group = *repeats;
  g.nodes.push_back(node);
  return g;
}

}  // namespace fxfuse::pass
