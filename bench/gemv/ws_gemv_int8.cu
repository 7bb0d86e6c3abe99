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
//     kernel, both outside the timing, as wgmma_rs_int8.cu; KS = 1 stores the bf16 output itself). The
//     gemv reduces over DSMEM in a cluster and runs an epilogue: add ~1 us at M = 64 when comparing.
// Weight int8 [K, N] row-major (the `x @ (w_i8.to(bf16) * s)` form), x bf16 [64, K], scale bf16 [N].
// Shared memory per stage: X [64 m][128 B] then W [64 k][128 B], both in TMA's 128-byte swizzle (16-byte
// chunk c of row r at c ^ (r & 7), stage starts 1024-byte aligned): wgmma's K-major descriptor reads X as
// laid out, and the eight k rows of one weight chunk that an ldmatrix reads fall in eight bank groups.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o ws_gemv_int8 ws_gemv_int8.cu -lcuda
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

constexpr int kM = 64;           // activation rows (the wgmma's n)
constexpr int kKS = 64;          // k per stage
constexpr int kNT = 128;         // output columns per CTA (two wgmma blocks of 64)
constexpr int kXStage = kM * kKS * 2;   // 8 KB
constexpr int kWStage = kKS * kNT;      // 8 KB
constexpr int kStage = kXStage + kWStage;

template <int S>
constexpr int smem_bytes() { return S * kStage + 2 * S * 8 + 1024; }  // stages, barriers, alignment slack
// CTAs per SM the shared memory allows (at most 3), for __launch_bounds__: ptxas's register budget.
constexpr int min_blocks(int S, int CW) {
  return (228 * 1024) / (S * kStage + 2 * S * 8 + 2048) >= 3 && CW == 1 ? 3 : (228 * 1024) / (S * kStage + 2 * S * 8 + 2048) >= 2 ? 2 : 1;
}

// SPLITN = false: every consumer warpgroup computes all 128 columns of the stages it takes (stages c,
// c + CW, ...; the partial sums meet in shared memory at the end). SPLITN = true: warpgroup c computes the
// 64 columns of block c of every stage (CW = 2), no partial sums to meet.
template <int S, int CW, bool SPLITN>
__global__ void __launch_bounds__(CW * 128 + 32, min_blocks(S, CW)) ws_gemv(const __grid_constant__ CUtensorMap wmap,
                                                         const __grid_constant__ CUtensorMap xmap,
                                                         const __nv_bfloat16* __restrict__ scale, float* __restrict__ acc_out,
                                                         __nv_bfloat16* __restrict__ out, int K, int N) {
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
    return;  // (no barrier below involves the producer warp)
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
  float d[NB][32];
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int i = 0; i < 32; ++i) d[b][i] = 0.f;

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
          f[0] = i8pair_scaled(r[2 * h], 0x3210u, s2[b][0]);
          f[1] = i8pair_scaled(r[2 * h], 0x3311u, s2[b][1]);
          f[2] = i8pair_scaled(r[2 * h + 1], 0x3210u, s2[b][0]);
          f[3] = i8pair_scaled(r[2 * h + 1], 0x3311u, s2[b][1]);
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
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int b = 0; b < NB; ++b) wgmma_m64n64k16_rs(d[b], a[b][h], db[h], 1);
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
      for (int b = 0; b < NB; ++b)
#pragma unroll
        for (int j = 0; j < 32; ++j) keep_live(d[b][j]);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty0 + 8 * slot);  // this warp is done with the stage
  }

  // The warpgroups' partial sums: warpgroup c > 0 adds its own into a shared fp32 tile after c - 1 (named
  // barrier 1 over the consumers only: the producer warp has left), warpgroup 0 last, then it stores.
  // The stages are free (every copy landed and was consumed) once all consumers pass the first barrier.
  // D^T fragment of thread (warp, g, t), block b: d[b][4j + 2r + e] is weight column 64 b + 16 warp + 2g + r,
  // activation row 8j + 2t + e.
  float* red = reinterpret_cast<float*>(smem_raw + (base - smem_u32(smem_raw)));  // [64 m][128 n]
  if constexpr (!SPLITN) asm volatile("bar.sync 1, %0;" ::"n"(CW * 128) : "memory");
  for (int c = SPLITN ? 0 : CW - 1; c >= 1; --c) {
    if (wg == c) {
#pragma unroll
      for (int b = 0; b < NB; ++b)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int m = 8 * j + 2 * t + e, n = 64 * b + 16 * warp + 2 * g;
            float2* p = reinterpret_cast<float2*>(red + m * kNT + n);
            float2 v = make_float2(d[b][4 * j + e], d[b][4 * j + 2 + e]);
            if (c < CW - 1) { const float2 o = *p; v.x += o.x; v.y += o.y; }
            *p = v;
          }
    }
    asm volatile("bar.sync 1, %0;" ::"n"(CW * 128) : "memory");
  }
  if (!SPLITN && wg != 0) return;
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int m = 8 * j + 2 * t + e, nl = 64 * block(b) + 16 * warp + 2 * g;
        float v0 = d[b][4 * j + e], v1 = d[b][4 * j + 2 + e];
        if (!SPLITN && CW > 1) {
          const float2 o = *reinterpret_cast<const float2*>(red + m * kNT + nl);
          v0 += o.x, v1 += o.y;
        }
        const long long n = n0 + nl;
        if (ks == 1) *reinterpret_cast<__nv_bfloat162*>(out + (long long)m * N + n) = __floats2bfloat162_rn(v0, v1);
        else atomicAdd(reinterpret_cast<float2*>(acc_out + (long long)m * N + n), make_float2(v0, v1));
      }
}

