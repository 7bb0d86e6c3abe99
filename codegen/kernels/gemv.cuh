// fxfuse kernel template: small-M GEMM ("gemv"), weight-streaming, tensor cores (mma.sync).
//
// Included after the generated preamble (kernel_abi.h + hooks). Computes, for every batch b,
//   acc(m, n) = sum_k A(b, m, k) * B(b, k, n)     (fp32 accumulation)
// then calls fx_epilogue2 (pairs of columns) for every (m, n).
//
// ---------------------------------------------------------------------------------------------
// Hooks used (docs/interfaces.md): FxElemA/FxElemB (same 16-bit type: bf16 or half),
// FX_A_PLAIN/FX_A_SLOT, FX_B_PLAIN/FX_B_SLOT/FX_B_KMAJOR, FX_B_QUANT/FxRawB/fx_dequant_b,
// fx_load_a, fx_load_b, fx_epilogue2.
// OPTIONAL extra hook (fast quantized path; requested from the generator):
//   #define FX_B_QUANT_SCALE 1
//   __device__ float fx_b_scale(const fxfuse::FxParams& p, long long b, long long n);
//   (fx_b_scale(p, b, k, n) with FX_B_SCALE_GROUP: the scale of k's group)
//   meaning: B(b,k,n) = FxElemB( fp32( float(raw(b,k,n)) * fx_b_scale(p,b,n) ) ), rounded once
//   to FxElemB (round-to-nearest-even). This is exactly eager's `w.to(bf16) * s` (s bf16 [N]
//   or [N,1], or a 0-dim fp32 scalar), `(w.float() * s).to(bf16)`, fp8 likewise. The raw
//   weight is in->[FX_B_SLOT] with element type FxRawB. Without it, a quantized B goes through
//   fx_dequant_b one element at a time (correct, slow).
//
// Config macros (compile time; all optional, defaults below):
//   FX_GEMV_MTILES  1..8   m-tile = 8*FX_GEMV_MTILES rows of A per block (M > that: grid.z loops)
//   FX_GEMV_STAGES  2..8   cp.async pipeline depth
//   FX_GEMV_MIN_BLOCKS 1..4  CTAs per SM for __launch_bounds__ (the generator: what the shared
//                    memory allows, so that ptxas may use the registers that leaves)
//   FX_GEMV_SPLITK  0|2|4|8  if >1: compile-time __cluster_dims__(1,SPLITK,1) (sm_90 only).
//                    The kernel always reads the cluster size from %cluster_nctarank, so the
//                    runtime may instead launch with a runtime cluster dimension (1,S,1) via
//                    cuLaunchKernelEx (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION); S=1 = no cluster.
//   FX_B_SCALE_GROUP G  a group-wise scale (GPTQ / AWQ: one per G of k, G a multiple of kKT): the hook is
//                  fx_b_scale(p, b, k, n), read for each stage's k, the next stage's while this one computes.
//                  FX_GEMV_SCALE_SHFL 1 (the rule's default, below): the four lanes of an MMA thread group hold the
//                  same columns, so each reads one of them (scale and zero point) and the group shares them by shuffles.
//   FX_B_SCALE_IN_ELEM 0|1  fx_b_scale's values are exact in FxElemB (the scale's dtype is the
//                  MMA type): int8 weights and nibbles then take the packed 16-bit conversion (pair_scaled).
//   FX_B_NIBBLES 0|1  packed int4 weights (FX_B_QUANT_SCALE over an input whose k holds two 4-bit values to a
//                  byte, low nibble first; FxRawB unsigned char: the nibble): each pipeline slot holds a stage's
//                  packed bytes (half an 8-bit tile), and expand_stage writes them as the 8-bit tile into one tile
//                  buffer before the compute. FX_B_ZERO z: B = FxElemB(fp32((float(nibble) - z) * scale)), z an
//                  integer (raw4_to_f32's constant or pair_scaled's takes it). FX_B_ZERO_TENSOR 1: a zero point
//                  that varies along n (and k's groups: FX_B_SCALE_GROUP), the hook fx_b_zero(p, b, [k,] n) beside
//                  fx_b_scale: B = FxElemB(fp32(r((float(nibble) - z)) * scale)), r the rounding to FxElemB where
//                  FX_B_ZERO_ROUND is 1 (eager's sub at the MMA type; 0: at f32, no rounding). ColumnQuant holds it.
//   FX_B_WORDS 0|1  with FX_B_NIBBLES, K x N weights only: the packed input is GPTQ's int32 words [K/8, N], eight
//                  4-bit values of k to a word, low first (byte j of word (r, n) holds k pair 4r + j of column n);
//                  the slot holds the words as loaded, and expand_stage transposes each word chunk's 4 columns x
//                  4 k pairs into the same 8-bit tile (below, "packed int4 weights").
//   FX_B_NWORDS 0|1  with FX_B_NIBBLES, K x N weights only: the packed input is AWQ's int32 words [K, N/8], eight
//                  4-bit values of n to a word, column 8 w + c of word (k, w) in bits [4 order[c], +4) with
//                  FX_B_NWORD_ORDER the nibble table sum(order[c] << 4 c) (AWQ's 0x73625140; 0x76543210 in
//                  order); the slot holds the words as loaded, and expand_stage writes each word's 8 columns into
//                  tile row k with two byte permutes (no transpose).
//   FX_GEMV_WGMMA 0|1  8-bit weights (FX_B_QUANT_SCALE) or 16-bit ones, either layout, sm_90a only: the product
//                  by wgmma (below, "The product by wgmma"); the host adds 1 KB of dynamic shared
//                  memory for the 1024-byte alignment its activation tile needs
//                  (config_table.cpp gemvTakesWgmma, dynamicSmemBytes).
//   FX_GEMV_NT 128|64  output columns per block (NT); 64 with FX_GEMV_WGMMA only (one wgmma of 64
//                  columns per k16 step, twice the blocks: config_table.cpp gemvColumnsPerCta).
//   FX_GEMV_KT     k per stage: 128/sizeof(W) (W = FxRawB if the fast quant path is used else
//                  FxElemB: 128 bytes of each weight row or column), or 64 with FX_GEMV_WGMMA, K x N
//                  weights and 128 columns (an 8 KB weight tile: twice the stages in the same shared
//                  memory; config_table.cpp gemvKPerStage).
//   Fixed: 4 warps (128 threads).
//
// Launch geometry (runtime):
//   block = (128, 1, 1)
//   grid  = (ceil(N/NT), S, B * ceil(M / (8*MTILES)))       S = cluster size along y (1..8)
//   dynamic smem = max(STAGES * (NT*KT*sizeof(W) + 8*MTILES*KT*2),  8*MTILES*(NT+4)*4) bytes, + 1024 with
//                  FX_GEMV_WGMMA (its stages start at a 1024-byte boundary); FX_B_NIBBLES: NT*KT/2 packed bytes
//                  a stage in place of NT*KT, plus NT*KT for the expanded tile (config_table.cpp dynamicSmemBytes)
//   (> 48 KB: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) first)
//   The host side chooses MTILES (the smallest of 1, 2, 4, 8 covering M), STAGES (a pipeline
//   for two CTAs per SM, about 100 KB; for 8-bit weights on sm_90 three or four: ~75 / ~56 KB) and
//   S: codegen/config_table.cpp (gemvConfig, gemvSplitK, launchDims);
//   tests/codegen/gemv_test.cpp checks them against an independent copy of the rule.
//
// Fast path conditions (checked at run time, else an element-wise path that uses the hooks):
//   B: FX_B_PLAIN or FX_B_QUANT_SCALE; pointer 16-byte aligned; contiguous along its
//      contiguous dim (sk==1 if FX_B_KMAJOR else sn==1); the other strides multiples of 16 bytes.
//   A: FX_A_PLAIN, sk==1, 16-byte aligned, sm and sb multiples of 8 elements.
//   Ragged edges (N, K, M not multiples of the tiles) are handled element-wise/zero-filled.
// ---------------------------------------------------------------------------------------------

#ifndef FX_GEMV_MTILES
#define FX_GEMV_MTILES 2
#endif
#ifndef FX_GEMV_STAGES
#define FX_GEMV_STAGES 4
#endif
#ifndef FX_GEMV_SPLITK
#define FX_GEMV_SPLITK 0
#endif
#ifndef FX_GEMV_MIN_BLOCKS
#define FX_GEMV_MIN_BLOCKS 2
#endif
#ifndef FX_GEMV_NK_LDMATRIX  // dense 16-bit N x K weights read by ldmatrix (0: 16-byte loads, as before)
#define FX_GEMV_NK_LDMATRIX 1
#endif
#ifndef FX_GEMV_WGMMA
#define FX_GEMV_WGMMA 0
#endif
#ifndef FX_GEMV_NT
#define FX_GEMV_NT 128
#endif
#ifndef FX_GEMV_KT
#define FX_GEMV_KT 0  // 0: 128 / sizeof(W)
#endif
#ifndef FX_B_QUANT
#define FX_B_QUANT 0
#endif
#ifndef FX_B_SCALE_GROUP
#define FX_B_SCALE_GROUP 0
#endif
// Group-wise scales: each lane reads one column, its thread group shares them by shuffles at the end of the stage
// before theirs (1; 0: every lane reads every column). Sharing them at the start of their own stage instead was
// measured equal to 3 % slower and removed (bench/RESULTS.md session 69). The rule, where the A/B
// measured it (bench/RESULTS.md session 68, an H100): on, but for a 16-bit zero point tensor on packed bytes at 1-16
// rows (1.07-1.10x the time with the shuffles) and AWQ's words at 9-16 rows (1.005-1.05x); elsewhere the shuffles
// took 0.76-0.81x the time at one row on the GPTQ / AWQ layers, 0.88-0.91x at 64, 0.91-0.99x on group-wise int4 /
// int8 scales. The measurement knob FXFUSE_GEMV_SCALE_SHFL (codegen/generate.cpp) sets it for every config.
#ifndef FX_GEMV_SCALE_SHFL
#define FX_GEMV_SCALE_SHFL                                                                                           \
  (!(FX_GEMV_MTILES <= 2 && FX_B_ZERO_TENSOR &&                                                                      \
     ((!FX_B_ZERO_INT && !FX_B_WORDS && !FX_B_NWORDS) || (FX_B_NWORDS && FX_GEMV_MTILES == 2))))
#endif
#ifndef FX_B_QUANT_SCALE
#define FX_B_QUANT_SCALE 0
#endif
#ifndef FX_B_NIBBLES
#define FX_B_NIBBLES 0
#endif
#ifndef FX_B_ZERO
#define FX_B_ZERO 0
#endif
#ifndef FX_B_WORDS
#define FX_B_WORDS 0
#endif
#ifndef FX_B_NWORDS
#define FX_B_NWORDS 0
#endif
#ifndef FX_B_NWORD_ORDER
#define FX_B_NWORD_ORDER 0x76543210u
#endif
#ifndef FX_B_ZERO_TENSOR
#define FX_B_ZERO_TENSOR 0
#endif
// FX_B_ZERO_INT 1 (with FX_B_ZERO_TENSOR and FX_B_SCALE_IN_ELEM): the zero points are 8-bit integers whose magic + z is
// exact in the MMA type (hooks.cpp detectNibbleScale), so pair_scaled subtracts magic + z from magic + n in one fma.
#ifndef FX_B_ZERO_INT
#define FX_B_ZERO_INT 0
#endif
#ifndef FX_B_ZERO_ROUND
#define FX_B_ZERO_ROUND 0
#endif
// the fast quantized path: an 8-bit raw weight, or packed int4 expanded to one per stage
#define FX_GEMV_QUANT_FAST ((FX_B_QUANT || FX_B_NIBBLES) && FX_B_QUANT_SCALE)
// group-wise scales read one column a lane and shared by shuffles (the kernel's read_own / share_own)
#define FX_GEMV_SCALE_SHARED (FX_B_SCALE_GROUP && FX_GEMV_SCALE_SHFL && FX_GEMV_QUANT_FAST)
#ifndef FX_B_PLAIN
#define FX_B_PLAIN 0
#endif
#ifndef FX_A_PLAIN
#define FX_A_PLAIN 0
#endif

