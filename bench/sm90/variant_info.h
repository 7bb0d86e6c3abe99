#pragma once
#include <cstddef>
#include <cuda_runtime.h>
namespace fxfuse { struct FxParams; }
struct VariantInfo {
  const char* name;
  int bf16, b_kmajor, bm, bn, bk, stages, consumers, group_m, epi, cluster_m, pingpong, ldg;
  int (*max_active_clusters)(size_t smem);  // cudaOccupancyMaxActiveClusters (cluster_m > 1), else 0
  int (*launch)(const fxfuse::FxParams& p, unsigned grid, size_t smem, cudaStream_t st);
};
