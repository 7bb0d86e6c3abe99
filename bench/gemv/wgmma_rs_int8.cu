// Can a mixed-input wgmma bring int8 weights at 64 rows near memory bandwidth?
//
// At M = 64 issue 7's 8-bit rows are its worst (bench/RESULTS.md Run BC call 1: `x @ (w_i8.to(bf16) * s)`
// 1.15-1.66x cuBLAS mm on bf16 weights, 19-38 % of copy on the int8 bytes; 14336 x 4096 0.0452 ms,
// 4096 x 14336 0.0370, 4096 x 4096 0.0188). The gemv (codegen/kernels/gemv.cuh) feeds mma.sync: per
// warp and k16 step, a converted 16 x 16 weight fragment meets the 64 activation rows in eight m16n8k16
// MMAs, each with its B fragments from shared memory. This prototype (session 41, not yet run on a GPU)
// computes the transposed product instead, D^T = W^T X^T, with one wgmma m64n64k16 per 64 weight
// columns and k16 step: the weight is the A operand, converted in registers (A may come from
// registers), the 64 activation rows the B operand, read by the tensor cores from shared memory
// through a descriptor (no B fragment loads, one instruction where the gemv issues eight MMAs and
// their loads). Whether the conversion then hides under the loads is what it measures.
//
// Layout: weight int8 [K, N] row-major (the `x @ (w_i8.to(bf16) * s)` form), x bf16 [64, K], per-column
// scale bf16 [N]; out = bf16(x @ bf16(w * s)) [64, N], fp32 accumulation. A CTA of WG warpgroups (128
// threads each; WG = 2 shares the X stage; both meet at the stage barrier, so one converts beside the
// other's wgmmas only as far as they drift apart: a real ping-pong needs per-warpgroup barriers)
// owns WG x NB blocks of 64 columns and a 1/KS slice of K, through an S-stage cp.async pipeline of
// 64-k stages: W [64 k][WG * NB * 64 B] (per block [64 k][64 B], 16-byte chunk c of row k at c ^ ((k >> 1) & 3):
// the eight rows an ldmatrix reads fall in eight bank groups) and X [64 m][128 B] in the 128-byte swizzle
// wgmma's K-major descriptor reads (chunk c of row m at c ^ (m & 7)).
//   A (weight) fragments: warp w takes block b's 16-byte chunk w (16 columns); one ldmatrix.x4.trans
//   per 32 k gives thread (g, t) the bytes (k, n) = (2t + {0, 1} [+ 8], 2g + {0, 1}), so MMA row g is
//   column 2g of the chunk, row g + 8 column 2g + 1 (the gemv's 8-bit K x N reading, kernels/gemv.cuh),
//   converted with the scale to bf16 exactly as the gemv does (i8pair_scaled: bit-exact dequantization).
//   Each stage's wgmmas complete (wgmma.wait_group 0) before the next stage converts into the same
//   registers.
//   B: the X stage, descriptor start + 32 bytes per k16 step, SBO 1024 (eight 128-byte rows).
// KS > 1: the partial sums go to an fp32 buffer by red.global.add (zeroed before, converted after by a
// second kernel, both outside the timed kernel; KS = 1 stores the bf16 output itself), as reg_stream.cu.
// The gemv's own split-K reduction (over DSMEM in a cluster) costs ~0.9 us (bench/gemv/NOTES.md
// session 38): add about that to a KS > 1 row when comparing.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o wgmma_rs_int8 wgmma_rs_int8.cu
//   ./wgmma_rs_int8 [filter]   (cases in main(); each checked against an fp32 reference kernel by
//                               relative error on fresh random data, output poisoned with NaN)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "probe_harness.h"
#include "probe_int8_convert.cuh"
#include "probe_wgmma.cuh"

constexpr int kM = 64;        // activation rows (the wgmma's n)
constexpr int kKS = 64;       // k per stage
constexpr int kWgThreads = 128;  // a warpgroup

