// fxfuse device prelude: loads, stores, rounding and the pointwise helpers that the
// expressions of codegen/pointwise_table.cpp call. Embedded in every generated kernel after
// kernel_abi.h. Every op computes in fp32 and each value is rounded to its dtype, as eager
// PyTorch does per op (docs/spec.md); the helpers mirror ATen's CUDA functors.
#pragma once

// Not static: an unused static function draws a warning, and most kernels use few of these.
#define FX_DEVICE __device__ __forceinline__

// ---- Rounding an fp32 result to a value's dtype (the value stays held as float). ----
FX_DEVICE float fx_round_f32(float x) { return x; }
FX_DEVICE float fx_round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
FX_DEVICE float fx_round_f16(float x) { return __half2float(__float2half_rn(x)); }
#ifdef FX_USE_FP8
// Non-saturating like torch: e4m3fn overflows to NaN, e5m2 to inf.
FX_DEVICE float fx_round_f8e4m3(float x) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3), __NV_E4M3)));
}
FX_DEVICE float fx_round_f8e5m2(float x) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2), __NV_E5M2)));
}
#endif
// float → int truncates toward zero (cvt.rzi saturates on the GPU, like torch's CUDA casts);
// uint8 goes through int64 as c10::convert does, so negative values wrap.
FX_DEVICE float fx_round_i8(float x) { return (float)(signed char)x; }
FX_DEVICE float fx_round_u8(float x) { return (float)(unsigned char)(long long)x; }
FX_DEVICE float fx_round_i32(float x) { return (float)(int)x; }
FX_DEVICE float fx_round_i64(float x) { return (float)(long long)x; }
FX_DEVICE bool fx_round_bool(float x) { return x != 0.0f; }

// ---- Conversions of one stored element to the value type, and loads built on them. ----
FX_DEVICE float fx_cvt_f32(float r) { return r; }
FX_DEVICE float fx_cvt_bf16(__nv_bfloat16 r) { return __bfloat162float(r); }
FX_DEVICE float fx_cvt_f16(__half r) { return __half2float(r); }
FX_DEVICE float fx_cvt_i8(signed char r) { return (float)r; }
FX_DEVICE float fx_cvt_u8(unsigned char r) { return (float)r; }
FX_DEVICE float fx_cvt_i32(int r) { return (float)r; }
FX_DEVICE float fx_cvt_i64(long long r) { return (float)r; }
FX_DEVICE bool fx_cvt_bool(bool r) { return r; }
#ifdef FX_USE_FP8
FX_DEVICE float fx_cvt_f8e4m3(__nv_fp8_storage_t r) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(r, __NV_E4M3))); }
FX_DEVICE float fx_cvt_f8e5m2(__nv_fp8_storage_t r) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(r, __NV_E5M2))); }
#endif
// fx_ld_<dtype>(ptr, i): element i of an input of that dtype, as the value type. Read through
// the non-coherent path (ld.global.nc): the op's outputs are fresh tensors, so no input is
// written while the kernel runs, and the compiler may then batch the epilogue's loads of many
// elements instead of waiting for each behind the previous element's stores (bench/sm90/NOTES.md
// run 6: bias+GELU 1.87x -> 1.55x cuBLAS at K=1024).
template <typename T> FX_DEVICE T fx_ldg(const T* p) { return __ldg(p); }
template <> FX_DEVICE bool fx_ldg<bool>(const bool* p) { return *p; }  // no __ldg overload for bool
#define FX_DEFINE_LOAD(name, T) \
  FX_DEVICE auto fx_ld_##name(const void* p, long long i) { return fx_cvt_##name(fx_ldg((const T*)p + i)); }
