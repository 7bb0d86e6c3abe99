// How fast can the gemv's loads stream a weight matrix, without its math?
//
// The int8 gemv (codegen/kernels/gemv.cuh) reaches at most ~67 % of copy bandwidth on its weight
// bytes, the 16-bit one 84-87 % (bench/RESULTS.md Run AX). This kernel keeps the gemv's data path
// (128 threads, a cp.async pipeline of 16 KB weight stages, one wait_group + __syncthreads per
// stage, the same grid of column tiles x split-K) and replaces the math by a dependent chain of
// `delay` integer multiply-adds per stage, so that one run separates what the loads allow from
// what the math costs (bench/gemv/NOTES.md session 37):
//   delay 0        the data path's ceiling for that layout, pipeline and grid;
//   delay > 0      how much per-stage work that pipeline hides.
// A stage is 16 KB: `16384 / row_bytes` rows of `row_bytes` bytes (128: the 8-bit gemv's 128
// columns; 256: the 16-bit gemv's, or a 256-column 8-bit tile). Layouts:
//   kn  weight [K, N] row-major: a CTA reads row_bytes of each k row; the step advances k.
//   nk  weight [N, K] row-major: a CTA reads 128 n rows; the step advances row_bytes along k.
// Shared memory is padded to `smem_kb` so that the CTAs per SM can be set apart from the stages.
// Two parts of the gemv's fixed cost can be added (session 37: the gemv without its math ran 4.1 us
// above this kernel at M = 16, 4096 x 14336): `a_rows` activation rows copied per stage as the gemv
// copies its A tile (256 bytes of each row, rows 8 KB apart), and `cluster`: the split-K parts
// launched as a thread block cluster (1, S, 1) that meets at two cluster barriers at the end, as
// the gemv's reduction does.
//
// Rows named "TMA" (stream_weights_tma, session 38) feed the same grids by one 2-D TMA copy per
// stage from a fifth (producer) warp, with per-stage full / empty mbarriers in place of the
// block-wide barrier: whether the gemv's __syncthreads per stage is what keeps its math from
// hiding under the loads (Run AZ call 2: it is not; the 8-bit rows lose as much to the delay).
//
// Rows named "global" sum the split-K parts through global memory (global_reduce: the last part to
// count itself in reads the others' partials) instead of a cluster, so that the split may pass 8
// (session 38, for bench/gemv/NOTES.md's next kernel; not yet run).
//
// The table's CTAs/SM is the occupancy query without clusters (clusters may hold fewer at once:
// bench/gemv/cluster_residency.py).
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o stream_ceiling stream_ceiling.cu
//   ./stream_ceiling [TEXT]     (a fixed list of cases, one table; ~100 s on an H200; TEXT: only
//                               the cases whose name holds it)
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "probe_tma.cuh"

constexpr int kThreads = 128;
constexpr int kStageBytes = 16384;
constexpr int kChunksPerThread = kStageBytes / 16 / kThreads;  // 8, as in the gemv

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// One CTA: column tile blockIdx.x, split-K part blockIdx.y of gridDim.y.
//   tile_stride  bytes between the first bytes of neighbouring tiles
//   step_bytes   bytes between the first bytes of neighbouring stages of one tile
//   row_stride   bytes between the rows of one stage (the weight's leading dimension)

