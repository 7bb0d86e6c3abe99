// Stand-in for codegen/kernel_abi.h (the layout in docs/interfaces.md "Kernel ABI").
#pragma once
namespace fxfuse {
struct FxOperand { const void* ptr; long long sb, sm, sk, sn; };
struct FxResult  { void* ptr; long long sb, sm, sn; };
struct FxParams {
  alignas(64) unsigned char tma[2][128];
  long long B, M, N, K;
  int num_inputs, num_outputs;
  FxOperand in[16];
  FxResult  out[4];
};
}  // namespace fxfuse
