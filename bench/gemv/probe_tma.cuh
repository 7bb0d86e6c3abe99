// The TMA feeding the standalone probes share (stream_ceiling.cu's TMA rows, ws_gemv_int8.cu): mbarriers,
// one 2-D tensor copy completing on a barrier, and the host's tensor map (the driver's
// cuTensorMapEncodeTiled, reached through the runtime so that the probes link without -lcuda's symbols).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "cuda_check.h"

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tma_load_2d(unsigned dst, const CUtensorMap* map, int x, int y, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
          "r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

// A 2-D tensor map: x the contiguous dimension (elements of `elem_bytes`), y the rows, boxes of box_x x box_y.
inline CUtensorMap tensor_map_2d(const void* p, CUtensorMapDataType type, int elem_bytes, long long x, long long y,
                                 int box_x, int box_y, CUtensorMapSwizzle swizzle) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = nullptr;
  if (!encode) {
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                          cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !encode) {
      std::fprintf(stderr, "the driver lacks cuTensorMapEncodeTiled\n");
      std::exit(1);
    }
  }
  CUtensorMap m;
  const cuuint64_t dims[2] = {(cuuint64_t)x, (cuuint64_t)y}, strides[1] = {(cuuint64_t)(x * elem_bytes)};
  const cuuint32_t box[2] = {(cuuint32_t)box_x, (cuuint32_t)box_y}, estr[2] = {1, 1};
  const CUresult r = encode(&m, type, 2, const_cast<void*>(p), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", (int)r);
    std::exit(1);
  }
  return m;
}
