// The per-spec part of a generated kernel: the FxElem types, FX_A_* / FX_B_* macros and the
// fx_load_a / fx_load_b / fx_dequant_b / fx_epilogue / fx_epilogue2 hooks of
// docs/interfaces.md, which every kernel template calls.
#pragma once

#include <string>

#include "codegen/code_writer.h"
#include "spec/chain_spec.h"

namespace fxfuse::codegen {

// What a template needs to know about the operands, derived from the spec.
struct OperandInfo {
  spec::DType elem = spec::DType::BF16;  // dtype fed to the MMA
  bool plain = false;  // the operand is an input with no prologue
  int slot = -1;       // its slot when plain (or the raw weight's slot when quant)
  bool kmajor = true;  // k is the innermost dim of the operand's (main) input
  bool quant = false;  // B only: B = f(one raw element, broadcast inputs)
  spec::DType raw = spec::DType::BF16;  // dtype of the raw element when quant
};

OperandInfo analyzeA(const spec::ChainSpec& spec);
OperandInfo analyzeB(const spec::ChainSpec& spec);

// Appends the type definitions and all hooks for `spec` to w.
void emitHooks(const spec::ChainSpec& spec, CodeWriter& w);

}  // namespace fxfuse::codegen
