// includes the generated TU via -include GEN
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cmath>
#include <cstring>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(e_)); exit(2);} } while (0)
static unsigned long long rs = 12345;
static unsigned rnd() { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (unsigned)rs; }
static float bf16r(float x) { unsigned u; memcpy(&u, &x, 4); u += 0x7fff + ((u >> 16) & 1); u &= 0xffff0000u; float y; memcpy(&y, &u, 4); return y; }
static unsigned short bf16bits(float x) { float y = bf16r(x); unsigned u; memcpy(&u, &y, 4); return u >> 16; }
int run(long long B, long long M, long long N, long long K, int S, int misalign, int pad) {
  const bool kmaj = FX_B_KMAJOR != 0;
  const int z = FX_B_ZERO;
  long long P = K / 2;
  // raw layout
  long long rsn, rsk, rsb;
  if (kmaj) { rsk = 1; rsn = P + pad; rsb = N * rsn; } else { rsn = 1; rsk = N + pad; rsb = P * rsk; }
  size_t rawBytes = B * rsb + 64;
  std::vector<unsigned char> raw(rawBytes);
  for (auto& x : raw) x = rnd() & 255;
  std::vector<float> A(B * M * K), s(N);
  std::vector<unsigned short> Ab(B * M * K), sb(N);
  for (size_t i = 0; i < A.size(); ++i) { A[i] = bf16r(((int)(rnd() % 2001) - 1000) / 500.f); Ab[i] = bf16bits(A[i]); }
  for (long long n = 0; n < N; ++n) { s[n] = bf16r(((rnd() % 1000) + 1) / 1000.f * ((rnd() & 1) ? 1 : -1)); sb[n] = bf16bits(s[n]); }
  unsigned char* draw; void* dA; void* ds; float* dout;
  CK(cudaMalloc(&draw, rawBytes + 16)); CK(cudaMalloc(&dA, Ab.size() * 2)); CK(cudaMalloc(&ds, N * 2)); CK(cudaMalloc(&dout, B * M * N * 4));
  CK(cudaMemcpy(draw + misalign, raw.data(), rawBytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dA, Ab.data(), Ab.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(ds, sb.data(), N * 2, cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0xff, B * M * N * 4));
  fxfuse::FxParams p; memset(&p, 0, sizeof p);
  p.B = B; p.M = M; p.N = N; p.K = K; p.num_inputs = 3; p.num_outputs = 1;
  p.in[0] = {dA, M * K, K, 1, 0};
  p.in[1] = {draw + misalign, rsb, 0, rsk, rsn};
  p.in[2] = {ds, 0, 0, 0, 1};
  p.out[0] = {dout, M * N, N, 1};
  using namespace fxgemv;
  dim3 grid((N + kNT - 1) / kNT, S, B * ((M + 8 * kMT - 1) / (8 * kMT)));
  CK(cudaFuncSetAttribute(GEN_NAME, cudaFuncAttributeMaxDynamicSharedMemorySize, GEN_SMEM));
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = grid; cfg.blockDim = dim3(128); cfg.dynamicSmemBytes = GEN_SMEM;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = 1; at[0].val.clusterDim.y = S; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = S > 1 ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, GEN_NAME, p));
  CK(cudaDeviceSynchronize());
  std::vector<float> out(B * M * N);
  CK(cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost));
  long long bad = 0; double worst = 0;
  std::vector<float> W(K * N);
  for (long long b = 0; b < B; ++b) {
    for (long long k = 0; k < K; ++k) for (long long n = 0; n < N; ++n) {
      unsigned char byte = raw[b * rsb + (k / 2) * rsk + n * rsn];
      int nib = (byte >> (4 * (k & 1))) & 15;
      W[k * N + n] = bf16r((float)(nib - z) * s[n]);
    }
    for (long long m = 0; m < M; ++m) for (long long n = 0; n < N; ++n) {
      double acc = 0, mag = 0;
      for (long long k = 0; k < K; ++k) { double t = (double)A[(b * M + m) * K + k] * W[k * N + n]; acc += t; mag += fabs(t); }
      double g = out[(b * M + m) * N + n];
      double err = fabs(g - acc) / (mag + 1e-30);
      if (!(err < 1e-5)) { if (bad < 3) printf("  mismatch b%lld m%lld n%lld got %g want %g\n", b, m, n, g, acc); ++bad; }
      if (err > worst || err != err) worst = err;
    }
  }
  printf("%s B%lld M%lld N%lld K%lld S%d mis%d pad%d: %s (bad %lld, worst %.3g)\n", kmaj ? "NK" : "KN", B, M, N, K, S, misalign, pad, bad ? "FAIL" : "ok", bad, worst);
  cudaFree(draw); cudaFree(dA); cudaFree(ds); cudaFree(dout);
  return bad ? 1 : 0;
}
int main() {
  using namespace fxgemv;
  printf("config kNT %d kKT %d kMT %d stages %d wgmma %d z %d arch-kmajor %d\n", kNT, kKT, kMT, kStages, (int)kWgmma, FX_B_ZERO, FX_B_KMAJOR);
  int f = 0;
  const long long Ms[] = {1, 8 * kMT, 8 * kMT - 3};
  for (long long M : Ms) {
    if (M < 1) continue;
    f += run(1, M, 512, 2048, 1, 0, 0);
    f += run(2, M, 384, 1024, 2, 0, 0);
    f += run(1, M, 520, 4096, 4, 0, 0);     // ragged N, split 4
    f += run(1, M, 256, 2048 + 64, 2, 0, 0);  // ragged K (last stage)
    f += run(1, M, 256, 2050, 1, 0, 0);    // K/2 odd: NK not fast
    f += run(1, M, 256, 1024, 1, 1, 0);    // misaligned pointer
    f += run(1, M, 256, 1024, 1, 0, 16);   // padded rows, still fast
    f += run(1, M, 256, 1024, 8, 0, 0);    // split 8 over 8 steps
  }
  printf("TOTAL FAIL %d\n", f);
  return f;
}
