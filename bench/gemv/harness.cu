// Standalone harness for codegen/kernels/gemv.cuh: correctness vs cuBLAS on a dequantised copy, and
// timing vs cuBLAS mm (bf16/fp16 weights of the same shape), weights rotated so L2 does not hold them.
// Build: see run.sh. cuBLAS is dlopen'ed (path in $CUBLAS_LIB), so the binary builds without its headers.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <dlfcn.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "abi.inc"

// ---------------- instantiations ----------------
constexpr int stages_for(int mtiles, int wbytes) {
  int KT = 128 / wbytes;
  int stage = 128 * 128 + 8 * mtiles * KT * 2;
  int s = 100 * 1024 / stage;
  return s < 2 ? 2 : s > 6 ? 6 : s;
}

// ---------------- cuBLAS via dlopen ----------------
typedef void* cublasHandle_t;
typedef int (*pCreate)(cublasHandle_t*);
typedef int (*pGemmEx)(cublasHandle_t, int, int, int, int, int, const void*, const void*, int, int, const void*, int,
                       int, const void*, void*, int, int, int, int);
static pGemmEx g_gemm = nullptr;
static cublasHandle_t g_h = nullptr;
enum { OP_N = 0, OP_T = 1, R16F = 2, R16BF = 14, R32F = 0, COMPUTE_32F = 68, ALGO_DEFAULT = -1 };

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) { fprintf(stderr, "CUDA %s at %s:%d: %s\n", #x, __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } \
  } while (0)

// C[M,N] (row-major, ldc=N) = X[M,K] @ W, W either [K,N] (kmajor=0) or [N,K] (kmajor=1), 16-bit.
static void cublas_mm(const void* X, const void* W, void* C, int M, int N, int K, int kmajor, int abtype, int ctype) {
  float one = 1.f, zero = 0.f;
  int r;
  if (!kmajor) r = g_gemm(g_h, OP_N, OP_N, N, M, K, &one, W, abtype, N, X, abtype, K, &zero, C, ctype, N, COMPUTE_32F, ALGO_DEFAULT);
  else r = g_gemm(g_h, OP_T, OP_N, N, M, K, &one, W, abtype, K, X, abtype, K, &zero, C, ctype, N, COMPUTE_32F, ALGO_DEFAULT);
  if (r != 0) { fprintf(stderr, "cublasGemmEx failed %d\n", r); exit(1); }
}

// ---------------- data ----------------
enum WType { W_BF16, W_F16, W_I8, W_FP8 };
static const char* wname(WType t) { return t == W_BF16 ? "bf16" : t == W_F16 ? "fp16" : t == W_I8 ? "int8" : "fp8e4m3"; }
static int wbytes(WType t) { return (t == W_BF16 || t == W_F16) ? 2 : 1; }

__global__ void k_fill_f(float* o, size_t n, unsigned seed, float lo, float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    o[i] = lo + (hi - lo) * ((x & 0xffffff) / 16777216.f);
  }
}
template <class T> __global__ void k_cvt(const float* in, T* o, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) o[i] = T(in[i]);
}
template <> __global__ void k_cvt<signed char>(const float* in, signed char* o, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float v = rintf(in[i]); v = fminf(127.f, fmaxf(-127.f, v)); v = (v == 0.f) ? 1.f : v; o[i] = (signed char)v;
  }
}
// dequantised 16-bit copy with eager rounding: ElemB(float(raw) * scale[n])
template <class RAW, class S, class E>
__global__ void k_dequant(const RAW* w, const S* s, long long sn_scale, E* o, long long K, long long N, int kmajor) {
  size_t tot = (size_t)K * N;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < tot; i += (size_t)gridDim.x * blockDim.x) {
    long long n = kmajor ? (long long)(i / K) : (long long)(i % N);
    o[i] = E(float(w[i]) * float(s[n * sn_scale]));
  }
}
template <class E> __global__ void k_add_bias(const float* c, const E* bias, float* o, long long M, long long N) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < M * N; i += (long long)gridDim.x * blockDim.x)
    o[i] = c[i] + float(bias[i % N]);
}
template <class E> __global__ void k_err(const E* y, const float* ref, long long n, float* out /*maxdiff,maxref,nan*/) {
  float md = 0.f, mr = 0.f, nn = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float v = float(y[i]);
    if (!(v == v) || fabsf(v) > 1e30f) nn = 1.f;
    md = fmaxf(md, fabsf(v - ref[i]));
    mr = fmaxf(mr, fabsf(ref[i]));
  }
  atomicMax((int*)&out[0], __float_as_int(md));
  atomicMax((int*)&out[1], __float_as_int(mr));
  if (nn > 0.f) out[2] = 1.f;
}

