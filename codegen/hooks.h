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
  // B only (implies quant or nibbles): B is exactly convert(raw 8-bit → bf16/f16/f32) times a scale that
  // varies only along b and n (or not at all; or along k's groups too: scale_group), rounded once to the 16-bit
  // MMA type:
  //   B(b,k,n) = FxElemB(fp32(float(raw(b,k,n)) * fx_b_scale(p, b, n)))
  // (`w.to(bf16) * s`, `(w.float() * s).to(bf16)`). The generator then emits
  // FX_B_QUANT_SCALE 1 and fx_b_scale, the gemv template's fast quantized path.
  bool quant_scale = false;
  int scale_value = -1;  // the spec value the hook returns when quant_scale
  // quant_scale and the scale's dtype is `elem`: its values are exact in the MMA type (the gemv's
  // packed 16-bit conversion of int8 weights and of nibbles with a zero point in -128..128, FX_B_SCALE_IN_ELEM).
  bool scale_in_elem = false;
  // quant_scale with a group-wise scale (an input with a 'g' dim): the spec's kgroup, else 0. fx_b_scale then takes
  // k too, and the gemv reads the scales once per stage (FX_B_SCALE_GROUP: a multiple of its k per stage).
  int scale_group = 0;
  // B only: quant_scale over a packed int4 weight (an input with a 'p' dim, two 4-bit values of k to a u8 / i8
  // element; `quant` stays false: the generic templates read it through fx_load_b), with an integer zero point:
  //   B(b,k,n) = FxElemB(fp32((float(nibble(b,k,n)) - zero) * fx_b_scale(...)))
  // The generator emits FX_B_NIBBLES 1 and FX_B_ZERO: the gemv streams the packed bytes and expands them per stage.
  bool nibbles = false;
  int zero = 0;
  // nibbles with a zero point tensor z (b, n, k's groups) in place of the integer zero: the spec value fx_b_zero
  // returns (FX_B_ZERO_TENSOR); zero_rounds: eager's nibble - z is rounded to `elem` (FX_B_ZERO_ROUND), else at f32.
  //   B(b,k,n) = FxElemB(fp32(r(float(nibble(b,k,n)) - fx_b_zero(...)) * fx_b_scale(...)))
  int zero_value = -1;
  bool zero_rounds = false;
  // a zero point tensor of 8-bit integers whose magic + z is exact in `elem` (i8 in either 16-bit type, u8 in f16):
  // the packed conversion subtracts magic + z from magic + n in one fma (FX_B_ZERO_INT; n - z exactly).
  bool zero_integer = false;
  // nibbles held as GPTQ's int32 words (an i32 input with a 'p' dim, eight 4-bit values of k to an element), K x N
  // only: the generator emits FX_B_WORDS 1 (kernels/gemv.cuh loads the words and transposes them per stage).
  bool words = false;
  // nibbles held as AWQ's int32 words (an i32 input `[k,q]`, eight 4-bit values of n to an element in the stated
  // order, n_word_order its nibble table: column 8 w + c at nibble n_word_order >> 4 c & 15 of word w), K x N: the
  // generator emits FX_B_NWORDS 1 and FX_B_NWORD_ORDER (kernels/gemv.cuh expands each word with two byte permutes).
  bool n_words = false;
  unsigned n_word_order = 0x76543210u;
};

OperandInfo analyzeA(const spec::ChainSpec& spec);
OperandInfo analyzeB(const spec::ChainSpec& spec);

// The chain's fast-path output is staged in shared memory for 16-byte stores (the Hopper
// template's FX_EPI_STAGED): exactly one output, 16-bit.
bool stagedStore(const spec::ChainSpec& spec);
// stagedStore, and every epilogue input along m and n (a residual) staged with it: at most one,
// 16-bit, contiguous along n. The form of the fast path the planner's measurements cover.
bool stagedEverything(const spec::ChainSpec& spec);

// The value the Hopper template's consumer warpgroups hand to its epilogue warps (FX_EPI_OVERLAP)
// through shared memory, as 16 bits, so that the epilogue runs beside the next tile's mainloop:
// the chain's first 16-bit value after the product, reached from it through ops whose other
// operands vary along n at most (`mm : bf16` itself; an addmm's `mm : f32` plus the bias, rounded
// to bf16 by the add). Every output depends on the product through it alone, and it is rounded to
// 16 bits in the spec's own semantics, so handing it over in 16 bits changes no result bit.
// -1 where there is none (why says which rule failed): more than one output or a non-16-bit one
// (the epilogue warps' 16-byte stores), the fp32 product used twice or stored, a residual added
// before the rounding, or an op before it other than add / sub / mul / div / neg / convert (the
// consumers compute the hand-off with the tensor cores idle: `silu(mm : f32) : bf16` would keep
// the SiLU there).
int epilogueHandoff(const spec::ChainSpec& spec, std::string* why = nullptr);

// Appends the type definitions and all hooks for `spec` to w. handoff: the hooks of an
// FX_EPI_OVERLAP kernel (fx_handoff2, and the epilogue functions' `acc` is the epilogueHandoff value;
// CodegenError where the chain has none).
void emitHooks(const spec::ChainSpec& spec, CodeWriter& w, bool handoff = false);

}  // namespace fxfuse::codegen
