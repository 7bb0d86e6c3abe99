// generic_gemm.cuh: the fallback kernel for every chain, any arch from sm_80.
//
// One CTA computes a bm × bn tile of C[b] = A[b] · B[b] for b = blockIdx.z; grid
// (ceil(N/bn), ceil(M/bm), B). Operands go global → registers → shared memory through the
// hooks fx_load_a / fx_load_b, so the prologue runs once per element loaded; the fp32
// accumulator goes to fx_epilogue2 / fx_epilogue straight from registers. Shared memory is
// double-buffered: tile t+1 is read into registers while tile t is multiplied, then stored
// to the other buffer, with one barrier per k-tile.
//   16-bit operands: mma.sync m16n8k16 (fp32 accumulate), warps tiled FX_WARPS_M × FX_WARPS_N.
//   fp32 operands:   FFMA outer products, 16 × 16 threads (no TF32: eager fp32 mm is exact fp32).
// Uses the hooks and config macros of docs/interfaces.md, plus FX_ELEM_*, FX_WARPS_* and
// the address hooks fx_addr_a / fx_addr_b / fx_addr_b_raw of plain or quantized operands.

namespace fxgen {

constexpr int kBM = FX_BM;
constexpr int kBN = FX_BN;
constexpr int kBK = FX_BK;
constexpr int kThreads = FX_THREADS;

// How a thread stages its share of one operand tile (kRows × bk; rows are m for A, n for B)
// per k-tile: in chunks of 16 bytes' worth of elements that run along the operand's
// contiguous dim (k when kKFastest), so a chunk is one vector load when the operand is a
// plain, unit-stride, aligned tensor, and the hooks' address math is shared along a chunk.
template <typename T, int kRows, bool kKFastest>
struct Stager {
  static constexpr int kVec = 16 / (int)sizeof(T);
  static constexpr int kChunks = kRows * kBK / kVec / kThreads;
  static_assert(kRows * kBK % (kVec * kThreads) == 0, "tile not divisible into 16-byte chunks per thread");
  static_assert(kKFastest ? kBK % kVec == 0 : kRows % kVec == 0, "tile edge not a multiple of the chunk");
  struct alignas(16) Chunk {
    T v[kVec];
  };
  // First element (row, col) of this thread's chunk i; element j is (row, col + j) or (row + j, col).
  static __device__ __forceinline__ void pos(int tid, int i, int& row, int& col) {
    const int e = tid + i * kThreads;
    if (kKFastest) {
      row = e / (kBK / kVec);
      col = (e % (kBK / kVec)) * kVec;
    } else {
      row = (e % (kRows / kVec)) * kVec;
      col = e / (kRows / kVec);
    }
  }
};

using StageA = Stager<FxElemA, kBM, FX_A_KMAJOR != 0>;
using StageB = Stager<FxElemB, kBN, FX_B_KMAJOR != 0>;

__device__ __forceinline__ bool fxAligned(const void* q, int bytes) { return (unsigned long long)q % bytes == 0; }

// Chunk i of A at tile origin (m0, k0); zero outside M × K.
__device__ __forceinline__ void loadChunkA(const fxfuse::FxParams& p, long long b, long long m0, long long k0,
                                           int tid, int i, StageA::Chunk& out) {
  constexpr bool kK = FX_A_KMAJOR != 0;
  constexpr int kV = StageA::kVec;
  int r, c;
  StageA::pos(tid, i, r, c);
  const long long m = m0 + r, k = k0 + c;
#if FX_A_PLAIN
  const bool whole = kK ? (m < p.M && k + kV <= p.K) : (m + kV <= p.M && k < p.K);
  if (whole && (kK ? p.in[FX_A_SLOT].sk : p.in[FX_A_SLOT].sm) == 1) {
    const FxElemA* q = fx_addr_a(p, b, m, k);
    if (fxAligned(q, 16)) {
      out = *reinterpret_cast<const StageA::Chunk*>(q);
      return;
    }
  }
#endif
#pragma unroll
  for (int j = 0; j < kV; ++j) {
    const long long mj = kK ? m : m + j, kj = kK ? k + j : k;
    out.v[j] = (mj < p.M && kj < p.K) ? fx_load_a(p, b, mj, kj) : FxElemA(0.0f);
  }
}

// Chunk i of B at tile origin (n0, k0); zero outside N × K. A quantized B reads its raw
// elements as one vector and dequantizes them in registers.
__device__ __forceinline__ void loadChunkB(const fxfuse::FxParams& p, long long b, long long n0, long long k0,
                                           int tid, int i, StageB::Chunk& out) {
  constexpr bool kK = FX_B_KMAJOR != 0;
  constexpr int kV = StageB::kVec;
  int r, c;
  StageB::pos(tid, i, r, c);
  const long long n = n0 + r, k = k0 + c;
#if FX_B_PLAIN || FX_B_QUANT
  const bool whole = kK ? (n < p.N && k + kV <= p.K) : (n + kV <= p.N && k < p.K);
#if FX_B_PLAIN
  constexpr int kSlot = FX_B_SLOT;
#else
  constexpr int kSlot = FX_B_RAW_SLOT;
#endif
  if (whole && (kK ? p.in[kSlot].sk : p.in[kSlot].sn) == 1) {
#if FX_B_PLAIN
    const FxElemB* q = fx_addr_b(p, b, k, n);
    if (fxAligned(q, 16)) {
      out = *reinterpret_cast<const StageB::Chunk*>(q);
      return;
    }
#else
    struct alignas(kV * sizeof(FxRawB) < 16 ? kV * sizeof(FxRawB) : 16) RawChunk {
      FxRawB v[kV];
    };
    const FxRawB* q = fx_addr_b_raw(p, b, k, n);
    if (fxAligned(q, alignof(RawChunk))) {
      const RawChunk raw = *reinterpret_cast<const RawChunk*>(q);
#pragma unroll
      for (int j = 0; j < kV; ++j) out.v[j] = fx_dequant_b(p, b, kK ? k + j : k, kK ? n : n + j, raw.v[j]);
      return;
    }
#endif
  }
#endif
#pragma unroll
  for (int j = 0; j < kV; ++j) {
    const long long nj = kK ? n : n + j, kj = kK ? k + j : k;
    out.v[j] = (nj < p.N && kj < p.K) ? fx_load_b(p, b, kj, nj) : FxElemB(0.0f);
  }
}

// Reads tile (m0.., k0..) of A and (n0.., k0..) of B into registers.
__device__ __forceinline__ void loadTile(const fxfuse::FxParams& p, long long b, long long m0, long long n0,
                                         long long k0, int tid, StageA::Chunk (&ra)[StageA::kChunks],
                                         StageB::Chunk (&rb)[StageB::kChunks]) {
#pragma unroll
  for (int i = 0; i < StageA::kChunks; ++i) loadChunkA(p, b, m0, k0, tid, i, ra[i]);
#pragma unroll
  for (int i = 0; i < StageB::kChunks; ++i) loadChunkB(p, b, n0, k0, tid, i, rb[i]);
}

#if !FX_ELEM_F32
// ---------------------------------------------------------------- 16-bit: mma.sync ----
constexpr int kWarpsM = FX_WARPS_M;
constexpr int kWarpsN = FX_WARPS_N;
constexpr int kWM = kBM / kWarpsM;  // warp tile
constexpr int kWN = kBN / kWarpsN;
constexpr int kMI = kWM / 16;       // m16n8k16 tiles per warp
constexpr int kNI = kWN / 8;
// Rows of bk + 8 elements: 16-byte aligned, and the 8 rows a fragment load touches fall in
// distinct banks (row stride 20 words).
constexpr int kLds = kBK + 8;
static_assert(kWarpsM * kWarpsN * 32 == kThreads, "FX_WARPS_M * FX_WARPS_N warps must fill the CTA");
static_assert(kWM % 16 == 0 && kWN % 8 == 0 && kBK % 16 == 0, "tile shape does not fit m16n8k16");

__device__ __forceinline__ unsigned lds32(const FxElemA* p) { return *reinterpret_cast<const unsigned*>(p); }

__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
#if FX_ELEM_BF16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

}  // namespace fxgen

