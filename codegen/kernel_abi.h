// The kernel ABI (docs/interfaces.md): the one parameter block every generated kernel takes.
// This file is compiled twice: by the host compiler (runtime/ fills FxParams) and, embedded
// as text, by NVRTC in front of every generated kernel. The static_asserts make both sides
// agree on the layout. NVRTC has no offsetof, so the device side checks sizes and
// alignment (which, with the shared Itanium layout rules, pin the offsets) and the host side
// also checks every offset.
#pragma once

#ifndef __CUDACC_RTC__
#include <cstddef>
#endif

namespace fxfuse {

// One kernel input. Strides are in elements per logical dim; 0 means the input does not vary
// along that dim (broadcast). Dims the spec does not name for the input are never read.
struct FxOperand {
  const void* ptr;
  long long sb, sm, sk, sn;
};

// One kernel output of shape [B, M, N].
struct FxResult {
  void* ptr;
  long long sb, sm, sn;
};

struct FxParams {
  alignas(64) unsigned char tma[2][128];  // CUtensorMap for A and B when the variant uses TMA
  long long B, M, N, K;
  int num_inputs, num_outputs;
  FxOperand in[16];
  FxResult out[4];
};

static_assert(sizeof(void*) == 8, "fxfuse kernels assume 64-bit pointers");
static_assert(sizeof(FxOperand) == 40, "FxOperand layout");
static_assert(sizeof(FxResult) == 32, "FxResult layout");
#ifndef __CUDACC_RTC__
static_assert(offsetof(FxParams, B) == 256, "FxParams layout");
static_assert(offsetof(FxParams, num_inputs) == 288, "FxParams layout");
static_assert(offsetof(FxParams, in) == 296, "FxParams layout");
static_assert(offsetof(FxParams, out) == 936, "FxParams layout");
static_assert(offsetof(FxOperand, sn) == 32 && offsetof(FxResult, sn) == 24, "operand layout");
#endif
static_assert(sizeof(FxParams) == 1088, "FxParams layout");
static_assert(alignof(FxParams) == 64, "FxParams alignment (CUtensorMap needs 64 bytes)");

}  // namespace fxfuse