#if FX_GEMV_SPLITK > 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "FX_GEMV_SPLITK > 1 needs sm_90 (thread block clusters)"
#endif

namespace fxgemv {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kNT = FX_GEMV_NT;                // output columns per block
constexpr int kRT = kNT / 64;                  // 16-row MMA tiles per warp (kWarps*kRT*16 == kNT)
constexpr bool kWgmma = FX_GEMV_WGMMA != 0;   // the product by wgmma (below)
static_assert(kNT == 128 || (kNT == 64 && kWgmma), "FX_GEMV_NT: 128, or 64 with FX_GEMV_WGMMA");
constexpr int kMT = FX_GEMV_MTILES;            // 8-row m tiles
constexpr int kStages = FX_GEMV_STAGES;
constexpr bool kQuantFast = FX_GEMV_QUANT_FAST != 0;
constexpr bool kNibbles = FX_B_NIBBLES != 0;
constexpr bool kWords = FX_B_WORDS != 0;  // packed int4 as GPTQ's int32 words (K x N)
constexpr bool kNWords = FX_B_NWORDS != 0;  // packed int4 as AWQ's int32 words, n packed (K x N)
#if FX_GEMV_QUANT_FAST
using WRaw = FxRawB;
#else
using WRaw = FxElemB;
#endif
constexpr int kWB = sizeof(WRaw);             // 1 or 2
constexpr int kKT = FX_GEMV_KT ? FX_GEMV_KT : 128 / kWB;  // k per stage
constexpr int kE = 16 / kWB;                   // elements per 16-byte chunk
constexpr bool kKMajor = FX_B_KMAJOR != 0;
static_assert(FX_B_SCALE_GROUP % kKT == 0, "a group-wise scale must be constant over each stage's k");
// the shared scales' lanes (read_own / share_own): the 2 kRT columns of a thread group are its four lanes' to read
static_assert(!FX_GEMV_SCALE_SHARED || 2 * kRT <= 4, "FX_GEMV_SCALE_SHFL: at most 4 columns a thread group");
static_assert(kKT == 128 / kWB || (kKT == 64 && kWgmma && !kKMajor && kNT == 128),
              "FX_GEMV_KT: 128 bytes of weight, or 64 with FX_GEMV_WGMMA, K x N weights and 128 columns");
constexpr int kWTileBytes = kNT * kKT * kWB;   // the tile compute_stage reads: 16 KB (8 KB at 64 columns or 64 k)
// a pipeline slot: the tile, or packed int4's packed bytes (half of it; expanded into one tile buffer per stage)
constexpr int kWStageBytes = kNibbles ? kWTileBytes / 2 : kWTileBytes;
constexpr int kARowBytes = kKT * 2;
constexpr int kAStageBytes = 8 * kMT * kARowBytes;
static_assert(sizeof(FxElemA) == 2 && sizeof(FxElemB) == 2, "gemv: 16-bit MMA operands only");
static_assert(kWB == 1 || kWB == 2, "gemv: raw weight must be 8 or 16 bit");
static_assert(kMT >= 1 && kMT <= 8, "FX_GEMV_MTILES in 1..8");
static_assert(!kNibbles || (kQuantFast && kWB == 1), "FX_B_NIBBLES: the fast quantized path, nibbles as bytes");
static_assert(FX_B_ZERO == 0 || kNibbles, "FX_B_ZERO: packed int4 weights only");
static_assert(!kWords || (kNibbles && !kKMajor), "FX_B_WORDS: packed int4 weights, K x N");
static_assert(!kNWords || (kNibbles && !kKMajor && !kWords), "FX_B_NWORDS: packed int4 weights, K x N");
// bytes of one element of B's input (its strides count elements): either form of words is 4
constexpr int kBInputBytes = kWords || kNWords ? 4 : kWB;
// k and n of one element of B's input, as shifts: packed int4 holds 2 k to a byte, GPTQ's words 8 k, AWQ's words 8 n
constexpr int kKPackShift = kWords ? 3 : kNibbles && !kNWords ? 1 : 0;
constexpr int kNPackShift = kNWords ? 3 : 0;
static_assert(!FX_B_ZERO_TENSOR || (kNibbles && FX_B_ZERO == 0), "FX_B_ZERO_TENSOR: packed int4 weights, no constant");
template <class X, class Y> struct is_same_t { static constexpr bool value = false; };
template <class X> struct is_same_t<X, X> { static constexpr bool value = true; };
constexpr bool kHalf = is_same_t<FxElemB, __half>::value;
static_assert(is_same_t<FxElemA, FxElemB>::value, "gemv: A and B MMA types must match");

// ---- small PTX helpers --------------------------------------------------------------------
__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldsm_x4_trans(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x2_trans(unsigned addr, unsigned& r0, unsigned& r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x2(unsigned addr, unsigned& r0, unsigned& r1) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}
__device__ __forceinline__ void lds64(unsigned addr, unsigned& a, unsigned& b) {
  asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];\n" : "=r"(a), "=r"(b) : "r"(addr));
}
__device__ __forceinline__ void lds128(unsigned addr, unsigned& a, unsigned& b, unsigned& c, unsigned& d) {
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr));
}
__device__ __forceinline__ unsigned lds32(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

__device__ __forceinline__ void mma16816(float* c, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
  if constexpr (kHalf) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// Pack two fp32 into the MMA type, round-to-nearest-even (lo -> low half).
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  unsigned r;
  if constexpr (kHalf) {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
#endif
  }
  return r;
}

// ---- raw weight -> fp32 (exact), 4 elements packed in one 32-bit word (8-bit raw) ----------
__device__ __forceinline__ void raw4_to_f32(unsigned w, float* f) {
#if FX_GEMV_QUANT_FAST
  if constexpr (sizeof(WRaw) == 1) {
    if constexpr (is_same_t<WRaw, signed char>::value || is_same_t<WRaw, char>::value) {
      // offset binary + magic 2^23: exact, no I2F.
      const unsigned u = w ^ 0x80808080u;
      f[0] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540)) - 8388736.f;
      f[1] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7541)) - 8388736.f;
      f[2] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7542)) - 8388736.f;
      f[3] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7543)) - 8388736.f;
    } else if constexpr (is_same_t<WRaw, unsigned char>::value) {
      // 2^23 + u, minus 2^23 + z (packed int4's zero point: both exact, so is the difference)
      constexpr float kMagic = 8388608.f + (float)(FX_B_ZERO);
      f[0] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7540)) - kMagic;
      f[1] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7541)) - kMagic;
      f[2] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7542)) - kMagic;
      f[3] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7543)) - kMagic;
    } else {
      // fp8 (e4m3 / e5m2): pairwise hardware conversion to f16x2 (exact), then to fp32.
      __half2_raw h0 = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w & 0xffffu),
                                                  is_same_t<WRaw, __nv_fp8_e5m2>::value ? __NV_E5M2 : __NV_E4M3);
      __half2_raw h1 = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w >> 16),
                                                  is_same_t<WRaw, __nv_fp8_e5m2>::value ? __NV_E5M2 : __NV_E4M3);
      __half2 a = *reinterpret_cast<__half2*>(&h0);
      __half2 b = *reinterpret_cast<__half2*>(&h1);
      float2 fa = __half22float2(a), fb = __half22float2(b);
      f[0] = fa.x; f[1] = fa.y; f[2] = fb.x; f[3] = fb.y;
    }
  }
#endif
  (void)w; (void)f;
}
// 16-bit raw (2 per word) -> fp32
__device__ __forceinline__ void raw2_to_f32(unsigned w, float* f) {
  if constexpr (is_same_t<WRaw, __nv_bfloat16>::value) {
    f[0] = __uint_as_float(w << 16);
    f[1] = __uint_as_float(w & 0xffff0000u);
  } else {
    __half2 h = *reinterpret_cast<__half2*>(&w);
    float2 v = __half22float2(h);
    f[0] = v.x; f[1] = v.y;
  }
}
// Dequantise a 16-bit-raw register (2 elements, same row) with one scale.
__device__ __forceinline__ unsigned dq2(unsigned w, float s) {
  if constexpr (kQuantFast) {
    float f[2];
    raw2_to_f32(w, f);
    return pack2(f[0] * s, f[1] * s);
  } else {
    (void)s;
    return w;
  }
}

// ---- an 8-bit weight or a nibble with a scale exact in the MMA type (FX_B_SCALE_IN_ELEM): a packed pair ----
// B = FxElemB(fp32(float(raw) * s)) (packed int4: fp32((float(nibble) - z) * s)). The raw value and s are both
// exact in FxElemB and their fp32 product is exact (8 + 8 or 8 + 11 significant bits), so rounding it once to
// FxElemB is the correctly rounded 16-bit product: one fma.rn.{bf16,f16}x2 (x * s + -0) gives the same bits,
// two elements at a time, where the fp32 route costs about 3.75 instructions per element.
// The raw value itself becomes a 16-bit float exactly:
//   int8, f16:  0x6400 | (b ^ 0x80) is 1024 + b + 128, minus 1152;
//   int8, bf16: (0x4300 | (b & 0x7f)) - (0x4300 | (b & 0x80)), i.e. (128 + low 7 bits) - (128 or 256);
//   nibble n (0..15) with zero point z: (0x6400 | n) - (1024 + z) in f16, (0x4300 | n) - (128 + z) in bf16 (the
//   generator takes this form for -128 <= z <= 128 only, codegen/hooks.cpp detectNibbleScale: 128 + z exact in bf16).
// The subtractions are exact (integers of at most 8 bits, and 1024 + z / 128 + z exact).
#ifndef FX_B_SCALE_IN_ELEM
#define FX_B_SCALE_IN_ELEM 0
#endif
constexpr bool kPairScaled = kQuantFast && FX_B_SCALE_IN_ELEM != 0 &&
                             (kNibbles || is_same_t<WRaw, signed char>::value || is_same_t<WRaw, char>::value);
static_assert(!kPairScaled || !kNibbles || (FX_B_ZERO >= -128 && FX_B_ZERO <= 128),
              "FX_B_SCALE_IN_ELEM with nibbles: a zero point in -128..128");
static_assert(!kPairScaled || !FX_B_ZERO_TENSOR || FX_B_ZERO_ROUND,
              "FX_B_SCALE_IN_ELEM with a zero point tensor: the difference at the MMA type");