extern "C" __global__ void __launch_bounds__(FX_THREADS) FX_KERNEL_NAME(const __grid_constant__ fxfuse::FxParams p) {
  using namespace fxgen;
  static_assert(sizeof(FxElemA) == 2 && sizeof(FxElemB) == 2, "mma path needs 16-bit operands");
  // sA[s][m][k], sB[s][n][k]: both k-contiguous, the layout mma's row.col fragments read.
  __shared__ __align__(16) FxElemA sA[2][kBM * kLds];
  __shared__ __align__(16) FxElemB sB[2][kBN * kLds];

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4;  // mma fragment coordinates: group, thread in group
  const int wm0 = (warp / kWarpsN) * kWM, wn0 = (warp % kWarpsN) * kWN;
  const long long b = blockIdx.z, m0 = (long long)blockIdx.y * kBM, n0 = (long long)blockIdx.x * kBN;
  const long long kTiles = (p.K + kBK - 1) / kBK;

  float acc[kMI][kNI][4];
#pragma unroll
  for (int i = 0; i < kMI; ++i)
#pragma unroll
    for (int j = 0; j < kNI; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  StageA::Chunk ra[StageA::kChunks];
  StageB::Chunk rb[StageB::kChunks];
  // A chunk along k is one 16-byte store; one along m (or n) is scattered over rows.
  auto storeTile = [&](int s) {
#pragma unroll
    for (int i = 0; i < StageA::kChunks; ++i) {
      int r, c;
      StageA::pos(tid, i, r, c);
      if (FX_A_KMAJOR) {
        *reinterpret_cast<StageA::Chunk*>(&sA[s][r * kLds + c]) = ra[i];
      } else {
#pragma unroll
        for (int j = 0; j < StageA::kVec; ++j) sA[s][(r + j) * kLds + c] = ra[i].v[j];
      }
    }
#pragma unroll
    for (int i = 0; i < StageB::kChunks; ++i) {
      int r, c;
      StageB::pos(tid, i, r, c);
      if (FX_B_KMAJOR) {
        *reinterpret_cast<StageB::Chunk*>(&sB[s][r * kLds + c]) = rb[i];
      } else {
#pragma unroll
        for (int j = 0; j < StageB::kVec; ++j) sB[s][(r + j) * kLds + c] = rb[i].v[j];
      }
    }
  };

  if (kTiles > 0) {
    loadTile(p, b, m0, n0, 0, tid, ra, rb);
    storeTile(0);
  }
  __syncthreads();
  for (long long kt = 0; kt < kTiles; ++kt) {
    const int s = (int)(kt & 1);
    if (kt + 1 < kTiles) loadTile(p, b, m0, n0, (kt + 1) * kBK, tid, ra, rb);  // in flight during the MMAs
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      unsigned af[kMI][4], bfrag[kNI][2];
#pragma unroll
      for (int i = 0; i < kMI; ++i) {
        const FxElemA* base = &sA[s][(wm0 + i * 16 + g) * kLds + kk + t * 2];
        af[i][0] = lds32(base);
        af[i][1] = lds32(base + 8 * kLds);
        af[i][2] = lds32(base + 8);
        af[i][3] = lds32(base + 8 * kLds + 8);
      }
#pragma unroll
      for (int j = 0; j < kNI; ++j) {
        const FxElemB* base = &sB[s][(wn0 + j * 8 + g) * kLds + kk + t * 2];
        bfrag[j][0] = lds32(reinterpret_cast<const FxElemA*>(base));
        bfrag[j][1] = lds32(reinterpret_cast<const FxElemA*>(base + 8));
      }
#pragma unroll
      for (int i = 0; i < kMI; ++i)
#pragma unroll
        for (int j = 0; j < kNI; ++j) mma16816(acc[i][j], af[i], bfrag[j]);
    }
    // The other buffer was last read in iteration kt - 1, which the barrier below closed.
    if (kt + 1 < kTiles) storeTile(s ^ 1);
    __syncthreads();
  }

  // Epilogue: c0,c1 are (row g, cols 2t, 2t+1) and c2,c3 the same 8 rows down.
#pragma unroll
  for (int i = 0; i < kMI; ++i) {
#pragma unroll
    for (int j = 0; j < kNI; ++j) {
      const long long m = m0 + wm0 + i * 16 + g, n = n0 + wn0 + j * 8 + t * 2;
      if (n >= p.N) continue;
      if (m < p.M) fx_epilogue2(p, b, m, n, acc[i][j][0], acc[i][j][1]);
      if (m + 8 < p.M) fx_epilogue2(p, b, m + 8, n, acc[i][j][2], acc[i][j][3]);
    }
  }
}

