// Group-wise dequantization (GPTQ / AWQ, int8 or fp8 weights with a scale per group of G along k):
//   w.view(N, K/G, G) -> convert -> mul s[:, :, None] -> view(N, K)
// Between the two reshapes the operand's prologue names K's two dims 'g' (the group, k / G) and 'r' (k % G). An
// input read along 'g' alone (the scale) becomes a spec input with a 'g' dim and the spec's `kgroup G`; one read
// along 'g' and 'r' together is the [N, K] tensor the inner reshape splits; one read along 'r' without 'g' has no
// spec form (the chain leaves it outside).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pass/graph_index.h"

namespace fxfuse::pass {

struct KGroupMerge {
  std::string inputLetters;  // the reshape's input: the output's 'k' as "gr"
  int64_t group = 0;         // G, the size of the input's 'r' dim
};

// A reshape [.., K/G, G, ..] -> [.., K, ..] (its output's 'k' dim is its input's two adjacent dims, every other
// dim kept; the sizes of the merged dims known): the letters of its input. nullopt for any other node.
std::optional<KGroupMerge> groupsMergedIntoK(const GraphIndex& index, int node, const std::string& outLetters);

// A reshape [.., K, ..] -> [.., K/G, G, ..] whose output dims named "gr" split its input's k, the 'r' dim of size
// `group`: the letters of its input (the "gr" as 'k'). nullopt for any other node.
std::optional<std::string> kSplitIntoGroups(const GraphIndex& index, int node, const std::string& outLetters,
                                            int64_t group);

// `t[idx]` along k (aten.index.Tensor with one index tensor, the dims before it `None`): idx the 1-D table of k's
// groups, element k being k / G (GPTQ's g_idx without act-order: a buffer whose rule the IR states, docs/ir.md),
// through integer conversions. Such an index reads t at k's group: `scales[g_idx]` is the scales read as [g, n].
struct KGroupIndex {
  int source = -1;           // t
  std::string inputLetters;  // t's letters: the output's 'k' as 'g'
  int64_t group = 0;         // G
  int table = -1;            // the node of the table whose stated rule the fold relies on (the chain expects it)
  std::vector<int> nodes;    // the index and the conversions of the table
};
std::optional<KGroupIndex> kGroupIndex(const GraphIndex& index, int node, const std::string& outLetters);

// `t.repeat_interleave(G, dim)` along k (AWQ's and many hand-written dequantizations' spelling of the group broadcast:
// each of t's K / G elements repeated G times): t read at k's group, as kGroupIndex's, with no table (table -1: the
// op's own semantics, nothing the chain relies on). nullopt for any other node.
std::optional<KGroupIndex> kGroupRepeat(const GraphIndex& index, int node, const std::string& outLetters);

}  // namespace fxfuse::pass