static_assert(!FX_B_ZERO_INT || (FX_B_ZERO_TENSOR && kPairScaled), "FX_B_ZERO_INT: a zero point tensor, pairs");
// The 16-bit pattern of the integer c (0 <= c <= 2048; in bf16 even above 256), exact in FxElemB (the static_assert
// below checks the zero point's).
__host__ __device__ constexpr unsigned elem_bits_of_int(int c) {
  int e = 0;
  while ((2 << e) <= c) ++e;  // c in [2^e, 2^(e+1))
  return c == 0 ? 0u
         : kHalf ? (unsigned)((15 + e) << 10) | (((unsigned)c << (10 - e)) & 0x3ffu)
                 : (e <= 7 ? (unsigned)((127 + e) << 7) | (((unsigned)c << (7 - e)) & 0x7fu)
                           : (unsigned)((127 + e) << 7) | (((unsigned)c >> (e - 7)) & 0x7fu));
}
// The nibble's conversion: 16-bit (magic + n) - (magic + z), the constant -(magic + z) in both halves.
constexpr int kNibbleMagic = kHalf ? 1024 : 128;
constexpr unsigned kNibbleMagic2 = kHalf ? 0x64006400u : 0x43004300u;
constexpr unsigned kNibbleZero2 = (0x8000u | elem_bits_of_int(kNibbleMagic + FX_B_ZERO)) * 0x10001u;
static_assert(!kPairScaled || !kNibbles || kHalf || kNibbleMagic + FX_B_ZERO <= 256 ||
                  (kNibbleMagic + FX_B_ZERO) % 2 == 0,
              "FX_B_SCALE_IN_ELEM with nibbles: 128 + z exact in bf16");
