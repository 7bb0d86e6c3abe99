// Does a warp-specialized pipeline let the int8 decode gemv's per-stage work hide under its loads?
//
// At 33-64 rows the gemv (codegen/kernels/gemv.cuh, the product by wgmma) runs 0.0318 ms at int8
// 4096 x 14336 (M = 64) where its data path alone streams the same bytes in 0.0183 (bench/RESULTS.md Run
// BF call 2): its per-stage work (conversion, wgmma, waits) adds to the loads instead of hiding under
// them. Every way tried inside its structure (one cp.async pipeline and one block-wide barrier per stage
// for 128 threads that both load and compute) came out at par: CTAs per SM, pipeline depth, 64 columns,
// 64 k a stage, the conversion beside the tensor cores (bench/gemv/NOTES.md sessions 35-44). This probe
// (session 44) changes the structure instead, as the Hopper GEMM template does (kernels/sm90_wgmma_gemm.cuh):
//   - a producer warp issues one TMA copy of the stage's weight tile (64 k x 128 columns, int8) and one
//     of its activation tile (64 rows x 64 k, bf16), completing on the stage's "full" mbarrier;
//   - CW consumer warpgroups take the stages in turn (warpgroup c: stages c, c + CW, ...), each waiting
//     on that stage's barrier alone (no block-wide barrier), converting the weight in registers (the
//     gemv's bit-exact int8 -> bf16 times the scale, i8pair_scaled) as wgmma's A operand, the activation
//     rows as its B operand through a 128-byte-swizzle descriptor; after its wgmmas complete it frees the
//     slot on the stage's "empty" mbarrier. With CW = 2 one warpgroup converts while the other's wgmmas
//     run, and neither waits for the other (the gemv's two-warpgroup try shared one barrier per stage).
//   - at the end the warpgroups' partial sums meet in shared memory; split-K parts (grid.y = KS) add
//     theirs with red.global.add into an fp32 buffer (zeroed before, converted to bf16 by a second
//     kernel, both outside the timing, as wgmma_rs_int8.cu; KS = 1 stores the bf16 output itself), or,
//     timed with a bias epilogue as the gemv times its own (rows "dsmem+bias", "global+bias"), meet
//     over DSMEM in a cluster as the gemv's do, or in a global workspace summed by the last part.
//   - rows "raw" skip the dequantization (the raw bytes go to the wgmma as if bf16; output unchecked): what
//     the conversion costs in this pipeline.
// Weight int8 [K, N] row-major (the `x @ (w_i8.to(bf16) * s)` form), x bf16 [M, K] with M = 16, 32 or 64
// (the wgmma's n; issue 7's int8 target is at M = 16: 0.018 ms at 4096 x 14336), scale bf16 [N].
// Shared memory per stage: X [M m][128 B] then W [64 k][128 B], both in TMA's 128-byte swizzle (16-byte
// chunk c of row r at c ^ (r & 7), stage starts 1024-byte aligned): wgmma's K-major descriptor reads X as
// laid out, and the eight k rows of one weight chunk that an ldmatrix reads fall in eight bank groups.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o ws_gemv_int8 ws_gemv_int8.cu
//   ./ws_gemv_int8 [filter]   (each case checked against an fp32 reference by relative error on fresh
//                              random data, output poisoned with NaN; then timed alone and back to back)
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "probe_harness.h"
#include "probe_int8_convert.cuh"
#include "probe_tma.cuh"
#include "probe_wgmma.cuh"

constexpr int kMaxM = 64;        // activation rows at most (the wgmma's n: MR = 16, 32 or 64)
constexpr int kKS = 64;          // k per stage
constexpr int kNT = 128;         // output columns per CTA (two wgmma blocks of 64)
constexpr int kWStage = kKS * kNT;      // 8 KB
// A stage: the activation tile (MR rows of 128 bytes: 2-8 KB; 1024-byte multiples keep the weight tile
// that follows it 1024-byte aligned), then the weight tile.
__host__ __device__ constexpr int stage_bytes(int mr) { return mr * kKS * 2 + kWStage; }

constexpr int smem_bytes(int s, int mr) { return s * stage_bytes(mr) + 2 * s * 8 + 1024; }  // stages, barriers, slack
// CTAs per SM the shared memory allows (at most 3), for __launch_bounds__: ptxas's register budget.
constexpr int min_blocks(int s, int cw, int mr) {
  return (228 * 1024) / (smem_bytes(s, mr) + 1024) >= 3 && cw == 1 ? 3 : (228 * 1024) / (smem_bytes(s, mr) + 1024) >= 2 ? 2 : 1;
}