__device__ __forceinline__ void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// Split-K across CTAs without a cluster (session 38, for a gemv whose split may exceed the 8 CTAs of a
// portable cluster): every part writes its rows x 128 fp32 partial sums to a workspace, then counts
// itself in on its tile's counter; the part that counts last reads the others' partials (from L2),
// sums them, stores the tile's result and resets the counter for the next launch. The gemv's
// reduction reads the peers' shared memory over DSMEM instead, behind two cluster barriers.
__device__ float* g_partials;    // [tiles][split][rows x 128]
__device__ unsigned* g_counters;  // [tiles], zero between launches
__device__ __forceinline__ void global_reduce(unsigned acc, int rows, unsigned* __restrict__ sink) {
  const int tile = blockIdx.x, split = gridDim.y, per_part = rows * 128;
  float* mine = g_partials + ((long long)tile * split + blockIdx.y) * per_part;
  for (int i = threadIdx.x; i < per_part; i += kThreads) mine[i] = (float)(acc + i);
  __threadfence();  // the partials visible before the count
  // (no static shared memory: it would take a CTA per SM from the rows padded to fit exactly)
  const bool last = __syncthreads_or(threadIdx.x == 0 && atomicAdd(&g_counters[tile], 1u) == (unsigned)split - 1);
  if (!last) return;
  __threadfence();  // the other parts' partials, seen after their counts
  // Every part's values for this thread's elements are loaded before they are added, four parts
  // at a time: one L2 round trip per four parts. (The first form summed one element at a time and
  // waited an L2 round trip per element, ~10 us at 16 rows: Run BA call 1's "global" rows.)
  constexpr int kMaxPerThread = 16;  // rows x 128 / kThreads at 16 rows
  const int per_thread = per_part / kThreads;
  if (per_thread > kMaxPerThread) __trap();  // more rows would leave elements unsummed: time less work
  float v[kMaxPerThread] = {};
#pragma unroll 4
  for (int r = 0; r < split; ++r) {
    const float* part = g_partials + ((long long)tile * split + r) * per_part + threadIdx.x;
#pragma unroll
    for (int j = 0; j < kMaxPerThread; ++j)
      if (j < per_thread) v[j] += __ldcg(part + j * kThreads);
  }
#pragma unroll
  for (int j = 0; j < kMaxPerThread; ++j)
    if (j < per_thread) sink[(long long)tile * per_part + threadIdx.x + j * kThreads] = __float_as_uint(v[j]);
  if (threadIdx.x == 0) g_counters[tile] = 0;
}

template <int kStages>
__global__ void __launch_bounds__(kThreads) stream_weights(const char* __restrict__ w, int row_bytes,
                                                           long long tile_stride, long long step_bytes,
                                                           long long row_stride, int steps, int delay,
                                                           const char* __restrict__ a, int a_rows,
                                                           int a_row_bytes, long long a_row_stride, int clustered,
                                                           unsigned* __restrict__ sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int split = gridDim.y, part = blockIdx.y;
  const int kb = steps * part / split, ke = steps * (part + 1) / split, n = ke - kb;
  const int chunks_per_row = row_bytes / 16;
  const char* src[kChunksPerThread];
  unsigned dst[kChunksPerThread];
  for (int i = 0; i < kChunksPerThread; ++i) {
    const int ci = threadIdx.x + i * kThreads, row = ci / chunks_per_row, ch = ci % chunks_per_row;
    src[i] = w + blockIdx.x * tile_stride + kb * step_bytes + row * row_stride + ch * 16;
    dst[i] = (unsigned)__cvta_generic_to_shared(smem) + ci * 16;
  }
  // the A tile: a_rows x a_row_bytes (a stage's k, 16-bit) a stage, after the weight stages
  const int a_chunks = a_rows * (a_row_bytes / 16);
  const unsigned a_base = (unsigned)__cvta_generic_to_shared(smem) + kStages * kStageBytes;
  const char* a_src = a + kb * a_row_bytes;
  auto load = [&](int slot, int step) {
#pragma unroll
    for (int i = 0; i < kChunksPerThread; ++i) cp_async16(dst[i] + slot * kStageBytes, src[i] + step * step_bytes);
    for (int ci = threadIdx.x; ci < a_chunks; ci += kThreads) {
      const int row = ci / (a_row_bytes / 16), ch = ci % (a_row_bytes / 16);
      cp_async16(a_base + (slot * a_chunks + ci) * 16, a_src + row * a_row_stride + step * a_row_bytes + ch * 16);
    }
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < n) load(s, s);
    cp_async_commit();
  }
  unsigned acc = threadIdx.x;
  int slot = 0;
  for (int i = 0; i < n; ++i) {
    cp_async_wait<kStages - 2>();
    __syncthreads();
    const int nx = i + kStages - 1;
    int nslot = slot + kStages - 1;
    if (nslot >= kStages) nslot -= kStages;
    if (nx < n) load(nslot, nx);
    cp_async_commit();
    // "Math": read what this thread loaded, then `delay` dependent multiply-adds.
    const unsigned* st = reinterpret_cast<const unsigned*>(smem + slot * kStageBytes);
#pragma unroll
    for (int c = 0; c < kChunksPerThread; ++c) acc ^= st[(threadIdx.x + c * kThreads) * 4];
    // (asm volatile: as plain C++, nvcc folded four steps into one multiply-add; Run AY's "delay"
    // column ran that folded loop, a quarter of the multiply-adds it names)
    for (int d = 0; d < delay; ++d) asm volatile("mad.lo.u32 %0, %0, 1664525, 1013904223;" : "+r"(acc));
    if (++slot == kStages) slot = 0;
  }
  cp_async_wait<0>();
  if (clustered == 2) {  // split-K without a cluster: partials in global memory, the last CTA sums
    global_reduce(acc, max(a_rows, 1), sink);
    return;
  }
  if (clustered) cluster_barrier();  // the gemv: partials written, then read by the leader...
  sink[(blockIdx.y * gridDim.x + blockIdx.x) * kThreads + threadIdx.x] = acc;
  if (clustered) cluster_barrier();  // ...and kept alive until every peer has read them
}