// (a & b) | c and (a & b) ^ c in one LOP3: written as PTX so that both constants are operands
// of one instruction (C++ `(b & m) | c` compiles to two LOP3s, one per immediate; measured:
// LOP3 was 36 % of the int8 kernel's instructions; bench/gemv/NOTES.md, session 6).
__device__ __forceinline__ unsigned and_or(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ unsigned and_xor(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  asm("lop3.b32 %0, %1, %2, %3, 0x6a;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ unsigned fma2(unsigned a, unsigned b, unsigned c) {
  unsigned d;
  if constexpr (kHalf) asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  else asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// The per-column constants of the fast quantized path a thread converts its fragments with: those of its columns
// col_of(w, rt, g + 8 h), read for the CTA's first stage and, group-wise (FX_B_SCALE_GROUP), again for each stage.
struct ColumnQuant {
  float s[kRT][2];      // the scale
  unsigned s2[kRT][2];  // (s, s) in the MMA type, for pair_scaled (exact there: FX_B_SCALE_IN_ELEM)
#if FX_B_ZERO_TENSOR
  float z[kRT][2];      // the zero point tensor's value (FX_B_ZERO_TENSOR)
  unsigned nz2[kRT][2];  // (-z, -z) in the MMA type, for pair_scaled (exact there: FX_B_SCALE_IN_ELEM); FX_B_ZERO_INT:
                         // -(magic + z)
#endif
};

// The bytes `sel` (a __byte_perm selector putting them in bytes 0 and 2) of words lo, hi,
// as raw values (int8, or packed int4's expanded nibbles) times column (rt, h)'s scale, packed (element in byte 0 ->
// low half). With a zero point tensor, the nibble minus the zero is rounded to the MMA type first (FX_B_ZERO_ROUND,
// which FX_B_SCALE_IN_ELEM implies: hooks.cpp detectNibbleScale) and then scaled: two roundings, as eager's sub and mul.
__device__ __forceinline__ unsigned pair_scaled(unsigned lo, unsigned hi, unsigned sel, const ColumnQuant& q, int rt,
                                                int h) {
  const unsigned b = __byte_perm(lo, hi, sel);
  constexpr unsigned kOne2 = kHalf ? 0x3c003c00u : 0x3f803f80u;  // (1.0, 1.0)
  unsigned x;
  if constexpr (kNibbles) {
    const unsigned v = and_or(b, 0x000f000fu, kNibbleMagic2);  // magic + n
#if FX_B_ZERO_INT
    x = fma2(v, kOne2, q.nz2[rt][h]);  // (magic + n) - (magic + z): n - z exactly (nz2 holds -(magic + z))
#else
    x = fma2(v, kOne2, kNibbleZero2);  // n - z exactly (a constant z; n with a tensor's)
#if FX_B_ZERO_TENSOR
    x = fma2(x, kOne2, q.nz2[rt][h]);  // n - z rounded once to the MMA type
#endif
#endif
  } else if constexpr (kHalf) {
    const unsigned v = and_xor(b, 0x00ff00ffu, 0x64806480u);  // 1024 + (b ^ 0x80)
    x = fma2(v, 0x3c003c00u /* 1.0 */, 0xe480e480u /* -1152 */);
  } else {
    const unsigned v = and_or(b, 0x007f007fu, 0x43004300u);  // 128 + (b & 0x7f)
    const unsigned m = and_or(b, 0x00800080u, 0x43004300u);  // 128, or 256 when the sign bit is set
    x = fma2(m, 0xbf80bf80u /* -1.0 */, v);
  }
  return fma2(x, q.s2[rt][h], 0x80008000u /* -0.0 */);
}

// The fp32 route (no FX_B_SCALE_IN_ELEM): raw values (raw4_to_f32's: float(raw), or float(nibble) - z for a constant
// zero point) of column (rt, h) times its scale, rounded once to the MMA type. With a zero point tensor, the fp32
// difference is first rounded to the MMA type where eager's sub rounds it (FX_B_ZERO_ROUND: the sub's dtype is the MMA
// type, else f32), as eager computes each op in fp32 and rounds its result to the op's dtype.
__device__ __forceinline__ float dequant_one(float f, const ColumnQuant& q, int rt, int h) {
#if FX_B_ZERO_TENSOR
  f -= q.z[rt][h];
#if FX_B_ZERO_ROUND
  if constexpr (kHalf) f = __half2float(__float2half_rn(f));
  else f = __bfloat162float(__float2bfloat16_rn(f));
#endif
#endif
  return f * q.s[rt][h];
}
__device__ __forceinline__ unsigned dequant_pair(float f0, float f1, const ColumnQuant& q, int rt, int h) {
  return pack2(dequant_one(f0, q, rt, h), dequant_one(f1, q, rt, h));
}

// ---- shared-memory swizzles (16-byte chunk index within a row) ----------------------------
// Dense 16-bit N x K weights are read by ldmatrix (compute_stage): each MMA's weight fragment comes
// out in the registers the MMA takes, where 16-byte loads of a thread's own chunk needed ~90
// register moves a stage at 32 rows (bench/gemv/NOTES.md session 39); measured 0.3-5 % faster
// at 1-16 rows (bench/RESULTS.md Run BB). Their W and A tiles take the
// K x N path's swizzle: eight rows of one chunk in eight bank groups.
constexpr bool kNkLdmatrix = kKMajor && kWB == 2 && !kQuantFast && FX_GEMV_NK_LDMATRIX != 0;
// W tile: KMAJOR: [kNT rows (n)][128 B];  KN: [kKT rows (k)][kNT*kWB B].
constexpr int kWRowBytes = kKMajor ? 128 : kNT * kWB;
__device__ __forceinline__ int wswz(int row, int chunk) {
  // (the product by wgmma reads 8-bit N x K weights by 32-bit words of eight rows' same chunk:
  // w8_nk_fragments; it takes the eight-bank-group form too)
  if constexpr (kKMajor && !kNkLdmatrix && !kWgmma) return chunk ^ ((row & 1) << 2);
  // 64-byte rows (8-bit K x N at 64 columns): two rows share a bank line, so rows 2j and 2j + 1 take
  // one of four chunk rotations and eight rows of one chunk still fall in eight bank groups
  else if constexpr (kWRowBytes == 64) return chunk ^ ((row >> 1) & 3);
  else return chunk ^ (row & 7);  // eight rows of one chunk in eight bank groups (ldmatrix)
}
// A tile: [8*kMT rows (m)][kKT*2 B].
__device__ __forceinline__ int aswz(int row, int chunk) {
  if constexpr (kKMajor && !kNkLdmatrix) return chunk ^ ((row & 1) * (kWB == 1 ? 1 : 4));
  else return chunk ^ (row & 7);
}
// With the product by wgmma (FX_GEMV_WGMMA, below) the A tile is the wgmma's B operand, read by the
// tensor cores through a shared-memory descriptor (K-major, 128-byte swizzle): kKT / 64 halves of 64 k,
// each [8*kMT rows][128 B] with chunk c of row m at c ^ (m & 7), each half 1024-byte aligned.
static_assert(!kWgmma || (kQuantFast && kWB == 1) || (!kQuantFast && kWB == 2),
              "FX_GEMV_WGMMA: 8-bit weights with their scales, or 16-bit weights");
constexpr int kAHalfBytes = 8 * kMT * 128;
// Byte offset of 16-byte chunk `chunk` (k 8*chunk ..) of row `row` in an A stage.
__device__ __forceinline__ int a_offset(int row, int chunk) {
  if constexpr (kWgmma) return (chunk >> 3) * kAHalfBytes + row * 128 + (((chunk & 7) ^ (row & 7)) << 4);
  else return row * kARowBytes + aswz(row, chunk) * 16;
}

// local column (0..kNT) of MMA row `r` (0..15) of row tile `rt` (0..kRT-1) of warp `w`.
__device__ __forceinline__ int col_of(int w, int rt, int r) {
  if constexpr (!kKMajor && kWB == 1) {
    // 8-bit KN: row tile rt is the 16-byte chunk rt of the warp's 16 kRT columns; thread group g
    // holds its columns 2g (MMA row g) and 2g + 1 (row g + 8) (compute_stage's ldmatrix)
    return w * 16 * kRT + 16 * rt + 2 * (r & 7) + (r >> 3);
  } else {
    return w * 16 * kRT + rt * 16 + r;
  }
}

struct Ctx {
  long long b, m0, n0;
  bool bfast, afast;
};

// ---- packed int4 weights (FX_B_NIBBLES) -------------------------------------------------------
// A stage's weights arrive packed, two 4-bit values of k to a byte (low nibble first), in its pipeline slot (half
// the 8-bit tile's bytes, so the same shared memory holds twice the stages): 16-byte chunks in loader order
// (packed_chunk, at packed_offset). expand_stage writes the slot as the 8-bit tile compute_stage reads (each nibble a
// byte, 0..15, in wswz's layout) into one tile buffer after the A stages, then the block syncs; the main loop's
// barrier at the top of the next stage keeps the buffer until every warp has computed from it. (Session 61 expanded
// in place, in the upper half of a full-size slot: three barriers a stage and half the bytes in flight; this form
// took 0-18 % less time, bench/RESULTS.md session 62.) N x K weights on the mma.sync product skip the tile:
// FX_GEMV_NIBBLE_REGS below.
constexpr int kPCh = kNibbles ? kWStageBytes / 16 / kThreads : 1;  // packed chunks per thread
static_assert(!kNibbles || kPCh * 16 * kThreads == kWStageBytes, "FX_B_NIBBLES: whole packed chunks per thread");
// Packed chunk ci of a stage: N x K weights (rows n, kKT / 2 bytes each): row ci / (kKT / 32), k 32 (ci % (kKT / 32))
// .. + 31 of it; K x N (rows of k pairs, kNT bytes each): k pair ci / (kNT / 16), columns 16 (ci % (kNT / 16)) .. + 15;
// GPTQ's words (FX_B_WORDS: rows of words, 4 kNT bytes each, a word row of 128 columns 512 contiguous bytes): word row
// ci / (kNT / 4) (k 8 row .. + 7), columns 4 (ci % (kNT / 4)) .. + 3, byte 4 i + j of the chunk column 4 ch + i's
// k pair 4 row + j; AWQ's words (FX_B_NWORDS: rows of k, kNT / 2 bytes each, a row of 128 columns 64 contiguous
// bytes): k row ci / (kNT / 32), words 4 (ci % (kNT / 32)) .. + 3 of it (columns 32 ch .. + 31).
__device__ __forceinline__ void packed_chunk(int ci, int& row, int& ch) {
  if constexpr (kKMajor) { row = ci / (kKT / 32); ch = ci % (kKT / 32); }
  else if constexpr (kWords) { row = ci / (kNT / 4); ch = ci % (kNT / 4); }
  else if constexpr (kNWords) { row = ci / (kNT / 32); ch = ci % (kNT / 32); }
  else { row = ci / (kWRowBytes / 16); ch = ci % (kWRowBytes / 16); }
}
// FX_GEMV_NIBBLE_REGS 1 (the rule since session 62: N x K weights on the mma.sync product) or 2 (K x N weights too: an
// A/B knob's form, unmeasured): no expanded tile; compute_stage reads the packed slot and expands each thread's own
// bytes in registers (no barrier, no shared memory round trip). N x K slot rows (64 bytes, 4 chunks) take chunk ^ 2 on
// rows 2-3 mod 4, so that the 64-bit loads of a half warp (rows g = 0-3, 32 bytes each) fall in 32 distinct banks;
// K x N slot rows (a k pair's 128 columns, 8 chunks) take chunk ^ (row & 7), so that the eight rows of one ldmatrix
// do (nibble_kn_fragments).
#ifndef FX_GEMV_NIBBLE_REGS
#define FX_GEMV_NIBBLE_REGS 0
#endif
constexpr bool kNibbleRegs = kNibbles && !kWgmma && !kWords && !kNWords && FX_GEMV_NIBBLE_REGS >= (kKMajor ? 1 : 2);
static_assert(!kNibbleRegs || (kKT == 128 && kNT == 128), "FX_GEMV_NIBBLE_REGS: 128 k and 128 columns a stage");
// Byte offset of 16-byte chunk ch of packed row `row` (packed_chunk's) in its slot: the loaders write there, the
// register forms read there.
constexpr int kPackedRowBytes = kKMajor ? kKT / 2 : kWords ? 4 * kNT : kNWords ? kNT / 2 : kWRowBytes;
__device__ __forceinline__ int packed_at(int row, int ch) {
  if constexpr (kNibbleRegs && kKMajor) return row * kPackedRowBytes + ((ch ^ (row & 2)) << 4);
  else if constexpr (kNibbleRegs) return row * kPackedRowBytes + ((ch ^ (row & 7)) << 4);
  else return row * kPackedRowBytes + ch * 16;  // (ci * 16: loader order)
}
// Byte offset of packed chunk ci in its slot.
__device__ __forceinline__ int packed_offset(int ci) {
  int row, ch;
  packed_chunk(ci, row, ch);
  return packed_at(row, ch);
}
// The packed bytes of the stage at k0 into the slot at ws, as the fast path's cp.async lays them out, one byte at a
// time, kPadByte beyond N and K (a ragged edge, or an operand the fast path does not take). K is even (the pass folds
// only a K that is a multiple of 2), so a byte holds two k below K or none. A padding nibble is converted as any other:
// the constant zero point's own nibble z (0 <= z <= 15) makes it (z - z) * s = 0 exactly, where nibble 0 gave
// (0 - z) * s, which overflows the 16-bit type for a large enough scale (then -inf times the zero-filled activation:
// NaN; session 63's review). The host takes a ragged K only with such a z (config_table.cpp gemvApplies); beyond N
// the scale (and a zero point tensor) reads 0, so any padding is 0 there.
constexpr unsigned char kPadByte =
    !FX_B_ZERO_TENSOR && FX_B_ZERO >= 0 && FX_B_ZERO <= 15 ? (unsigned char)(FX_B_ZERO * 0x11) : 0;
__device__ __noinline__ void load_packed_elementwise(const fxfuse::FxParams& p, const Ctx& c, unsigned char* ws,
                                                     long long k0) {
#if FX_B_NIBBLES
  const fxfuse::FxOperand& o = p.in[FX_B_SLOT];
  const unsigned char* src = static_cast<const unsigned char*>(o.ptr);
#pragma unroll
  for (int i = 0; i < kPCh; ++i) {
    const int ci = threadIdx.x + i * kThreads;
    int row, ch;
    packed_chunk(ci, row, ch);
    uint4 pk;
    unsigned char* v = reinterpret_cast<unsigned char*>(&pk);
#pragma unroll
    for (int e = 0; e < 16; ++e) {
      if constexpr (kWords) {  // byte j of word (k pair kp / 4, column n): strides count words
        const long long kp = k0 / 2 + 4 * row + (e & 3), n = c.n0 + 4 * ch + (e >> 2);
        v[e] = 2 * kp < p.K && n < p.N ? src[4 * (c.b * o.sb + (kp >> 2) * o.sk + n * o.sn) + (kp & 3)] : kPadByte;
        continue;
      }
      if constexpr (kNWords) {  // byte j of word (k, w): w = n / 8 (N is a multiple of 8: gemvApplies); strides count words
        const long long k = k0 + row, w = c.n0 / 8 + 4 * ch + (e >> 2);
        v[e] = k < p.K && 8 * w < p.N ? src[4 * (c.b * o.sb + k * o.sk + w * o.sn) + (e & 3)] : kPadByte;
        continue;
      }
      const long long kb = kKMajor ? k0 / 2 + 16 * ch + e : k0 / 2 + row;  // the byte's index along the packed dim
      const long long n = kKMajor ? c.n0 + row : c.n0 + 16 * ch + e;
      v[e] = 2 * kb < p.K && n < p.N ? src[c.b * o.sb + kb * o.sk + n * o.sn] : kPadByte;
    }
    *reinterpret_cast<uint4*>(ws + packed_offset(ci)) = pk;
  }
#else
  (void)p; (void)c; (void)ws; (void)k0;
#endif
}

// ---- stage loader ----------------------------------------------------------------------------
__device__ __forceinline__ WRaw load_w_elem(const fxfuse::FxParams& p, long long b, long long k, long long n) {
#if FX_GEMV_QUANT_FAST  // (packed int4: load_packed_elementwise)
  const fxfuse::FxOperand& o = p.in[FX_B_SLOT];
  return static_cast<const WRaw*>(o.ptr)[b * o.sb + k * o.sk + n * o.sn];
#elif FX_B_QUANT
  const fxfuse::FxOperand& o = p.in[FX_B_SLOT];
  FxRawB raw = static_cast<const FxRawB*>(o.ptr)[b * o.sb + k * o.sk + n * o.sn];
  return fx_dequant_b(p, b, k, n, raw);
#else
  return fx_load_b(p, b, k, n);
#endif
}

// General (edge / unaligned / hook) loader; out of line to keep the hot loop small.
__device__ __noinline__ void load_stage(const fxfuse::FxParams& p, const Ctx& c, unsigned char* ws,
                                           unsigned char* as, long long k0) {
  const int tid = threadIdx.x;
  const long long N = p.N, K = p.K, M = p.M;
  // ---- W: kWStageBytes (kNT x kKT weights) in 16-byte chunks, kWStageBytes / 2048 per thread; packed int4: the
  // packed bytes, as the fast path's cp.async lays them out (load_packed_elementwise)
  if constexpr (kNibbles) {
    load_packed_elementwise(p, c, ws, k0);
  } else {
#pragma unroll
    for (int i = 0; i < kWStageBytes / 16 / kThreads; ++i) {
      const int ci = tid + i * kThreads;
      int row, ch;
      long long n, k;
      if constexpr (kKMajor) {
        row = ci >> 3; ch = ci & 7;
        n = c.n0 + row; k = k0 + ch * kE;
      } else {
        constexpr int cpr = kWRowBytes / 16;
        row = ci / cpr; ch = ci % cpr;
        k = k0 + row; n = c.n0 + ch * kE;
      }
      unsigned char* dst = ws + row * kWRowBytes + wswz(row, ch) * 16;
      const bool full = kKMajor ? (n < N && k + kE <= K) : (k < K && n + kE <= N);
      const bool none = kKMajor ? (n >= N || k >= K) : (k >= K || n >= N);
      if (c.bfast && (full || none)) {
        const fxfuse::FxOperand& o = p.in[FX_B_SLOT];
        const WRaw* src = static_cast<const WRaw*>(o.ptr);
        if (full) src += c.b * o.sb + k * o.sk + n * o.sn;
        cp_async16(smem_u32(dst), src, full ? 16 : 0);
      } else {
        uint4 pk = make_uint4(0u, 0u, 0u, 0u);
        WRaw* v = reinterpret_cast<WRaw*>(&pk);   // zero bits decode to 0 for every raw type
#pragma unroll
        for (int e = 0; e < kE; ++e) {
          const long long kk = kKMajor ? k + e : k, nn = kKMajor ? n : n + e;
          if (kk < K && nn < N) v[e] = load_w_elem(p, c.b, kk, nn);
        }
        *reinterpret_cast<uint4*>(dst) = pk;
      }
    }
  }
  // ---- A: 8*kMT rows x kKT elements (16-bit)
  constexpr int acpr = kARowBytes / 16;
  constexpr int achunks = 8 * kMT * acpr;
  for (int ci = tid; ci < achunks; ci += kThreads) {
    const int row = ci / acpr, ch = ci % acpr;
    const long long m = c.m0 + row, k = k0 + ch * 8;
    unsigned char* dst = as + a_offset(row, ch);
    const bool full = m < M && k + 8 <= K, none = m >= M || k >= K;
    if (c.afast && (full || none)) {
#if FX_A_PLAIN
      const fxfuse::FxOperand& o = p.in[FX_A_SLOT];
      const FxElemA* src = static_cast<const FxElemA*>(o.ptr);
      if (full) src += c.b * o.sb + m * o.sm + k;
      cp_async16(smem_u32(dst), src, full ? 16 : 0);
#endif
    } else {
      uint4 pk = make_uint4(0u, 0u, 0u, 0u);
      FxElemA* v = reinterpret_cast<FxElemA*>(&pk);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (m < M && k + e < K) v[e] = fx_load_a(p, c.b, m, k + e);
      *reinterpret_cast<uint4*>(dst) = pk;
    }
  }
}

// The activation (MMA B) fragments of k16 step s for every m-tile, from the A tile at asb: one
// ldmatrix x2 each, matrices (m 0-7, k 16s..+7), (m 0-7, k 16s+8..+15); lanes 0-15 give the rows.
__device__ __forceinline__ void load_act_fragments(unsigned asb, int s, int lane, unsigned (&bf)[kMT][2]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    const int r = mt * 8 + (lane & 7);
    const int ch = 2 * s + ((lane >> 3) & 1);
    ldsm_x2(asb + r * kARowBytes + aswz(r, ch) * 16, bf[mt][0], bf[mt][1]);
  }
}

// 8-bit K x N weights, k16 step s of the W tile at wsb: the warp's weight fragments of its kRT row
// tiles (the MMA's A operand: its rows are the warp's columns), converted with their scales. One
// ldmatrix.x4.trans (x2 at 64 columns: kRT = 1): matrix j = 2 rt + kh is rows (k) 16s + 8 kh .. + 7 of
// the 16-byte chunk (16 columns) rt of the warp's 16 kRT; read as 8x8 16-bit elements and transposed,
// it gives thread (g,t) the
// bytes (k, n) = (2t, 2g), (2t, 2g+1), (2t+1, 2g), (2t+1, 2g+1) of that block, in that order: columns
// 2g (MMA row g, bytes 0 and 2) and 2g+1 (row g+8, bytes 1 and 3) at k 2t, 2t+1 (kh = 0) or 2t+8,
// 2t+9 (kh = 1). (Four 32-bit loads and their addresses per step before, session 35.)
__device__ __forceinline__ void w8_kn_fragments(unsigned wsb, int s, int lane, int w, const ColumnQuant& q,
                                                unsigned (&a)[kRT][4]) {
  unsigned r[2 * kRT];
  {
    const int mat = lane >> 3;
    const int row = 16 * s + (lane & 7) + 8 * (mat & 1);
    const unsigned at = wsb + row * kWRowBytes + wswz(row, kRT * w + (mat >> 1)) * 16;
    if constexpr (kRT == 2) ldsm_x4_trans(at, r[0], r[1], r[2], r[3]);
    else ldsm_x2_trans(at, r[0], r[1]);  // lanes 0-15's addresses: matrices kh = 0, 1
  }
  float f[2 * kRT][4];
  if constexpr (!kPairScaled) {
#pragma unroll
    for (int i = 0; i < 2 * kRT; ++i) raw4_to_f32(r[i], f[i]);
  }
#pragma unroll
  for (int rt = 0; rt < kRT; ++rt) {
    const unsigned lo = r[2 * rt], hi = r[2 * rt + 1];  // k 2t, 2t+1 / k 2t+8, 2t+9
    if constexpr (kPairScaled) {
      a[rt][0] = pair_scaled(lo, lo, 0x3210u, q, rt, 0);  // bytes 0, 2: column 2g
      a[rt][1] = pair_scaled(lo, lo, 0x3311u, q, rt, 1);  // bytes 1, 3: column 2g + 1
      a[rt][2] = pair_scaled(hi, hi, 0x3210u, q, rt, 0);
      a[rt][3] = pair_scaled(hi, hi, 0x3311u, q, rt, 1);
    } else {
      const float(&fl)[4] = f[2 * rt];
      const float(&fh)[4] = f[2 * rt + 1];
      a[rt][0] = dequant_pair(fl[0], fl[2], q, rt, 0);
      a[rt][1] = dequant_pair(fl[1], fl[3], q, rt, 1);
      a[rt][2] = dequant_pair(fh[0], fh[2], q, rt, 0);
      a[rt][3] = dequant_pair(fh[1], fh[3], q, rt, 1);
    }
  }
}

// Packed int4 K x N weights in registers (FX_GEMV_NIBBLE_REGS 2), k16 step s of the packed slot at wsb: the same
// fragments as w8_kn_fragments gives from the expanded tile. The step's k pairs are packed rows 8s .. 8s + 7 (a byte:
// k 2r low, 2r + 1 high). One ldmatrix.x2.trans: matrix rt is the warp's 16-byte chunk kRT w + rt of those rows, its
// lanes giving them in the order 0, 4, 1, 5, 2, 6, 3, 7, so that thread (g, t)'s transposed pair is packed rows t and
// t + 4 (k 2t, 2t + 1 and 2t + 8, 2t + 9) of columns 2g (MMA row g) and 2g + 1 (row g + 8): bytes 0-3 of r[rt].
__device__ __forceinline__ void nibble_kn_fragments(unsigned wsb, int s, int lane, int w, const ColumnQuant& q,
                                                    unsigned (&a)[kRT][4]) {
  // (compiled for every config: 64-column ones never call it, kNibbleRegs's static_assert keeps it at 128 columns)
  unsigned r[2];
  {
    const int i = lane & 7, row = 8 * s + (i >> 1) + 4 * (i & 1), ch = kRT * w + ((lane >> 3) & 1);
    ldsm_x2_trans(wsb + packed_at(row, ch), r[0], r[1]);
  }
#pragma unroll
  for (int rt = 0; rt < kRT; ++rt) {
    const unsigned hi = r[rt] >> 4;  // byte j of hi: byte j's high nibble in its low one
    if constexpr (kPairScaled) {
      a[rt][0] = pair_scaled(r[rt], hi, 0x0400u, q, rt, 0);  // byte 0: row t, column 2g
      a[rt][1] = pair_scaled(r[rt], hi, 0x0501u, q, rt, 1);  // byte 1: row t, column 2g + 1
      a[rt][2] = pair_scaled(r[rt], hi, 0x0602u, q, rt, 0);  // byte 2: row t + 4, column 2g
      a[rt][3] = pair_scaled(r[rt], hi, 0x0703u, q, rt, 1);  // byte 3: row t + 4, column 2g + 1
    } else {
      float f01[4], f23[4];  // (k 2t, 2t + 1) of columns 2g, 2g + 1; then k 2t + 8, 2t + 9
      raw4_to_f32(__byte_perm(r[rt], hi, 0x5140u) & 0x0F0F0F0Fu, f01);
      raw4_to_f32(__byte_perm(r[rt], hi, 0x7362u) & 0x0F0F0F0Fu, f23);
      a[rt][0] = dequant_pair(f01[0], f01[1], q, rt, 0);
      a[rt][1] = dequant_pair(f01[2], f01[3], q, rt, 1);
      a[rt][2] = dequant_pair(f23[0], f23[1], q, rt, 0);
      a[rt][3] = dequant_pair(f23[2], f23[3], q, rt, 1);
    }
  }
}

// 8-bit N x K weights (the F.linear form) for the product by wgmma, k16 step s: the same fragments
// as w8_kn_fragments gives, in the wgmma's own k order, since its B operand (the A tile, read through
// a descriptor) keeps k in order. Thread (g,t) needs bytes k = 16s + 2t, +1 (a0 / a1) and 16s + 8 + 2t,
// +1 (a2 / a3) of rows (columns n) g and g + 8 of each row tile: two of each 4-byte word, so two 32-bit
// loads a row (word t/2 of each 8-byte half of the row's chunk s), and the conversion's own byte
// permute picks the pair (the mma.sync path reads four consecutive k a thread and permutes the
// activations to match, which a descriptor cannot). wswz's eight-bank-group swizzle: the 8 rows x 2
// words of one load fall in 16 banks.
__device__ __forceinline__ void w8_nk_fragments(unsigned wsb, int s, int lane, int w, const ColumnQuant& q,
                                                unsigned (&a)[kRT][4]) {
  const int g = lane >> 2, t = lane & 3;
  const bool odd = (t & 1) != 0;
#pragma unroll
  for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = col_of(w, rt, g + 8 * h);  // N x K: the W tile's rows are the columns
      const unsigned at = wsb + row * kWRowBytes + wswz(row, s) * 16 + 4 * (t >> 1);
      const unsigned lo = lds32(at), hi = lds32(at + 8);  // k 16s + 4(t/2) .. +3, and 8 more
      if constexpr (kPairScaled) {
        const unsigned sel = odd ? 0x1302u : 0x3120u;  // bytes 2, 3 or 0, 1 into bytes 0 and 2
        a[rt][h] = pair_scaled(lo, lo, sel, q, rt, h);
        a[rt][2 + h] = pair_scaled(hi, hi, sel, q, rt, h);
      } else {
        float f[4];
        raw4_to_f32(__byte_perm(lo, hi, odd ? 0x7632u : 0x5410u), f);  // k 2t, 2t+1, 2t+8, 2t+9
        a[rt][h] = dequant_pair(f[0], f[1], q, rt, h);
        a[rt][2 + h] = dequant_pair(f[2], f[3], q, rt, h);
      }
    }
}

// ---- The product by wgmma (FX_GEMV_WGMMA: 8-bit or 16-bit weights, sm_90a) -------------------
// From 17 rows the mma.sync product spends most of its issue slots on the activation fragments:
// every warp loads all 8 * kMT rows of them for each k16 step and issues kMT MMAs per row tile. This
// path computes the transposed product instead, D^T = W^T A^T, one warpgroup-wide
// wgmma m64n(8 kMT)k16 per row tile and k16 step: the converted weight fragments (w8_kn_fragments,
// unchanged, or w8_nk_fragments for N x K weights; 16-bit weights as loaded, w16_fragments) are its A
// operand, from registers; the A tile is
// its B operand, read by the tensor
// cores from shared memory through a descriptor (a_offset's layout). Row tile rt's wgmma covers the
// warpgroup's 64 columns col_of(w, rt, .), and its accumulator fragment is exactly acc[rt] of the
// mma.sync path (element 4 mt + i: column col_of(w, rt, g + 8 (i >> 1)), row 8 mt + 2t + (i & 1)),
// so the reduction and epilogue below are shared. 8-20 % less time than mma.sync at 33-64 rows, 3-7 %
// at 24 (bench/RESULTS.md Run BD call 2; prototype bench/gemv/wgmma_rs_int8.cu, Run BD call 1).
// (fence, commit, wait: device/fx_prelude.cuh fx_wgmma_*)
// An empty asm that "writes" a register: the fragments and descriptors pass through it before the
// fence (so that their computation is not sunk between the wgmmas: ptxas would serialize them), and
// the accumulators after the wait (so that nothing reads them before the wgmmas completed).
__device__ __forceinline__ void keep_live(unsigned& r) { asm volatile("" : "+r"(r)::"memory"); }
__device__ __forceinline__ void keep_live(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void keep_live(unsigned long long& r) { asm volatile("" : "+l"(r)::"memory"); }
// K-major shared-memory matrix descriptor, 128-byte swizzle (layout type 1, bits 62-63): start
// address, LBO 16 (unused by a swizzled K-major operand), SBO 1024 (eight 128-byte rows).
__device__ __forceinline__ unsigned long long act_desc(unsigned saddr) {
  auto enc = [](unsigned x) { return (unsigned long long)((x & 0x3FFFF) >> 4); };
  return enc(saddr) | (enc(16) << 16) | (enc(1024) << 32) | (1ull << 62);
}
#define FXG_WGMMA(N, TY, OUTS, AREGS) \
  asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n" \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " OUTS ", " AREGS ", p, 1, 1, 0;\n}\n"
#define FXG_IN : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db))
// d (+)= A (64 x 16, this warp's rows 16w .. from registers) x B (16 x NN, from the descriptor db)
template <int NN>
__device__ __forceinline__ void wgmma_rs(float (&d)[NN / 2], const unsigned (&a)[4], unsigned long long db) {
  if constexpr (NN == 8) {
#define FXG_N8(TY) FXG_WGMMA(8, TY, "{%0, %1, %2, %3}", "{%4, %5, %6, %7}, %8") \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) FXG_IN
    if constexpr (kHalf) FXG_N8("f16"); else FXG_N8("bf16");
  } else if constexpr (NN == 16) {
#define FXG_N16(TY) FXG_WGMMA(16, TY, "{%0, %1, %2, %3, %4, %5, %6, %7}", "{%8, %9, %10, %11}, %12") \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]) FXG_IN
    if constexpr (kHalf) FXG_N16("f16"); else FXG_N16("bf16");
  } else if constexpr (NN == 32) {
#define FXG_N32(TY) FXG_WGMMA(32, TY, "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}", \
                              "{%16, %17, %18, %19}, %20") \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]) FXG_IN
    if constexpr (kHalf) FXG_N32("f16"); else FXG_N32("bf16");
  } else {
    static_assert(NN == 64, "wgmma_rs: n = 8, 16, 32 or 64");
#define FXG_N64(TY) FXG_WGMMA(64, TY, "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
                              "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}", \
                              "{%32, %33, %34, %35}, %36") \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), \
      "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), \
      "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) FXG_IN
    if constexpr (kHalf) FXG_N64("f16"); else FXG_N64("bf16");
  }
}
#undef FXG_N8
#undef FXG_N16
#undef FXG_N32
#undef FXG_N64
#undef FXG_IN
#undef FXG_WGMMA

