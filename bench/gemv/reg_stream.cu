// Can an int8 gemv that streams its weights straight into registers beat the shared-memory one?
//
// The gemv (codegen/kernels/gemv.cuh) feeds its MMAs from a cp.async pipeline in shared memory: 4 warps
// a CTA, two or three CTAs per SM, one __syncthreads a stage. Its data path alone streams 8-bit
// weights at 82-86 % of copy (stream_ceiling.cu, Run AY) and the whole int8 kernel at M = 16,
// 4096 x 14336 takes 0.0241 ms against issue 7's 0.018 (bench/gemv/NOTES.md sessions 37-39: the
// per-stage math is not hidden at ~10 % occupancy). This prototype (session 40) keeps no weight in
// shared memory: each lane loads 16 bytes of four k rows per k16 step into registers, DEPTH steps
// ahead, and feeds mma.sync from them after one byte permute per pair; many warps per SM keep the
// loads in flight instead of a deep pipeline. Whether that reaches the target is what it measures.
//
// Layout: weight int8 [K, N] row-major (the `x @ (w_i8.to(bf16) * s)` form of issue 7), x bf16
// [M <= 16, K], per-column scale bf16 [N]; out = bf16(x @ (w * s)) [M, N], fp32 accumulation.
// A warp owns 128 columns (lane (g, t): bytes 16g..16g+15 of a row) and a slice of K; its MMA
// operand A is the weight (16 columns x 16 k), B the activations (16 k x 8 rows of x):
//   k: lane t's four rows 4t..4t+3 of a k16 step stand for the MMA's k 2t, 2t+1, 2t+8, 2t+9, and
//      B's fragments are read from x at the same k (8 bytes: x[m][k0 + 4t .. + 3]);
//   n: MMA row g of n-tile j is column 16g + 2j, row g + 8 column 16g + 2j + 1 (bytes 2j, 2j+1 of
//      the lane's 16), so one byte permute picks a pair (two k rows, one column) from two loads.
// The CTA's WARPS warps split the CTA's k range; their partial sums meet in shared memory. KS CTAs
// per column tile split K further and add into an fp32 buffer (red.global.add; zeroed before and
// converted by a second kernel, both outside the timed kernel: KS = 1 is the complete chain).
// MODE 0: loads only (the lane XORs what it loaded: the data path's ceiling); MODE 1: the
// production conversion (int8 -> bf16 exact, times the scale, rounded once: i8pair_scaled's five
// instructions); MODE 2: without the scale in the loop (four), the scale applied to the fp32 sums.
//
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -o reg_stream reg_stream.cu
//   ./reg_stream          (cases in main(); each checked against a float64-free fp32 reference kernel
//                         by relative error on fresh random data, output poisoned with NaN)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "probe_harness.h"
#include "probe_int8_convert.cuh"

constexpr int kM = 16;  // rows of x (two MMA n8 tiles)