// The same data path fed by TMA (session 38): a fifth warp issues one 2-D tensor copy per stage
// (the stage's rows x row_bytes box), completing on the stage's "full" mbarrier; the four consumer
// warps wait on that barrier alone (no block-wide barrier), do the stand-in math, and each arrives
// on the stage's "empty" mbarrier, which the producer waits on before it refills the slot. A warp
// waits only for its own stage's bytes and never for the other warps (bench/gemv/NOTES.md session
// 35 item 5 (b): the gemv's per-stage __syncthreads is one of its two main stalls).
template <int kStages>
__global__ void __launch_bounds__(kThreads + 32) stream_weights_tma(const __grid_constant__ CUtensorMap map,
                                                                      int kn, int rows, int row_bytes, int steps,
                                                                      int delay, int clustered,
                                                                      unsigned* __restrict__ sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  // the barriers after the stages, in the dynamic shared memory (static shared memory would take a
  // CTA per SM from the rows padded to fit exactly: 75 KB three, 56 KB four)
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + kStages * kStageBytes);
  unsigned long long* empty = full + kStages;
  const int split = gridDim.y, part = blockIdx.y;
  const int kb = steps * part / split, ke = steps * (part + 1) / split, n = ke - kb;
  const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init((unsigned)__cvta_generic_to_shared(&full[s]), 1);
      mbar_init((unsigned)__cvta_generic_to_shared(&empty[s]), kThreads / 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  unsigned acc = threadIdx.x;
  if (threadIdx.x >= kThreads) {  // the producer warp: one elected lane
    if (threadIdx.x == kThreads) {
      for (int i = 0; i < n; ++i) {
        const int slot = i % kStages;
        if (i >= kStages) mbar_wait((unsigned)__cvta_generic_to_shared(&empty[slot]), ((i / kStages) - 1) & 1);
        const unsigned fb = (unsigned)__cvta_generic_to_shared(&full[slot]);
        mbar_expect_tx(fb, kStageBytes);
        // kn: x = n bytes (the tile), y = k rows (the step); nk: x = k bytes (the step), y = n rows
        const int step = kb + i;
        if (kn) tma_load_2d(base + slot * kStageBytes, &map, blockIdx.x * row_bytes, step * rows, fb);
        else tma_load_2d(base + slot * kStageBytes, &map, step * row_bytes, blockIdx.x * rows, fb);
      }
    }
  } else {
    for (int i = 0; i < n; ++i) {
      const int slot = i % kStages;
      mbar_wait((unsigned)__cvta_generic_to_shared(&full[slot]), (i / kStages) & 1);
      const unsigned* st = reinterpret_cast<const unsigned*>(smem + slot * kStageBytes);
#pragma unroll
      for (int c = 0; c < kChunksPerThread; ++c) acc ^= st[(threadIdx.x + c * kThreads) * 4];
      for (int d = 0; d < delay; ++d) asm volatile("mad.lo.u32 %0, %0, 1664525, 1013904223;" : "+r"(acc));
      __syncwarp();
      if (threadIdx.x % 32 == 0) mbar_arrive((unsigned)__cvta_generic_to_shared(&empty[slot]));
    }
  }
  __syncwarp();  // the producer warp's lanes meet again before the aligned cluster barrier
  if (clustered) cluster_barrier();
  if (threadIdx.x < kThreads) sink[(blockIdx.y * gridDim.x + blockIdx.x) * kThreads + threadIdx.x] = acc;
  if (clustered) cluster_barrier();
}

