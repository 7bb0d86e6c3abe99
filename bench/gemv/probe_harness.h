// What the standalone int8 gemv probes (reg_stream.cu, wgmma_rs_int8.cu) share: random fills, the fp32
// reference of bf16(x @ bf16(w * s)), the split-K finish, the copy-bandwidth anchor, the two timings
// (alone and back to back) and the summary of the fastest correct cases.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.h"

// A kernel whose epilogue adds a bias (the scale vector stands in for it): the reference gets it too.
__global__ void add_bias(float* ref, const __nv_bfloat16* bias, long long n, int N) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) ref[i] += __bfloat162float(bias[i % N]);
}
// KS > 1: the fp32 sums to the bf16 output (outside the timed kernel).
__global__ void finish(const float* acc, __nv_bfloat16* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2bfloat16(acc[i]);
}
// fp32 reference of bf16(x @ bf16(w * s)) (the dequantized weight rounded once, as eager); weight int8
// [K, N], grid (N / 128 rounded up, rows of x), 128 threads.
__global__ void reference(const int8_t* w, const __nv_bfloat16* x, const __nv_bfloat16* scale, float* ref, int K, int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N) return;
  const float s = __bfloat162float(scale[n]);
  float a = 0.f;
  for (int k = 0; k < K; ++k)
    a += __bfloat162float(x[(long long)m * K + k]) * __bfloat162float(__float2bfloat16(float(w[(long long)k * N + n]) * s));
  ref[(long long)m * N + n] = a;
}
__global__ void fill_random(uint32_t* p, long long words, uint32_t seed) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < words) {
    uint32_t v = uint32_t(i) * 2654435761u ^ seed;
    v ^= v >> 13, v *= 0x5bd1e995u, v ^= v >> 15;
    p[i] = v;
  }
}
__global__ void fill_bf16(__nv_bfloat16* p, long long n, uint32_t seed, float lo, float hi) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    uint32_t v = uint32_t(i) * 2654435761u ^ seed;
    v ^= v >> 13, v *= 0x5bd1e995u, v ^= v >> 15;
    p[i] = __float2bfloat16(lo + (hi - lo) * float(v & 0xffffff) / float(0x1000000));
  }
}
// Keeps the GPU busy while the host queues an event, the kernel and an event (so that the launch's
// host latency is not timed).
__global__ void spin(long long ns) {
  const long long t0 = clock64();
  while (clock64() - t0 < ns * 2) {
  }
}

// The weight copies a case rotates over: every `wbytes` slice of the `n` buffers of `buf_bytes` each,
// so that a small weight (4096 x 4096 int8: 12 slices, 201 MB) is read from HBM, not from the 50 MB L2,
// as bench_decode.py's rotation does.
inline std::vector<int8_t*> weight_slices(int8_t* const* bufs, int n, long long buf_bytes, long long wbytes) {
  std::vector<int8_t*> slices;
  for (int i = 0; i < n; ++i)
    for (long long o = 0; o + wbytes <= buf_bytes; o += wbytes) slices.push_back(bufs[i] + o);
  return slices;
}

// Fresh random inputs of a case: every weight slice (int8, uniform bytes), x in [-1, 1), the scale in
// [0.001, 0.02); `seed` advances.
inline void fill_case(const std::vector<int8_t*>& ws, long long wbytes, __nv_bfloat16* x, long long xn, __nv_bfloat16* s,
                      int n, uint32_t& seed) {
  for (auto p : ws) fill_random<<<(wbytes / 4 + 255) / 256, 256>>>((uint32_t*)p, wbytes / 4, seed++);
  fill_bf16<<<(xn + 255) / 256, 256>>>(x, xn, seed++, -1.f, 1.f);
  fill_bf16<<<(n + 255) / 256, 256>>>(s, n, seed++, 0.001f, 0.02f);
  CHECK(cudaGetLastError());
}

// Device-to-device copy of 1 GiB (read + write), GB/s: the anchor of the % of copy column.
inline double copy_bandwidth_gbs() {
  void *a, *b;
  const size_t bytes = 1ull << 30;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  for (int i = 0; i < 3; ++i) CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
  cudaEventRecord(e0);
  for (int i = 0; i < 10; ++i) CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaFree(a), cudaFree(b);
  return 2.0 * bytes * 10 / (ms * 1e-3) / 1e9;
}

// Max |out - ref| over max |ref| of `n` outputs (bf16 on the device against fp32 on the device);
// infinite where an output is NaN (the poison left unwritten).
inline double max_relative_error(const __nv_bfloat16* out, const float* ref, long long n) {
  std::vector<__nv_bfloat16> o(n);
  std::vector<float> r(n);
  CHECK(cudaMemcpy(o.data(), out, o.size() * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(r.data(), ref, r.size() * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    const double d = double(__bfloat162float(o[i])) - r[i];
    if (std::isnan(d)) return INFINITY;
    num = std::max(num, std::fabs(d));
    den = std::max(den, (double)std::fabs(r[i]));
  }
  return num / den;
}

// The kernel's time in ms: alone (events around each launch after a spin, median of 200, `prepare`
// before each, e.g. the split-K buffer's memset, outside the events) and back to back as
// bench_decode.py times it (20 launches between two events after a spin, median of 15; without
// `prepare`, so split-K sums are wrong there but the kernel's time is not). `launch(i)` launches the
// kernel on weight copy i.
template <class Launch, class Prepare>
std::pair<double, double> time_kernel(Launch launch, Prepare prepare) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  std::vector<float> alone, b2b;
  for (int i = 0; i < 230; ++i) {
    prepare();
    spin<<<1, 1>>>(20000);
    cudaEventRecord(e0);
    launch(i);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i >= 30) alone.push_back(ms);
  }
  for (int i = 0; i < 15; ++i) {
    spin<<<1, 1>>>(50000);
    cudaEventRecord(e0);
    for (int j = 0; j < 20; ++j) launch(j);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    b2b.push_back(ms / 20);
  }
  CHECK(cudaGetLastError());
  std::sort(alone.begin(), alone.end());
  std::sort(b2b.begin(), b2b.end());
  return {alone[alone.size() / 2], b2b[b2b.size() / 2]};
}