__device__ __forceinline__ uint4 ldg_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 ldg_stream8(const void* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 ldg_x(const void* p) {
  uint2 v;
  asm volatile("ld.global.nc.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ void mma16816(float* c, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                         unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// CW columns a warp and its CTA own (128: a lane loads 16 bytes of a row; 64: 8 bytes).
template <int MODE, int WARPS, int DEPTH, int CW>
__global__ void __launch_bounds__(WARPS * 32) reg_stream_kn(const int8_t* __restrict__ w, const __nv_bfloat16* __restrict__ x,
                                                            const __nv_bfloat16* __restrict__ scale, float* __restrict__ acc_out,
                                                            __nv_bfloat16* __restrict__ out, int K, int N, unsigned* sink) {
  constexpr int kLaneCols = CW / 8, kWords = CW / 32, kTiles = CW / 16;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * CW;
  // k16 steps shared out over the ks x WARPS warps of the column tile as evenly as they go
  const int total = K / 16, parts = gridDim.y * WARPS, part = blockIdx.y * WARPS + warp;
  const int sbeg = int((long long)total * part / parts), steps = int((long long)total * (part + 1) / parts) - sbeg;
  const int kbeg = 16 * sbeg;
  const int8_t* wp = w + (long long)(kbeg + 4 * t) * N + n0 + kLaneCols * g;
  const __nv_bfloat16* xp0 = x + (long long)g * K + kbeg + 4 * t;
  const __nv_bfloat16* xp1 = xp0 + 8LL * K;

  // The scale pairs of the lane's columns (MODE 1: in the loop; MODE 2: after it).
  unsigned s2[kLaneCols];
#pragma unroll
  for (int c = 0; c < kLaneCols; ++c) {
    const unsigned short sv = __bfloat16_as_ushort(scale[n0 + kLaneCols * g + c]);
    s2[c] = sv | (unsigned(sv) << 16);
  }
  float acc[kTiles][2][4];
#pragma unroll
  for (int j = 0; j < kTiles; ++j)
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[j][mt][e] = 0.f;
  unsigned xr = 0;

  unsigned buf[DEPTH][4][kWords];
  uint2 xb[DEPTH][2];
  auto load = [&](int d, int step) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int8_t* p = wp + (long long)(16 * step + r) * N;
      if constexpr (kWords == 4) {
        const uint4 v = ldg_stream(p);
        buf[d][r][0] = v.x, buf[d][r][1] = v.y, buf[d][r][2] = v.z, buf[d][r][3] = v.w;
      } else {
        const uint2 v = ldg_stream8(p);
        buf[d][r][0] = v.x, buf[d][r][1] = v.y;
      }
    }
    xb[d][0] = ldg_x(xp0 + 16 * step);
    xb[d][1] = ldg_x(xp1 + 16 * step);
  };
#pragma unroll
  for (int d = 0; d < DEPTH; ++d)
    if (d < steps) load(d, d);
  for (int s0 = 0; s0 < steps; s0 += DEPTH) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d) {
      const int s = s0 + d;
      if (s < steps) {
        unsigned R[4][kWords];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int q = 0; q < kWords; ++q) R[r][q] = buf[d][r][q];
        const uint2 x0 = xb[d][0], x1 = xb[d][1];
        if (s + DEPTH < steps) load(d, s + DEPTH);
        if constexpr (MODE == 0) {
#pragma unroll
          for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int q = 0; q < kWords; ++q) xr ^= R[r][q];
          xr ^= x0.x ^ x1.y;
        } else {
#pragma unroll
          for (int j = 0; j < kTiles; ++j) {
            const int q = j >> 1, b = (2 * j) & 3;
            // a0: column 2j of the lane's at k rows 4t, 4t+1; a1: column 2j + 1; a2 / a3: rows 4t+2, 4t+3
            const unsigned p0 = __byte_perm(R[0][q], R[1][q], b | ((4 + b) << 8));
            const unsigned p1 = __byte_perm(R[0][q], R[1][q], (b + 1) | ((5 + b) << 8));
            const unsigned p2 = __byte_perm(R[2][q], R[3][q], b | ((4 + b) << 8));
            const unsigned p3 = __byte_perm(R[2][q], R[3][q], (b + 1) | ((5 + b) << 8));
            unsigned a0 = i8pair(p0), a1 = i8pair(p1), a2 = i8pair(p2), a3 = i8pair(p3);
            if constexpr (MODE == 1) {
              a0 = fma2(a0, s2[2 * j], 0x80008000u);
              a2 = fma2(a2, s2[2 * j], 0x80008000u);
              a1 = fma2(a1, s2[2 * j + 1], 0x80008000u);
              a3 = fma2(a3, s2[2 * j + 1], 0x80008000u);
            }
            mma16816(acc[j][0], a0, a1, a2, a3, x0.x, x0.y);
            mma16816(acc[j][1], a0, a1, a2, a3, x1.x, x1.y);
          }
        }
      }
    }
  }

  if constexpr (MODE == 0) {
    if (xr == 0x12345678u) sink[0] = xr;  // keeps the loads
  } else {
    // Partial sums of the CTA's warps meet in shared memory (dynamic): [WARPS][kM][CW] fp32.
    extern __shared__ float red_raw[];
    float(*red)[kM][CW] = reinterpret_cast<float(*)[kM][CW]>(red_raw);
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        const int c0 = kLaneCols * g + 2 * j, m = mt * 8 + 2 * t;
        float f0 = acc[j][mt][0], f1 = acc[j][mt][1], f2 = acc[j][mt][2], f3 = acc[j][mt][3];
        if constexpr (MODE == 2) {
          const float sa = __bfloat162float(__ushort_as_bfloat16((unsigned short)s2[2 * j]));
          const float sb = __bfloat162float(__ushort_as_bfloat16((unsigned short)s2[2 * j + 1]));
          f0 *= sa, f1 *= sa, f2 *= sb, f3 *= sb;
        }
        red[warp][m][c0] = f0;  // MMA row g: column c0, x rows m, m + 1
        red[warp][m + 1][c0] = f1;
        red[warp][m][c0 + 1] = f2;  // MMA row g + 8: column c0 + 1
        red[warp][m + 1][c0 + 1] = f3;
      }
    __syncthreads();
    for (int i = threadIdx.x; i < kM * CW; i += WARPS * 32) {
      const int m = i / CW, c = i % CW;
      float v = 0.f;
#pragma unroll
      for (int q = 0; q < WARPS; ++q) v += red[q][m][c];
      if (gridDim.y == 1) out[(long long)m * N + n0 + c] = __float2bfloat16(v);
      else atomicAdd(acc_out + (long long)m * N + n0 + c, v);
    }
  }
}

