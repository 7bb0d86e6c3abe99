// Chain spec:
//   fxfuse.chain v1
//   gemm mm
//   %0 = input 0 f32 [m,k]
//   %1 = input 1 f32 [n,k]
//   %2 = mm %0 %1 : f32
//   %3 = input 2 f32 [n]
//   %4 = add %2 %3 : f32
//   %5 = relu %4 : f32
//   output %5
// Kernel config: simt 128x128x16 s2 t256
#define FX_KERNEL_NAME fxfuse_7c5e4b9e04a63f2a
#define FX_BM 128
#define FX_BN 128
#define FX_BK 16
#define FX_STAGES 2
#define FX_THREADS 256
#define FX_WARPS_M 2
#define FX_WARPS_N 4

// Operands as the MMA sees them (docs/interfaces.md, kernel-template hooks).
using FxElemA = float;
using FxElemB = float;
#define FX_ELEM_F32 1
#define FX_ELEM_F16 0
#define FX_ELEM_BF16 0
#define FX_BATCHED 0
#define FX_A_PLAIN 1
#define FX_A_SLOT 0
#define FX_A_KMAJOR 1
#define FX_B_PLAIN 1
#define FX_B_SLOT 1
#define FX_B_KMAJOR 1
#define FX_B_QUANT 0

// Address of element (m, k) of %0 (input 0).
__device__ __forceinline__ const FxElemA* fx_addr_a(const fxfuse::FxParams& p, long long b, long long m, long long k) {
  (void)b;
  return reinterpret_cast<const FxElemA*>(p.in[0].ptr) + (m * p.in[0].sm + k * p.in[0].sk);
}

// A operand element (m, k) of %0.
__device__ __forceinline__ FxElemA fx_load_a(const fxfuse::FxParams& p, long long b, long long m, long long k) {
  (void)b;
  return *fx_addr_a(p, b, m, k);  // %0 = input 0 f32 [m,k]
}

// Address of element (k, n) of %1 (input 1).
__device__ __forceinline__ const FxElemB* fx_addr_b(const fxfuse::FxParams& p, long long b, long long k, long long n) {
  (void)b;
  return reinterpret_cast<const FxElemB*>(p.in[1].ptr) + (n * p.in[1].sn + k * p.in[1].sk);
}

// B operand element (k, n) of %1.
__device__ __forceinline__ FxElemB fx_load_b(const fxfuse::FxParams& p, long long b, long long k, long long n) {
  (void)b;
  return *fx_addr_b(p, b, k, n);  // %1 = input 1 f32 [n,k]
}

struct FxOutValues {
  float o0;  // output %5
};

// Every output of element (b, m, n), from the fp32 accumulator of %2.
__device__ __forceinline__ FxOutValues fx_epilogue_values(const fxfuse::FxParams& p, long long b, long long m, long long n, float acc) {
  (void)p; (void)b; (void)m; (void)n;
  const float v2 = acc;  // %2 = mm %0 %1 : f32
  const float v3 = fx_ld_f32(p.in[2].ptr, n * p.in[2].sn);  // %3 = input 2 f32 [n]
  const float v4 = (v2 + v3);  // %4 = add %2 %3 : f32
  const float v5 = fx_relu(v4);  // %5 = relu %4 : f32
  return FxOutValues{v5};
}

__device__ __forceinline__ void fx_epilogue(const fxfuse::FxParams& p, long long b, long long m, long long n, float acc) {
  const FxOutValues o = fx_epilogue_values(p, b, m, n, acc);
  fx_st_f32(p.out[0].ptr, m * p.out[0].sm + n * p.out[0].sn, o.o0);
}

// Columns n and n + 1 of row m (n even; n + 1 may be N, then only n is stored).
__device__ __forceinline__ void fx_epilogue2(const fxfuse::FxParams& p, long long b, long long m, long long n, float acc0, float acc1) {
  const bool has1 = n + 1 < p.N;
  const FxOutValues o0 = fx_epilogue_values(p, b, m, n, acc0);
  FxOutValues o1 = o0;
  if (has1) o1 = fx_epilogue_values(p, b, m, n + 1, acc1);
  fx_st_f32(p.out[0].ptr, m * p.out[0].sm + n * p.out[0].sn, o0.o0);
  if (has1) fx_st_f32(p.out[0].ptr, m * p.out[0].sm + (n + 1) * p.out[0].sn, o1.o0);
}

__device__ __forceinline__ bool fx_epilogue2_vec_ok(const fxfuse::FxParams& p) {
  (void)p;
  return true;
}

struct FxCol {
  // the epilogue's values that depend on (b, n) only, for one column
  float v3;  // %3 = input 2 f32 [n]
};

// The column values of column n (16-bit inputs along n passed in, loaded in pairs).
__device__ __forceinline__ FxCol fx_epilogue_col(const fxfuse::FxParams& p, long long b, long long n) {
  (void)p; (void)b; (void)n;
  const float v3 = fx_ld_f32(p.in[2].ptr, n * p.in[2].sn);  // %3 = input 2 f32 [n]
  return FxCol{v3};
}

// The column values of columns n and n + 1 (n even); fx_epilogue2_vec_ok(p) holds.
__device__ __forceinline__ void fx_epilogue_cols(const fxfuse::FxParams& p, long long b, long long n, FxCol& c0, FxCol& c1) {
  c0 = fx_epilogue_col(p, b, n);
  c1 = fx_epilogue_col(p, b, n + 1);
}

// Columns n and n + 1 of row m, both inside the output; fx_epilogue2_vec_ok(p) holds;
// c0, c1 from fx_epilogue_cols(p, b, n, c0, c1).
__device__ __forceinline__ void fx_epilogue2_vec(const fxfuse::FxParams& p, long long b, long long m, long long n, float acc0, float acc1, const FxCol& c0, const FxCol& c1) {
  const float v2_0 = acc0, v2_1 = acc1;  // %2 = mm %0 %1 : f32
  const float v3_0 = c0.v3, v3_1 = c1.v3;  // %3 = input 2 f32 [n]
  const float v4_0 = (v2_0 + v3_0), v4_1 = (v2_1 + v3_1);  // %4 = add %2 %3 : f32
  const float v5_0 = fx_relu(v4_0), v5_1 = fx_relu(v4_1);  // %5 = relu %4 : f32
  const FxOutValues o0{v5_0}, o1{v5_1};
  fx_st_f32(p.out[0].ptr, m * p.out[0].sm + n * p.out[0].sn, o0.o0);
  fx_st_f32(p.out[0].ptr, m * p.out[0].sm + (n + 1) * p.out[0].sn, o1.o0);
}