struct Case {
  std::string name;  // shape and layout, for the table
  bool kn;           // [K, N] (else [N, K])
  long long K, N;    // bytes along k and n (elements x element size)
  int row_bytes, split, stages, smem_kb, delay;
  int a_rows = 0;        // activation rows copied per stage (0: none)
  bool cluster = false;  // split-K parts as a cluster (1, S, 1)
  bool tma = false;      // stream_weights_tma: TMA copies, mbarriers, a producer warp
  bool global_reduce = false;  // split-K parts summed through global memory by the last (no cluster)
};

// An activation row's bytes per stage: the stage's k, 16-bit (kn: 16 KB / row_bytes rows of k; nk:
// row_bytes of 8-bit k). 256 for the gemv's 128 columns of 8-bit K x N weights.
static int a_row_bytes(const Case& c) { return 2 * (c.kn ? kStageBytes / c.row_bytes : c.row_bytes); }

using Kernel = void (*)(const char*, int, long long, long long, long long, int, int, const char*, int, int,
                       long long, int, unsigned*);
static Kernel kernel_for(int stages) {
  switch (stages) {
    case 2: return stream_weights<2>;
    case 3: return stream_weights<3>;
    case 4: return stream_weights<4>;
    case 5: return stream_weights<5>;
    case 6: return stream_weights<6>;
    default: std::fprintf(stderr, "stages %d not built\n", stages); std::exit(1);
  }
}

using TmaKernel = void (*)(CUtensorMap, int, int, int, int, int, int, unsigned*);
static TmaKernel tma_kernel_for(int stages) {
  switch (stages) {
    case 3: return stream_weights_tma<3>;
    case 4: return stream_weights_tma<4>;
    case 5: return stream_weights_tma<5>;
    case 6: return stream_weights_tma<6>;
    default: std::fprintf(stderr, "tma stages %d not built\n", stages); std::exit(1);
  }
}

// A 2-D byte tensor map over one weight copy: x the contiguous bytes, y the rows.
static CUtensorMap weight_map(const char* w, long long x_bytes, long long y_rows, int box_x, int box_y) {
  return tensor_map_2d(w, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, x_bytes, y_rows, box_x, box_y, CU_TENSOR_MAP_SWIZZLE_NONE);
}

static float median_of_batches(const std::function<void(int)>& launch);

// The launch of one case: grid (tiles, split), as a cluster (1, split, 1) where the case says so
// (`attr` holds the attribute the config points to).
static cudaLaunchConfig_t launch_config(const Case& c, int tiles, int threads, int smem, cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(tiles, c.split);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  if (c.cluster) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1;
    attr[0].val.clusterDim.y = c.split;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  return cfg;
}

static float time_case_tma(const Case& c, const std::vector<char*>& bufs, unsigned* sink, int* ctas_per_sm,
                           int rows, int tiles, int steps) {
  TmaKernel k = tma_kernel_for(c.stages);
  const int smem = std::max(c.stages * kStageBytes + 2 * c.stages * 8, c.smem_kb * 1024);  // + the mbarriers
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(ctas_per_sm, k, kThreads + 32, smem));
  std::vector<CUtensorMap> maps;
  for (char* b : bufs)
    maps.push_back(c.kn ? weight_map(b, c.N, c.K, c.row_bytes, rows) : weight_map(b, c.K, c.N, c.row_bytes, rows));
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = launch_config(c, tiles, kThreads + 32, smem, attr);
  return median_of_batches([&](int i) {
    CHECK(cudaLaunchKernelEx(&cfg, k, maps[i % maps.size()], (int)c.kn, rows, c.row_bytes, steps, c.delay,
                             (int)c.cluster, sink));
  });
}