struct ProbeRow {
  std::string shape, name;
  int mode;  // 0: a mode whose output is not checked
  double ms, b2b, pct, rel;
};
// The three fastest per shape and mode; a wrong answer (relative error 2e-2 or more) never counts.
inline void print_fastest(const std::vector<ProbeRow>& rows, const char* legend) {
  std::printf("\nfastest per shape and mode (%s)\n", legend);
  std::vector<std::pair<std::string, int>> keys;
  for (const ProbeRow& r : rows)
    if (std::find(keys.begin(), keys.end(), std::make_pair(r.shape, r.mode)) == keys.end()) keys.push_back({r.shape, r.mode});
  for (const auto& k : keys) {
    std::vector<ProbeRow> sel;
    for (const ProbeRow& r : rows)
      if (r.shape == k.first && r.mode == k.second && (r.mode == 0 || r.rel < 2e-2)) sel.push_back(r);
    std::sort(sel.begin(), sel.end(), [](const ProbeRow& a, const ProbeRow& b) { return a.ms < b.ms; });
    for (size_t i = 0; i < sel.size() && i < 3; ++i)
      std::printf("  %-32s %9.4f ms (back to back %.4f) %6.1f%% of copy  rel err %.2e\n", sel[i].name.c_str(), sel[i].ms,
                  sel[i].b2b, sel[i].pct, sel[i].rel);
  }
}

// The device buffers of an M-row int8 K x N probe (wgmma_rs_int8.cu, ws_gemv_int8.cu): kRot weight copies of
// the largest case (14336 x 4096; a case rotates over every slice of them: weight_slices), x, the scale,
// the bf16 output, the split-K sums and the fp32 reference.
struct ProbeBuffers {
  static constexpr long long kMaxW = 14336LL * 4096;
  static constexpr int kRot = 4;
  int m;  // rows allocated
  int8_t* w[kRot];
  __nv_bfloat16 *x, *s, *out;
  float *acc, *ref;
  explicit ProbeBuffers(int rows) : m(rows) {
    for (auto& p : w) CHECK(cudaMalloc(&p, kMaxW));
    CHECK(cudaMalloc(&x, m * 14336LL * 2));
    CHECK(cudaMalloc(&s, 14336LL * 2));
    CHECK(cudaMalloc(&out, m * 14336LL * 2));
    CHECK(cudaMalloc(&acc, m * 14336LL * 4));
    CHECK(cudaMalloc(&ref, m * 14336LL * 4));
  }
};

// One case of such a probe at m <= b.m rows, printed and returned as a row: fresh inputs over every weight slice; where
// `checked`, one launch on a NaN-poisoned output (ks > 1: the split-K sums zeroed first and finished
// after, outside the kernel) against the fp32 reference (plus the scale vector as a bias where `bias`);
// then time_kernel. make_launch(slices) gives the launch of call i
// (its weight slice i % size: the slices as pointers, or tensor maps built from them).
inline ProbeRow run_probe_case(ProbeBuffers& b, int m, const std::string& name, int mode, bool checked, int K, int N, int ks,
                               bool bias, const std::function<std::function<void(int)>(const std::vector<int8_t*>&)>& make_launch,
                               uint32_t& seed, double copy_gbs) {
  const long long wbytes = (long long)K * N;
  const std::vector<int8_t*> ws = weight_slices(b.w, ProbeBuffers::kRot, ProbeBuffers::kMaxW, wbytes);  // ws[0] == w[0]
  fill_case(ws, wbytes, b.x, m * (long long)K, b.s, N, seed);
  const std::function<void(int)> launch = make_launch(ws);
  const long long outs = (long long)m * N;
  double rel = 0;
  if (checked) {  // poisoned output, fp32 reference, max error over max |reference|
    CHECK(cudaMemset(b.out, 0xff, outs * 2));  // NaN
    if (ks > 1) CHECK(cudaMemset(b.acc, 0, outs * 4));
    launch(0);
    if (ks > 1) finish<<<(outs + 255) / 256, 256>>>(b.acc, b.out, outs);
    reference<<<dim3((N + 127) / 128, m), 128>>>(b.w[0], b.x, b.s, b.ref, K, N);
    if (bias) add_bias<<<(outs + 255) / 256, 256>>>(b.ref, b.s, outs, N);
    CHECK(cudaDeviceSynchronize());
    rel = max_relative_error(b.out, b.ref, outs);
  }
  // the kernel alone (split-K's memset and finish apart) and back to back
  const auto [ms, ms_b2b] = time_kernel(launch, [&] {
    if (ks > 1) CHECK(cudaMemsetAsync(b.acc, 0, outs * 4));
  });
  const double gbs = wbytes / (ms * 1e-3) / 1e9;
  std::printf("%-30s %9.4f %9.4f %9.0f %6.1f%% %9.2e\n", name.c_str(), ms, ms_b2b, gbs, 100.0 * gbs / copy_gbs, rel);
  std::fflush(stdout);
  return {std::to_string(K) + "x" + std::to_string(N) + " m" + std::to_string(m), name, mode, ms, ms_b2b,
          100.0 * gbs / copy_gbs, rel};
}