#else
// ---------------------------------------------------------------- fp32: FFMA ----
static_assert(kThreads == 256, "the fp32 path arranges 16 x 16 threads");
constexpr int kTM = kBM / 16;  // rows and columns per thread, strided by 16
constexpr int kTN = kBN / 16;
constexpr int kPad = 1;        // sA[k][m] rows of bm + 1 floats: a warp's transposed stores spread over banks

}  // namespace fxgen

extern "C" __global__ void __launch_bounds__(FX_THREADS) FX_KERNEL_NAME(const __grid_constant__ fxfuse::FxParams p) {
  using namespace fxgen;
  // k-major in shared memory so each k step reads a column of A and a row of B.
  __shared__ float sA[2][kBK][kBM + kPad];
  __shared__ float sB[2][kBK][kBN + kPad];

  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const long long b = blockIdx.z, m0 = (long long)blockIdx.y * kBM, n0 = (long long)blockIdx.x * kBN;
  const long long kTiles = (p.K + kBK - 1) / kBK;

  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;

  StageA::Chunk ra[StageA::kChunks];
  StageB::Chunk rb[StageB::kChunks];
  auto storeTile = [&](int s) {
#pragma unroll
    for (int i = 0; i < StageA::kChunks; ++i) {
      int r, c;
      StageA::pos(tid, i, r, c);
#pragma unroll
      for (int j = 0; j < StageA::kVec; ++j) {
        if (FX_A_KMAJOR) sA[s][c + j][r] = ra[i].v[j];
        else sA[s][c][r + j] = ra[i].v[j];
      }
    }
#pragma unroll
    for (int i = 0; i < StageB::kChunks; ++i) {
      int r, c;
      StageB::pos(tid, i, r, c);
#pragma unroll
      for (int j = 0; j < StageB::kVec; ++j) {
        if (FX_B_KMAJOR) sB[s][c + j][r] = rb[i].v[j];
        else sB[s][c][r + j] = rb[i].v[j];
      }
    }
  };

  if (kTiles > 0) {
    loadTile(p, b, m0, n0, 0, tid, ra, rb);
    storeTile(0);
  }
  __syncthreads();
  for (long long kt = 0; kt < kTiles; ++kt) {
    const int s = (int)(kt & 1);
    if (kt + 1 < kTiles) loadTile(p, b, m0, n0, (kt + 1) * kBK, tid, ra, rb);
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float a[kTM], bv[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) a[i] = sA[s][k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) bv[j] = sB[s][k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(a[i], bv[j], acc[i][j]);
    }
    if (kt + 1 < kTiles) storeTile(s ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const long long m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < p.M && n < p.N) fx_epilogue(p, b, m, n, acc[i][j]);
    }
  }
}
#endif