// One case's time per launch, the launches rotating over copies of the weights (>= 256 MB
// together, so that every launch reads from HBM, as bench_decode.py times the op).
static float time_case(const Case& c, const std::vector<char*>& bufs, const char* act, unsigned* sink,
                       int* ctas_per_sm) {
  const int rows = kStageBytes / c.row_bytes;  // rows of one stage
  long long tile_stride, step_bytes, row_stride;
  int tiles, steps;
  if (c.kn) {  // rows are k; a tile is row_bytes of n
    tiles = (int)(c.N / c.row_bytes); steps = (int)(c.K / rows);
    tile_stride = c.row_bytes; step_bytes = (long long)rows * c.N; row_stride = c.N;
  } else {     // rows are n; a stage is row_bytes of k
    tiles = (int)(c.N / rows); steps = (int)(c.K / c.row_bytes);
    tile_stride = (long long)rows * c.K; step_bytes = c.row_bytes; row_stride = c.K;
  }
  if (c.tma) return time_case_tma(c, bufs, sink, ctas_per_sm, rows, tiles, steps);
  Kernel k = kernel_for(c.stages);
  const int smem = std::max(c.stages * (kStageBytes + c.a_rows * a_row_bytes(c)), c.smem_kb * 1024);
  CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(ctas_per_sm, k, kThreads, smem));
  cudaLaunchAttribute attr[1];
  const cudaLaunchConfig_t cfg = launch_config(c, tiles, kThreads, smem, attr);
  return median_of_batches([&](int i) {
    CHECK(cudaLaunchKernelEx(&cfg, k, (const char*)bufs[i % bufs.size()], c.row_bytes, tile_stride, step_bytes,
                             row_stride, steps, c.delay, act, c.a_rows, a_row_bytes(c), 2 * c.K,
                             c.global_reduce ? 2 : (int)c.cluster, sink));
  });
}