// 16-bit weights, k16 step s: the MMA's A fragments of the warp's kRT row tiles, one ldmatrix.x4 each, as the
// mma.sync product reads them (compute_stage): K x N transposed, matrices (k 16s..+7, columns 0-7), (k 16s..+7,
// columns 8-15), (k 16s+8..+15, columns 0-7), (k 16s+8..+15, columns 8-15) of the row tile; N x K (kNkLdmatrix's
// swizzle) untransposed, (columns 0-7, k 16s..+7), (8-15, k 16s..+7), (0-7, 16s+8..), (8-15, 16s+8..): a0..a3.
__device__ __forceinline__ void w16_fragments(unsigned wsb, int s, int lane, int w, unsigned (&a)[kRT][4]) {
  const int mat = lane >> 3;
#pragma unroll
  for (int rt = 0; rt < kRT; ++rt) {
    if constexpr (kKMajor) {
      const int row = col_of(w, rt, (lane & 7) + 8 * (mat & 1));
      ldsm_x4(wsb + row * kWRowBytes + wswz(row, 2 * s + (mat >> 1)) * 16, a[rt][0], a[rt][1], a[rt][2], a[rt][3]);
    } else {
      const int row = 16 * s + (lane & 7) + 8 * (mat >> 1);
      const int ch = col_of(w, rt, 0) / 8 + (mat & 1);
      ldsm_x4_trans(wsb + row * kWRowBytes + wswz(row, ch) * 16, a[rt][0], a[rt][1], a[rt][2], a[rt][3]);
    }
  }
}

