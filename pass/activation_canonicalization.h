// Rewrites decomposed activations in an emitted chain spec back into the composite spec ops
// (`silu`, `gelu_tanh`, `gelu`). torch.compile's post-grad graphs reach the pass with SiLU and
// GELU decomposed into neg/exp/div, mul/tanh/add and mul/erf/add chains; codegen's planner and
// its fast-math paths only know the composite ops, so without this step those epilogues are
// judged as expensive unknown chains and stay unfused.
//
// A pattern is rewritten only where the result is eager's composite op on the same tensor:
//   - 16-bit x: `%c = convert %x : f32`, the pattern in f32, one final `convert … : <x's dtype>`
//     -> `<op> %x : <x's dtype>` (eager's op on a bf16/f16 tensor: f32 opmath, rounded once);
//   - f32 x: the pattern in f32 -> `<op> %x : f32`.
// Every intermediate value must be f32, read only inside the pattern and not be a chain output;
// every constant must be the exact double torch's decomposition emits, as an f32 const.
#pragma once

#include <vector>

#include "spec/chain_spec.h"

namespace fxfuse::pass {

// Rewrites `spec` in place (before validateSpec: value spaces are not read) and removes the
// values the rewrites left dead. Returns, for each value id of the spec as it came in, its id
// afterwards, or -1 where the value was removed; outputs are renumbered accordingly.
// For chains on CUDA only (chain_planner.cpp): there the composite ops' kernels compute the
// decompositions' arithmetic (fx_gelu, fx_silu, ...; their fast-math forms are the documented
// trade-off). On the CPU the ops are ATen's, which differ from their own decompositions: gelu
// (erf) is NaN at +inf where the decomposition is +inf (BUG-4), and gelu (tanh)'s tanh saturates a
// step earlier than torch.tanh, turning -1.5e-7 into -0 (a `>= 0` flips). The fold buys the CPU
// path no speed, so there the chain is evaluated as written. Under the torch.compile backend the
// decompositions of eager's own aten.gelu / silu reach the pass as that one op instead
// (python/fxfuse/decomposed_activations.py collapses them by their provenance): eager's kernels.
std::vector<int> canonicalizeActivations(spec::ChainSpec& spec);

}  // namespace fxfuse::pass