// Median of 5 batches of 60 launches (`launch(i)` launches call i; a sixth, first batch warms up).
static float median_of_batches(const std::function<void(int)>& launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const int calls = 60;
  std::vector<float> ms;
  for (int batch = 0; batch < 6; ++batch) {
    CHECK(cudaEventRecord(a));
    for (int i = 0; i < calls; ++i) launch(i);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float t;
    CHECK(cudaEventElapsedTime(&t, a, b));
    if (batch) ms.push_back(t / calls);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;  // run only the cases whose name holds this
  const long long kRotate = 256ll << 20;
  // The decode shapes' weights as bytes: 8-bit K x N, and 16-bit (N doubled along n, K along k).
  std::vector<Case> cases;
  auto add = [&](std::string name, bool kn, long long K, long long N, int rb, int s, int st, int kb,
                 std::vector<int> delays, int a_rows = 0, bool cluster = false) {
    for (int d : delays) cases.push_back({name, kn, K, N, rb, s, st, kb, d, a_rows, cluster});
  };
  const std::vector<int> d0 = {0}, ds = {0, 100, 200, 400};
  // int8 4096 x 14336 [K, N]: the rule's grid (S = 2, 224 CTAs), two to four CTAs per SM
  add("i8 kn 4096x14336", true, 4096, 14336, 128, 2, 5, 100, ds);
  add("i8 kn 4096x14336", true, 4096, 14336, 128, 2, 4, 75, d0);
  add("i8 kn 4096x14336", true, 4096, 14336, 128, 2, 3, 56, d0);
  add("i8 kn 4096x14336", true, 4096, 14336, 128, 3, 4, 75, ds);
  add("i8 kn 4096x14336", true, 4096, 14336, 128, 4, 3, 56, ds);
  add("i8 kn 4096x14336", true, 4096, 14336, 128, 1, 6, 100, d0);
  //   ... with 256-byte rows (256 columns a CTA): half the tiles, twice the split
  add("i8 kn 4096x14336 256B", true, 4096, 14336, 256, 4, 5, 100, ds);
  add("i8 kn 4096x14336 256B", true, 4096, 14336, 256, 2, 5, 100, d0);
  // int8 4096 x 14336 as [N, K] (nn.Linear's layout)
  add("i8 nk 4096x14336", false, 4096, 14336, 128, 2, 5, 100, ds);
  add("i8 nk 4096x14336 256B", false, 4096, 14336, 256, 2, 5, 100, d0);
  // int8 14336 x 4096 [K, N]: 32 tiles, S = 8
  add("i8 kn 14336x4096", true, 14336, 4096, 128, 8, 4, 75, d0);
  add("i8 kn 14336x4096", true, 14336, 4096, 128, 8, 5, 100, d0);
  // the same int8 grid with the gemv's A tile at M = 16 and / or as clusters (its fixed costs)
  add("i8 kn 4096x14336 +A16", true, 4096, 14336, 128, 2, 5, 100, d0, 16);
  add("i8 kn 4096x14336 +cluster", true, 4096, 14336, 128, 2, 5, 100, d0, 0, true);
  add("i8 kn 4096x14336 +A16 +cluster", true, 4096, 14336, 128, 2, 5, 100, ds, 16, true);
  add("i8 kn 14336x4096 +A16 +cluster", true, 14336, 4096, 128, 8, 3, 75, d0, 16, true);  // the rule at M = 16
  // M = 33-64 (session 44): the gemv's 64-row A tile is as many bytes as its 128 columns of 8-bit weights,
  // all of it read from L2 by every column tile. 256 columns a CTA (256-byte rows: 64 k a stage) halve it.
  // Named "A64"/"A32"; the rule's grids at M = 64 (S = 2 and three 32 KB stages at N = 14336; S = 8 and two
  // at N = 4096), beside the same weights without the A tile.
  for (int ar : {0, 32, 64}) {
    const std::string a = ar ? " +A" + std::to_string(ar) : " A0";
    add("i8 kn 4096x14336" + a, true, 4096, 14336, 128, 2, 3, 100, d0, ar, true);
    add("i8 kn 4096x14336 256B" + a, true, 4096, 14336, 256, 4, 4, 100, d0, ar, true);
    add("i8 kn 4096x14336 256B" + a, true, 4096, 14336, 256, 2, 4, 100, d0, ar, true);
    add("i8 kn 14336x4096" + a, true, 14336, 4096, 128, 8, 2, 75, d0, ar, true);
    add("i8 kn 14336x4096 256B" + a, true, 14336, 4096, 256, 8, 4, 100, d0, ar, true);
    add("i8 kn 4096x4096" + a, true, 4096, 4096, 128, 8, 2, 75, d0, ar, true);
    add("i8 kn 4096x4096 256B" + a, true, 4096, 4096, 256, 8, 4, 100, d0, ar, true);
  }
  // split-K summed through global memory by the last part (no cluster; the split may pass 8), with
  // the A tile at M = 16 and a 16-row partial per part, against the cluster rows above
  auto add_global = [&](std::string name, long long K, long long N, int s, int st, int kb, std::vector<int> delays) {
    for (int d : delays) {
      cases.push_back({name + " +A16 global", true, K, N, 128, s, st, kb, d, 16, false});
      cases.back().global_reduce = true;
    }
  };
  add_global("i8 kn 4096x14336", 4096, 14336, 2, 5, 100, ds);
  add_global("i8 kn 4096x14336", 4096, 14336, 4, 3, 56, ds);
  add_global("i8 kn 14336x4096", 14336, 4096, 8, 3, 75, ds);
  add_global("i8 kn 14336x4096", 14336, 4096, 16, 3, 56, ds);
  // the same grids fed by TMA with per-stage mbarriers and a producer warp (no block-wide barrier)
  auto add_tma = [&](std::string name, bool kn, long long K, long long N, int rb, int s, int st, int kb,
                     std::vector<int> delays, bool cluster = false) {
    for (int d : delays) cases.push_back({name + (cluster ? " +cluster" : "") + " TMA", kn, K, N, rb, s, st, kb, d, 0, cluster, true});
  };
  add_tma("i8 kn 4096x14336", true, 4096, 14336, 128, 2, 5, 100, ds);
  add_tma("i8 kn 4096x14336", true, 4096, 14336, 128, 2, 5, 100, ds, true);
  add_tma("i8 kn 4096x14336", true, 4096, 14336, 128, 1, 6, 100, ds);
  add_tma("i8 kn 4096x14336", true, 4096, 14336, 128, 2, 4, 75, ds);
  add_tma("i8 kn 4096x14336 256B", true, 4096, 14336, 256, 2, 5, 100, ds);
  add_tma("i8 nk 4096x14336", false, 4096, 14336, 128, 2, 5, 100, ds);
  add_tma("i8 kn 14336x4096", true, 14336, 4096, 128, 8, 5, 100, ds, true);
  add_tma("bf16 kn 4096x14336", true, 4096, 28672, 256, 1, 6, 100, ds);
  // bf16 4096 x 14336 [K, N]: 256-byte rows (128 columns), S = 1 (112 CTAs) and 2
  add("bf16 kn 4096x14336", true, 4096, 28672, 256, 1, 6, 100, ds);
  add("bf16 kn 4096x14336", true, 4096, 28672, 256, 2, 6, 100, d0);

  long long max_bytes = 0, min_bytes = 1ll << 62;
  for (auto& c : cases) max_bytes = std::max(max_bytes, c.K * c.N), min_bytes = std::min(min_bytes, c.K * c.N);
  // enough copies that the smallest case also rotates over >= 256 MB
  std::vector<char*> bufs((size_t)std::max(2ll, (kRotate + min_bytes - 1) / min_bytes));
  for (auto& p : bufs) {
    CHECK(cudaMalloc(&p, max_bytes));
    CHECK(cudaMemset(p, 1, max_bytes));
  }
  unsigned* sink;
  CHECK(cudaMalloc(&sink, 1 << 24));
  float* partials;  // global_reduce's workspace and tile counters
  unsigned* counters;
  CHECK(cudaMalloc(&partials, 64 << 20));
  CHECK(cudaMalloc(&counters, 4096 * sizeof(unsigned)));
  CHECK(cudaMemset(counters, 0, 4096 * sizeof(unsigned)));
  CHECK(cudaMemcpyToSymbol(g_partials, &partials, sizeof(partials)));
  CHECK(cudaMemcpyToSymbol(g_counters, &counters, sizeof(counters)));
  char* act;  // activations, 64 rows of K = 14336 16-bit elements at most (L2-resident, as at decode)
  CHECK(cudaMalloc(&act, 64 * 14336 * 2));
  CHECK(cudaMemset(act, 1, 64 * 14336 * 2));

  // Copy bandwidth as bench_decode.py counts it: reads plus writes of a 512 MB device copy.
  char *cs, *cd;
  const size_t cb = 512ull << 20;
  CHECK(cudaMalloc(&cs, cb));
  CHECK(cudaMalloc(&cd, cb));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> cms;
  for (int i = 0; i < 6; ++i) {
    CHECK(cudaEventRecord(a));
    CHECK(cudaMemcpyAsync(cd, cs, cb, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float t;
    CHECK(cudaEventElapsedTime(&t, a, b));
    if (i) cms.push_back(t);
  }
  std::sort(cms.begin(), cms.end());
  const double copy_gbps = 2.0 * cb / (cms[cms.size() / 2] * 1e-3) / 1e9;
  std::printf("copy: %.0f GB/s (reads + writes)\n", copy_gbps);
  std::printf("| weights | row B | S | CTAs | stages | smem KB | CTAs/SM | delay | ms | GB/s | %% copy |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (auto& c : cases) {
    if (only && c.name.find(only) == std::string::npos) continue;
    int per_sm = 0;
    const float ms = time_case(c, bufs, act, sink, &per_sm);
    const long long tiles = c.kn ? c.N / c.row_bytes : c.N / (kStageBytes / c.row_bytes);
    const double gbps = c.K * c.N / (ms * 1e-3) / 1e9;
    std::printf("| %s | %d | %d | %lld | %d | %d | %d | %d | %.4f | %.0f | %.1f |\n", c.name.c_str(), c.row_bytes,
                c.split, tiles * c.split, c.stages, std::max(c.stages * (16 + c.a_rows * a_row_bytes(c) / 1024), c.smem_kb), per_sm,
                c.delay, ms, gbps, 100.0 * gbps / copy_gbps);
  }
  return 0;
}
