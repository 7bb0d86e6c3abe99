// Eager's common dtype for an elementwise op's tensor operands, where it rounds them: the `convert`s a chain
// needs before a 16-bit op so that it reads each operand as eager's kernels on that device read it. Used by
// the epilogue's lowerings (elementwise_lowering) and the operands' prologues (operand_prologue).
#pragma once

#include <cstddef>
#include <vector>

#include "pass/chain_builder.h"
#include "pass/ir.h"

namespace fxfuse::pass {

// How the CPU reads a one-element operand of another type (0-d, or every dim 1) beside a 16-bit tensor.
//  Converted: to the common dtype, as ATen's kernels do (comparisons, maximum, clamp, where, alpha).
//  LeftToAten: as it is; the CPU kernel calls ATen's add / sub / mul / div on it as eager did (a 16-bit mul or div
//  reads its second operand unrounded, its first rounded: reference_eval's oneElementOperandAsEagerDid).
enum class CpuScalars { Converted, LeftToAten };

// Where the op's common dtype is 16-bit (a 16-bit `result`; for a comparison, its operands' common dtype by
// torch.result_type's rules), puts a `convert` to it before each operand of another type that eager rounds to it
// (`y_bf16 + r_int32` adds bf16(r); f16(70000) is inf; `y_bf16 > t_f32_0d` compares with bf16(t)):
//  - an integer or bool operand with dims, on every device;
//  - a one-element input or a tensor constant (ChainBuilder::tensorConstant; a 0-d one of a float type too): on
//    CUDA, whose kernels load every tensor operand as the common type; on the CPU as `cpuScalars` says.
// Operands from index `first` (where's condition stays bool). Numbers (consts) are typed by their caller.
void convertToCommonDtype(ChainBuilder& builder, const ir::TensorType& result, std::vector<int>* operands,
                          CpuScalars cpuScalars, size_t first = 0);

}  // namespace fxfuse::pass
