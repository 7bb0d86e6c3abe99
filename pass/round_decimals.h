// torch.round(x, decimals=d) as eager computes it: `aten.round.decimals` lowered to the formula of ATen's
// round_decimals kernel on the node's device. torch.export keeps the op (run_decompositions too); the torch.compile
// backend's graphs hold Inductor's decomposition of it, which python/fxfuse/decomposed_round.py collapses back into
// this one op around the pass (the decomposition's product is rounded to the 16-bit type and its last step multiplies
// by 1 / p: on the CPU a bf16 result was one step off eager at a tenth of the elements, session 56's hunt).
// Eager's kernels, with p = 10^|d| (UnaryOpsKernel.cpp on the CPU, UnaryFractionKernels.cu on CUDA):
//    d > 0: nearbyint(x * p) / p        d < 0: nearbyint(x / p) * p
//  - on the CPU in opmath (f32 for bf16 / f16 / f32), p an f32: one rounding, at the end;
//  - on CUDA in the tensor's own type: p is rounded to it, and so is the first product or quotient (c10's 16-bit
//    operators round each result), the last step computed in f32 and rounded once.
// float64 is left to eager, as is |d| > 22, where 10^|d| is not exact in a double.
#pragma once

#include <string>
#include <unordered_map>

#include "pass/elementwise_lowering.h"

namespace fxfuse::pass {

// Adds the lowering of `aten.round.decimals` to `table`.
void addRoundDecimals(std::unordered_map<std::string, LowerFn>& table);

}  // namespace fxfuse::pass