FX_DEFINE_LOAD(f32, float)
FX_DEFINE_LOAD(bf16, __nv_bfloat16)
FX_DEFINE_LOAD(f16, __half)
FX_DEFINE_LOAD(i8, signed char)
FX_DEFINE_LOAD(u8, unsigned char)
FX_DEFINE_LOAD(i32, int)
FX_DEFINE_LOAD(i64, long long)
FX_DEFINE_LOAD(bool, bool)
#ifdef FX_USE_FP8
FX_DEFINE_LOAD(f8e4m3, __nv_fp8_storage_t)
FX_DEFINE_LOAD(f8e5m2, __nv_fp8_storage_t)
#endif
#undef FX_DEFINE_LOAD
// fx_ld_nibble_<dtype>(ptr, i, k): the 4-bit value (0..15) of k in element i of an input whose dim 'p' packs k
// (spec.md), bits [4 (k % per), +4) with per = 2 x the element's bytes; an arithmetic shift of a signed element
// then & 15 is that nibble too, as the graph's `(w >> s) & 15` made it.
#define FX_DEFINE_NIBBLE_LOAD(name, T, per)                                   \
  FX_DEVICE float fx_ld_nibble_##name(const void* p, long long i, long long k) { \
    return (float)((fx_ldg((const T*)p + i) >> ((int)(k & (per - 1)) << 2)) & 15); \
  }
FX_DEFINE_NIBBLE_LOAD(u8, unsigned char, 2)
FX_DEFINE_NIBBLE_LOAD(i8, signed char, 2)
FX_DEFINE_NIBBLE_LOAD(i32, int, 8)
#undef FX_DEFINE_NIBBLE_LOAD
// Elements i, i + 1 of a 16-bit input in one 4-byte load (the caller checked the alignment).
FX_DEVICE float2 fx_ld2_bf16(const void* p, long long i) {
  return __bfloat1622float2(__ldg((const __nv_bfloat162*)((const __nv_bfloat16*)p + i)));
}
FX_DEVICE float2 fx_ld2_f16(const void* p, long long i) {
  return __half22float2(__ldg((const __half2*)((const __half*)p + i)));
}

// ---- Stores. The 16-bit ones round to nearest even: exact for a value already rounded to the
// dtype, and the only rounding of an output used by nothing else (hooks.cpp roundedByItsStore). ----
FX_DEVICE void fx_st_f32(void* p, long long i, float v) { ((float*)p)[i] = v; }
FX_DEVICE void fx_st_bf16(void* p, long long i, float v) { ((__nv_bfloat16*)p)[i] = __float2bfloat16_rn(v); }
FX_DEVICE void fx_st_f16(void* p, long long i, float v) { ((__half*)p)[i] = __float2half_rn(v); }
FX_DEVICE void fx_st_i8(void* p, long long i, float v) { ((signed char*)p)[i] = (signed char)v; }
FX_DEVICE void fx_st_u8(void* p, long long i, float v) { ((unsigned char*)p)[i] = (unsigned char)v; }
FX_DEVICE void fx_st_i32(void* p, long long i, float v) { ((int*)p)[i] = (int)v; }
FX_DEVICE void fx_st_i64(void* p, long long i, float v) { ((long long*)p)[i] = (long long)v; }
FX_DEVICE void fx_st_bool(void* p, long long i, bool v) { ((bool*)p)[i] = v; }
#ifdef FX_USE_FP8
FX_DEVICE void fx_st_f8e4m3(void* p, long long i, float v) {
  ((__nv_fp8_storage_t*)p)[i] = __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E4M3);
}
FX_DEVICE void fx_st_f8e5m2(void* p, long long i, float v) {
  ((__nv_fp8_storage_t*)p)[i] = __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E5M2);
}
#endif