// SPLITN = false: every consumer warpgroup computes all 128 columns of the stages it takes (stages c,
// c + CW, ...; the partial sums meet in shared memory at the end). SPLITN = true: warpgroup c computes the
// 64 columns of block c of every stage (CW = 2), no partial sums to meet.
// RED, how the split-K parts (grid.y) meet, and the epilogue:
//   kRedAtomic   red.global.add of fp32 partials (the buffer zeroed before and converted after, untimed);
//   kRedCluster  the parts are one cluster (1, KS, 1): partials to shared memory, then every rank sums its
//                share of the column pairs over the peers' shared memory (DSMEM) and stores bf16(sum + bias)
//                (the gemv's reduction and a bias epilogue, all timed);
//   kRedGlobal   partials to a global workspace, the part that counts itself in last on its tile's counter
//                sums them and stores bf16(sum + bias) (timed).
enum Red { kRedAtomic = 0, kRedCluster = 1, kRedGlobal = 2 };
__device__ float* g_partials;     // kRedGlobal: [tiles][KS][64 x 128]
__device__ unsigned* g_counters;  // kRedGlobal: [tiles], zero between launches
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ float2 ld_dsmem2(u32 local_addr, unsigned rank) {
  float2 v;
  u32 ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(ra) : "r"(local_addr), "r"(rank));
  asm volatile("ld.shared::cluster.v2.f32 {%0,%1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(ra) : "memory");
  return v;
}
template <int S, int CW, bool SPLITN, int RED, int MR, bool CVT>
__global__ void __launch_bounds__(CW * 128 + 32, min_blocks(S, CW, MR)) ws_gemv(const __grid_constant__ CUtensorMap wmap,
                                                         const __grid_constant__ CUtensorMap xmap,
                                                         const __nv_bfloat16* __restrict__ scale, float* __restrict__ acc_out,
                                                         __nv_bfloat16* __restrict__ out, int K, int N) {
  static_assert(RED == kRedAtomic || SPLITN, "the timed reductions: two warpgroups splitting the columns");
  constexpr int kXStage = MR * kKS * 2, kStage = stage_bytes(MR), kAcc = MR / 2;  // accumulators a block
  extern __shared__ unsigned char smem_raw[];
  const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const u32 full0 = base + S * kStage, empty0 = full0 + 8 * S;  // mbarriers: full[s], empty[s]
  const int tid = threadIdx.x;
  const int n0 = blockIdx.x * kNT;
  const int total = K / kKS, ks = gridDim.y;
  const int sbeg = int((long long)total * blockIdx.y / ks);
  const int nsteps = int((long long)total * (blockIdx.y + 1) / ks) - sbeg;
  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(full0 + 8 * s, 1);       // the producer's expect_tx arrival (+ the copies' bytes)
      mbar_init(empty0 + 8 * s, SPLITN ? 4 * CW : 4);  // the warps that used the stage
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (tid >= CW * 128) {  // the producer warp: one lane issues every copy
    if (tid == CW * 128) {
      for (int i = 0; i < nsteps; ++i) {
        const int slot = i % S;
        if (i >= S) mbar_wait(empty0 + 8 * slot, ((i / S) - 1) & 1);
        const u32 fb = full0 + 8 * slot, st = base + slot * kStage;
        mbar_expect_tx(fb, kStage);
        const int k0 = (sbeg + i) * kKS;
        tma_load_2d(st, &xmap, k0, 0, fb);               // x: (k elements, m rows)
        tma_load_2d(st + kXStage, &wmap, n0, k0, fb);    // w: (n bytes, k rows)
      }
    }
    if constexpr (RED != kRedCluster) return;  // (no barrier below involves the producer warp)
    __syncwarp();  // its lanes meet again for the aligned cluster barriers of the reduction
    cluster_sync_all();
    cluster_sync_all();
    return;
  }

  const int wg = tid / 128, lane = tid & 31, warp = (tid >> 5) & 3;
  const int g = lane >> 2, t = lane & 3;
  // scale pairs: block b (64 columns), MMA row g -> column 64 b + 16 warp + 2 g, row g + 8 -> + 1
  constexpr int NB = SPLITN ? 1 : 2;  // blocks of 64 columns a warpgroup computes
  static_assert(!SPLITN || CW == 2, "SPLITN: two warpgroups, a block each");
  auto block = [&](int b) { return SPLITN ? wg : b; };
  u32 s2[NB][2];
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned short sv = __bfloat16_as_ushort(scale[n0 + 64 * block(b) + 16 * warp + 2 * g + h]);
      s2[b][h] = sv | (u32(sv) << 16);
    }
  float d[NB][kAcc];
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int i = 0; i < kAcc; ++i) d[b][i] = 0.f;
  // f(b, m, nl, v0, v1) for each accumulator pair of this thread (warp, g, t), block b: d[b][4j + e] and
  // d[b][4j + 2 + e] are weight columns nl = 64 block(b) + 16 warp + 2g and nl + 1, activation row
  // m = 8j + 2t + e (the m64nNk16 D fragment, transposed: D^T = W^T X^T).
  auto each_pair = [&](auto&& f) {
#pragma unroll
    for (int b = 0; b < NB; ++b)
#pragma unroll
      for (int j = 0; j < MR / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          f(b, 8 * j + 2 * t + e, 64 * block(b) + 16 * warp + 2 * g, d[b][4 * j + e], d[b][4 * j + 2 + e]);
  };

  for (int i = SPLITN ? 0 : wg; i < nsteps; i += SPLITN ? 1 : CW) {
    const int slot = i % S;
    mbar_wait(full0 + 8 * slot, (i / S) & 1);
    const u32 st = base + slot * kStage, wst = st + kXStage;
    // In two halves of 32 k (16 fragment registers each: two CTAs of two consumer warpgroups per SM
    // leave ~112 registers a thread, and ptxas serializes the wgmmas (C7511) when the whole stage's
    // fragments do not fit beside the accumulators). Half q: the weight fragments of block b's chunk
    // 4 b + warp (16 columns), one ldmatrix.x4.trans giving thread (g, t) the bytes (k, n) = (32 q + 2t +
    // {0, 1} [+ 8] [+ 16], 2g + {0, 1}) (the gemv's 8-bit K x N reading): MMA row g is column 2g of the
    // chunk, row g + 8 column 2g + 1.
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      u32 a[NB][2][4];
#pragma unroll
      for (int b = 0; b < NB; ++b) {
        const int mat = lane >> 3, k = 32 * q + 8 * mat + (lane & 7);
        u32 r[4];
        ldsm_x4_trans(wst + k * 128 + (((4 * block(b) + warp) ^ (k & 7)) << 4), r[0], r[1], r[2], r[3]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          u32(&f)[4] = a[b][h];
          if constexpr (CVT) {
            f[0] = i8pair_scaled(r[2 * h], 0x3210u, s2[b][0]);
            f[1] = i8pair_scaled(r[2 * h], 0x3311u, s2[b][1]);
            f[2] = i8pair_scaled(r[2 * h + 1], 0x3210u, s2[b][0]);
            f[3] = i8pair_scaled(r[2 * h + 1], 0x3311u, s2[b][1]);
          } else {  // no conversion: the raw bytes go to the wgmma as if bf16 (output unchecked)
            f[0] = r[2 * h], f[1] = r[2 * h] ^ 0x1u, f[2] = r[2 * h + 1], f[3] = r[2 * h + 1] ^ 0x1u;
          }
        }
      }
      u64 db[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        db[h] = desc_k_major_sw128(st + (2 * q + h) * 32);  // k16 step 2q + h: 32 bytes into the rows
        keep_live(db[h]);
      }
#pragma unroll
      for (int b = 0; b < NB; ++b)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int j = 0; j < 4; ++j) keep_live(a[b][h][j]);
      wgmma_fence();
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int b = 0; b < NB; ++b) wgmma_m64nNk16_rs<MR>(d[b], a[b][h], db[h], 1);
      wgmma_commit();
      wgmma_wait<0>();
