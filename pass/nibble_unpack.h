// Packed int4 weights: two 4-bit values to a byte along k, unpacked in the graph as
//   lo = w & 15;  hi = w >> 4 [& 15];  torch.stack([lo, hi], k + 1).view(.., K, ..)
// (stack or unsqueeze + cat, the shift as `>>` or torch.bitwise_right_shift; u8 bytes, or i8 with the `& 15` on
// both). The chain reads the packed tensor itself as an input whose dim 'p' is k packed (docs/spec.md): the unpack's
// nodes fold away, and the value is the nibble, as the graph's `& 15` / `>> 4` made it.
// Not taken (the chain leaves the unpack outside, named on the report by the prologue's stop): the high nibble
// first, halves of k (cat without the interleave), nibbles packed along n (AWQ). Eight to an int32 word (GPTQ) is
// pass/word_unpack.h's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pass/graph_index.h"

namespace fxfuse::pass {

struct NibbleUnpack {
  int packed = -1;             // the node of the packed bytes, [.., K/2, ..]
  size_t pos = 0;              // the dim of k in the unpacked value (and of K/2 in the packed bytes)
  std::vector<int> nodes;      // the unpack's nodes, the reshape first
  int shiftTable = -1;         // eight to an i32 word (pass/word_unpack.h): the buffer of shifts whose stated values
                               // the fold relies on (the chain expects them); -1 where the graph itself holds them
  std::vector<int> order;      // the words' values gathered along their dim in a stated order within each word
                               // (AWQ's 0 4 1 5 2 6 3 7: orderedWordUnpack), the spec input's `order`; empty: none
  int orderTable = -1;         // the constant whose stated values that order is (the chain expects them)
  std::vector<int> arithmetic;  // integer adds / subs of a number between the mask and the reshape (GPTQ v1's
                                // `(zeros + 1).reshape(..)`), exact in float: the fold emits them on the nibble, top first
};

// `x & 15` (bitwise_and / __and__ with the number 15): the mask every nibble unpack ends with.
bool isAnd15(const ir::Node& n);

// The dim d of a reshape `node` [.., K/per, per, ..] -> [.., K, ..] that merges the input's dims d and d + 1 (the
// latter of size `per`), every other dim kept: the unpack's k. nullopt for any other node.
std::optional<size_t> mergedPackedDim(const GraphIndex& index, int node, int64_t per);

// The reshape `node` ([.., K/2, 2, ..] -> [.., K, ..]) ending a nibble unpack of one tensor: its nodes. nullopt for
// any other node.
std::optional<NibbleUnpack> nibbleUnpack(const GraphIndex& index, int node);

// `node` is a bitwise op, or a stack / cat of one, through reshapes: values unpacked from packed bits in some form,
// named on the report where nibbleUnpack does not take them.
bool unpacksBits(const GraphIndex& index, int node);

// `node` is a nibble unpack, or reaches one through reshapes (the group-wise split [N, K] -> [N, K/G, G]).
bool readsNibbles(const GraphIndex& index, int node);

}  // namespace fxfuse::pass