// Two adjacent 16-bit elements i, i+1 in one 4-byte store, when the address allows it.
FX_DEVICE bool fx_aligned4(const void* p, long long i, int elem_bytes) {
  return ((unsigned long long)p + (unsigned long long)(i * elem_bytes)) % 4 == 0;
}
FX_DEVICE bool fx_aligned16(const void* p) { return (unsigned long long)p % 16 == 0; }
FX_DEVICE void fx_st2_bf16(void* p, long long i, float a, float b) {
  *(__nv_bfloat162*)((__nv_bfloat16*)p + i) = __floats2bfloat162_rn(a, b);
}
FX_DEVICE void fx_st2_f16(void* p, long long i, float a, float b) {
  *(__half2*)((__half*)p + i) = __floats2half2_rn(a, b);
}
// The same pair as one 32-bit word (element i in the low half), for a store staged in shared
// memory (the Hopper template's 16-byte stores).
FX_DEVICE unsigned int fx_pack2_bf16(float a, float b) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *(const unsigned int*)&v;
}
FX_DEVICE unsigned int fx_pack2_f16(float a, float b) {
  const __half2 v = __floats2half2_rn(a, b);
  return *(const unsigned int*)&v;
}
FX_DEVICE unsigned int fx_ld_u32(const void* p, long long i) { return __ldg((const unsigned int*)((const unsigned short*)p + i)); }
FX_DEVICE float2 fx_unpack2_bf16(unsigned int w) { return __bfloat1622float2(*(const __nv_bfloat162*)&w); }
FX_DEVICE float2 fx_unpack2_f16(unsigned int w) { return __half22float2(*(const __half2*)&w); }
// fx_round_* of two values by one conversion (cvt.rn.{bf16,f16}x2.f32) and two unpacks: the same
// bits as two fx_round_* calls, one instruction less per pair.
FX_DEVICE void fx_round2_bf16(float a, float b, float& ra, float& rb) {
  // the halves unpacked by integer ops: __bfloat1622float2 went through 16-bit registers (a PRMT
  // and a shift per element, more than the two fx_round_bf16 it replaces)
  const unsigned int w = fx_pack2_bf16(a, b);
  ra = __uint_as_float(w << 16);
  rb = __uint_as_float(w & 0xffff0000u);
}
FX_DEVICE void fx_round2_f16(float a, float b, float& ra, float& rb) {
  const float2 r = fx_unpack2_f16(fx_pack2_f16(a, b));
  ra = r.x;
  rb = r.y;
}
FX_DEVICE void fx_st_u32(void* p, long long i, unsigned int w) { *(unsigned int*)((unsigned short*)p + i) = w; }

// ---- Pointwise helpers (ATen's CUDA functors, in fp32). ----
FX_DEVICE float fx_nan() { return __int_as_float(0x7fffffff); }
// maximum/minimum/relu/clamp propagate NaN (fmaxf/fminf would drop it).
FX_DEVICE float fx_maximum(float a, float b) { return (a != a || b != b) ? fx_nan() : fmaxf(a, b); }
FX_DEVICE float fx_minimum(float a, float b) { return (a != a || b != b) ? fx_nan() : fminf(a, b); }
FX_DEVICE float fx_relu(float x) { return x != x ? x : fmaxf(x, 0.0f); }
// clamp(x, lo, hi) = min(max(x, lo), hi); a NaN x or bound propagates (ATen clamp_kernel).
FX_DEVICE float fx_clamp(float x, float lo, float hi) {
  if (x != x) return x;
  if (lo != lo) return lo;
  if (hi != hi) return hi;
  return fminf(fmaxf(x, lo), hi);
}
FX_DEVICE float fx_clamp_min(float x, float lo) {
  if (x != x) return x;
  return lo != lo ? lo : fmaxf(x, lo);
}
FX_DEVICE float fx_clamp_max(float x, float hi) {
  if (x != x) return x;
  return hi != hi ? hi : fminf(x, hi);
}
#ifdef FX_FAST_MATH
// FX_FAST_MATH: the generator sets it when every output of the chain is a 16- or 8-bit float.
// The exponential-based helpers then run on the MUFU: ex2.approx.ftz (relative error ~2^-22)
// and an approximate reciprocal, about 1e-6 relative in all, far below half an ulp of a 16-bit
// output. ftz flushes results below 2^-126 to zero; __expf's non-flushing form costs three
// more instructions per call (a range test and two fix-up multiplies) for values that are
// zero or below the resolution of every output this path serves.
FX_DEVICE float fx_exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// 1 / (1 + 2^a) on the MUFU: 0 once 1 + 2^a passes 2^126 (a > 126), where the exact value is
// below 1e-38.
FX_DEVICE float fx_inv_one_plus_exp2(float a) { return __fdividef(1.0f, 1.0f + fx_exp2_ftz(a)); }
#endif
constexpr float kFxLog2e = 1.4426950408889634f;