// The weight fragments of k16 step s, either layout.
__device__ __forceinline__ void weight_fragments(unsigned wsb, int s, int lane, int w, const ColumnQuant& q,
                                             unsigned (&a)[kRT][4]) {
  if constexpr (kWB == 2) w16_fragments(wsb, s, lane, w, a);
  else if constexpr (kKMajor) w8_nk_fragments(wsb, s, lane, w, q, a);
  else w8_kn_fragments(wsb, s, lane, w, q, a);
}

// One k16 step's fragments pass through keep_live before the fence: converted before it.
__device__ __forceinline__ void fragments_before_fence(unsigned (&a)[kRT][4]) {
#pragma unroll
  for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
    for (int i = 0; i < 4; ++i) keep_live(a[rt][i]);
}

// The accumulators pass through keep_live after the last wait: nothing reads them before it.
__device__ __forceinline__ void accumulators_after_wait(float (&acc)[kRT][kMT][4]) {
#pragma unroll
  for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) keep_live(acc[rt][mt][i]);
}

// One stage by wgmma, in halves of 64 k (two, or one at FX_GEMV_KT 64): each half's fragments are
// converted, then its 4 x kRT wgmmas issued and waited for before the next half converts into the same
// registers. Every input of a half's wgmmas (fragments, descriptors) is computed before its fence:
// ptxas serializes the wgmmas (C7513) where an instruction defining one of their inputs sits between
// them. The CTAs beside this one on the SM fill the wait. Converting each k16 step while the step
// before runs (one group in flight, two fragment buffers: no serialization) measured 0.96-1.05x this
// (bench/RESULTS.md Run BF call 1; bench/gemv/ab/wgmma_overlap.patch).
__device__ __forceinline__ void compute_stage_wgmma(unsigned wsb, unsigned asb, float (&acc)[kRT][kMT][4],
                                                    const ColumnQuant& cq) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int half = 0; half < kKT / 64; ++half) {
    unsigned a[4][kRT][4];
#pragma unroll
    for (int q = 0; q < 4; ++q) weight_fragments(wsb, 4 * half + q, lane, w, cq, a[q]);
    unsigned long long db[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      db[q] = act_desc(asb + half * kAHalfBytes + 32 * q);  // k16 step q: 32 bytes into the rows
      keep_live(db[q]);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) fragments_before_fence(a[q]);
    fx_wgmma_fence();
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
      for (int rt = 0; rt < kRT; ++rt) wgmma_rs<8 * kMT>(reinterpret_cast<float(&)[4 * kMT]>(acc[rt]), a[q][rt], db[q]);
    fx_wgmma_commit();
    fx_wgmma_wait<0>();
    accumulators_after_wait(acc);
  }
}

__device__ __forceinline__ void sts128(unsigned addr, unsigned a, unsigned b, unsigned c, unsigned d) {
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
__device__ __forceinline__ void sts32(unsigned addr, unsigned a) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(a) : "memory");
}
// AWQ's words: the byte permute selectors of columns 0-3 and 4-7. Column c's nibble o = order[c] (FX_B_NWORD_ORDER's
// nibble c) is byte o / 2 of lo (o even) or of hi (o odd): __byte_perm(lo, hi, s) selector (o & 1) * 4 + o / 2.
__host__ __device__ constexpr unsigned nword_selector(unsigned table, int c0) {
  unsigned s = 0;
  for (int c = c0; c < c0 + 4; ++c) {
    const unsigned o = (table >> (4 * c)) & 15u;
    s |= ((o & 1u) * 4u + (o >> 1)) << (4 * (c - c0));
  }
  return s;
}
static_assert(nword_selector(0x73625140u, 0) == 0x6420u && nword_selector(0x73625140u, 4) == 0x7531u &&
                  nword_selector(0x76543210u, 0) == 0x5140u && nword_selector(0x76543210u, 4) == 0x7362u,
              "AWQ's order and the plain one (docs/quantized_storage/README.md)");
constexpr unsigned kNWordSel0 = nword_selector(FX_B_NWORD_ORDER, 0), kNWordSel1 = nword_selector(FX_B_NWORD_ORDER, 4);
// Packed chunk ci (its four words v) written as the bytes of its 32 nibbles.
__device__ __forceinline__ void expand_chunk(unsigned base, int ci, const unsigned (&v)[4]) {
  int row, ch;
  packed_chunk(ci, row, ch);
  unsigned lo[4], hi[4];  // the low and the high nibble of each byte, as bytes
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    lo[j] = v[j] & 0x0F0F0F0Fu;
    hi[j] = (v[j] >> 4) & 0x0F0F0F0Fu;
  }
  if constexpr (kKMajor) {
    // byte j of the chunk holds k 2j (low) and 2j + 1 (high): interleaved, its 32 k are expanded chunks 2 ch, 2 ch + 1
    unsigned e[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      e[2 * j] = __byte_perm(lo[j], hi[j], 0x5140u);
      e[2 * j + 1] = __byte_perm(lo[j], hi[j], 0x7362u);
    }
    const unsigned at = base + row * kWRowBytes;
    sts128(at + wswz(row, 2 * ch) * 16, e[0], e[1], e[2], e[3]);
    sts128(at + wswz(row, 2 * ch + 1) * 16, e[4], e[5], e[6], e[7]);
  } else if constexpr (kWords) {
    // word i is column 4 ch + i, its byte j k pair 4 row + j: the 4 x 4 byte transpose puts k pair j's bytes of the
    // four columns in t[j], whose low nibbles are k row 8 row + 2 j and high ones 8 row + 2 j + 1 (at 128 columns a
    // warp's 32 chunks are one word row: each 4-byte store of the warp covers one tile row's 128 columns, 32 banks; at
    // 64 columns two word rows, two tile rows 8 apart)
    const unsigned a0 = __byte_perm(v[0], v[1], 0x5140u), a1 = __byte_perm(v[0], v[1], 0x7362u);
    const unsigned b0 = __byte_perm(v[2], v[3], 0x5140u), b1 = __byte_perm(v[2], v[3], 0x7362u);
    const unsigned t[4] = {__byte_perm(a0, b0, 0x5410u), __byte_perm(a0, b0, 0x7632u), __byte_perm(a1, b1, 0x5410u),
                           __byte_perm(a1, b1, 0x7632u)};
    const int n = 4 * ch, at = (n & 15);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int r0 = 8 * row + 2 * j, r1 = r0 + 1;
      sts32(base + r0 * kWRowBytes + wswz(r0, n >> 4) * 16 + at, t[j] & 0x0F0F0F0Fu);
      sts32(base + r1 * kWRowBytes + wswz(r1, n >> 4) * 16 + at, (t[j] >> 4) & 0x0F0F0F0Fu);
    }
  } else if constexpr (kNWords) {
    // word j is columns 32 ch + 8 j .. + 7 of k row `row`, column c's value the nibble order[c] of it: lo[j]'s bytes
    // hold nibbles 0 2 4 6, hi[j]'s 1 3 5 7, so one byte permute picks columns 0-3 and another 4-7 (kNWordSel)
    unsigned e[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      e[2 * j] = __byte_perm(lo[j], hi[j], kNWordSel0);
      e[2 * j + 1] = __byte_perm(lo[j], hi[j], kNWordSel1);
    }
    const unsigned at = base + row * kWRowBytes;
    sts128(at + wswz(row, 2 * ch) * 16, e[0], e[1], e[2], e[3]);
    sts128(at + wswz(row, 2 * ch + 1) * 16, e[4], e[5], e[6], e[7]);
  } else {
    // k pair `row`: its low nibbles are k row 2 row, its high ones 2 row + 1, same columns
    const int r0 = 2 * row, r1 = 2 * row + 1;
    sts128(base + r0 * kWRowBytes + wswz(r0, ch) * 16, lo[0], lo[1], lo[2], lo[3]);
    sts128(base + r1 * kWRowBytes + wswz(r1, ch) * 16, hi[0], hi[1], hi[2], hi[3]);
  }
}
// The packed slot at `packed` expanded into the tile buffer at `tile`, then a barrier (compute_stage reads every
// thread's chunks).
__device__ __forceinline__ void expand_stage(const unsigned char* packed, unsigned char* tile) {
  const unsigned from = smem_u32(packed), to = smem_u32(tile);
  // GPTQ's words a chunk at a time: unrolled, their eight stores a chunk spilled at 168 registers (wgmma, 64 rows)
  constexpr int kUnroll = kWords ? 1 : kPCh;
#pragma unroll kUnroll
  for (int i = 0; i < kPCh; ++i) {
    const int ci = threadIdx.x + i * kThreads;
    unsigned v[4];
    lds128(from + ci * 16, v[0], v[1], v[2], v[3]);
    expand_chunk(to, ci, v);
  }
  __syncthreads();
}