#pragma unroll
      for (int b = 0; b < NB; ++b)
#pragma unroll
        for (int j = 0; j < kAcc; ++j) keep_live(d[b][j]);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty0 + 8 * slot);  // this warp is done with the stage
  }

  if constexpr (RED != kRedAtomic) {
    // The CTA's 64 x 128 partial (each warpgroup its 64 columns) into shared memory over the stages, once
    // both warpgroups are done with them (named barrier 1: the consumers), as [64 m][128 n] fp32.
    float* part = reinterpret_cast<float*>(smem_raw + (base - smem_u32(smem_raw)));
    asm volatile("bar.sync 1, %0;" ::"n"(CW * 128) : "memory");
    each_pair([&](int, int m, int nl, float v0, float v1) {
      *reinterpret_cast<float2*>(part + m * kNT + nl) = make_float2(v0, v1);
    });
    const int ctid = tid;  // 0 .. CW * 128 - 1: the consumers
    if constexpr (RED == kRedCluster) {
      cluster_sync_all();  // every rank's partial written (the producer warps arrive too)
      const unsigned rank = cluster_rank(), nrank = gridDim.y;
      for (int e = (int)rank * CW * 128 + ctid; e < MR * kNT / 2; e += (int)nrank * CW * 128) {
        const int m = e / (kNT / 2), nl = 2 * (e % (kNT / 2));
        const u32 at = smem_u32(part + m * kNT + nl);
        float2 v = *reinterpret_cast<const float2*>(part + m * kNT + nl);
        for (unsigned r = 0; r < nrank; ++r) {
          if (r == rank) continue;
          const float2 u = ld_dsmem2(at, r);
          v.x += u.x, v.y += u.y;
        }
        const float b0 = __bfloat162float(scale[n0 + nl]), b1 = __bfloat162float(scale[n0 + nl + 1]);  // the bias
        *reinterpret_cast<__nv_bfloat162*>(out + (long long)m * N + n0 + nl) = __floats2bfloat162_rn(v.x + b0, v.y + b1);
      }
      cluster_sync_all();  // keep this CTA's partial alive until every peer has read it
      return;
    } else {
      // kRedGlobal: the partial to this part's workspace slot (coalesced from shared memory), then the
      // last part of the tile to count itself in sums every part's slot in part order.
      asm volatile("bar.sync 1, %0;" ::"n"(CW * 128) : "memory");
      const int tile = blockIdx.x, parts = gridDim.y;
      float* ws = g_partials + ((long long)tile * parts) * (kMaxM * kNT);
      for (int e = ctid; e < MR * kNT / 4; e += CW * 128)
        reinterpret_cast<float4*>(ws + (long long)blockIdx.y * kMaxM * kNT)[e] = reinterpret_cast<const float4*>(part)[e];
      __threadfence();
      asm volatile("bar.sync 1, %0;" ::"n"(CW * 128) : "memory");
      __shared__ unsigned last;
      if (ctid == 0) last = atomicAdd(&g_counters[tile], 1u) == (unsigned)parts - 1;
      asm volatile("bar.sync 1, %0;" ::"n"(CW * 128) : "memory");
      if (!last) return;
      __threadfence();
      for (int e = ctid; e < MR * kNT / 2; e += CW * 128) {
        const int m = e / (kNT / 2), nl = 2 * (e % (kNT / 2));
        float2 v = make_float2(0.f, 0.f);
        for (int r = 0; r < parts; ++r) {
          const float2 u = __ldcg(reinterpret_cast<const float2*>(ws + (long long)r * kMaxM * kNT + m * kNT + nl));
          v.x += u.x, v.y += u.y;
        }
        const float b0 = __bfloat162float(scale[n0 + nl]), b1 = __bfloat162float(scale[n0 + nl + 1]);  // the bias
        *reinterpret_cast<__nv_bfloat162*>(out + (long long)m * N + n0 + nl) = __floats2bfloat162_rn(v.x + b0, v.y + b1);
      }
      if (ctid == 0) g_counters[tile] = 0;  // for the next launch
      return;
    }
  }

  // The warpgroups' partial sums: warpgroup c > 0 adds its own into a shared fp32 tile after c - 1 (named
  // barrier 1 over the consumers only: the producer warp has left), warpgroup 0 last, then it stores.
  // The stages are free (every copy landed and was consumed) once all consumers pass the first barrier.
  float* red = reinterpret_cast<float*>(smem_raw + (base - smem_u32(smem_raw)));  // [64 m][128 n]
  if constexpr (!SPLITN) asm volatile("bar.sync 1, %0;" ::"n"(CW * 128) : "memory");
  for (int c = SPLITN ? 0 : CW - 1; c >= 1; --c) {
    if (wg == c)
      each_pair([&](int, int m, int nl, float v0, float v1) {
        float2* p = reinterpret_cast<float2*>(red + m * kNT + nl);
        float2 v = make_float2(v0, v1);
        if (c < CW - 1) { const float2 o = *p; v.x += o.x; v.y += o.y; }
        *p = v;
      });
    asm volatile("bar.sync 1, %0;" ::"n"(CW * 128) : "memory");
  }
  if (!SPLITN && wg != 0) return;
  each_pair([&](int, int m, int nl, float v0, float v1) {
    if (!SPLITN && CW > 1) {
      const float2 o = *reinterpret_cast<const float2*>(red + m * kNT + nl);
      v0 += o.x, v1 += o.y;
    }
    const long long n = n0 + nl;
    if (ks == 1) *reinterpret_cast<__nv_bfloat162*>(out + (long long)m * N + n) = __floats2bfloat162_rn(v0, v1);
    else atomicAdd(reinterpret_cast<float2*>(acc_out + (long long)m * N + n), make_float2(v0, v1));
  });
}