__device__ __forceinline__ void cp_async16(u32 dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
template <int NB, int S, int WG>
struct Smem {
  static constexpr int kWBlock = kKS * 64;            // one 64-column block of a W stage: 4 KB
  static constexpr int kWStage = WG * NB * kWBlock;
  static constexpr int kXStage = kM * kKS * 2;        // 8 KB, 1024-byte aligned
  static constexpr int kStage = kXStage + kWStage;    // X first: every stage start stays 1024-aligned
  static constexpr int kBytes = S * kStage + 1024;    // + alignment slack
};

// MODE 1: as described; MODE 0: no conversion (the raw bytes go to the wgmma as if bf16: the loads and
// tensor-core path without the dequantization's instructions; its output is not checked).
template <int MODE, int NB, int S, int WG>
__global__ void __launch_bounds__(WG * kWgThreads) wgmma_rs_kn(const int8_t* __restrict__ w, const __nv_bfloat16* __restrict__ x,
                                                        const __nv_bfloat16* __restrict__ scale, float* __restrict__ acc_out,
                                                        __nv_bfloat16* __restrict__ out, int K, int N) {
  using L = Smem<NB, S, WG>;
  constexpr int kThreads = WG * kWgThreads;
  constexpr int D = S - 1;  // stages loaded ahead
  static_assert(D >= 2, "at least two stages ahead");
  extern __shared__ unsigned char smem_raw[];
  const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  // warpgroup wg owns the CTA's 64-column blocks wg * NB .. + NB - 1; both share the X stage
  const int tid = threadIdx.x, lane = tid & 31, warp = (tid >> 5) & 3, wg = tid / kWgThreads;
  const int g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * WG * NB * 64;
  const int total = K / kKS, ks = gridDim.y;
  const int sbeg = int((long long)total * blockIdx.y / ks);
  const int nsteps = int((long long)total * (blockIdx.y + 1) / ks) - sbeg;

  // loader: W chunk i of 2 * NB per thread (row k = ci / (WG * NB * 4), block b, chunk c), X chunk j
  // of 4 / WG
  auto load = [&](int slot, int step) {
    const int k0 = (sbeg + step) * kKS;
    const u32 st = base + slot * L::kStage;
#pragma unroll
    for (int j = 0; j < 4 / WG; ++j) {
      const int ci = tid + j * kThreads, m = ci >> 3, c = ci & 7;
      cp_async16(st + m * 128 + ((c ^ (m & 7)) << 4), x + (long long)m * K + k0 + c * 8);
    }
#pragma unroll
    for (int i = 0; i < 2 * NB; ++i) {
      const int ci = tid + i * kThreads, k = ci / (WG * NB * 4), bc = ci % (WG * NB * 4), b = bc >> 2, c = bc & 3;
      cp_async16(st + L::kXStage + b * L::kWBlock + k * 64 + ((c ^ ((k >> 1) & 3)) << 4),
                 w + (long long)(k0 + k) * N + n0 + b * 64 + c * 16);
    }
  };

  // scale pairs: block b, MMA row g -> column 16 warp + 2g, row g + 8 -> + 1
  u32 s2[NB][2];
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned short sv = __bfloat16_as_ushort(scale[n0 + (wg * NB + b) * 64 + 16 * warp + 2 * g + h]);
      s2[b][h] = sv | (u32(sv) << 16);
    }
  float d[NB][32];
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int i = 0; i < 32; ++i) d[b][i] = 0.f;

  // a stage's A fragments: [block][k16 step][4], converted from 2 ldmatrix.x4.trans per block
  auto convert = [&](u32 st, u32 (&a)[NB][4][4]) {
#pragma unroll
    for (int b = 0; b < NB; ++b)
#pragma unroll
      for (int q = 0; q < 2; ++q) {  // 32 k each
        const int mat = lane >> 3, k = 32 * q + 8 * mat + (lane & 7);
        u32 r[4];
        ldsm_x4_trans(st + L::kXStage + (wg * NB + b) * L::kWBlock + k * 64 + ((warp ^ ((k >> 1) & 3)) << 4), r[0], r[1], r[2], r[3]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // k16 step 2q + h: lo = r[2h] (k 2t, 2t+1), hi = r[2h+1] (+8)
          u32(&f)[4] = a[b][2 * q + h];
          if constexpr (MODE == 1) {
            f[0] = i8pair_scaled(r[2 * h], 0x3210u, s2[b][0]);      // bytes 0, 2: column 2g, MMA row g
            f[1] = i8pair_scaled(r[2 * h], 0x3311u, s2[b][1]);      // bytes 1, 3: column 2g + 1, row g + 8
            f[2] = i8pair_scaled(r[2 * h + 1], 0x3210u, s2[b][0]);
            f[3] = i8pair_scaled(r[2 * h + 1], 0x3311u, s2[b][1]);
          } else {
            f[0] = r[2 * h], f[1] = r[2 * h] ^ 0x1u, f[2] = r[2 * h + 1], f[3] = r[2 * h + 1] ^ 0x1u;
          }
        }
      }
  };
  // Every input of the stage's wgmmas (fragments, descriptors) is computed before its fence: ptxas
  // serializes the wgmmas (C7513) where an instruction defining one of their inputs sits between them,
  // and the compiler would otherwise sink the conversion (plain asm) past the fence.
  auto mma_stage = [&](u32 st, u32 (&a)[NB][4][4]) {
    u64 db[4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      db[kk] = desc_k_major_sw128(st + kk * 32);
      keep_live(db[kk]);
    }
#pragma unroll
    for (int b = 0; b < NB; ++b)
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
#pragma unroll
        for (int i = 0; i < 4; ++i) keep_live(a[b][kk][i]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int b = 0; b < NB; ++b) wgmma_m64n64k16_rs(d[b], a[b][kk], db[kk], 1);
    wgmma_commit();
  };