// ---- compute one stage -----------------------------------------------------------------------
__device__ __forceinline__ void compute_stage(const unsigned char* ws, const unsigned char* as,
                                              float (&acc)[kRT][kMT][4], const ColumnQuant& cq) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const unsigned wsb = smem_u32(ws), asb = smem_u32(as);
  (void)cq;
  if constexpr (kWgmma) {
    compute_stage_wgmma(wsb, asb, acc, cq);
  } else if constexpr (kNkLdmatrix) {
    // Dense 16-bit N x K weights, k16 steps s: the activation fragments as on the K x N path, the
    // weight fragment of row tile rt by one ldmatrix.x4: matrices (rows 0-7, k 16s..+7), (rows 8-15,
    // k 16s..+7), (rows 0-7, k 16s+8..+15), (rows 8-15, k 16s+8..+15): the MMA's a0..a3.
#pragma unroll
    for (int s = 0; s < kKT / 16; ++s) {
      unsigned bf[kMT][2];
      load_act_fragments(asb, s, lane, bf);
#pragma unroll
      for (int rt = 0; rt < kRT; ++rt) {
        const int row = col_of(w, rt, (lane & 7) + 8 * ((lane >> 3) & 1));
        const int ch = 2 * s + (lane >> 4);
        unsigned a[4];
        ldsm_x4(wsb + row * kWRowBytes + wswz(row, ch) * 16, a[0], a[1], a[2], a[3]);
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) mma16816(acc[rt][mt], a[0], a[1], a[2], a[3], bf[mt][0], bf[mt][1]);
      }
    }
  } else if constexpr (kKMajor) {
    // thread (g,t) owns 16-byte chunk (4j+t) of rows g, g+8 of each row tile; kE/4 MMAs per chunk.
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int ch = 4 * j + t;
      unsigned wr[kRT][2][4];
#pragma unroll
      for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = col_of(w, rt, g + 8 * h);
          if constexpr (kNibbleRegs) {
            // k 16 ch .. + 15 of the row: packed bytes 8 ch .. + 7 (half of packed chunk ch / 2), as the 8-bit words
            // the 16-byte load gives on the 8-bit path: byte b of packed word p is k 2b (low) and 2b + 1 (high)
            unsigned pw[2];
            lds64(wsb + packed_at(row, ch >> 1) + 8 * (ch & 1), pw[0], pw[1]);
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              const unsigned hi = pw[i] >> 4;  // (pair_scaled masks each byte's low nibble; the fp32 route here)
              wr[rt][h][2 * i] = __byte_perm(pw[i], hi, 0x5140u);
              wr[rt][h][2 * i + 1] = __byte_perm(pw[i], hi, 0x7362u);
              if constexpr (!kPairScaled) {
                wr[rt][h][2 * i] &= 0x0F0F0F0Fu;
                wr[rt][h][2 * i + 1] &= 0x0F0F0F0Fu;
              }
            }
          } else {
            lds128(wsb + row * 128 + wswz(row, ch) * 16, wr[rt][h][0], wr[rt][h][1], wr[rt][h][2], wr[rt][h][3]);
          }
        }
#pragma unroll
      for (int q = 0; q < kE / 4; ++q) {
        unsigned bf[kMT][2];
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          const int row = mt * 8 + g;
          int ach, off;
          if constexpr (kWB == 2) { ach = ch; off = q * 8; }
          else { ach = 2 * ch + (q >> 1); off = (q & 1) * 8; }
          lds64(asb + row * kARowBytes + aswz(row, ach) * 16 + off, bf[mt][0], bf[mt][1]);
        }
#pragma unroll
        for (int rt = 0; rt < kRT; ++rt) {
          unsigned a[4];
          if constexpr (kWB == 2) {
            a[0] = dq2(wr[rt][0][2 * q], cq.s[rt][0]);
            a[1] = dq2(wr[rt][1][2 * q], cq.s[rt][1]);
            a[2] = dq2(wr[rt][0][2 * q + 1], cq.s[rt][0]);
            a[3] = dq2(wr[rt][1][2 * q + 1], cq.s[rt][1]);
          } else if constexpr (kPairScaled) {
            // bytes 0,1 and 2,3 of each word (consecutive k, one column)
            a[0] = pair_scaled(wr[rt][0][q], wr[rt][0][q], 0x3120u, cq, rt, 0);
            a[2] = pair_scaled(wr[rt][0][q], wr[rt][0][q], 0x1302u, cq, rt, 0);
            a[1] = pair_scaled(wr[rt][1][q], wr[rt][1][q], 0x3120u, cq, rt, 1);
            a[3] = pair_scaled(wr[rt][1][q], wr[rt][1][q], 0x1302u, cq, rt, 1);
          } else {
            float f0[4], f1[4];
            raw4_to_f32(wr[rt][0][q], f0);
            raw4_to_f32(wr[rt][1][q], f1);
            a[0] = dequant_pair(f0[0], f0[1], cq, rt, 0);
            a[2] = dequant_pair(f0[2], f0[3], cq, rt, 0);
            a[1] = dequant_pair(f1[0], f1[1], cq, rt, 1);
            a[3] = dequant_pair(f1[2], f1[3], cq, rt, 1);
          }
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) mma16816(acc[rt][mt], a[0], a[1], a[2], a[3], bf[mt][0], bf[mt][1]);
        }
      }
    }
  } else {
    // KN: W tile rows are k. k16 steps s.
#pragma unroll
    for (int s = 0; s < kKT / 16; ++s) {
      unsigned bf[kMT][2];
      load_act_fragments(asb, s, lane, bf);
      if constexpr (kWB == 2) {
#pragma unroll
        for (int rt = 0; rt < kRT; ++rt) {
          const int mat = lane >> 3;
          const int row = 16 * s + (lane & 7) + 8 * (mat >> 1);
          const int ch = col_of(w, rt, 0) / 8 + (mat & 1);
          unsigned a[4];
          ldsm_x4_trans(wsb + row * kWRowBytes + wswz(row, ch) * 16, a[0], a[1], a[2], a[3]);
          a[0] = dq2(a[0], cq.s[rt][0]);
          a[1] = dq2(a[1], cq.s[rt][1]);
          a[2] = dq2(a[2], cq.s[rt][0]);
          a[3] = dq2(a[3], cq.s[rt][1]);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) mma16816(acc[rt][mt], a[0], a[1], a[2], a[3], bf[mt][0], bf[mt][1]);
        }
      } else {
        unsigned a[kRT][4];
        if constexpr (kNibbleRegs) nibble_kn_fragments(wsb, s, lane, w, cq, a);
        else w8_kn_fragments(wsb, s, lane, w, cq, a);
#pragma unroll
        for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) mma16816(acc[rt][mt], a[rt][0], a[rt][1], a[rt][2], a[rt][3], bf[mt][0], bf[mt][1]);
      }
    }
  }
}

__device__ __forceinline__ unsigned cluster_nrank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
#else
  return 1;
#endif
}
__device__ __forceinline__ unsigned cluster_rank() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
#else
  return 0;
#endif
}
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ float2 ld_dsmem2(unsigned local_addr, unsigned rank) {
  float2 v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(ra) : "r"(local_addr), "r"(rank));
  asm volatile("ld.shared::cluster.v2.f32 {%0,%1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(ra) : "memory");
#else
  (void)local_addr; (void)rank; v.x = v.y = 0.f;
#endif
  return v;
}

// ---- programmatic dependent launch (sm_90+) --------------------------------------------------
// The gemv reads only its parameters before fx_grid_dependency_wait() (device/fx_prelude.cuh, which
// says why): back to back, 5-13 % less time per call at M = 1-16 (bench/RESULTS.md Run BB call 6).
}  // namespace fxgemv

extern "C" __global__ void
#if FX_GEMV_SPLITK > 1
__cluster_dims__(1, FX_GEMV_SPLITK, 1)
#endif
// FX_GEMV_MIN_BLOCKS: the CTAs per SM the pipeline's shared memory allows (two for ~100 KB, three
// or four for 8-bit weights' shallower pipelines: config_table.cpp gemvCtasPerSm), so ptxas may
// spend the registers that leaves (255 at two, 168 at three, 128 at four). Told only the block
// size, ptxas aimed at three to six CTAs per SM (72-168 registers) and spilled: at M = 64 the int8
// main loop ran 591-669 instructions per stage with 32-36 bytes of spills, 544-630 without
// (bench/gemv/NOTES.md session 35). On sm_80-89 the pipeline fits one CTA per SM; the bound only
// lets ptxas use up to 255 registers there.
__launch_bounds__(fxgemv::kThreads, FX_GEMV_MIN_BLOCKS)
FX_KERNEL_NAME(const __grid_constant__ fxfuse::FxParams p) {
  using namespace fxgemv;
  extern __shared__ __align__(128) unsigned char fx_smem[];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;

  const long long mchunks = (p.M + 8 * kMT - 1) / (8 * kMT);
  Ctx c;
  c.b = blockIdx.z / mchunks;
  c.m0 = (blockIdx.z % mchunks) * (8 * kMT);
  c.n0 = (long long)blockIdx.x * kNT;
  if (c.b >= p.B) {  // (grid.z exact: never taken; kept before any cluster barrier use)
    fx_grid_dependency_wait();  // a CTA that ends must not end before the kernel it depends on
    return;
  }

  // ---- fast-path predicates (uniform)
  {
    bool bf = false;
#if FX_B_PLAIN || FX_GEMV_QUANT_FAST
    const fxfuse::FxOperand& o = p.in[FX_B_SLOT];
    const long long contig = kKMajor ? o.sk : o.sn;
    const long long other = kKMajor ? o.sn : o.sk;
    bf = ((reinterpret_cast<unsigned long long>(o.ptr) & 15) == 0) && contig == 1 &&
         ((other * kBInputBytes) % 16 == 0) && (p.B == 1 || (o.sb * kBInputBytes) % 16 == 0);
#endif
    c.bfast = bf;
    bool af = false;
#if FX_A_PLAIN
    const fxfuse::FxOperand& a = p.in[FX_A_SLOT];
    af = ((reinterpret_cast<unsigned long long>(a.ptr) & 15) == 0) && a.sk == 1 && (a.sm % 8) == 0 &&
         (p.B == 1 || (a.sb % 8) == 0);
#endif
    c.afast = af;
  }

  // ---- split-K over the cluster (y)
  const unsigned nrank = cluster_nrank();
  const unsigned rank = nrank > 1 ? cluster_rank() : 0;
  const long long ksteps = (p.K + kKT - 1) / kKT;
  const long long kb = ksteps * rank / nrank, ke = ksteps * (rank + 1) / nrank;
  const int nsteps = (int)(ke - kb);

  // Everything above read only the kernel's parameters: from here on, the previous kernel's writes.
  fx_grid_dependency_wait();

  // ---- per-column scales and zero points (fast quant path: ColumnQuant) for MMA rows g (h=0), g+8 (h=1); group-wise
  // (FX_B_SCALE_GROUP) those of the stage at k0, read again for each stage
  ColumnQuant cq;
#if !FX_GEMV_SCALE_SHARED
  auto read_scales = [&](long long k0, ColumnQuant& into) {
#pragma unroll
    for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        into.s[rt][h] = 1.f;
#if FX_GEMV_QUANT_FAST
        const long long n = c.n0 + col_of(w, rt, g + 8 * h);
#if FX_B_SCALE_GROUP
        const bool in = n < p.N && k0 < p.K;
        into.s[rt][h] = in ? fx_b_scale(p, c.b, k0, n) : 0.f;
#if FX_B_ZERO_TENSOR
        into.z[rt][h] = in ? fx_b_zero(p, c.b, k0, n) : 0.f;
#endif
#else
        into.s[rt][h] = n < p.N ? fx_b_scale(p, c.b, n) : 0.f;
#if FX_B_ZERO_TENSOR
        into.z[rt][h] = n < p.N ? fx_b_zero(p, c.b, n) : 0.f;
#endif
#endif
#endif
        (void)k0;
      }
  };
