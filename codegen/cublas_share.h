// cublas_share.h — how well cuBLAS's own tiles fill the SMs for an M x N output: the unfused
// path's side of the work-share refusal (config_table.cpp), which weighs the Hopper kernel's
// rounds against cuBLAS + the epilogue kernel.
#pragma once

namespace fxfuse {
namespace codegen {

// The share of cuBLAS's tile slots that hold real outputs for one M x N matrix on num_sms SMs:
// the largest, over the output tiles cuBLAS's Hopper GEMM kernels were seen to use, of the real
// outputs over the area of that tile's rounds of num_sms tiles (1: every slot of every round
// busy). cuBLAS picks among many tile shapes, so this is usually near 0.97 but falls where none
// of them divides the output well (0.92 at 1088 x 11008, 0.83 at 1216 x 11008). 0 where that tile
// does not fill one round of the SMs (cuBLAS may split K there: not modelled), or M or N < 1. The
// tile set was read off cuBLAS on the H200 (132 SMs): another SM count, or another cuBLAS, may
// pick other tiles.
double cublasWorkShare(long long M, long long N, int num_sms);

}  // namespace codegen
}  // namespace fxfuse
