// Chain spec:
//   fxfuse.chain v1
//   gemm mm
//   %0 = input 0 bf16 [m,k]
//   %1 = input 1 bf16 [k,n]
//   %2 = mm %0 %1 : bf16
//   %3 = const 0 : f32
//   %4 = gt %2 %3 : bool
//   %5 = const 0.10000000000000001 : f32
//   %6 = mul %2 %5 : bf16
//   %7 = where %4 %2 %6 : bf16
//   %8 = input 2 bf16 [m,n]
//   %9 = le %7 %8 : bool
//   %10 = ne %9 %4 : bool
//   %11 = eq %7 %8 : bool
//   %12 = lt %7 %3 : bool
//   %13 = ge %7 %8 : bool
//   %14 = where %10 %11 %12 : bool
//   %15 = where %14 %13 %4 : bool
//   output %7
//   output %15
// Kernel config: sm80_mma 128x128x32 s2 t256
#define FX_KERNEL_NAME fxfuse_2dc2de2f8a4d8c96
#define FX_BM 128
#define FX_BN 128
#define FX_BK 32
#define FX_STAGES 2
#define FX_THREADS 256
#define FX_WARPS_M 2
#define FX_WARPS_N 4

// Operands as the MMA sees them (docs/interfaces.md, kernel-template hooks).
using FxElemA = __nv_bfloat16;
using FxElemB = __nv_bfloat16;
#define FX_ELEM_F32 0
#define FX_ELEM_F16 0
#define FX_ELEM_BF16 1
#define FX_BATCHED 0
#define FX_A_PLAIN 1
#define FX_A_SLOT 0
#define FX_A_KMAJOR 1
#define FX_B_PLAIN 1
#define FX_B_SLOT 1
#define FX_B_KMAJOR 0
#define FX_B_QUANT 0

// Address of element (m, k) of %0 (input 0).
__device__ __forceinline__ const FxElemA* fx_addr_a(const fxfuse::FxParams& p, long long b, long long m, long long k) {
  (void)b;
  return reinterpret_cast<const FxElemA*>(p.in[0].ptr) + (m * p.in[0].sm + k * p.in[0].sk);
}

// A operand element (m, k) of %0.
__device__ __forceinline__ FxElemA fx_load_a(const fxfuse::FxParams& p, long long b, long long m, long long k) {
  (void)b;
  return *fx_addr_a(p, b, m, k);  // %0 = input 0 bf16 [m,k]
}

// Address of element (k, n) of %1 (input 1).
__device__ __forceinline__ const FxElemB* fx_addr_b(const fxfuse::FxParams& p, long long b, long long k, long long n) {
  (void)b;
  return reinterpret_cast<const FxElemB*>(p.in[1].ptr) + (k * p.in[1].sk + n * p.in[1].sn);
}

// B operand element (k, n) of %1.
__device__ __forceinline__ FxElemB fx_load_b(const fxfuse::FxParams& p, long long b, long long k, long long n) {
  (void)b;
  return *fx_addr_b(p, b, k, n);  // %1 = input 1 bf16 [k,n]
}

struct FxOutValues {
  float o0;  // output %7
  bool o1;  // output %15
};

// Every output of element (b, m, n), from the fp32 accumulator of %2.
__device__ __forceinline__ FxOutValues fx_epilogue_values(const fxfuse::FxParams& p, long long b, long long m, long long n, float acc) {
  (void)p; (void)b; (void)m; (void)n;
  const float v2 = fx_round_bf16(acc);  // %2 = mm %0 %1 : bf16
  const float v3 = 0.0f;  // %3 = const 0 : f32
  const bool v4 = fx_round_bool((v2 > v3));  // %4 = gt %2 %3 : bool
  const float v5 = 0.100000001f;  // %5 = const 0.10000000000000001 : f32
  const float v6 = fx_round_bf16((v2 * v5));  // %6 = mul %2 %5 : bf16
  const float v7 = fx_round_bf16((v4 ? v2 : v6));  // %7 = where %4 %2 %6 : bf16
  const float v8 = fx_ld_bf16(p.in[2].ptr, m * p.in[2].sm + n * p.in[2].sn);  // %8 = input 2 bf16 [m,n]
  const bool v9 = fx_round_bool((v7 <= v8));  // %9 = le %7 %8 : bool
  const bool v10 = fx_round_bool((v9 != v4));  // %10 = ne %9 %4 : bool
  const bool v11 = fx_round_bool((v7 == v8));  // %11 = eq %7 %8 : bool
  const bool v12 = fx_round_bool((v7 < v3));  // %12 = lt %7 %3 : bool
  const bool v13 = fx_round_bool((v7 >= v8));  // %13 = ge %7 %8 : bool
  const bool v14 = fx_round_bool((v10 ? v11 : v12));  // %14 = where %10 %11 %12 : bool
  const bool v15 = fx_round_bool((v14 ? v13 : v4));  // %15 = where %14 %13 %4 : bool
  return FxOutValues{v7, v15};
}

__device__ __forceinline__ void fx_epilogue(const fxfuse::FxParams& p, long long b, long long m, long long n, float acc) {
  const FxOutValues o = fx_epilogue_values(p, b, m, n, acc);
  fx_st_bf16(p.out[0].ptr, m * p.out[0].sm + n * p.out[0].sn, o.o0);
  fx_st_bool(p.out[1].ptr, m * p.out[1].sm + n * p.out[1].sn, o.o1);
}

