// The activations eager computes in one ATen kernel of their own, with no spec op of the same name:
// hardsigmoid, softplus, mish, elu (and selu, celu, which ATen computes as elu), log_sigmoid. Each is lowered to
// the spec ops of its ATen CUDA kernel's formula (ActivationHardsigmoidKernel.cu, ActivationSoftplusKernel.cu,
// ActivationMishKernel.cu, ActivationEluKernel.cu, LogSigmoid.cu): the operand converted to f32 (eager's opmath
// for 16-bit and f32 tensors), every step in f32, the last op at the result's dtype, so that the result is
// rounded once, as eager's kernel rounds it; constants are f32, as the kernel reads its Scalars.
// ATen's 16-bit CPU kernels compute the same formula in f32, but for two choices the CPU's own kernel makes: hardsigmoid
// divides by 6, and elu takes x * scale at x = +-0 (tests/python/test_composite_activations.py, both devices). float64 results are not lowered (the CUDA kernels have no f64; ATen's f64 kernels
// read some constants as f32 and some as f64).
// torch.compile's post-grad graphs reach the pass with these already decomposed into exp / log1p / expm1 /
// where / clamp, which the elementwise table lowers op by op.
#pragma once

#include <string>
#include <unordered_map>

#include "pass/elementwise_lowering.h"

namespace fxfuse::pass {

// Adds one lowering per ATen target (`aten.softplus.default`, ...) to `table`.
void addCompositeActivations(std::unordered_map<std::string, LowerFn>& table);

}  // namespace fxfuse::pass