using Launch = void (*)(dim3, const CUtensorMap&, const CUtensorMap&, const __nv_bfloat16*, float*, __nv_bfloat16*, int, int);
template <int S, int CW, bool SPLITN, int RED, int MR, bool CVT>
void launch(dim3 grid, const CUtensorMap& wm, const CUtensorMap& xm, const __nv_bfloat16* s, float* acc, __nv_bfloat16* out,
            int K, int N) {
  constexpr int smem = smem_bytes(S, MR);
  constexpr auto kernel = ws_gemv<S, CW, SPLITN, RED, MR, CVT>;
  static bool once = [] {
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaFuncAttributes a{};
    CHECK(cudaFuncGetAttributes(&a, kernel));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, CW * 128 + 32, smem));
    std::printf("  [M = %d, %d stages, %d consumer warpgroups%s%s: %d registers, %zu bytes local, %d KB shared, %d CTAs/SM]\n",
                MR, S, CW, SPLITN ? " splitting the columns" : " taking stages in turn", CVT ? "" : ", no conversion",
                a.numRegs, a.localSizeBytes, smem / 1024, per_sm);
    if (RED != kRedAtomic) std::printf("  [  reduction %s, bias epilogue]\n", RED == kRedCluster ? "over DSMEM" : "in global memory");
    return true;
  }();
  (void)once;
  if constexpr (RED == kRedCluster) {  // the split-K parts as one cluster (1, KS, 1)
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid, cfg.blockDim = dim3(CW * 128 + 32), cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 1, attr[0].val.clusterDim.y = grid.y, attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr, cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&cfg, kernel, wm, xm, s, acc, out, K, N));
  } else {
    kernel<<<grid, CW * 128 + 32, smem>>>(wm, xm, s, acc, out, K, N);
  }
}
// (stages, consumer warpgroups, split the columns, reduction, activation rows, convert); the rows without
// the conversion ("raw", output unchecked) time the same pipeline without its dequantization instructions
#define FX_WS_CONFIGS(X)                                                                                            \
  X(4, 1, 0, 0, 64, 1) X(6, 1, 0, 0, 64, 1) X(8, 2, 0, 0, 64, 1) X(12, 2, 0, 0, 64, 1) X(8, 3, 0, 0, 64, 1)          \
  X(4, 2, 1, 0, 64, 1) X(6, 2, 1, 0, 64, 1) X(8, 2, 1, 0, 64, 1) X(4, 2, 1, 1, 64, 1) X(6, 2, 1, 1, 64, 1)          \
  X(4, 2, 1, 2, 64, 1) X(6, 2, 1, 2, 64, 1) X(4, 2, 1, 0, 64, 0)                                                     \
  X(4, 2, 1, 0, 32, 1) X(6, 2, 1, 1, 32, 1) X(6, 2, 1, 2, 32, 1)                                                     \
  X(4, 2, 1, 0, 16, 1) X(8, 2, 1, 0, 16, 1) X(4, 2, 1, 1, 16, 1) X(8, 2, 1, 1, 16, 1) X(8, 2, 1, 2, 16, 1)          \
  X(4, 2, 1, 0, 16, 0)