static void fill(float* tmp, size_t n, unsigned seed, float lo, float hi) { k_fill_f<<<1024, 256>>>(tmp, n, seed, lo, hi); }

struct KernelRef { void (*fn)(fxfuse::FxParams); int mtiles, stages; };
#include "insts.inc"

struct Case { WType wt; int kmajor; long long M, K, N; int fp8_per_channel; bool slow; int force_s = 0; };

static double g_total_err = 0; static inline void unused_() { (void)g_total_err; }
static int g_fail = 0;

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

static void run_case(const Case& cs, int nsm, FILE* md) {
  const WType wt = cs.wt;
  const long long M = cs.M, K = cs.K, N = cs.N;
  const bool half = wt == W_F16;
  const int wb = wbytes(wt);
  const size_t welems = (size_t)K * N, wbytes_total = welems * wb;
  int nrot = (int)std::min<size_t>(48, std::max<size_t>(2, (size_t)(256ull << 20) / wbytes_total + 1));
  if (cs.slow) nrot = 1;
  // ---- buffers
  float* tmp; CK(cudaMalloc(&tmp, std::max<size_t>(welems, (size_t)(M * K)) * sizeof(float)));
  void* x; CK(cudaMalloc(&x, M * K * 2));
  fill(tmp, M * K, 11, -1.f, 1.f);
  if (half) k_cvt<__half><<<1024, 256>>>(tmp, (__half*)x, M * K); else k_cvt<__nv_bfloat16><<<1024, 256>>>(tmp, (__nv_bfloat16*)x, M * K);
  std::vector<void*> w(nrot);
  for (int r = 0; r < nrot; ++r) {
    CK(cudaMalloc(&w[r], wbytes_total));
    switch (wt) {
      case W_BF16: fill(tmp, welems, 100 + r, -0.05f, 0.05f); k_cvt<__nv_bfloat16><<<2048, 256>>>(tmp, (__nv_bfloat16*)w[r], welems); break;
      case W_F16: fill(tmp, welems, 100 + r, -0.05f, 0.05f); k_cvt<__half><<<2048, 256>>>(tmp, (__half*)w[r], welems); break;
      case W_I8: fill(tmp, welems, 100 + r, -127.f, 127.f); k_cvt<signed char><<<2048, 256>>>(tmp, (signed char*)w[r], welems); break;
      case W_FP8: fill(tmp, welems, 100 + r, -3.f, 3.f); k_cvt<__nv_fp8_e4m3><<<2048, 256>>>(tmp, (__nv_fp8_e4m3*)w[r], welems); break;
    }
  }
  // scale: int8 -> bf16 [N] in [0.0005, 0.001]; fp8 -> fp32 scalar (or [N]) ~0.02; bias [N] 16-bit
  void* scale; CK(cudaMalloc(&scale, N * 4));
  long long scale_sn = 1;
  if (wt == W_I8) { fill(tmp, N, 7, 0.0002f, 0.0008f); k_cvt<__nv_bfloat16><<<64, 256>>>(tmp, (__nv_bfloat16*)scale, N); }
  else { fill(tmp, N, 7, 0.01f, 0.03f); CK(cudaMemcpy(scale, tmp, N * 4, cudaMemcpyDeviceToDevice)); scale_sn = cs.fp8_per_channel ? 1 : 0; }
  void* bias; CK(cudaMalloc(&bias, N * 2));
  fill(tmp, N, 9, -0.5f, 0.5f);
  if (half) k_cvt<__half><<<64, 256>>>(tmp, (__half*)bias, N); else k_cvt<__nv_bfloat16><<<64, 256>>>(tmp, (__nv_bfloat16*)bias, N);
  void* y; CK(cudaMalloc(&y, M * N * 2));
  // ---- pick kernel
  int mt8 = (int)((M + 7) / 8);
  int mtiles = mt8 <= 1 ? 1 : mt8 <= 2 ? 2 : 8;   // instantiated: 1, 2, 8
  KernelRef kr = pick_kernel(wt, cs.kmajor, mtiles, cs.slow);
  // ---- launch geometry (codegen/config_table.cpp gemvConfig / gemvSplitK; this standalone
  // harness does not link the codegen library, so the rule is repeated here)
  const int KT = 128 / (cs.slow ? 2 : wb);
  const size_t stage = 128 * 128 + (size_t)8 * kr.mtiles * KT * 2;
  const long long nt = (N + 127) / 128, mz = (M + 8 * kr.mtiles - 1) / (8 * kr.mtiles);
  const long long ksteps = (K + KT - 1) / KT;
  int splitk = 1;
  const long long per_sm = (cs.slow ? 2 : wb) == 1 ? 2 : 1;  // CTAs per SM: 2 for 8-bit weights
  while (splitk < 8 && nt * mz * splitk * 2 <= per_sm * nsm && ksteps / (splitk * 2) >= 8) splitk *= 2;
  if (cs.force_s > 0) splitk = cs.force_s;
  size_t red = (size_t)8 * kr.mtiles * 132 * 4;
  size_t smem = std::max(stage * kr.stages, red);
  CK(cudaFuncSetAttribute((const void*)kr.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  fxfuse::FxParams p;
  memset(&p, 0, sizeof(p));
  p.B = 1; p.M = M; p.N = N; p.K = K; p.num_inputs = 4; p.num_outputs = 1;
  p.in[0] = {x, 0, K, 1, 0};
  if (cs.kmajor) p.in[1] = {w[0], 0, 0, 1, K}; else p.in[1] = {w[0], 0, 0, N, 1};
  p.in[2] = {scale, 0, 0, 0, scale_sn};
  p.in[3] = {bias, 0, 0, 0, 1};
  p.out[0] = {y, 0, N, 1};
  cudaLaunchConfig_t lc = {};
  lc.gridDim = dim3((unsigned)nt, splitk, (unsigned)mz);
  lc.blockDim = dim3(128);
  lc.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 1; at[0].val.clusterDim.y = splitk; at[0].val.clusterDim.z = 1;
  lc.attrs = at; lc.numAttrs = 1;
  auto launch = [&](int r) {
    p.in[1].ptr = w[r];
    CK(cudaLaunchKernelEx(&lc, kr.fn, p));
  };
  // ---- correctness (output poisoned with NaN)
  CK(cudaMemset(y, 0xff, M * N * 2));
  launch(0);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  void* wdq; CK(cudaMalloc(&wdq, welems * 2));
  if (wt == W_I8) k_dequant<signed char, __nv_bfloat16, __nv_bfloat16><<<2048, 256>>>((signed char*)w[0], (__nv_bfloat16*)scale, 1, (__nv_bfloat16*)wdq, K, N, cs.kmajor);
  else if (wt == W_FP8) k_dequant<__nv_fp8_e4m3, float, __nv_bfloat16><<<2048, 256>>>((__nv_fp8_e4m3*)w[0], (float*)scale, scale_sn, (__nv_bfloat16*)wdq, K, N, cs.kmajor);
  else CK(cudaMemcpy(wdq, w[0], welems * 2, cudaMemcpyDeviceToDevice));
  float *cref, *ref, *err;
  CK(cudaMalloc(&cref, M * N * 4)); CK(cudaMalloc(&ref, M * N * 4)); CK(cudaMalloc(&err, 16));
  const int abt = half ? R16F : R16BF;
  cublas_mm(x, wdq, cref, (int)M, (int)N, (int)K, cs.kmajor, abt, R32F);
  if (half) k_add_bias<__half><<<256, 256>>>(cref, (__half*)bias, ref, M, N); else k_add_bias<__nv_bfloat16><<<256, 256>>>(cref, (__nv_bfloat16*)bias, ref, M, N);
  CK(cudaMemset(err, 0, 16));
  if (half) k_err<__half><<<256, 256>>>((__half*)y, ref, M * N, err); else k_err<__nv_bfloat16><<<256, 256>>>((__nv_bfloat16*)y, ref, M * N, err);
  float he[3]; CK(cudaMemcpy(he, err, 12, cudaMemcpyDeviceToHost));
  const float rel = he[0] / std::max(he[1], 1e-20f);
  const bool ok = he[2] == 0.f && rel < 1.5e-2f;
  if (!ok) g_fail++;
  // ---- timing
  const int warm = 20, iters = cs.slow ? 20 : 200;
  std::vector<cudaEvent_t> e0(iters), e1(iters);
  for (int i = 0; i < iters; ++i) { cudaEventCreate(&e0[i]); cudaEventCreate(&e1[i]); }
  for (int i = 0; i < warm; ++i) launch(i % nrot);
  for (int i = 0; i < iters; ++i) { cudaEventRecord(e0[i]); launch(i % nrot); cudaEventRecord(e1[i]); }
  CK(cudaDeviceSynchronize());
  std::vector<float> t(iters);
  for (int i = 0; i < iters; ++i) cudaEventElapsedTime(&t[i], e0[i], e1[i]);
  const float ms = median(t);
  // batched: 100 back-to-back launches between two events (no per-launch event gaps)
  cudaEventRecord(e0[0]);
  for (int i = 0; i < 100; ++i) launch(i % nrot);
  cudaEventRecord(e1[0]);
  CK(cudaDeviceSynchronize());
  float tb; cudaEventElapsedTime(&tb, e0[0], e1[0]); tb /= 100;
  int ncl = -1;
  cudaOccupancyMaxActiveClusters(&ncl, (const void*)kr.fn, &lc);
  // cuBLAS mm alone, 16-bit weights of the same shape and layout (rotated)
  int nrot16 = (int)std::min<size_t>(24, std::max<size_t>(2, (size_t)(256ull << 20) / (welems * 2) + 1));
  if (cs.slow) nrot16 = 1;
  std::vector<void*> w16(nrot16);
  for (int r = 0; r < nrot16; ++r) { CK(cudaMalloc(&w16[r], welems * 2)); CK(cudaMemcpy(w16[r], wdq, welems * 2, cudaMemcpyDeviceToDevice)); }
  for (int i = 0; i < warm; ++i) cublas_mm(x, w16[i % nrot16], y, (int)M, (int)N, (int)K, cs.kmajor, abt, abt);
  for (int i = 0; i < iters; ++i) { cudaEventRecord(e0[i]); cublas_mm(x, w16[i % nrot16], y, (int)M, (int)N, (int)K, cs.kmajor, abt, abt); cudaEventRecord(e1[i]); }
  CK(cudaDeviceSynchronize());
  for (int i = 0; i < iters; ++i) cudaEventElapsedTime(&t[i], e0[i], e1[i]);
  const float ms_cb = median(t);
  const double gbs = wbytes_total / (ms * 1e-3) / 1e9;
  char line[512];
  snprintf(line, sizeof line, "| %4lld | %5lld | %5lld | %s | %-8s%s | %2d %d %d | %.4f | %.4f | %.4f | %6.0f | %5.1f%% | %.2e %s | %lld/%d |",
           M, K, N, cs.kmajor ? "[N,K]" : "[K,N]", wname(wt),
           wt == W_FP8 ? (cs.fp8_per_channel ? "/ch" : "/t") : (cs.slow ? "/slow" : ""),
           kr.mtiles, splitk, kr.stages, ms, tb, ms_cb, gbs, 100.0 * gbs / 4300.0, rel, ok ? "ok" : "FAIL", nt * mz, ncl);
  printf("%s\n", line);
  fflush(stdout);
  if (md) fprintf(md, "%s\n", line);
  for (int i = 0; i < iters; ++i) { cudaEventDestroy(e0[i]); cudaEventDestroy(e1[i]); }
  for (auto q : w) cudaFree(q);
  for (auto q : w16) cudaFree(q);
  cudaFree(tmp); cudaFree(x); cudaFree(scale); cudaFree(bias); cudaFree(y); cudaFree(wdq); cudaFree(cref); cudaFree(ref); cudaFree(err);
}

int main(int argc, char** argv) {
  const char* lib = getenv("CUBLAS_LIB");
  void* hl = dlopen(lib ? lib : "libcublas.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!hl) { fprintf(stderr, "dlopen cublas: %s\n", dlerror()); return 2; }
  pCreate create = (pCreate)dlsym(hl, "cublasCreate_v2");
  g_gemm = (pGemmEx)dlsym(hl, "cublasGemmEx");
  if (!create || !g_gemm || create(&g_h) != 0) { fprintf(stderr, "cublas init failed\n"); return 2; }
  int nsm; CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
  FILE* md = argc > 1 ? fopen(argv[1], "w") : nullptr;
  const char* hdr = "|    M |     K |     N | W     | wdtype     | mt S st | ms fxfuse | ms fx (batched avg) | ms cuBLAS mm | GB/s(w) | %4300 | max rel err | clusters/max active |\n"
                    "|---|---|---|---|---|---|---|---|---|---|---|---|---|";
  printf("%s\n", hdr); if (md) fprintf(md, "%s\n", hdr);
  std::vector<Case> cases;
  const char* mode = getenv("GEMV_MODE");
  if (mode && !strcmp(mode, "diag")) {
    for (int S : {1, 2, 4, 8}) {
      cases.push_back({W_BF16, 0, 1, 4096, 4096, 0, false, S});
      cases.push_back({W_BF16, 0, 1, 4096, 14336, 0, false, S});
      cases.push_back({W_I8, 1, 16, 4096, 14336, 0, false, S});
      cases.push_back({W_I8, 0, 1, 4096, 4096, 0, false, S});
    }
    for (auto& c : cases) run_case(c, nsm, md);
    return 0;
  }
  if (mode && !strcmp(mode, "ncu")) {
    cases.push_back({W_BF16, 0, 1, 4096, 14336, 0, false, 2});
    cases.push_back({W_I8, 0, 1, 4096, 4096, 0, false, 8});
    for (auto& c : cases) run_case(c, nsm, md);
    return 0;
  }
  // ragged / fallback correctness first
  for (int km = 0; km < 2; ++km) {
    cases.push_back({W_BF16, km, 5, 1000, 1000, 0, false});
    cases.push_back({W_I8, km, 3, 4100, 4104, 0, false});
    cases.push_back({W_FP8, km, 17, 1032, 776, 1, false});
    cases.push_back({W_I8, km, 9, 520, 1000, 0, true});
    cases.push_back({W_F16, km, 70, 2048, 1024, 0, false});
  }
  const long long shapes[3][2] = {{4096, 4096}, {4096, 14336}, {14336, 4096}};
  const long long Ms[4] = {1, 4, 16, 64};
  const WType wts[4] = {W_BF16, W_F16, W_I8, W_FP8};
  for (WType wt : wts)
    for (int km = 0; km < 2; ++km)
      for (auto& s : shapes)
        for (long long M : Ms) cases.push_back({wt, km, M, s[0], s[1], 0, false});
  cases.push_back({W_FP8, 1, 16, 4096, 14336, 1, false});
  cases.push_back({W_FP8, 0, 16, 4096, 14336, 1, false});
  for (auto& c : cases) run_case(c, nsm, md);
  printf("failures: %d\n", g_fail);
  if (md) fclose(md);
  return g_fail ? 1 : 0;
}