// tanh. Fast math: tanh(x) = 1 - 2 / (exp(2x) + 1), absolute error about 1e-7, with a series
// for small |x| where that form cancels. (tanh.approx.f32 is faster still but its 2^-11 error
// costs GELU several bf16 ulps for x < -2.) libm's tanhf costs the Hopper epilogue about 25 %
// of a 4096^3 GEMM. Both forms are computed and one is selected: a branch here made every
// element of the Hopper kernel's unrolled epilogue a divergent region (140 BSSY/BSYNC pairs in
// bias+GELU's SASS), which serializes what the scheduler would otherwise interleave.
#ifdef FX_FAST_MATH
FX_DEVICE float fx_tanh(float x) {
  const float x2 = x * x;
  const float series = x * (1.0f - x2 * (0.333333333f - x2 * 0.133333333f));  // small |x|: no cancellation
  const float exp_form = 1.0f - 2.0f * fx_inv_one_plus_exp2(2.0f * kFxLog2e * x);
  return fabsf(x) < 0.0625f ? series : exp_form;
}
#else
FX_DEVICE float fx_tanh(float x) { return tanhf(x); }
#endif
// gelu(x) = x/2 (1 + erf(x/sqrt(2))), as ATen's GeluCUDAKernelImpl (approximate="none").
FX_DEVICE float fx_gelu(float x) { return x * 0.5f * (1.0f + erff(x * 0.70710678118654752440f)); }
// gelu(x, approximate="tanh") = x/2 (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
constexpr float kFxGeluBeta = 0.79788456080286535588f;  // sqrt(2/pi)
constexpr float kFxGeluKappa = 0.044715f;
#ifdef FX_FAST_MATH
// (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u)), so tanh(u) = 2 / (1 + 2^a) - 1 with a = -2u log2(e)
// = x (c1 + c2 x^2), c1 = -2 log2(e) sqrt(2/pi), c2 = c1 * 0.044715: 10 instructions (two on
// the MUFU) where the tanh form with its small-|u| series takes about 25. tanh(u) is rounded
// to a float before 1 + tanh(u), as eager's tanhf(u) is: for negative x, eager's 1 + tanhf(u)
// is a multiple of 2^-24 and exactly 0 once tanhf(u) rounds to -1 (a > 26, x < -5.16), where
// eager returns ±0, and so does this (a comparison with 0 after the GELU sees eager's answer;
// the unrounded x / (1 + 2^a) was accurate there, not eager). No cancellation near u = 0:
// only 1 + tanh(u) is used. Specials as eager: +inf -> inf, -inf -> NaN, NaN -> NaN.
FX_DEVICE float fx_gelu_tanh(float x) {
  constexpr float c1 = -2.0f * kFxLog2e * kFxGeluBeta;
  constexpr float c2 = c1 * kFxGeluKappa;
  const float a = x * fmaf(x * x, c2, c1);
  const float tanh_u = 2.0f * fx_inv_one_plus_exp2(a) - 1.0f;  // rounded like eager's tanhf(u)
  return 0.5f * x * (1.0f + tanh_u);
}
// sigmoid(x) = 1 / (1 + 2^(-x log2 e)): 0 for x < -87.3 instead of a value below 1e-38, and
// SiLU there -0 instead of one below 1e-36 (eager's values; a known trade-off, docs/STATUS.md).
// libm's expf plus an IEEE divide cost the Hopper epilogue more than the MMAs of a K=1024 tile.
FX_DEVICE float fx_sigmoid(float x) { return fx_inv_one_plus_exp2(-kFxLog2e * x); }
FX_DEVICE float fx_silu(float x) { return x * fx_sigmoid(x); }
#else
FX_DEVICE float fx_gelu_tanh(float x) {
  float inner = kFxGeluBeta * (x + kFxGeluKappa * (x * x * x));
  return 0.5f * x * (1.0f + fx_tanh(inner));
}
FX_DEVICE float fx_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
FX_DEVICE float fx_silu(float x) { return x / (1.0f + expf(-x)); }
#endif
// exp, expm1 and log1p (the steps of softplus, mish, elu and log_sigmoid: pass/composite_activations.cpp). Fast
// math: on the MUFU (ex2.approx, lg2.approx), with a series where that form cancels (expm1 and log1p of |x| < 1/16;
// the series' truncation is below 1.4e-9 relative for expm1 and 8.7e-9 for log1p there): about 1e-6 relative in
// all, 2-4e-6 just past |x| = 1/16, where the exp and log forms amplify the MUFU's error about 16 times (review,
// session 57), and up to 5e-6 at the ends of exp's range (x log2 e is rounded to f32 first: 2^-24 * 128 in the
// exponent); below half an ulp of a 16-bit output but on a rounding boundary. libm's forms made the epilogue the kernel's whole time at K = 160
// (bench/RESULTS.md session 56: mish 4x cuBLAS mm).
// Specials as libm's: exp(-inf) = 0, expm1(-inf) = -1, log1p(-1) = -inf, log1p(x < -1) = NaN, NaN -> NaN.
#ifdef FX_FAST_MATH
FX_DEVICE float fx_lg2_ftz(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// exp: below 2^-126 the MUFU flushes to 0 where eager has a subnormal (mish of y < -87 in bf16 is one), so there
// the exponent is raised by 32 and the result scaled back by an IEEE multiply, which rounds to the subnormal.
FX_DEVICE float fx_exp(float x) {
  const float t = kFxLog2e * x;
  const bool subnormal = t < -126.0f;
  const float r = fx_exp2_ftz(subnormal ? t + 32.0f : t);
  return subnormal ? r * 2.3283064365386963e-10f : r;  // 2^-32
}
FX_DEVICE float fx_expm1(float x) {
  const float series = x * (1.0f + x * (0.5f + x * (1.0f / 6.0f + x * (1.0f / 24.0f + x * (1.0f / 120.0f)))));
  const float exp_form = fx_exp2_ftz(kFxLog2e * x) - 1.0f;
  return fabsf(x) < 0.0625f ? series : exp_form;  // both computed, one selected (fx_tanh says why)
}
FX_DEVICE float fx_log1p(float x) {
  const float series = x * (1.0f - x * (0.5f - x * (1.0f / 3.0f - x * (0.25f - x * (0.2f - x * (1.0f / 6.0f))))));
  const float log_form = 0.69314718055994531f * fx_lg2_ftz(1.0f + x);
  return fabsf(x) < 0.0625f ? series : log_form;
}
#else
FX_DEVICE float fx_exp(float x) { return expf(x); }
FX_DEVICE float fx_expm1(float x) { return expm1f(x); }
FX_DEVICE float fx_log1p(float x) { return log1pf(x); }
#endif
FX_DEVICE float fx_hardswish(float x) { return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f; }
FX_DEVICE float fx_leaky_relu(float x, float slope) { return x > 0.0f ? x : x * slope; }
// sign(x) as ATen's c10::signum: (0 < x) - (x < 0), so NaN and -0 give +0.
FX_DEVICE float fx_sign(float x) { return static_cast<float>((0.0f < x) - (x < 0.0f)); }

// Programmatic dependent launch (sm_90+: the gemv, the Hopper kernel and the epilogue-alone kernel;
// runtime/cuda_launch.cpp launchesAsProgrammaticDependent): the driver processes such a kernel's
// launch ahead and starts its CTAs as the previous kernel's CTAs exit, or earlier where that kernel
// triggers its dependents (griddepcontrol.launch_dependents). This returns once the kernel before
// this one in the stream has completed and its writes are visible; nothing before it may read or
// write global memory but the kernel's parameters. A no-op for a kernel not launched so. No kernel
// of ours triggers its dependents early: a dependent gemv's CTAs then started beside the running
// ones and dense weights ran up to 15 % slower (bench/RESULTS.md Run BB calls 5-6).
// FX_PDL_TRIGGER_AT_START (test hook, generate.cpp) does trigger here, as each kernel starts, so that
// a test runs dependent kernels side by side and only this wait orders them.
__device__ __forceinline__ void fx_grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#if defined(FX_PDL_TRIGGER_AT_START)
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// wgmma's warpgroup-wide ordering (sm_90a: the Hopper kernel and the gemv's product by wgmma): the
// fence before a group whose registers other instructions wrote, the commit that closes a group, and
// the wait until at most N committed groups are pending.
__device__ __forceinline__ void fx_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void fx_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void fx_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
