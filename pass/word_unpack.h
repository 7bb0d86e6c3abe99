// GPTQ's int32 storage: eight 4-bit values of k to a word (low nibble first), unpacked in the graph as
//   w = ((q.unsqueeze(d + 1)[.expand(.., 8, ..)] >> shifts) [.to(int)] & 15 [.to(int)]).reshape(.., K, ..)
// shifts holding 0, 4, .., 28 along the new dim: GPTQ's `wf` buffer (its values stated by the IR, docs/ir.md; the
// chain's `expect` line then has the op check them at each call), or `arange(0, 32, 4)` in the graph. The chain reads
// q itself as an input whose dim 'p' is k packed (docs/spec.md: i32 elements hold eight), as for two to a byte
// (pass/nibble_unpack.h). Not taken: other shift tables (3-bit, 2-bit storage), the nibbles of n (GPTQ's zero points,
// AWQ's weight: their unpack stays outside, its result a plain input of the chain).
#pragma once

#include <optional>

#include "pass/graph_index.h"
#include "pass/nibble_unpack.h"

namespace fxfuse::pass {

// The reshape `node` ([.., K/8, 8, ..] -> [.., K, ..]) ending such an unpack of one i32 tensor: its nodes and the
// shift table whose stated values it relies on. nullopt for any other node.
std::optional<NibbleUnpack> wordUnpack(const GraphIndex& index, int node);

}  // namespace fxfuse::pass