#pragma unroll
  for (int s = 0; s < D; ++s) {
    if (s < nsteps) load(s, s);
    cp_async_commit();
  }
  // Stage i: its data landed (wait + barrier), then stage i + D refills the slot of stage i - 1, whose
  // wgmmas every warp has waited for (wait<0> at the end of stage i - 1, then the barrier). Keeping a
  // stage's wgmmas in flight while the next converts was tried: ptxas then serializes every wgmma
  // (C7513: an instruction defining a wgmma input inside an open wgmma pipeline). So each stage waits
  // for its own, and the other CTAs on the SM (or the other warpgroup) fill the gap.
  u32 a[NB][4][4];
  for (int i = 0; i < nsteps; ++i) {
    cp_async_wait<D - 1>();
    // cp.async wrote the X tile through the generic proxy; the wgmma reads it through the async
    // proxy: each thread orders its own writes before the barrier that publishes them
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int nx = i + D;
    if (nx < nsteps) load(nx % S, nx);
    cp_async_commit();
    const u32 st = base + (i % S) * L::kStage;
    convert(st, a);
    mma_stage(st, a);
    wgmma_wait<0>();
  }
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int i = 0; i < 32; ++i) keep_live(d[b][i]);

  // D^T fragment: thread (warp, g, t), block b: d[b][4j + 2r + e] is row (weight column) 16 warp + g + 8r
  // -> output column n0 + 64b + 16 warp + 2g + r, wgmma column 8j + 2t + e -> activation row m.
#pragma unroll
  for (int b = 0; b < NB; ++b)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int m = 8 * j + 2 * t + e;
        const long long n = n0 + 64 * (wg * NB + b) + 16 * warp + 2 * g;  // r = 0; r = 1 is n + 1
        const float v0 = d[b][4 * j + e], v1 = d[b][4 * j + 2 + e];
        if (ks == 1) {
          __nv_bfloat162 pr = __floats2bfloat162_rn(v0, v1);
          *reinterpret_cast<__nv_bfloat162*>(out + (long long)m * N + n) = pr;
        } else {
          atomicAdd(reinterpret_cast<float2*>(acc_out + (long long)m * N + n), make_float2(v0, v1));  // n even
        }
      }
}