using Launch = void (*)(dim3, const CUtensorMap&, const CUtensorMap&, const __nv_bfloat16*, float*, __nv_bfloat16*, int, int);
template <int S, int CW, bool SPLITN>
void launch(dim3 grid, const CUtensorMap& wm, const CUtensorMap& xm, const __nv_bfloat16* s, float* acc, __nv_bfloat16* out,
            int K, int N) {
  constexpr int smem = smem_bytes<S>();
  constexpr auto kernel = ws_gemv<S, CW, SPLITN>;
  static bool once = [] {
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaFuncAttributes a{};
    CHECK(cudaFuncGetAttributes(&a, kernel));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, CW * 128 + 32, smem));
    std::printf("  [%d stages, %d consumer warpgroups%s: %d registers, %zu bytes local, %d KB shared, %d CTAs/SM]\n", S, CW,
                SPLITN ? " splitting the columns" : " taking stages in turn", a.numRegs, a.localSizeBytes, smem / 1024, per_sm);
    return true;
  }();
  (void)once;
  kernel<<<grid, CW * 128 + 32, smem>>>(wm, xm, s, acc, out, K, N);
}
// (stages, consumer warpgroups, split the columns)
#define FX_WS_CONFIGS(X) X(4, 1, 0) X(6, 1, 0) X(8, 2, 0) X(12, 2, 0) X(8, 3, 0) X(4, 2, 1) X(6, 2, 1) X(8, 2, 1)
Launch pick(int s, int cw, int sp) {
#define FX_WS_ONE(S, CW, SP) \
  if (s == S && cw == CW && sp == SP) return launch<S, CW, SP != 0>;
  FX_WS_CONFIGS(FX_WS_ONE)
#undef FX_WS_ONE
  return nullptr;
}

struct Case {
  std::string name;
  int K, N, s, cw, sp, ks;
};

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  std::vector<Case> cases;
  for (auto kn : {std::make_pair(4096, 14336), std::make_pair(14336, 4096), std::make_pair(4096, 4096)})
    for (auto cfg : std::vector<std::array<int, 3>>{
#define FX_WS_LIST(S, CW, SP) {S, CW, SP},
             FX_WS_CONFIGS(FX_WS_LIST)
#undef FX_WS_LIST
         })
      for (int ks : {1, 2, 4, 8}) {
        char nm[96];
        std::snprintf(nm, sizeof nm, "%dx%d s%d cw%d%s ks%d", kn.first, kn.second, cfg[0], cfg[1], cfg[2] ? "n" : "", ks);
        cases.push_back({nm, kn.first, kn.second, cfg[0], cfg[1], cfg[2], ks});
      }
  ProbeBuffers buf(kM);
  const double copy_gbs = copy_bandwidth_gbs();
  std::printf("copy bandwidth %.0f GB/s (1 GiB device-to-device, read + write); M = %d\n", copy_gbs, kM);
  std::printf("%-30s %9s %9s %9s %7s %9s\n", "case (K x N, stages, WGs, KS)", "ms", "ms b2b", "GB/s(w)", "%copy", "rel err");
  uint32_t seed = 24680u ^ (uint32_t)time(nullptr);
  std::vector<ProbeRow> rows;
  for (const Case& c : cases) {
    if (only && c.name.find(only) == std::string::npos) continue;
    Launch f = pick(c.s, c.cw, c.sp);
    if (!f || c.N % kNT || c.K % kKS || c.K / kKS < c.ks * c.cw) continue;
    const dim3 grid(c.N / kNT, c.ks);
    const CUtensorMap xmap = tensor_map_2d(buf.x, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, c.K, kM, kKS, kM, CU_TENSOR_MAP_SWIZZLE_128B);
    rows.push_back(run_probe_case(buf, c.name, 1, true, c.K, c.N, c.ks, [&](const std::vector<int8_t*>& ws) {
      std::vector<CUtensorMap> wmaps;
      for (int8_t* p : ws)
        wmaps.push_back(tensor_map_2d(p, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, c.N, c.K, kNT, kKS, CU_TENSOR_MAP_SWIZZLE_128B));
      return std::function<void(int)>([&, wmaps](int i) { f(grid, wmaps[i % wmaps.size()], xmap, buf.s, buf.acc, buf.out, c.K, c.N); });
    }, seed, copy_gbs));
  }
  print_fastest(rows, "exact dequantization");
  return 0;
}
