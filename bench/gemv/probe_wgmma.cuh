// The wgmma pieces the standalone int8 probes share (wgmma_rs_int8.cu, ws_gemv_int8.cu): shared
// addresses, the transposed ldmatrix that reads 8-bit K x N weights, wgmma's fence / commit / wait, the
// keep-live guards of in-flight wgmma registers, the 128-byte-swizzle K-major descriptor and the register-A m64n64k16 wgmma.
#pragma once

using u32 = unsigned;
using u64 = unsigned long long;

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void ldsm_x4_trans(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
// wgmma's warpgroup-wide ordering: the fence before a group whose registers other instructions wrote, the
// commit that closes a group, the wait until at most N committed groups are pending.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// The compiler must not reuse (or move) a register an in-flight wgmma reads or writes: an empty asm
// that "writes" it, placed after the wait that completes the wgmma, keeps it live until there.
__device__ __forceinline__ void keep_live(u32& r) { asm volatile("" : "+r"(r)::"memory"); }
__device__ __forceinline__ void keep_live(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void keep_live(u64& r) { asm volatile("" : "+l"(r)::"memory"); }

// K-major shared-memory descriptor, 128-byte swizzle (layout type 1, bits 62-63), LBO 16 (unused), SBO 1024.
__device__ __forceinline__ u64 desc_k_major_sw128(u32 saddr) {
  auto enc = [](u32 x) { return (u64)((x & 0x3FFFF) >> 4); };
  return enc(saddr) | (enc(16) << 16) | (enc(1024) << 32) | (1ull << 62);
}

// D[64 x 64] (+)= A[64 x 16] (registers, bf16) * B[16 x 64] (shared memory, K-major), fp32; scale_d 0
// overwrites D.
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const u32 (&a)[4], u64 db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// The same with n = 16 or 32 activation rows (D[64 x n]); n = 64 is wgmma_m64n64k16_rs.
__device__ __forceinline__ void wgmma_m64n16k16_rs(float (&d)[8], const u32 (&a)[4], u64 db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_m64n32k16_rs(float (&d)[16], const u32 (&a)[4], u64 db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}
// D[64 x N] (+)= A[64 x 16] * B[16 x N] for N = 16, 32 or 64 activation rows.
template <int N>
__device__ __forceinline__ void wgmma_m64nNk16_rs(float (&d)[N / 2], const u32 (&a)[4], u64 db, int scale_d) {
  static_assert(N == 16 || N == 32 || N == 64, "n = 16, 32 or 64");
  if constexpr (N == 16) wgmma_m64n16k16_rs(d, a, db, scale_d);
  else if constexpr (N == 32) wgmma_m64n32k16_rs(d, a, db, scale_d);
  else wgmma_m64n64k16_rs(d, a, db, scale_d);
}
