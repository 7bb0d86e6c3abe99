// GPTQ's int32 storage: eight 4-bit values of k to a word (low nibble first), unpacked in the graph as
//   w = ((q.unsqueeze(d + 1)[.expand(.., 8, ..)] >> shifts) [.to(int)] & 15 [.to(int)]).reshape(.., K, ..)
// shifts holding 0, 4, .., 28 along the new dim: GPTQ's `wf` buffer (its values stated by the IR, docs/ir.md; the
// chain's `expect` line then has the op check them at each call), or `arange(0, 32, 4)` in the graph. The chain reads
// q itself as an input whose dim 'p' is k packed (docs/spec.md: i32 elements hold eight), as for two to a byte
// (pass/nibble_unpack.h); unpacked along n (GPTQ's zero points) the input's dim is 'q'. AWQ's words (n packed, their
// values in the order 0 4 1 5 2 6 3 7 within a word) are unpacked so, then gathered along n by
//   order = arange(N).view(-1, 8)[:, c].view(-1);  w = w[.., order] & 15
// c a constant the IR states: orderedWordUnpack, the spec input's `order` (c's values; the chain expects them).
// Not taken: other shift tables (3-bit, 2-bit storage), an order along k.
#pragma once

#include <optional>

#include "pass/graph_index.h"
#include "pass/nibble_unpack.h"

namespace fxfuse::pass {

// The reshape `node` ([.., K/8, 8, ..] -> [.., K, ..]) ending such an unpack of one i32 tensor: its nodes and the
// shift table whose stated values it relies on. nullopt for any other node.
std::optional<NibbleUnpack> wordUnpack(const GraphIndex& index, int node);

// The `& 15` `node` (or the gather itself, where the mask is below it) ending AWQ's ordered unpack of one i32 tensor:
// its nodes, the shift table, and the order with the constant it is read from. nullopt for any other node.
std::optional<NibbleUnpack> orderedWordUnpack(const GraphIndex& index, int node);

}  // namespace fxfuse::pass