#endif
  auto pack_scales = [&]() {
#pragma unroll
    for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        cq.s2[rt][h] = pack2(cq.s[rt][h], cq.s[rt][h]);
#if FX_B_ZERO_TENSOR
        // (FX_B_ZERO_INT: -(magic + z), exact: the zero point is an integer the hooks checked)
        const float nz = FX_B_ZERO_INT ? -(kNibbleMagic + cq.z[rt][h]) : -cq.z[rt][h];
        cq.nz2[rt][h] = pack2(nz, nz);
#endif
      }
  };
#if FX_GEMV_SCALE_SHARED
  // Group-wise scales and zero points are read again at every stage: each a hook with its own 64-bit offset and
  // bounds branch, ~19 instructions a read (bench/gemv/NOTES.md session 67). The lanes 4 g .. 4 g + 3 of a warp hold
  // the same columns col_of(w, rt, g + 8 h), so lane t reads only column (rt, h) = (j >> 1, j & 1), j = t % (2 kRT),
  // and the four lanes exchange them: two reads a lane and stage in place of 4 kRT, and as few loads in flight.
  struct OwnColumn {
    float s, z;
  };
  const int own = t % (2 * kRT);
  auto read_own = [&](long long k0) {
    OwnColumn o;
    const long long n = c.n0 + col_of(w, own >> 1, g + 8 * (own & 1));
    const bool in = n < p.N && k0 < p.K;
    o.s = in ? fx_b_scale(p, c.b, k0, n) : 0.f;
#if FX_B_ZERO_TENSOR
    o.z = in ? fx_b_zero(p, c.b, k0, n) : 0.f;
#else
    o.z = 0.f;
#endif
    return o;
  };
  auto share_own = [&](const OwnColumn& o) {
#pragma unroll
    for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int from = (lane & ~3) | (2 * rt + h);
        cq.s[rt][h] = __shfl_sync(0xffffffffu, o.s, from);
#if FX_B_ZERO_TENSOR
        cq.z[rt][h] = __shfl_sync(0xffffffffu, o.z, from);
#endif
      }
    pack_scales();
  };
  share_own(read_own(kb * kKT));
  OwnColumn own_next{};
#else
  read_scales(kb * kKT, cq);
  pack_scales();
#if FX_B_SCALE_GROUP
  ColumnQuant cq_next;
#endif
#endif

  // The product by wgmma reads the A tiles in the 128-byte swizzle, whose pattern repeats every 1024
  // bytes of shared address: the stages start at the first 1024-byte boundary (the host allots 1 KB
  // more for it: config_table.cpp dynamicSmemBytes).
  unsigned char* smem = fx_smem;
  if constexpr (kWgmma) smem += (1024u - (smem_u32(fx_smem) & 1023u)) & 1023u;
  unsigned char* wbase = smem;
  unsigned char* abase = smem + kStages * kWStageBytes;
  unsigned char* wtile = abase + kStages * kAStageBytes;  // packed int4: the expanded tile (expand_stage)

  // ---- hot-path loader state: per-thread global pointers at step kb and smem offsets
  // 8 (4 at 64 columns); packed int4: the packed chunks, half as many
  constexpr int kWCh = kNibbles ? kPCh : kWStageBytes / 16 / kThreads;
  constexpr int kACpr = kARowBytes / 16;
  constexpr int kACh = (8 * kMT * kACpr + kThreads - 1) / kThreads;
  const char* wsrc[kWCh];
  int wdst[kWCh];
  const char* asrc[kACh];
  int adst[kACh], abytes[kACh];
  long long wstep = 0;
  const bool interior_n = c.n0 + kNT <= p.N;
  {
    const fxfuse::FxOperand& o = p.in[FX_B_SLOT];
    const long long k0 = kb * kKT;
    // a stage's kKT k: kKT >> kKPackShift elements along k (k-major: contiguous)
    wstep = (long long)(kKT >> kKPackShift) * kBInputBytes * (kKMajor ? 1 : o.sk);
#pragma unroll
    for (int i = 0; i < kWCh; ++i) {
      const int ci = threadIdx.x + i * kThreads;
      int row, ch;
      long long n, k;
      if constexpr (kNibbles) {  // packed chunk ci into the slot, at packed_offset(ci)
        packed_chunk(ci, row, ch);
        if constexpr (kKMajor) { n = c.n0 + row; k = k0 + 32 * ch; }
        else if constexpr (kWords) { k = k0 + 8 * row; n = c.n0 + 4 * ch; }
        else if constexpr (kNWords) { k = k0 + row; n = c.n0 + 32 * ch; }
        else { k = k0 + 2 * row; n = c.n0 + 16 * ch; }
        wdst[i] = packed_offset(ci);
        wsrc[i] = static_cast<const char*>(o.ptr) +
                  kBInputBytes * (c.b * o.sb + (k >> kKPackShift) * o.sk + (n >> kNPackShift) * o.sn);
        continue;
      }
      if constexpr (kKMajor) { row = ci >> 3; ch = ci & 7; n = c.n0 + row; k = k0 + ch * kE; }
      else { constexpr int cpr = kWRowBytes / 16; row = ci / cpr; ch = ci % cpr; k = k0 + row; n = c.n0 + ch * kE; }
      wdst[i] = row * kWRowBytes + wswz(row, ch) * 16;
      wsrc[i] = static_cast<const char*>(o.ptr) + (c.b * o.sb + k * o.sk + n * o.sn) * kWB;
    }
#if FX_A_PLAIN
    const fxfuse::FxOperand& a = p.in[FX_A_SLOT];
#endif
#pragma unroll
    for (int j = 0; j < kACh; ++j) {
      const int ci = threadIdx.x + j * kThreads;
      const int row = ci / kACpr, ch = ci % kACpr;
      adst[j] = a_offset(row, ch);
      abytes[j] = (ci < 8 * kMT * kACpr && c.m0 + row < p.M) ? 16 : 0;
      asrc[j] = static_cast<const char*>(p.in[FX_B_SLOT].ptr);  // any valid address (0-byte copies)
#if FX_A_PLAIN
      asrc[j] = static_cast<const char*>(a.ptr) + (abytes[j] ? (c.b * a.sb + (c.m0 + row) * a.sm + k0 + ch * 8) * 2 : 0);
#endif
      if (ci >= 8 * kMT * kACpr) adst[j] = -1;
    }
  }
  // a stage the cp.async path loads (block-uniform)
  auto fast_step = [&](int step) { return c.bfast && c.afast && interior_n && (kb + step) * kKT + kKT <= p.K; };
  auto load = [&](int slot_, int step) {
    unsigned char* ws = wbase + slot_ * kWStageBytes;
    unsigned char* as = abase + slot_ * kAStageBytes;
    const long long k0 = (kb + step) * kKT;
    if (fast_step(step)) {
      const unsigned wsu = smem_u32(ws), asu = smem_u32(as);
#pragma unroll
      for (int i = 0; i < kWCh; ++i) cp_async16(wsu + wdst[i], wsrc[i] + step * wstep, 16);
#pragma unroll
      for (int j = 0; j < kACh; ++j)
        if (adst[j] >= 0) cp_async16(asu + adst[j], asrc[j] + (abytes[j] ? step * (kKT * 2) : 0), abytes[j]);
    } else {
      load_stage(p, c, ws, as, k0);
    }
  };

  float acc[kRT][kMT][4];
#pragma unroll
  for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[rt][mt][i] = 0.f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < nsteps) load(s, s);
    cp_async_commit();
  }
  int slot = 0;
  for (int i = 0; i < nsteps; ++i) {
    cp_async_wait<kStages - 2>();
    // the product by wgmma reads the A tile through the async proxy, written through the generic
    // one (cp.async, load_stage's stores): each thread orders its writes before the barrier
    if constexpr (kWgmma) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    const int nx = i + kStages - 1;
    int nslot = slot + kStages - 1;
    if (nslot >= kStages) nslot -= kStages;
    if (nx < nsteps) load(nslot, nx);
    cp_async_commit();
#if FX_GEMV_SCALE_SHARED
    own_next = read_own((kb + i + 1) * kKT);  // the next stage's, in flight while this one computes
#elif FX_B_SCALE_GROUP
    read_scales((kb + i + 1) * kKT, cq_next);  // the next stage's, their loads in flight while this one computes
#endif
    if constexpr (kNibbles && !kNibbleRegs) expand_stage(wbase + slot * kWStageBytes, wtile);
    compute_stage(kNibbles && !kNibbleRegs ? wtile : wbase + slot * kWStageBytes, abase + slot * kAStageBytes, acc,
                  cq);
#if FX_GEMV_SCALE_SHARED
    share_own(own_next);  // at the stage's end: the next stage's values, read while this one computed
#elif FX_B_SCALE_GROUP
#pragma unroll
    for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        cq.s[rt][h] = cq_next.s[rt][h];
#if FX_B_ZERO_TENSOR
        cq.z[rt][h] = cq_next.z[rt][h];
#endif
      }
    pack_scales();
#endif
    if (++slot == kStages) slot = 0;
  }
  cp_async_wait<0>();
  __syncthreads();

  // ---- partial sums to smem: red[m][n] (n fastest), row pitch kNT+4 floats
  constexpr int kPitch = kNT + 4;
  float* red = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int rt = 0; rt < kRT; ++rt)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const int c0 = col_of(w, rt, g), c1 = col_of(w, rt, g + 8);
      const int m0 = mt * 8 + 2 * t;
      red[m0 * kPitch + c0] = acc[rt][mt][0];
      red[(m0 + 1) * kPitch + c0] = acc[rt][mt][1];
      red[m0 * kPitch + c1] = acc[rt][mt][2];
      red[(m0 + 1) * kPitch + c1] = acc[rt][mt][3];
    }
  if (nrank > 1) cluster_sync(); else __syncthreads();

  // ---- reduce over the cluster + epilogue. Column pairs are dealt round-robin over the ranks.
  const int mrows = (int)((p.M - c.m0) < 8 * kMT ? (p.M - c.m0) : 8 * kMT);
  const int total = mrows * (kNT / 2);
  for (int e = (int)rank * kThreads + threadIdx.x; e < total; e += (int)nrank * kThreads) {
    const int m = e / (kNT / 2), cp = e % (kNT / 2);
    const long long n = c.n0 + 2 * cp;
    if (n >= p.N) continue;
    const int off = m * kPitch + 2 * cp;
    float2 v = *reinterpret_cast<const float2*>(red + off);
    for (unsigned r = 0; r < nrank; ++r) {
      if (r == rank) continue;
      const float2 u = ld_dsmem2(smem_u32(red + off), r);
      v.x += u.x; v.y += u.y;
    }
    fx_epilogue2(p, c.b, c.m0 + m, n, v.x, v.y);
  }
  if (nrank > 1) cluster_sync();  // keep smem alive until every peer has read it
}