struct Case {
  std::string name;
  int K, N, mode, warps, depth, cw, ks;
};

using Launch = void (*)(dim3, dim3, const int8_t*, const __nv_bfloat16*, const __nv_bfloat16*, float*, __nv_bfloat16*, int, int,
                        unsigned*);
template <int MODE, int WARPS, int DEPTH, int CW>
void launch(dim3 grid, dim3 block, const int8_t* w, const __nv_bfloat16* x, const __nv_bfloat16* s, float* acc,
            __nv_bfloat16* out, int K, int N, unsigned* sink) {
  const int smem = MODE == 0 ? 0 : WARPS * kM * CW * 4;
  static bool once = [&] {
    CHECK(cudaFuncSetAttribute(reg_stream_kn<MODE, WARPS, DEPTH, CW>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaFuncAttributes a{};
    CHECK(cudaFuncGetAttributes(&a, reg_stream_kn<MODE, WARPS, DEPTH, CW>));
    std::printf("  [mode %d, %d warps, depth %d, %d columns: %d registers, %zu bytes local]\n", MODE, WARPS, DEPTH, CW, a.numRegs,
                a.localSizeBytes);
    return true;
  }();
  (void)once;
  reg_stream_kn<MODE, WARPS, DEPTH, CW><<<grid, block, smem>>>(w, x, s, acc, out, K, N, sink);
}
// The configurations built: (warps, depth, columns), each in the three modes.
#define FX_RS_CONFIGS(X) X(4, 2, 128) X(4, 4, 128) X(8, 2, 128) X(8, 3, 128) X(4, 4, 64) X(8, 2, 64) X(8, 4, 64) X(16, 2, 64) X(16, 4, 64)
Launch pick(int mode, int warps, int depth, int cw) {
#define FX_RS_ONE(MO, W, D, C) \
  if (mode == MO && warps == W && depth == D && cw == C) return launch<MO, W, D, C>;
#define FX_RS(W, D, C) FX_RS_ONE(0, W, D, C) FX_RS_ONE(1, W, D, C) FX_RS_ONE(2, W, D, C)
  FX_RS_CONFIGS(FX_RS)
#undef FX_RS
#undef FX_RS_ONE
  return nullptr;
}

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  std::vector<Case> cases;
  for (auto kn : {std::make_pair(4096, 14336), std::make_pair(14336, 4096), std::make_pair(4096, 4096)})
    for (int mode : {0, 1, 2})
      for (auto cfg : std::vector<std::array<int, 3>>{
#define FX_RS_LIST(W, D, C) {W, D, C},
               FX_RS_CONFIGS(FX_RS_LIST)
#undef FX_RS_LIST
           })
        for (int ks : {1, 2, 3, 4, 6, 8}) {
          char nm[96];
          std::snprintf(nm, sizeof nm, "%dx%d m%d w%d d%d c%d ks%d", kn.first, kn.second, mode, cfg[0], cfg[1], cfg[2], ks);
          cases.push_back({nm, kn.first, kn.second, mode, cfg[0], cfg[1], cfg[2], ks});
        }
  const long long maxW = 14336LL * 4096;
  int8_t* w[4];
  const int nrot = 4;  // weight copies rotated so that each launch reads from HBM (at least 4 x 59 MB > 50 MB L2: weight_slices)
  for (auto& p : w) CHECK(cudaMalloc(&p, maxW));
  __nv_bfloat16 *x, *s, *out;
  float *acc, *ref;
  unsigned* sink;
  CHECK(cudaMalloc(&x, kM * 14336LL * 2));
  CHECK(cudaMalloc(&s, 14336LL * 2));
  CHECK(cudaMalloc(&out, kM * 14336LL * 2));
  CHECK(cudaMalloc(&acc, kM * 14336LL * 4));
  CHECK(cudaMalloc(&ref, kM * 14336LL * 4));
  CHECK(cudaMalloc(&sink, 4));
  const double copy_gbs = copy_bandwidth_gbs();
  std::printf("copy bandwidth %.0f GB/s (1 GiB device-to-device, read + write)\n", copy_gbs);
  std::printf("%-32s %9s %9s %9s %7s %9s\n", "case (K x N, mode, warps, depth, cols, split-K)", "ms", "ms b2b", "GB/s(w)",
              "%copy", "rel err");
  uint32_t seed = 12345u ^ (uint32_t)time(nullptr);
  std::vector<ProbeRow> rows;
  for (const Case& c : cases) {
    if (only && c.name.find(only) == std::string::npos) continue;
    Launch f = pick(c.mode, c.warps, c.depth, c.cw);
    if (!f || c.K / 16 < c.ks * c.warps * c.depth || c.N % c.cw) continue;
    const long long wbytes = (long long)c.K * c.N;
    const std::vector<int8_t*> ws = weight_slices(w, nrot, maxW, wbytes);  // ws[0] == w[0]
    fill_case(ws, wbytes, x, kM * (long long)c.K, s, c.N, seed);
    const dim3 grid(c.N / c.cw, c.ks), block(c.warps * 32);
    auto run_once = [&](int i) {
      if (c.ks > 1) CHECK(cudaMemsetAsync(acc, 0, kM * (long long)c.N * 4));
      f(grid, block, w[i % nrot], x, s, acc, out, c.K, c.N, sink);
      if (c.ks > 1) finish<<<(kM * c.N + 255) / 256, 256>>>(acc, out, (long long)kM * c.N);
    };
    // correctness (modes 1, 2): poisoned output, fp32 reference, relative error
    double rel = 0;
    if (c.mode != 0) {
      CHECK(cudaMemset(out, 0xff, kM * (long long)c.N * 2));  // NaN
      run_once(0);
      reference<<<dim3((c.N + 127) / 128, kM), 128>>>(w[0], x, s, ref, c.K, c.N);
      CHECK(cudaDeviceSynchronize());
      rel = max_relative_error(out, ref, kM * (long long)c.N);
    }
    const auto [ms, ms_b2b] = time_kernel([&](int i) { f(grid, block, ws[i % ws.size()], x, s, acc, out, c.K, c.N, sink); },
                                          [&] {
                                            if (c.ks > 1) CHECK(cudaMemsetAsync(acc, 0, kM * (long long)c.N * 4));
                                          });
    const double gbs = wbytes / (ms * 1e-3) / 1e9;
    std::printf("%-32s %9.4f %9.4f %9.0f %6.1f%% %9.2e\n", c.name.c_str(), ms, ms_b2b, gbs, 100.0 * gbs / copy_gbs, rel);
    rows.push_back({std::to_string(c.K) + "x" + std::to_string(c.N), c.name, c.mode, ms, ms_b2b, 100.0 * gbs / copy_gbs, rel});
  }
  print_fastest(rows, "mode 0: loads only; 1: exact dequant in the loop; 2: scale after");
  return 0;
}