// Columns n and n + 1 of row m (n even; n + 1 may be N, then only n is stored).
__device__ __forceinline__ void fx_epilogue2(const fxfuse::FxParams& p, long long b, long long m, long long n, float acc0, float acc1) {
  const bool has1 = n + 1 < p.N;
  const FxOutValues o0 = fx_epilogue_values(p, b, m, n, acc0);
  FxOutValues o1 = o0;
  if (has1) o1 = fx_epilogue_values(p, b, m, n + 1, acc1);
  const long long off0 = m * p.out[0].sm + n * p.out[0].sn;
  if (has1 && p.out[0].sn == 1 && fx_aligned4(p.out[0].ptr, off0, 2)) {
    fx_st2_bf16(p.out[0].ptr, off0, o0.o0, o1.o0);
  } else {
    fx_st_bf16(p.out[0].ptr, off0, o0.o0);
    if (has1) fx_st_bf16(p.out[0].ptr, m * p.out[0].sm + (n + 1) * p.out[0].sn, o1.o0);
  }
  fx_st_bool(p.out[1].ptr, m * p.out[1].sm + n * p.out[1].sn, o0.o1);
  if (has1) fx_st_bool(p.out[1].ptr, m * p.out[1].sm + (n + 1) * p.out[1].sn, o1.o1);
}

__device__ __forceinline__ bool fx_epilogue2_vec_ok(const fxfuse::FxParams& p) {
  (void)p;
  return true && p.out[0].sn == 1 && p.out[0].sm % 2 == 0 && fx_aligned4(p.out[0].ptr, 0, 2) && p.in[2].sn == 1 && p.in[2].sm % 2 == 0 && fx_aligned4(p.in[2].ptr, 0, 2);
}

struct FxCol {
  // the epilogue's values that depend on (b, n) only, for one column
};

// The column values of column n (16-bit inputs along n passed in, loaded in pairs).
__device__ __forceinline__ FxCol fx_epilogue_col(const fxfuse::FxParams& p, long long b, long long n) {
  (void)p; (void)b; (void)n;
  return FxCol{};
}

// The column values of columns n and n + 1 (n even); fx_epilogue2_vec_ok(p) holds.
__device__ __forceinline__ void fx_epilogue_cols(const fxfuse::FxParams& p, long long b, long long n, FxCol& c0, FxCol& c1) {
  c0 = fx_epilogue_col(p, b, n);
  c1 = fx_epilogue_col(p, b, n + 1);
}

// Columns n and n + 1 of row m, both inside the output; fx_epilogue2_vec_ok(p) holds;
// c0, c1 from fx_epilogue_cols(p, b, n, c0, c1).
__device__ __forceinline__ void fx_epilogue2_vec(const fxfuse::FxParams& p, long long b, long long m, long long n, float acc0, float acc1, const FxCol& c0, const FxCol& c1) {
  const float2 in8 = fx_ld2_bf16(p.in[2].ptr, m * p.in[2].sm + n);  // %8 = input 2 bf16 [m,n]
  float v2_0, v2_1;  // %2 = mm %0 %1 : bf16
  fx_round2_bf16(acc0, acc1, v2_0, v2_1);
  const float v3_0 = 0.0f, v3_1 = 0.0f;  // %3 = const 0 : f32
  const bool v4_0 = fx_round_bool((v2_0 > v3_0)), v4_1 = fx_round_bool((v2_1 > v3_1));  // %4 = gt %2 %3 : bool
  const float v5_0 = 0.100000001f, v5_1 = 0.100000001f;  // %5 = const 0.10000000000000001 : f32
  float v6_0, v6_1;  // %6 = mul %2 %5 : bf16
  fx_round2_bf16((v2_0 * v5_0), (v2_1 * v5_1), v6_0, v6_1);
  float v7_0, v7_1;  // %7 = where %4 %2 %6 : bf16
  fx_round2_bf16((v4_0 ? v2_0 : v6_0), (v4_1 ? v2_1 : v6_1), v7_0, v7_1);
  const float v8_0 = in8.x, v8_1 = in8.y;  // %8 = input 2 bf16 [m,n]
  const bool v9_0 = fx_round_bool((v7_0 <= v8_0)), v9_1 = fx_round_bool((v7_1 <= v8_1));  // %9 = le %7 %8 : bool
  const bool v10_0 = fx_round_bool((v9_0 != v4_0)), v10_1 = fx_round_bool((v9_1 != v4_1));  // %10 = ne %9 %4 : bool
  const bool v11_0 = fx_round_bool((v7_0 == v8_0)), v11_1 = fx_round_bool((v7_1 == v8_1));  // %11 = eq %7 %8 : bool
  const bool v12_0 = fx_round_bool((v7_0 < v3_0)), v12_1 = fx_round_bool((v7_1 < v3_1));  // %12 = lt %7 %3 : bool
  const bool v13_0 = fx_round_bool((v7_0 >= v8_0)), v13_1 = fx_round_bool((v7_1 >= v8_1));  // %13 = ge %7 %8 : bool
  const bool v14_0 = fx_round_bool((v10_0 ? v11_0 : v12_0)), v14_1 = fx_round_bool((v10_1 ? v11_1 : v12_1));  // %14 = where %10 %11 %12 : bool
  const bool v15_0 = fx_round_bool((v14_0 ? v13_0 : v4_0)), v15_1 = fx_round_bool((v14_1 ? v13_1 : v4_1));  // %15 = where %14 %13 %4 : bool
  const FxOutValues o0{v7_0, v15_0}, o1{v7_1, v15_1};
  fx_st2_bf16(p.out[0].ptr, m * p.out[0].sm + n, o0.o0, o1.o0);
  fx_st_bool(p.out[1].ptr, m * p.out[1].sm + n * p.out[1].sn, o0.o1);
  fx_st_bool(p.out[1].ptr, m * p.out[1].sm + (n + 1) * p.out[1].sn, o1.o1);
}