using Launch = void (*)(dim3, const int8_t*, const __nv_bfloat16*, const __nv_bfloat16*, float*, __nv_bfloat16*, int, int);
template <int MODE, int NB, int S, int WG>
void launch(dim3 grid, const int8_t* w, const __nv_bfloat16* x, const __nv_bfloat16* s, float* acc, __nv_bfloat16* out, int K,
            int N) {
  constexpr int smem = Smem<NB, S, WG>::kBytes;
  constexpr auto kernel = wgmma_rs_kn<MODE, NB, S, WG>;
  static bool once = [] {
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaFuncAttributes a{};
    CHECK(cudaFuncGetAttributes(&a, kernel));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, WG * kWgThreads, smem));
    std::printf("  [mode %d, %d warpgroups of %d blocks of 64 columns, %d stages: %d registers, %zu bytes local, %d KB "
                "shared, %d CTAs/SM]\n", MODE, WG, NB, S, a.numRegs, a.localSizeBytes, smem / 1024, per_sm);
    return true;
  }();
  (void)once;
  kernel<<<grid, WG * kWgThreads, smem>>>(w, x, s, acc, out, K, N);
}
// (blocks of 64 columns a warpgroup, stages, warpgroups a CTA)
#define FX_WR_CONFIGS(X) X(1, 4, 1) X(1, 6, 1) X(2, 4, 1) X(2, 6, 1) X(4, 3, 1) X(4, 4, 1) X(1, 4, 2) X(1, 6, 2) X(2, 4, 2)
Launch pick(int mode, int nb, int s, int wg) {
#define FX_WR_ONE(MO, NB, S, WG) \
  if (mode == MO && nb == NB && s == S && wg == WG) return launch<MO, NB, S, WG>;
#define FX_WR(NB, S, WG) FX_WR_ONE(0, NB, S, WG) FX_WR_ONE(1, NB, S, WG)
  FX_WR_CONFIGS(FX_WR)
#undef FX_WR
#undef FX_WR_ONE
  return nullptr;
}

struct Case {
  std::string name;
  int K, N, mode, nb, s, wg, ks;
};

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  std::vector<Case> cases;
  for (auto kn : {std::make_pair(14336, 4096), std::make_pair(4096, 14336), std::make_pair(4096, 4096)})
    for (int mode : {1, 0})
      for (auto cfg : std::vector<std::array<int, 3>>{
#define FX_WR_LIST(NB, S, WG) {NB, S, WG},
               FX_WR_CONFIGS(FX_WR_LIST)
#undef FX_WR_LIST
           })
        for (int ks : {1, 2, 4, 8}) {
          char nm[96];
          std::snprintf(nm, sizeof nm, "%dx%d m%d nb%d s%d wg%d ks%d", kn.first, kn.second, mode, cfg[0], cfg[1], cfg[2], ks);
          cases.push_back({nm, kn.first, kn.second, mode, cfg[0], cfg[1], cfg[2], ks});
        }
  ProbeBuffers buf(kM);
  const double copy_gbs = copy_bandwidth_gbs();
  std::printf("copy bandwidth %.0f GB/s (1 GiB device-to-device, read + write); M = %d\n", copy_gbs, kM);
  std::printf("%-30s %9s %9s %9s %7s %9s\n", "case (K x N, mode, blocks, stages, WGs, KS)", "ms", "ms b2b", "GB/s(w)", "%copy",
              "rel err");
  uint32_t seed = 12345u ^ (uint32_t)time(nullptr);
  std::vector<ProbeRow> rows;
  for (const Case& c : cases) {
    if (only && c.name.find(only) == std::string::npos) continue;
    Launch f = pick(c.mode, c.nb, c.s, c.wg);
    if (!f || c.N % (64 * c.nb * c.wg) || c.K % kKS || c.K / kKS < c.ks) continue;
    const dim3 grid(c.N / (64 * c.nb * c.wg), c.ks);
    rows.push_back(run_probe_case(buf, kM, c.name, c.mode, c.mode == 1, c.K, c.N, c.ks, false, [&](const std::vector<int8_t*>& ws) {
      return std::function<void(int)>([&, ws](int i) { f(grid, ws[i % ws.size()], buf.x, buf.s, buf.acc, buf.out, c.K, c.N); });
    }, seed, copy_gbs));
  }
  print_fastest(rows, "1: exact dequantization; 0: no conversion, output unchecked");
  return 0;
}