Launch pick(int s, int cw, int sp, int red, int mr, int cv) {
#define FX_WS_ONE(S, CW, SP, RED, MR, CV) \
  if (s == S && cw == CW && sp == SP && red == RED && mr == MR && cv == CV) return launch<S, CW, SP != 0, RED, MR, CV != 0>;
  FX_WS_CONFIGS(FX_WS_ONE)
#undef FX_WS_ONE
  return nullptr;
}

struct Case {
  std::string name;
  int K, N, s, cw, sp, red, m, cv, ks;
};

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  std::vector<Case> cases;
  for (auto kn : {std::make_pair(4096, 14336), std::make_pair(14336, 4096), std::make_pair(4096, 4096)})
    for (auto cfg : std::vector<std::array<int, 6>>{
#define FX_WS_LIST(S, CW, SP, RED, MR, CV) {S, CW, SP, RED, MR, CV},
             FX_WS_CONFIGS(FX_WS_LIST)
#undef FX_WS_LIST
         })
      for (int ks : {1, 2, 4, 8}) {
        char nm[96];
        std::snprintf(nm, sizeof nm, "%dx%d m%d s%d cw%d%s ks%d%s%s", kn.first, kn.second, cfg[4], cfg[0], cfg[1],
                      cfg[2] ? "n" : "", ks, cfg[3] == kRedCluster ? " dsmem+bias" : cfg[3] == kRedGlobal ? " global+bias" : "",
                      cfg[5] ? "" : " raw");
        cases.push_back({nm, kn.first, kn.second, cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5], ks});
      }
  ProbeBuffers buf(kMaxM);
  float* partials;  // kRedGlobal's workspace: 1024 slots of 32 KB (112 tiles x 8 parts at most) and tile counters
  unsigned* counters;
  CHECK(cudaMalloc(&partials, 1024LL * kMaxM * kNT * 4));
  CHECK(cudaMalloc(&counters, 4096 * sizeof(unsigned)));
  CHECK(cudaMemset(counters, 0, 4096 * sizeof(unsigned)));
  CHECK(cudaMemcpyToSymbol(g_partials, &partials, sizeof partials));
  CHECK(cudaMemcpyToSymbol(g_counters, &counters, sizeof counters));
  const double copy_gbs = copy_bandwidth_gbs();
  std::printf("copy bandwidth %.0f GB/s (1 GiB device-to-device, read + write)\n", copy_gbs);
  std::printf("%-30s %9s %9s %9s %7s %9s\n", "case (K x N, M, stages, WGs, KS)", "ms", "ms b2b", "GB/s(w)", "%copy", "rel err");
  uint32_t seed = 24680u ^ (uint32_t)time(nullptr);
  std::vector<ProbeRow> rows;
  for (const Case& c : cases) {
    if (only && c.name.find(only) == std::string::npos) continue;
    Launch f = pick(c.s, c.cw, c.sp, c.red, c.m, c.cv);
    if (!f || c.N % kNT || c.K % kKS || c.K / kKS < c.ks * c.cw) continue;
    const dim3 grid(c.N / kNT, c.ks);
    const CUtensorMap xmap = tensor_map_2d(buf.x, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, c.K, c.m, kKS, c.m, CU_TENSOR_MAP_SWIZZLE_128B);
    // the timed reductions store bf16(sum + bias) themselves, the bias being the scale vector (any [N] will do)
    const bool timed_sums = c.red != kRedAtomic;
    // the row's mode, which print_fastest groups by: 1 + the reduction kind (output checked), 0 without the
    // conversion (unchecked)
    rows.push_back(run_probe_case(buf, c.m, c.name, c.cv ? 1 + c.red : 0, c.cv != 0, c.K, c.N, timed_sums ? 1 : c.ks, timed_sums,
                                  [&](const std::vector<int8_t*>& ws) {
      std::vector<CUtensorMap> wmaps;
      for (int8_t* p : ws)
        wmaps.push_back(tensor_map_2d(p, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, c.N, c.K, kNT, kKS, CU_TENSOR_MAP_SWIZZLE_128B));
      return std::function<void(int)>([&, wmaps](int i) { f(grid, wmaps[i % wmaps.size()], xmap, buf.s, buf.acc, buf.out, c.K, c.N); });
    }, seed, copy_gbs));
  }
  print_fastest(rows, "mode 1: split-K by red.global.add, its zeroing and finish untimed; 2: the DSMEM reduction and "
                     "a bias epilogue, timed; 3: a global reduction and a bias epilogue, timed (1-3: exact dequantization, "
                     "checked); 0: no conversion, as mode 1, unchecked");
  return 0;
}
