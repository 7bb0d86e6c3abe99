// The int8 -> bf16 conversion of kernels/gemv.cuh (its bf16 forms of and_or, fma2 and i8pair_scaled),
// restated for the standalone probes (reg_stream.cu, wgmma_rs_int8.cu): that template needs the
// generated preamble, and the probes build alone.
#pragma once

__device__ __forceinline__ unsigned and_or(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ unsigned fma2(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// Bytes 0 and 2 of `b` (int8) as a bf16 pair, exact (element in byte 0 -> low half).
__device__ __forceinline__ unsigned i8pair(unsigned b) {
  const unsigned v = and_or(b, 0x007f007fu, 0x43004300u);  // 128 + (b & 0x7f)
  const unsigned m = and_or(b, 0x00800080u, 0x43004300u);  // 128, or 256 when the sign bit is set
  return fma2(m, 0xbf80bf80u /* -1.0 */, v);
}
// Bytes `sel` (a __byte_perm selector putting them in bytes 0 and 2) of `w` as int8 times the scale
// pair s2, as a bf16 pair: exact int8 -> bf16, then one rounding of the product.
__device__ __forceinline__ unsigned i8pair_scaled(unsigned w, unsigned sel, unsigned s2) {
  return fma2(i8pair(__byte_perm(w, w, sel)), s2, 0x80008000u /* -0.0 */);
}
