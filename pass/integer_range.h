// The bounds of an integer value, from its dtype and the masks the graph applies (`x & 15` is 0..15 whatever x
// holds). What lets the prologue compute GPTQ's int8 `w - z[g]` (two nibbles: -15..15) in floating point, as the
// kernels compute every op: eager's integer op cannot wrap there, so the float result is eager's.
#pragma once

#include <cstdint>
#include <optional>

#include "pass/graph_index.h"

namespace fxfuse::pass {

struct IntegerRange {
  int64_t lo = 0;
  int64_t hi = 0;
};

// The range of the integer (or bool) tensor `node`; nullopt for another type or no tensor meta. Masks and
// conversions refine it through the views that keep values (reshape, expand, index, ...); a sub / add of two
// ranged values is ranged where it cannot wrap.
std::optional<IntegerRange> integerRange(const GraphIndex& index, int node);

// `node` is an integer add or sub (no alpha) that a float computation gives exactly: its operands' ranges keep every
// operand and result within float32's exact integers (2^24) and the result within its dtype (eager's cannot wrap).
bool integerArithmeticExactInFloat(const GraphIndex& index, int node);

// `node` converts an integer tensor to an integer type that holds every value its source may hold (its range: no
// value wraps); false for any other node, or a source without a known range.
bool conversionKeepsValues(const GraphIndex& index, int node);

// The in-place op (`w &= 15`, `bitwise_and_`, an out= form) whose result an operand of `node` reads, or that writes a
// value the operand reads, through value-keeping views and conversions; -1 where there is none. The prologue does not
// read through in-place ops, and the report names this one.
int inPlaceOperandSource(const GraphIndex& index, int node);

}  // namespace fxfuse::pass
