// torch.round(x, decimals=d) as eager computes it, in two forms of the graph:
//  - `aten.round.decimals` (torch.export, also after run_decompositions, which keeps it): lowered to the formula of
//    ATen's round_decimals kernel on the node's device;
//  - Inductor's decomposition of it, `mul(x, 10.0**d) -> round -> mul(1.0 / 10.0**d)` in x's dtype, which the
//    torch.compile backend's post-grad graphs hold: folded back to that formula in the emitted spec.
// Eager's kernels, with p = 10^|d| (UnaryOpsKernel.cpp on the CPU, UnaryFractionKernels.cu on CUDA):
//    d > 0: nearbyint(x * p) / p        d < 0: nearbyint(x / p) * p
//  - on the CPU in opmath (f32 for bf16 / f16 / f32), p an f32: one rounding, at the end;
//  - on CUDA in the tensor's own type: p is rounded to it, and so is the first product or quotient (c10's 16-bit
//    operators round each result), the last step computed in f32 and rounded once.
// The decomposition's last multiply by 1 / p differs from eager's division by p in the last bit of f32, and on the
// CPU its 16-bit first product is rounded where eager's is not (session 56's hunt: one bf16 step off at about a
// tenth of the elements of a bf16 matrix at decimals=1).
// float64 is left to eager (not lowered, not folded), as are |d| > 22, where 10^|d| is not exact in a double.
#pragma once

#include <string>
#include <unordered_map>

#include "pass/elementwise_lowering.h"
#include "spec/chain_spec.h"

namespace fxfuse::pass {

// Adds the lowering of `aten.round.decimals` to `table`.
void addRoundDecimals(std::unordered_map<std::string, LowerFn>& table);

// Rewrites each `mul(x, 10.0**d) -> round -> mul(1.0 / 10.0**d)` of `spec` (x, the products and the round all of
// one bf16 / f16 / f32 type; the intermediates and constants read only there) into eager's round_decimals on the
// CPU (`cpu`) or on CUDA, in place: no value is added or removed. For graphs that hold Inductor's decomposition (the
// torch.compile backend's): there the pattern is what Inductor computes in f32 too, which is eager's answer on the
// CPU; in a graph from eager code (torch.export) the same ops are the user's own and keep their roundings.
void foldRoundDecimals(spec::ChainSpec& spec, bool cpu);

}  // namespace fxfuse::pass
