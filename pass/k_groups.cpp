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

}  // namespace fxfuse::pass
