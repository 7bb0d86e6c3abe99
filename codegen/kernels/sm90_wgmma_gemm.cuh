// sm90_wgmma_gemm.cuh — fxfuse Hopper (sm_90a) GEMM template: TMA + wgmma, warp-specialized,
// persistent, fused epilogue from the fp32 accumulator registers.
//
// Included after the generated preamble (kernel_abi.h text + hooks).  Uses from the preamble:
//   fxfuse::FxParams (p.tma[0] = CUtensorMap of A, p.tma[1] = CUtensorMap of B, p.B/M/N/K, p.in[])
//   FxElemA, FxElemB (both __nv_bfloat16 or both __half), FX_A_KMAJOR (must be 1), FX_B_KMAJOR,
//   FX_A_SLOT / FX_B_SLOT (optional: used only to detect a batch-broadcast operand, sb == 0),
//   fx_epilogue2(p, b, m, n, acc0, acc1) (n even; stores every output of (m,n) and (m,n+1)),
//   fx_epilogue2_vec_ok(p) / FxCol, fx_epilogue_cols(p, b, n, c0, c1) / fx_epilogue2_vec(..., c0, c1)
//   (the same without bounds or layout branches, for tiles wholly inside the output when vec_ok
//   holds; the values that depend on the column only computed once per column pair).
//   FX_KERNEL_NAME.
//
// Config macros (all optional; defaults in brackets).  The host side must use the same values:
// codegen/tma_desc.h (fxfuse::sm90::GemmConfig) describes tensor maps and launch geometry for them.
//   FX_BM        [128]  CTA tile rows (M).  Cooperative: 64 * FX_CONSUMERS (each consumer warpgroup owns
//                       64 rows); ping-pong: 64 or 128 (see FX_PINGPONG).  128 (2 consumers) is the
//                       measured cooperative shape.  256 (4 consumers, FX_BN=128) compiles with
//                       at most 3 stages beside the reserved staging buffer (96 regs; it stages
//                       nothing: 16 named barriers are too few) but is unmeasured: it hung in run 4
//                       with the old register targets.
//   FX_BN        [256]  CTA tile cols (N).  128 or 256 (wgmma m64nBNk16; one instruction per k16).
//   FX_BK        [64]   K per pipeline stage.  Must be 64 (= one 128-byte swizzle row of 16-bit elements).
//   FX_STAGES    [4]    shared-memory ring depth.  4 for 128x256 (48 KB/stage), up to 6 for 128x128.
//   FX_CONSUMERS [2]    consumer (MMA) warpgroups (2; 4 experimental).  Warpgroup 0 is the TMA producer.
//   FX_THREADS   [128*(FX_CONSUMERS+1)]  must equal that value if the generator defines it.
//   FX_GROUP_M   [16]   grouped (L2-friendly) persistent tile order: tiles walk GROUP_M M-tiles
//                       down before moving one N-tile right.
//   FX_PRODUCER_REGS [40], FX_CONSUMER_REGS [232 for 2 consumers, 104 for 4, 216 for 1]: setmaxnreg targets.
//                       The consumers' increase must fit in what the producer's decrease frees,
//                       assuming the kernel is allocated FX_SM90_ENTRY_REGS (168 for 384 threads).
//                       The runtime should check cuFuncGetAttribute(NUM_REGS) == 168 after loading
//                       a 2-consumer kernel (fxfuse::sm90::setmaxnregSafe): with fewer, .inc waits forever.
//   FX_PINGPONG  [0]    0: cooperative, the consumers split each tile (FX_BM = 64 * FX_CONSUMERS rows).
//                       1: ping-pong, each of the 2 consumers owns whole tiles (local tiles 0,2,4.. and
//                       1,3,5..; FX_BM = 64 or 128 rows, FX_BM*FX_BN <= 16384 so the accumulator fits);
//                       one consumer's epilogue runs while the other's MMAs keep the tensor cores busy.
//   FX_CLUSTER_M [1]    1 or 2.  2: CTA pairs (compile-time __cluster_dims__(2,1,1)) work on
//                       vertically adjacent tiles (same N-tile); each CTA TMA-loads half of the shared
//                       B tile and multicasts it to both, halving B's L2->SM traffic.  The grid must
//                       be a multiple of 2 and must not exceed 2 * (max co-resident clusters)
//                       (cuOccupancyMaxActiveClusters), else the persistent loop serializes.
//                       Measured no faster than 1 on H200 (bench/sm90/NOTES.md run 4): keep 1.
//   FX_SPLIT_K   [1]    1, 2 or 4.  KS > 1: a cluster of KS CTAs (compile-time __cluster_dims__(KS,1,1))
//                       shares each output tile along K, for shapes with too few tiles to fill the SMs
//                       (M = 64, K = 14336, N = 4096: 32 tiles of 64x128).  Rank r runs its share of
//                       the nk k-blocks (nk/KS, the first nk%KS ranks one more; where nk < KS the
//                       ranks without one sit out) with its own producer and ring; ranks r > 0 write
//                       their f32 fragment into the leader's (rank 0's) partial buffer (FX_SPLITK_BYTES
//                       after the staging memory) over DSMEM, one rank at a time, and the leader adds
//                       them in rank order (the sum does not depend on timing) before its epilogue.
//                       Needs one cooperative consumer (FX_BM 64, FX_CONSUMERS 1), FX_CLUSTER_M 1.
//   FX_EPI_OVERLAP [0]  1: the epilogue overlaps the next tile's mainloop in the cooperative schedule.
//                       The consumers round the tile to the chain's hand-off value (fx_handoff2: the
//                       first 16-bit value after the product, hooks.h epilogueHandoff; exact, the spec
//                       rounds there itself) into FX_HANDOFF_BYTES of shared memory and go on to the
//                       next tile; the producer warpgroup's other three warps (idle otherwise) read
//                       it back row by row (16 bytes a lane), run the chain from it
//                       (fx_epilogue2_packed with acc = the hand-off value) and store 16 bytes a
//                       lane. Two named barriers pass the buffer back and forth
//                       (FX_BAR_HANDOFF_FULL / _FREE). The producer warpgroup runs at 88
//                       registers, the consumers at 208. Needs FX_CONSUMERS 2 (FX_BM 128), no ping-pong,
//                       cluster or split-K, and the generator's FX_EPI_STAGED and FX_EPI_HANDOFF
//                       (one 16-bit output). 128x256 fits three ring stages beside the 66 KB
//                       hand-off. (A fourth warpgroup for the epilogue does not compile: at 512
//                       threads the launch's 128 registers are fewer than ptxas needs for a
//                       m64n256 wgmma, 154, whatever setmaxnreg.inc gives the consumers.)
//
// Measured (H200, bench/sm90/NOTES.md runs 4-7, harness epilogue, bias+GELU(tanh.approx)): cooperative
// 128x256 1.24x cuBLAS mm alone at 4096^3 (its epilogue runs while the tensor cores wait); ping-pong
// 64x256 with the whole-tile epilogue 1.09x at 4096^3, 1.35x at 4096x1024x4096 (one consumer's
// epilogue overlaps the other's mainloop).
//
// Launch: grid = (min(#tiles, #SMs), 1, 1) persistent as the runtime launches it (config_table.cpp
// launchDims, tma_desc.cpp launchGeometry; any grid works: CTAs stride the tiles by gridDim.x and
// those past the last tile skip the loop; split-K: whole clusters), block =
// (FX_THREADS,1,1), dynamic smem = FX_STAGES*(FX_BM+FX_BN)*FX_BK*2 + FX_STAGE_BYTES + FX_HANDOFF_BYTES + 1024 bytes
// (needs cuFuncSetAttribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).  #tiles = ceil(M/BM)*ceil(N/BN)*B.
// With FX_CLUSTER_M=2: grid = 2*min(ceil(ceil(M/BM)/2)*ceil(N/BN)*B, max active clusters); the
// cluster shape is compiled in, so a plain cuLaunchKernel launches clusters.
// With FX_SPLIT_K=KS > 1: grid = KS*min(#tiles, #SMs/KS) (a multiple of KS; cluster c takes tiles
// c, c + grid/KS, ...), dynamic smem + FX_SPLITK_BYTES; compiled-in cluster shape as above.
//
// Tensor maps (rank 3, 128B swizzle, OOB zero fill; see codegen/tma_desc.cpp):
//   A  [B][M][K] K contiguous: dims {K, M, Ba}, box {64, 64, 1}, FX_BM/64 loads/stage (those wholly
//      past M skipped)
//   B  FX_B_KMAJOR=1 ([N,K], F.linear weight): dims {K, N, Bb}, box {64, FX_BN/FX_CLUSTER_M, 1}
//      (one box: its rows past N are loaded as the TMA's zero fill)
//      FX_B_KMAJOR=0 ([K,N], x @ w):           dims {N, K, Bb}, box {64, 64, 1}, FX_BN/64 loads/stage
//      (those wholly past N skipped where FX_CLUSTER_M == 1)
//
// Requirements: K >= 1; K % 8 == 0 and the row strides 16-byte multiples (TMA); N % 2 == 0 for
// fx_epilogue2 pairs (the hook guards n+1 < N).  Any M.  M, N, K < 2^31.
//
// Structure: warpgroup 0 = producer (one thread issues TMA into a FX_STAGES ring of full/empty
// mbarriers; setmaxnreg.dec), warpgroups 1..FX_CONSUMERS = consumers (wgmma m64nBNk16 from shared
// memory, 4 per stage, one wgmma group kept in flight; setmaxnreg.inc).  Persistent grid-stride
// loop over tiles in grouped order; while consumers run the epilogue of tile t the producer
// already streams tile t+1's first stages.  The epilogue calls fx_epilogue2 on accumulator
// column pairs straight from registers.

#ifndef FX_BM
#define FX_BM 128
#endif
#ifndef FX_BN
#define FX_BN 256
#endif
#ifndef FX_BK
#define FX_BK 64
#endif
#ifndef FX_STAGES
#define FX_STAGES 4
#endif
#ifndef FX_CONSUMERS
#define FX_CONSUMERS 2
#endif
#ifndef FX_GROUP_M
#define FX_GROUP_M 16
#endif
#ifndef FX_CLUSTER_M
#define FX_CLUSTER_M 1
#endif
#ifndef FX_PINGPONG
#define FX_PINGPONG 0
#endif
#ifndef FX_SPLIT_K
#define FX_SPLIT_K 1
#endif
#ifndef FX_EPI_OVERLAP
#define FX_EPI_OVERLAP 0
#endif
// With FX_EPI_OVERLAP: the consumers run the CTA's last tile's epilogue beside the epilogue warps (1:
// the bench knob FXFUSE_SM90_LAST_EPILOGUE_SHARED=1, not yet run on a GPU), or leave it to them (0).
// With 1 they give back their registers (setmaxnreg.dec to the epilogue warps' count) and join the
// epilogue warps' loop after the roles' branches, so the epilogue's code is compiled once.
#ifndef FX_EPI_LAST_SHARED
#define FX_EPI_LAST_SHARED 0
#endif
#ifndef FX_PRODUCER_REGS
// (88 where the producer warpgroup's other warps run the epilogue, FX_EPI_OVERLAP: at 72 they spilled
// from three column inputs on; bench/sm90/NOTES.md session 46)
#define FX_PRODUCER_REGS (FX_EPI_OVERLAP ? 88 : 40)
#endif
// One consumer (256 threads, the split-K tiles): launch bounds of 2 CTAs per SM, a register cap
// only (shared memory still holds one CTA per SM). At one CTA the entry would be 248 registers,
// which leaves setmaxnreg.inc nothing to raise the consumer to; without setmaxnreg ptxas keeps the
// k-loop's descriptors in regular registers and moves them to uniform ones per HGMMA (103 against
// 74 instructions per two k-blocks). At 128 the producer's decrease to 40 gives the consumer 216.
#define FX_SM90_MIN_BLOCKS (FX_CONSUMERS == 1 ? 2 : 1)
// Registers per thread the CTA is launched with: __launch_bounds__(FX_THREADS, FX_SM90_MIN_BLOCKS)
// caps ptxas at this, and ptxas uses all of it for these kernels (168 for 384 threads; 96 for 640;
// 128 for 256).
#define FX_SM90_ENTRY_REGS_UNCAPPED ((65536 / (FX_THREADS * FX_SM90_MIN_BLOCKS)) / 8 * 8)
#define FX_SM90_ENTRY_REGS (FX_SM90_ENTRY_REGS_UNCAPPED > 248 ? 248 : FX_SM90_ENTRY_REGS_UNCAPPED)
#ifndef FX_CONSUMER_REGS
// setmaxnreg.inc can only take what the producer's setmaxnreg.dec gave back to the CTA's pool
// (otherwise it waits forever — run 4: 4 consumers at 112 hung).  232 for 2 consumers, 104 for 4,
// 216 for 1; 208 for 2 with FX_EPI_OVERLAP (producer 88).
#define FX_CONSUMER_REGS (FX_SM90_ENTRY_REGS + ((FX_SM90_ENTRY_REGS - FX_PRODUCER_REGS) / FX_CONSUMERS) / 8 * 8 > 240 \
    ? 240 : FX_SM90_ENTRY_REGS + ((FX_SM90_ENTRY_REGS - FX_PRODUCER_REGS) / FX_CONSUMERS) / 8 * 8)
#endif
#define FX_SM90_THREADS (128 * (FX_CONSUMERS + 1))
#ifndef FX_THREADS
#define FX_THREADS FX_SM90_THREADS
#endif
#ifndef FX_A_SLOT
#define FX_A_SLOT 0
#endif
#ifndef FX_B_SLOT
#define FX_B_SLOT 1
#endif

static_assert(FX_THREADS == FX_SM90_THREADS, "FX_THREADS must be 128*(FX_CONSUMERS+1)");
static_assert(FX_BK == 64, "FX_BK must be 64 (128-byte swizzle rows of 16-bit elements)");
#if FX_PINGPONG
static_assert(FX_CONSUMERS == 2 && (FX_BM == 64 || FX_BM == 128) && FX_BM * FX_BN <= 16384 && FX_CLUSTER_M == 1,
              "ping-pong: 2 consumers, each a whole FX_BM x FX_BN tile (64x256, 64x128 or 128x128), no cluster");
#else
static_assert(FX_BM == 64 * FX_CONSUMERS && FX_BM <= 256, "FX_BM must be 64 * FX_CONSUMERS (<= 256)");
#endif
static_assert(FX_BN == 128 || FX_BN == 256, "FX_BN must be 128 or 256");
static_assert(FX_A_KMAJOR == 1, "sm90 template needs A K-contiguous");
// Staged stores (FX_EPI_STAGED, from the generator: one 16-bit output). Stored straight from the
// accumulator fragment, a thread holds 2 columns of a row per 16-byte column block: a warp's
// 4-byte stores write 8 rows x 16 bytes, half of every 32-byte sector they touch, and the other
// half comes with the next instruction (Nsight Compute at M 4096, K 1024, N 4096: 47 % excess
// sectors). With FX_SM90_STAGED_STORE 1 (0: those pair stores, fx_epilogue2_vec, for A/B runs) each
// warp stages 16 rows x 64 columns in shared memory (FX_STAGE_WARP_BYTES after the ring; rows
// FX_STAGE_PITCH = 144 bytes apart, not 128, so that the fragment's 8 rows of a 32-bit store hit
// 8 different bank groups) and stores 16 bytes per lane: a warp instruction writes 4 rows x 128
// bytes. (Exchanging words between lanes by shuffles for 8-byte stores instead made ptxas copy the
// unrolled epilogue for a diverged warp: +46 % SASS.)
// Every kernel reserves the staging memory, so the host's size formula (codegen/tma_desc.h
// GemmConfig::dynSmemBytes) does not depend on the chain.
#define FX_STAGE_PITCH 144
#define FX_STAGE_WARP_BYTES (16 * FX_STAGE_PITCH)
// (none with the overlapped epilogue, which reads the hand-off instead)
#define FX_STAGE_BYTES (FX_EPI_OVERLAP ? 0 : FX_CONSUMERS * 4 * FX_STAGE_WARP_BYTES)
#ifndef FX_SM90_STAGED_STORE
#define FX_SM90_STAGED_STORE 1
#endif
// Each consumer warp syncs on its own named barrier, 1 + 4 * consumer + warp (0 is
// __syncthreads'): __syncwarp made ptxas copy the rest of the epilogue for a diverged warp.
#if defined(FX_EPI_STAGED) && FX_SM90_STAGED_STORE && FX_CONSUMERS * 4 < 16 && !FX_EPI_OVERLAP
#define FX_SM90_STAGED 1
#else
#define FX_SM90_STAGED 0
#endif
// FX_EPI_STAGED_IN (a residual: the chain's one 16-bit input along m and n): staged the other way,
// 16 bytes per lane into the buffer, its pairs read back where the output's pairs then go.
#if FX_SM90_STAGED && defined(FX_EPI_STAGED_IN)
#define FX_SM90_STAGED_IN 1
#else
#define FX_SM90_STAGED_IN 0
#endif
// FX_SM90_COLS_EARLY (the generator's rule; knob FXFUSE_SM90_COLS_EARLY=0 off; 128-column tiles): the staged epilogue's
// column values (a bias, per-column scales: fx_epilogue_cols) are loaded before the tile's mainloop and held
// in registers across it, so that their load latency hides under the MMAs instead of following the last
// one (session 58: at 512 x 4096 x 4096, one tile per CTA, bias+ReLU+cast's epilogue adds 0.9 us that
// nothing hides). 256-column tiles would hold twice the values beside twice the accumulators.
#if FX_SM90_STAGED && defined(FX_SM90_COLS_EARLY) && FX_SM90_COLS_EARLY && FX_BN == 128
#define FX_SM90_EARLY_COLS 1
#else
#define FX_SM90_EARLY_COLS 0
#endif
// Split-K: the leader's buffer for one peer's f32 accumulator fragment (the peers take turns: one
// buffer, not KS - 1, so that 64x128 keeps 7 ring stages).
#define FX_SPLITK_BYTES (FX_SPLIT_K > 1 ? FX_BM * FX_BN * 4 : 0)
// The overlapped epilogue's hand-off: FX_BM rows of FX_BN 16-bit values, rows FX_HANDOFF_PITCH bytes
// apart (16 more than a row: a consumer warp's 4-byte stores of 8 fragment rows hit 8 different
// bank groups; the epilogue warps' 16-byte reads of a row are contiguous).
#define FX_HANDOFF_PITCH (FX_BN * 2 + 16)
#define FX_HANDOFF_BYTES (FX_EPI_OVERLAP ? FX_BM * FX_HANDOFF_PITCH : 0)
// Named barriers of the hand-off (0 is __syncthreads'; the staged stores' 1-8 are not compiled in
// with FX_EPI_OVERLAP): FULL, the consumers' 256 threads arrive and the producer warpgroup's three
// epilogue warps wait; FREE, the other way round. CONSUMERS: the consumers alone, between their
// setmaxnreg.inc and .dec with FX_EPI_LAST_SHARED.
#define FX_BAR_HANDOFF_FULL 1
#define FX_BAR_HANDOFF_FREE 2
#define FX_BAR_CONSUMERS 3
#define FX_EPI_BAR_THREADS (128 * FX_CONSUMERS + 96)
// The dynamic shared memory this layout needs: the ring, the staging buffer or the hand-off, the
// split-K partial buffer, the slack for the 1024-byte alignment.
#define FX_LAYOUT_SMEM_BYTES (FX_STAGES * (FX_BM + FX_BN) * FX_BK * 2 + FX_STAGE_BYTES + FX_HANDOFF_BYTES + FX_SPLITK_BYTES + 1024)
// Static barriers: full[S], empty[S], order[2]; split-K adds its two (fx_splitk_bars).
#define FX_STATIC_BAR_BYTES ((2 * FX_STAGES + 2 + (FX_SPLIT_K > 1 ? 2 : 0)) * 8)
// The host sizes the launch's dynamic shared memory by its own formula (codegen/tma_desc.h
// GemmConfig::dynSmemBytes; the generator passes it as FX_DYN_SMEM_BYTES): the layout must fit.
#ifdef FX_DYN_SMEM_BYTES
static_assert(FX_LAYOUT_SMEM_BYTES <= FX_DYN_SMEM_BYTES,
              "the host's dynamic shared memory size is smaller than this kernel's layout");
#endif
// 227 KB per block, less the static barriers.
static_assert(FX_STAGES >= 2 && FX_LAYOUT_SMEM_BYTES + FX_STATIC_BAR_BYTES <= 227 * 1024,
              "shared memory ring too large");
static_assert(FX_CLUSTER_M == 1 || FX_CLUSTER_M == 2, "FX_CLUSTER_M must be 1 or 2");
static_assert(FX_SPLIT_K == 1 || FX_SPLIT_K == 2 || FX_SPLIT_K == 4, "FX_SPLIT_K must be 1, 2 or 4");
// Split-K: one consumer per CTA, whose fragment layout is the same in every rank (a peer's thread
// t writes what the leader's thread t adds); ping-pong would need a buffer per consumer, and a
// cluster along M would need a second cluster dimension.
static_assert(FX_SPLIT_K == 1 || (!FX_PINGPONG && FX_CONSUMERS == 1 && FX_CLUSTER_M == 1),
              "FX_SPLIT_K > 1 needs one cooperative consumer (FX_BM 64) and FX_CLUSTER_M 1");
static_assert(FX_CONSUMERS * (FX_CONSUMER_REGS - FX_SM90_ENTRY_REGS) <= FX_SM90_ENTRY_REGS - FX_PRODUCER_REGS,
              "setmaxnreg.inc would ask for more registers than setmaxnreg.dec frees: deadlock");
#if FX_EPI_OVERLAP
static_assert(FX_CONSUMERS == 2 && !FX_PINGPONG && FX_CLUSTER_M == 1 && FX_SPLIT_K == 1,
              "FX_EPI_OVERLAP: the cooperative 128-row tile only, no cluster, no split-K");
#if !defined(FX_EPI_STAGED) || !defined(FX_EPI_HANDOFF)
#error "FX_EPI_OVERLAP needs the generator's hand-off hooks (one 16-bit output: FX_EPI_STAGED, FX_EPI_HANDOFF)"
#endif
#endif

#ifndef FX_SM90_HELPERS_DEFINED
#define FX_SM90_HELPERS_DEFINED
namespace fxsm90 {
typedef unsigned int u32;
typedef unsigned long long u64;

template <typename T> struct is_bf16 { static constexpr bool value = false; };
template <> struct is_bf16<__nv_bfloat16> { static constexpr bool value = true; };
template <typename T> struct is_f16 { static constexpr bool value = false; };
template <> struct is_f16<__half> { static constexpr bool value = true; };

__device__ __forceinline__ u32 smem_u32(const void* ptr) {
  return static_cast<u32>(__cvta_generic_to_shared(ptr));
}

// ---- mbarrier -------------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
// True in one lane of the converged warp (elect.sync), false in the others.
__device__ __forceinline__ bool elect_one() {
  u32 one;
  asm volatile("{\n.reg .pred P;\nelect.sync _|P, 0xffffffff;\nselp.u32 %0, 1, 0, P;\n}\n" : "=r"(one));
  return one != 0;
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "FX_WAIT_LOOP:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra FX_WAIT_LOOP;\n"
      "}\n" :: "r"(bar), "r"(parity) : "memory");
}

// ---- TMA ------------------------------------------------------------------------------------
__device__ __forceinline__ void tma_prefetch_desc(const void* map) {
  asm volatile("prefetch.tensormap [%0];\n" :: "l"(reinterpret_cast<u64>(map)) : "memory");
}
__device__ __forceinline__ void tma_load_3d(u32 dst, const void* map, u32 bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n"
      :: "r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// ---- cluster (FX_CLUSTER_M > 1 or FX_SPLIT_K > 1) ---------------------------------------------------
__device__ __forceinline__ u32 cluster_ctarank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ u32 mapa_shared(u32 addr, u32 rank) {
  u32 r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
// Arrive on a (possibly remote) CTA's barrier.  Default .release.cta semantics, as CUTLASS does:
// the consumer only has to say "done reading"; its wgmma reads finished at wgmma.wait_group.
// (Run 2 used .release.cluster here and the cluster kernel ran 1.5-2.7x slower.)
__device__ __forceinline__ void mbar_arrive_cluster(u32 cluster_addr) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" :: "r"(cluster_addr) : "memory");
}
// ---- split-K reduction over DSMEM (FX_SPLIT_K > 1) ------------------------------------------------
// A partial moves between CTAs as plain stores to the other CTA's shared memory, made visible by
// the storing thread's own arrive with release semantics at cluster scope, which the receiving
// threads' wait takes with acquire semantics at cluster scope (the defaults, .release.cta /
// .acquire.cta, order nothing for another CTA). Every thread arrives for its own stores (or loads),
// so no intra-CTA barrier has to carry the ordering. Once per tile and rank: the cost of the
// cluster-scope fence (which made the ring's per-stage arrive slow, above) does not matter here.
__device__ __forceinline__ void mbar_arrive_release_cluster(u32 cluster_addr) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" :: "r"(cluster_addr) : "memory");
}
__device__ __forceinline__ void mbar_wait_acquire_cluster(u32 bar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "FX_WAIT_CLUSTER_LOOP:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra FX_WAIT_CLUSTER_LOOP;\n"
      "}\n" :: "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void st_cluster_v4f(u32 cluster_addr, float a, float b, float c, float d) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n"
               :: "r"(cluster_addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
__device__ __forceinline__ float4 ld_shared_v4f(u32 addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ void tma_load_3d_mc(u32 dst, const void* map, u32 bar, int c0, int c1, int c2,
                                               unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
      :: "r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
      : "memory");
}

// ---- wgmma ----------------------------------------------------------------------------------
// (fence, commit, wait: device/fx_prelude.cuh fx_wgmma_*)
template <int R> __device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(R));
}
template <int R> __device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(R));
}

// Shared-memory matrix descriptor, 128-byte swizzle (layout type 1 in bits 62-63).
//  K-major tile (rows of 64 K-elements = 128 B, 8-row core groups 1024 B apart): LBO unused (1), SBO 1024.
//  MN-major tile (TMA boxes of 64 MN-elements x 64 K-rows, 8 KB each, side by side along MN):
//    LBO = byte distance between 64-element MN chunks (8 KB), SBO = between 8-row K groups (1024 B).
// ---- staged stores (FX_SM90_STAGED_STORE) --------------------------------------------------------
__device__ __forceinline__ void bar_sync_warp(u32 id) { asm volatile("bar.sync %0, 32;\n" :: "r"(id) : "memory"); }
// A named barrier between warpgroups: `threads` (a multiple of 32) arrive in all, the arriving
// ones go on (bar.arrive, a producer's side), the syncing ones wait for all (bar.sync); memory
// accesses before either are visible to the waiters after it.
__device__ __forceinline__ void bar_sync_n(u32 id, u32 threads) {
  asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void bar_arrive_n(u32 id, u32 threads) {
  asm volatile("bar.arrive %0, %1;\n" :: "r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void cp_async_16(u32 dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(reinterpret_cast<u64>(src)) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
__device__ __forceinline__ u32 ld_shared_u32(u32 addr) {
  u32 v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_shared_v4(u32 addr, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" :: "r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ void st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.u32 [%0], %1;\n" :: "r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 ld_shared_v4(u32 addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
  return v;
}

__device__ __forceinline__ u64 desc_encode(u32 x) { return (u64)((x & 0x3FFFF) >> 4); }
__device__ __forceinline__ u64 make_desc(u32 saddr, u32 lbo, u32 sbo) {
  return desc_encode(saddr) | (desc_encode(lbo) << 16) | (desc_encode(sbo) << 32) | (1ull << 62);
}
// A byte offset (a multiple of 16) in the start-address field's units.
__host__ __device__ constexpr u32 desc_units(u32 bytes) { return bytes >> 4; }

// ---- GENERATED by bench/sm90/gen_wgmma.py (do not edit by hand) -------------------------------
#define FX_WGMMA_M64N128(TY) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, %67;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
      : "l"(da), "l"(db), "r"(scale_d), "n"(TB))
template <bool BF16, int TB>
__device__ __forceinline__ void wgmma_m64n128(float (&d)[64], u64 da, u64 db, int scale_d) {
  if constexpr (BF16) FX_WGMMA_M64N128("bf16");
  else FX_WGMMA_M64N128("f16");
}
#define FX_WGMMA_M64N256(TY) \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, %131;\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(da), "l"(db), "r"(scale_d), "n"(TB))
template <bool BF16, int TB>
__device__ __forceinline__ void wgmma_m64n256(float (&d)[128], u64 da, u64 db, int scale_d) {
  if constexpr (BF16) FX_WGMMA_M64N256("bf16");
  else FX_WGMMA_M64N256("f16");
}

// ---- END GENERATED ---------------------------------------------------------------------------

template <int BN, bool BF16, int TB>
__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], u64 da, u64 db, int scale_d) {
  if constexpr (BN == 256) wgmma_m64n256<BF16, TB>(d, da, db, scale_d);
  else wgmma_m64n128<BF16, TB>(d, da, db, scale_d);
}

// The persistent tile loop of one CTA: tiles tile0, tile0 + tile_step, ... < tiles, each of nk
// k-blocks; mtc x nt tiles per batch (mtc counts cluster tiles along M).
// Split-K: this CTA's k-blocks of each tile are kb0 .. kb0 + nk - 1; ranks: the CTAs of the
// cluster with k-blocks (1 without split-K).
struct TileSpace {
  int mtc, nt, nk, kb0, ranks;
  long long tiles, tile0, tile_step;
};

// Grouped persistent tile order.  Returns (b, tile_m, tile_n) of linear tile t.
__device__ __forceinline__ void tile_coords(long long t, int mt, int nt, int group_m,
                                            int& b, int& tm, int& tn) {
  const long long per_batch = (long long)mt * nt;
  b = (int)(t / per_batch);
  const int r = (int)(t - (long long)b * per_batch);
  const int group_size = group_m * nt;
  const int group = r / group_size;
  const int first_m = group * group_m;
  const int gsz = min(mt - first_m, group_m);
  const int rr = r - group * group_size;
  tm = first_m + rr % gsz;
  tn = rr / gsz;
}
}  // namespace fxsm90
#endif  // FX_SM90_HELPERS_DEFINED

#if FX_CLUSTER_M > 1
#define FX_SM90_CLUSTER_ATTR __cluster_dims__(FX_CLUSTER_M, 1, 1)
#elif FX_SPLIT_K > 1
#define FX_SM90_CLUSTER_ATTR __cluster_dims__(FX_SPLIT_K, 1, 1)
#else
#define FX_SM90_CLUSTER_ATTR
#endif

#if !FX_EPI_OVERLAP
// Edge tiles (partly outside the output) are few: one out-of-line pair function serves them, so
// the kernel holds a single unrolled copy of the epilogue (two copies doubled the ptxas time).
// (The overlapped epilogue has its own edge path.)
static __device__ __noinline__ void fx_sm90_edge_pair(const fxfuse::FxParams& p, long long b, long long m,
                                                      long long n, float acc0, float acc1) {
  if (m < p.M && n < p.N) fx_epilogue2(p, b, m, n, acc0, acc1);
}
#endif

#if FX_EPI_OVERLAP
// A hand-off word (the values of columns n, n + 1; n in the low half) as floats.
static __device__ __forceinline__ float2 fx_handoff_unpack(unsigned int w) {
#if FX_HANDOFF_F16
  return fx_unpack2_f16(w);
#else
  return fx_unpack2_bf16(w);
#endif
}
#endif

extern "C" __global__ void FX_SM90_CLUSTER_ATTR __launch_bounds__(FX_THREADS, FX_SM90_MIN_BLOCKS)
FX_KERNEL_NAME(const __grid_constant__ fxfuse::FxParams p) {
  using namespace fxsm90;
  static_assert((is_bf16<FxElemA>::value && is_bf16<FxElemB>::value) ||
                (is_f16<FxElemA>::value && is_f16<FxElemB>::value),
                "sm90 template: A and B must both be bf16 or both fp16");
  constexpr bool kBF16 = is_bf16<FxElemA>::value;
  constexpr int BM = FX_BM, BN = FX_BN, BK = FX_BK, S = FX_STAGES, CM = FX_CLUSTER_M, KS = FX_SPLIT_K;
  constexpr int CS = CM * KS;  // CTAs per cluster (at most one of CM, KS is above 1)
  constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;

  extern __shared__ unsigned char fx_dsmem[];
  // full[S], empty[S], then (ping-pong) order[2]: consumer c may start a tile's mainloop once
  // order[c] says the other consumer has waited for every stage of the tile before it.
  __shared__ __align__(8) u64 fx_bars[2 * S + 2];
  const u32 smem = (smem_u32(fx_dsmem) + 1023u) & ~1023u;  // 128B swizzle wants 1024-B alignment
  const u32 full0 = smem_u32(&fx_bars[0]);
  const u32 empty0 = smem_u32(&fx_bars[S]);
  const u32 order0 = smem_u32(&fx_bars[2 * S]);
#if FX_SPLIT_K > 1
  // Split-K handover, both in every CTA, used in the leader (partial_full: a peer's partial is in
  // the buffer) or in the peers (turn: the buffer is free for this peer's partial).
  __shared__ __align__(8) u64 fx_splitk_bars[2];
  const u32 partial_full0 = smem_u32(&fx_splitk_bars[0]);
  const u32 turn0 = smem_u32(&fx_splitk_bars[1]);
#endif

  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;
  const u32 crank = CM > 1 ? cluster_ctarank() : 0u;  // == blockIdx.x % CM
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      mbar_init(full0 + 8 * s, 1);
      // lane 0 of every consumer warp (of the cluster) that reads the stage: in ping-pong one
      // consumer reads a stage, cooperative consumers all read it
      mbar_init(empty0 + 8 * s, 4 * (FX_PINGPONG ? 1 : FX_CONSUMERS) * CM);
    }
    if (FX_PINGPONG) {
      mbar_init(order0, 4);  // lane 0 of each warp of the other consumer
      mbar_init(order0 + 8, 4);
    }
#if FX_SPLIT_K > 1
    // every thread of the one consumer warpgroup arrives for its own stores / loads
    mbar_init(partial_full0, 128);
    mbar_init(turn0, 128);
#endif
    mbar_fence_init();
  }
  if constexpr (CS > 1) cluster_sync_all();  // peers' barriers exist before any multicast / remote arrive
  else __syncthreads();
  // Launched as a programmatic dependent (runtime launchesAsProgrammaticDependent): the
  // barriers above are shared memory only; every global load, TMA and store comes after this.
  fx_grid_dependency_wait();

  constexpr int GROUP = FX_GROUP_M / CM > 0 ? FX_GROUP_M / CM : 1;
  // The persistent loop's bounds. Each role computes them after its setmaxnreg, not once before
  // the role split: ptxas carries values that live across the split in regular registers
  // (copied out of the uniform registers) through the whole consumer loop, and spilled them at
  // the epilogue's register peak (up to 28 bytes stored, 76 loaded; bench/sm90/SPILLS.md).
  // Computed inside the consumer role they stay in uniform registers. (The bench-only
  // FX_CLUSTER_M=2 build spills 8 bytes in its 40-register producer this way.)
  auto tile_space = [&]() {
    TileSpace ts;
    const long long M = p.M, N = p.N, K = p.K;
    const int mt = (int)((M + BM - 1) / BM);
    ts.nt = (int)((N + BN - 1) / BN);
    ts.mtc = (mt + CM - 1) / CM;                            // cluster tiles along M (CM x BM rows)
    ts.tiles = (long long)ts.mtc * ts.nt * p.B;             // work items of one cluster
    ts.tile0 = blockIdx.x / CS;
    ts.tile_step = gridDim.x / CS;
    const int nk = (int)((K + BK - 1) / BK);
    if constexpr (KS > 1) {
      // This rank's share of the k-blocks: nk / KS each, the first nk % KS ranks one more, so
      // that the leader always has one (K >= 1) and only trailing ranks can have none (nk < KS).
      // Those sit the kernel out (no tiles: their partial would be zero), and the leader counts
      // only the ranks that take part (ranks); every tile has the same nk, so the same ranks.
      const int r = (int)cluster_ctarank();
      const int base = nk / KS, extra = nk % KS;
      ts.kb0 = r * base + min(r, extra);
      ts.nk = base + (r < extra ? 1 : 0);
      ts.ranks = min(nk, KS);
      if (ts.nk == 0) ts.tiles = 0;
    } else {
      ts.kb0 = 0;
      ts.nk = nk;
      ts.ranks = 1;
    }
    return ts;
  };

#if FX_EPI_OVERLAP
  // The overlapped epilogue of one tile from the hand-off buffer, run by `nw` warps of which this is
  // warp `w`, once the hand-off is full (it waits for that itself, after the lane's column indices:
  // the order the epilogue warps had before it was shared, so their code is unchanged). A lane takes
  // 8 columns (16 bytes) of a row, so a warp reads and stores whole 512-byte rows (BN 256: one row a
  // step; BN 128: two), and the warps take every nw-th row group. The
  // producer warpgroup's three other warps run every tile's. With FX_EPI_LAST_SHARED, the consumers'
  // eight warps run the CTA's last tile's beside them (nw = 11): no mainloop follows that tile, so its
  // epilogue is never hidden, and the residual chain's loads are latency-bound in three warps (the
  // estimate of bench/sm90/NOTES.md session 48: ~3x as long as in eleven).
  const auto overlap_epilogue_tile = [&](const u32 handoff, const int b, const int tm, const int tn, const int w,
                                         const int nw) {
    constexpr int LPR = BN / 8, RPW = 32 / LPR;
    const int lane = tid % 32;
    const int cb = lane % LPR;
    const int r0 = w * RPW + lane / LPR;
    const long long last_row = p.M - 1;
    const long long col_l = (long long)tn * BN + cb * 8;
    // the lane's 8 columns are all inside the output or all past it (N % 8 == 0 on the fast
    // path); past it, the column values and inputs of the last 8 columns are read, not stored
    const bool store_col = col_l < p.N;
    const long long col_c = min(col_l, p.N - 8);
    const bool fast = fx_epilogue2_vec_ok(p) && p.N % 8 == 0;
    bar_sync_n(FX_BAR_HANDOFF_FULL, FX_EPI_BAR_THREADS);
    if (fast) {
      // The lane's column values (a bias: a float a column) once per tile; where a column holds
      // more than two, per row instead: eight columns' worth live across the row loop spilled
      // (three or more column inputs; bench/sm90/NOTES.md session 46).
      constexpr bool kColsOnce = sizeof(FxCol) <= 2 * sizeof(float);
      FxCol cv[8];
      if (kColsOnce) {
#pragma unroll
        for (int i = 0; i < 4; ++i) fx_epilogue_cols(p, b, col_c + 2 * i, cv[2 * i], cv[2 * i + 1]);
      }
      // One row of the lane's 8 columns.
      const auto epilogue_row = [&](const int r) {
        const long long m = (long long)tm * BM + r;
        const long long mc = min(m, last_row);  // rows past M: row M - 1's inputs, not stored
        const uint4 h = ld_shared_v4(handoff + (u32)(r * FX_HANDOFF_PITCH + cb * 16));
#if defined(FX_EPI_STAGED_IN)
        const uint4 in = __ldg(reinterpret_cast<const uint4*>(fx_staged_in(p, b, mc, col_c)));
#endif
        const u32 hw[4] = {h.x, h.y, h.z, h.w};
        u32 ow[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 v = fx_handoff_unpack(hw[i]);
          FxCol c0, c1;
          if (kColsOnce) {
            c0 = cv[2 * i];
            c1 = cv[2 * i + 1];
          } else {
            fx_epilogue_cols(p, b, col_c + 2 * i, c0, c1);
          }
#if defined(FX_EPI_STAGED_IN)
          const u32 iw = i == 0 ? in.x : i == 1 ? in.y : i == 2 ? in.z : in.w;
          ow[i] = fx_epilogue2_packed(p, b, mc, col_c + 2 * i, v.x, v.y, c0, c1, iw);
#else
          ow[i] = fx_epilogue2_packed(p, b, mc, col_c + 2 * i, v.x, v.y, c0, c1);
#endif
        }
        if (m <= last_row && store_col)
          *reinterpret_cast<uint4*>(fx_staged_out(p, b, m, col_l)) = make_uint4(ow[0], ow[1], ow[2], ow[3]);
      };
      // two rows in flight where the column values are few; one where many (spills otherwise)
      constexpr int kRowsInFlight = kColsOnce ? 2 : 1;
#if FX_EPI_LAST_SHARED
      // nw is not a constant here (3, or 11 for the last tile): an unrolled loop would test for its
      // end between the two rows, and the second row's loads would wait for the first row's store.
      // Pairs of rows with no branch between them keep their loads together; then the odd row.
      const int step = nw * RPW;
      int r = r0;
      if (kRowsInFlight == 2)
        for (; r + step < BM; r += 2 * step) {
          epilogue_row(r);
          epilogue_row(r + step);
        }
      for (; r < BM; r += step) epilogue_row(r);
#else
#pragma unroll kRowsInFlight
      for (int r = r0; r < BM; r += nw * RPW) epilogue_row(r);
#endif
    } else {
      // outputs or inputs not laid out for 16-byte words: pair by pair, bounds-checked. Inlined,
      // not the consumers' out-of-line fx_sm90_edge_pair: ptxas 13.0 crashed (SIGSEGV) on that
      // call in this setmaxnreg.dec region with sin / cos in the chain (bench/sm90/NOTES.md
      // session 46).
      for (int r = r0; r < BM; r += nw * RPW) {
        const uint4 h = ld_shared_v4(handoff + (u32)(r * FX_HANDOFF_PITCH + cb * 16));
        const u32 hw[4] = {h.x, h.y, h.z, h.w};
        const long long m = (long long)tm * BM + r;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 v = fx_handoff_unpack(hw[i]);
          if (m < p.M && col_l + 2 * i < p.N) fx_epilogue2(p, b, m, col_l + 2 * i, v.x, v.y);
        }
      }
    }
  };
  // warps running the last tile's epilogue: the producer warpgroup's three and the consumers'
  constexpr int kEpiWarpsLast = FX_EPI_LAST_SHARED ? 3 + 4 * FX_CONSUMERS : 3;
  // The epilogue warps' loop from tile `start` on, as warp `w`: tile by tile, in the consumers'
  // order, wait for the hand-off, run the chain from it and store, and free the buffer for the
  // consumers' next tile once the tile's rows are done (reads and stores interleave row by row; not
  // after the CTA's last tile, which no consumer waits for). The consumers wait for that after their
  // next mainloop: where the epilogue of a tile takes longer than a mainloop (a short K), they wait
  // with the tensor cores idle. Without FX_EPI_LAST_SHARED the producer warpgroup's other three warps
  // run it in their own branch; with it, after the roles' branches, where the consumers join it for
  // their last tile (one copy of the epilogue's code: +25 % compile time as a second, session 48).
  const auto overlap_epilogue_tiles = [&](const TileSpace& ts, const int w, const long long start) {
    const u32 handoff = __shfl_sync(0xffffffffu, smem, 0) + S * STAGE_BYTES;
    for (long long t = start; t < ts.tiles; t += ts.tile_step) {
      int b, tm, tn;
      tile_coords(t, ts.mtc, ts.nt, GROUP, b, tm, tn);
      const bool last = t + ts.tile_step >= ts.tiles;
      overlap_epilogue_tile(handoff, b, tm, tn, w, last ? kEpiWarpsLast : 3);
      if (!last) bar_arrive_n(FX_BAR_HANDOFF_FREE, FX_EPI_BAR_THREADS);
    }
  };
#endif

  if (wg == 0) {
    // ------------------------------ producer ------------------------------
    setmaxnreg_dec<FX_PRODUCER_REGS>();
    const TileSpace ts = tile_space();
    const bool a_bcast = p.in[FX_A_SLOT].sb == 0;
    const bool b_bcast = p.in[FX_B_SLOT].sb == 0;
    // The producer's first warp runs the loop; one elected lane issues each stage's loads. (A
    // single thread, `tid == 0`, made ptxas wrap every TMA in a loop over the active threads,
    // ELECT / UTMALDG / BRA.U.ANY: cp.async.bulk.tensor is issued per thread. Under elect.sync
    // it knows one lane issues: 5 loads straight, one ELECT per stage.)
    if (tid < 32) {
      // the ring and barrier bases, opaque to NVVM (as in the consumers: else it rebuilds the
      // shared symbol's address in every stage)
      const u32 ring = __shfl_sync(0xffffffffu, smem, 0);
      const u32 bars = __shfl_sync(0xffffffffu, full0, 0);
      const void* mapA = &p.tma[0][0];
      const void* mapB = &p.tma[1][0];
      tma_prefetch_desc(mapA);
      tma_prefetch_desc(mapB);
      int s = 0;
      u32 ph = 0;
      for (long long t = ts.tile0; t < ts.tiles; t += ts.tile_step) {
        int b, tm, tn;
        tile_coords(t, ts.mtc, ts.nt, GROUP, b, tm, tn);
        tm = tm * CM + (int)crank;
        const int ba = a_bcast ? 0 : b, bb = b_bcast ? 0 : b;
        // B's 64-column boxes wholly past N are not loaded at the column edge (their columns'
        // accumulators are never stored; an output column depends on its own B column only), and
        // the stage's byte count leaves them out: a box the TMA fills out of bounds cost the edge
        // tile about as much as a real one (bench/RESULTS.md Run AH: 64x256 at N = 896 1.54-1.64x
        // -> 1.07-1.18x cuBLAS mm; A's skip, 128x128 at M = 144, 1.83-2.23x -> 1.36-1.45x).
        const int b_boxes = (FX_B_KMAJOR || CM != 1) ? BN / 64 : (int)min((long long)(BN / 64), (p.N - (long long)tn * BN + 63) / 64);
        // A's 64-row boxes wholly past M likewise (max 0: a cluster's second CTA may hold a tile
        // wholly past M, FX_CLUSTER_M builds only)
        const int a_boxes = (int)max(0LL, min((long long)(BM / 64), (p.M - (long long)tm * BM + 63) / 64));
        const u32 stage_tx = (u32)a_boxes * (u32)(64 * BK * 2) + (u32)b_boxes * (u32)(B_BYTES / (BN / 64));
        for (int kb = 0; kb < ts.nk; ++kb) {
          mbar_wait(bars + 8 * (S + s), ph ^ 1);  // empty[s]
          if (elect_one()) {
            const u32 full = bars + 8 * s;
            mbar_expect_tx(full, stage_tx);
            const u32 sA = ring + s * STAGE_BYTES;
            const u32 sB = sA + A_BYTES;
            const int k0 = (ts.kb0 + kb) * BK;
#pragma unroll
            for (int h = 0; h < BM / 64; ++h)  // 64-row boxes (codegen/tma_desc.cpp)
              if (h < a_boxes) tma_load_3d(sA + h * (64 * BK * 2), mapA, full, k0, tm * BM + h * 64, ba);
            if constexpr (CM == 1) {
#if FX_B_KMAJOR
              tma_load_3d(sB, mapB, full, k0, tn * BN, bb);
#else
#pragma unroll
              for (int j = 0; j < BN / 64; ++j)
                if (j < b_boxes) tma_load_3d(sB + j * (64 * BK * 2), mapB, full, tn * BN + j * 64, k0, bb);
#endif
            } else {
              // this CTA's share of B, multicast into the same offset of every CTA of the cluster
              constexpr unsigned short mask = (unsigned short)((1u << CM) - 1);
#if FX_B_KMAJOR
              constexpr int rows = BN / CM;
              tma_load_3d_mc(sB + crank * (rows * 128), mapB, full, k0, tn * BN + (int)crank * rows, bb, mask);
#else
              constexpr int per = BN / 64 / CM;
#pragma unroll
              for (int j = 0; j < per; ++j) {
                const int jj = (int)crank * per + j;
                tma_load_3d_mc(sB + jj * (64 * BK * 2), mapB, full, tn * BN + jj * 64, k0, bb, mask);
              }
#endif
            }
          }
          if (++s == S) { s = 0; ph ^= 1; }
        }
      }
    }
#if FX_EPI_OVERLAP && !FX_EPI_LAST_SHARED
    else {
      // ------------- the epilogue, in the producer warpgroup's other three warps -------------
      overlap_epilogue_tiles(ts, tid / 32 - 1, ts.tile0);
    }
#endif
  } else {
    // ------------------------------ consumers -----------------------------
    setmaxnreg_inc<FX_CONSUMER_REGS>();
    const TileSpace ts = tile_space();
    const u32 ts_rank = KS > 1 ? cluster_ctarank() : 0u;  // split-K: 0 is the leader
    (void)ts_rank;  // unused without split-K
    // Broadcast from lane 0: the compiler then knows the consumer index is warp-uniform, and
    // what depends on it (the ring position, the descriptors) can live in uniform registers
    // (mainloop SASS 231 -> 128 instructions with the descriptor stepping, session 8).
    const int cu = __shfl_sync(0xffffffffu, wg - 1, 0);  // for the ring position and descriptors
    const int c = wg - 1;
    (void)c;  // unused with FX_EPI_OVERLAP
    const int warp = tid / 32, lane = tid % 32;
    // The barriers' addresses, computed once and made opaque to NVVM, which otherwise rebuilds
    // the shared symbol's address (S2R SR_CgaCtaId and three more instructions) in every k-block.
    const u32 bars = __shfl_sync(0xffffffffu, full0, 0);
    const u32 full_c = bars, empty_c = bars + 8 * S;
    const u32 order_wait = bars + 8 * (2 * S + cu), order_signal = bars + 8 * (2 * S + 1 - cu);
    auto release = [&](int st) {
      if constexpr (CM == 1) mbar_arrive(empty_c + 8 * st);
      else {
#pragma unroll
        for (int r = 0; r < CM; ++r) mbar_arrive_cluster(mapa_shared(empty_c + 8 * st, (u32)r));
      }
    };
    // SUB 64-row blocks per consumer tile: ping-pong consumers own all BM rows of their tiles,
    // a cooperative consumer owns its 64 rows (block c) of every tile.
    constexpr int SUB = FX_PINGPONG ? BM / 64 : 1;
    const int row0 = FX_PINGPONG ? 0 : cu * 64;
    float d[SUB][BN / 2];
#if FX_SM90_STAGED
    // This warp's staging block, FX_STAGE_WARP_BYTES after the ring (recomputed where it is
    // used, not kept in a register across the mainloop).
    const auto staging = [&] { return smem + S * STAGE_BYTES + (u32)((c * 4 + warp) * FX_STAGE_WARP_BYTES); };
#endif
    // The descriptors of stage 0's first k-step, low and high words: the mainloop only adds to
    // the low word's start-address field. The warp broadcast makes them opaque to NVVM, which
    // otherwise rebuilds the shared symbol's address and the descriptors in every k-block (the
    // 64x256 loop: 122 -> 94 instructions per two k-blocks; the staged test chain then spills 4-8
    // bytes in two tiles, bench/sm90/SPILLS.md session 9).
    const u32 desc_a0 = __shfl_sync(0xffffffffu, (u32)make_desc(smem + row0 * (BK * 2), 16, 1024), 0);
    const u32 desc_b0 = __shfl_sync(0xffffffffu, (u32)make_desc(smem + A_BYTES, FX_B_KMAJOR ? 16 : 64 * BK * 2, 1024), 0);
    const u64 desc_hi = make_desc(0, 0, 1024) & 0xffffffff00000000ull;  // same for A and B
    // The producer fills the ring with every tile of this CTA in order, nk stages each; a
    // ping-pong consumer takes every other tile (local index j), so its ring position is j * nk.
    const long long first = FX_PINGPONG ? cu : 0, every = FX_PINGPONG ? 2 : 1;
    for (long long j = first, t = ts.tile0 + first * ts.tile_step; t < ts.tiles;
         j += every, t += every * ts.tile_step) {
      const long long q = j * ts.nk;
      int s = (int)(q % S);
      u32 ph = (u32)((q / S) & 1);
      int b, tm, tn;
      tile_coords(t, ts.mtc, ts.nt, GROUP, b, tm, tn);
      tm = tm * CM + (int)crank;
#if !FX_EPI_OVERLAP && !FX_SM90_STAGED
      // A tile wholly inside the output, with outputs and inputs in the fast path's layout
      // (fx_epilogue2_vec_ok): the branch-free path of the epilogue without staging
      // (FX_SM90_STAGED 0; the staged one takes row-edge tiles too, below).
      const auto whole_tile = [&] {
        return (long long)(tm + 1) * BM <= p.M && (long long)(tn + 1) * BN <= p.N && fx_epilogue2_vec_ok(p);
      };
#endif
#if FX_SM90_STAGED
      // The staged path also takes the tiles at the output's edges: rows past M (the M edge: a
      // decode batch of 100 rows has one in every column of tiles) read row M - 1's inputs and
      // are not stored; columns past N (N = 192 with 128-column tiles: half the tiles) read the
      // last columns' inputs and are not stored, in 8-column blocks (N % 8 == 0, as the Hopper
      // rule requires; otherwise a column edge takes the per-element path).
      const bool col_edge = (long long)(tn + 1) * BN > p.N;
      const auto staged = [&] { return fx_epilogue2_vec_ok(p) && (!col_edge || p.N % 8 == 0); };
      const long long last_row = p.M - 1;
#endif
      // Ping-pong order: a stage's full barrier tells its phases apart only by parity, so a
      // consumer must not wait on a stage more than one fill ahead. Waiting until the other
      // consumer has passed every stage of the previous tile guarantees that, and it also
      // alternates the mainloops: one consumer's epilogue runs under the other's MMAs.
#if FX_SM90_STAGED_IN
      // The staged input's first chunk (this warp's 16 rows, columns 0..63 of the first 64-row
      // block) goes straight into the warp's staging buffer (free again since the last tile's
      // epilogue) before the mainloop, so its latency hides under the MMAs; cp.async holds no
      // registers across the mainloop (a register prefetch made ptxas spill 8-16 bytes).
      if (staged() && (KS == 1 || ts_rank == 0)) {  // split-K: only the leader runs the epilogue
        const u32 lds = staging() + (u32)((lane / 8) * FX_STAGE_PITCH + (lane % 8) * 16);
#pragma unroll
        for (int it = 0; it < 4; ++it)
          cp_async_16(lds + it * 4 * FX_STAGE_PITCH,
                      fx_staged_in(p, b, min((long long)tm * BM + row0 + warp * 16 + lane / 8 + 4 * it, last_row),
                                   min((long long)tn * BN + (lane % 8) * 8, p.N - 8)));
      }
#endif
#if FX_SM90_EARLY_COLS
      // the staged epilogue's column values of this tile, as it computes them below (col, n)
      FxCol early_cols[BN / 8][2];
      if (staged() && (KS == 1 || ts_rank == 0)) {  // split-K: only the leader runs the epilogue
        const long long col_e = (long long)tn * BN + (lane % 4) * 2;
#pragma unroll
        for (int jn = 0; jn < BN / 8; ++jn)
          fx_epilogue_cols(p, b, col_edge ? min(col_e + jn * 8, p.N - 2) : col_e + jn * 8, early_cols[jn][0],
                           early_cols[jn][1]);
      }
#endif
      if (FX_PINGPONG && j > 0) mbar_wait(order_wait, (u32)(((j - 1) / 2) & 1));
      int prev = 0;
      // One k-block: wait for its stage, issue its MMAs, release the stage of the block before.
      // The tile's first block is peeled off (peeled = true, inlined as a constant): it zeroes the
      // accumulator and has no block to release, so the loop carries neither predicate.
      const auto k_block = [&](const bool peeled) {
        mbar_wait(full_c + 8 * s, ph);
        fx_wgmma_fence();
        // Every (stage, k-step, sub-tile) adds its byte offset / 16 to stage 0's 14-bit
        // start-address field, which cannot carry into the next field (shared addresses are
        // below 2^18): an add per wgmma instead of make_desc's masks, shifts and ORs (about 65 of
        // the mainloop's 85 instructions per k-block and warp, session 8).
        const u32 step = (u32)s * (STAGE_BYTES >> 4);  // stage s in 16-byte units
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
          const u64 db = desc_hi | (u32)(desc_b0 + step + desc_units(FX_B_KMAJOR ? kk * 32 : kk * (16 * 128)));
#pragma unroll
          for (int sub = 0; sub < SUB; ++sub) {
            const u64 da = desc_hi | (u32)(desc_a0 + step + desc_units(sub * (64 * BK * 2) + kk * 32));
            wgmma_tile<BN, kBF16, FX_B_KMAJOR ? 0 : 1>(d[sub], da, db, (peeled && kk == 0) ? 0 : 1);
          }
        }
        fx_wgmma_commit();
        fx_wgmma_wait<1>();  // the group issued one stage ago is done: its stage can be refilled
        if (!peeled && lane == 0) release(prev);
        prev = s;
        if (++s == S) { s = 0; ph ^= 1; }
      };
      k_block(true);
      for (int kb = 1; kb < ts.nk; ++kb) k_block(false);
      // This consumer has waited on every stage of the tile: the other one may start its next
      // tile's mainloop (issued after the loop, not in its last iteration: no test per block).
      if (FX_PINGPONG && lane == 0) mbar_arrive(order_signal);
      fx_wgmma_wait<0>();
      if (lane == 0) release(prev);
#if FX_SPLIT_K > 1
      // ---- split-K: the peers' partials into the leader's accumulator, in rank order ----
      // Thread t's fragment, as float4 i, sits at partial + i * 2048 + t * 16 in the leader's
      // buffer: a warp's 16-byte stores / loads cover 512 contiguous bytes (no bank conflicts),
      // and the same thread of the leader (same fragment positions) reads it.
      // One buffer, the peers in turn: peer r writes once its turn barrier completes, which the
      // leader's threads arrive on when they have read peer r - 1's partial of this tile (rank 1:
      // the last peer's of the previous tile, so its first tile needs no arrival: it waits for
      // the phase before the first, complete at init). Each barrier can only run one phase ahead
      // of its waiter, as parity waits need: a peer's next turn needs its partial of this tile.
      // Only the ts.ranks ranks with k-blocks take part (all KS unless K has fewer k-blocks).
      {
        const u32 partial = smem + S * STAGE_BYTES + FX_STAGE_BYTES + (u32)(tid * 16);
        if (ts_rank == 0) {
#pragma unroll 1
          for (int r = 1; r < ts.ranks; ++r) {
            mbar_wait_acquire_cluster(partial_full0, (u32)((j * (ts.ranks - 1) + r - 1) & 1));
#pragma unroll
            for (int i = 0; i < BN / 8; ++i) {
              const float4 v = ld_shared_v4f(partial + i * 2048);
              d[0][4 * i + 0] += v.x;
              d[0][4 * i + 1] += v.y;
              d[0][4 * i + 2] += v.z;
              d[0][4 * i + 3] += v.w;
            }
            // this thread's loads are done: the next peer (the next tile's rank 1 after the last)
            // may overwrite what it read
            mbar_arrive_release_cluster(mapa_shared(turn0, (u32)(r + 1 < ts.ranks ? r + 1 : 1)));
          }
        } else {
          mbar_wait_acquire_cluster(turn0, (u32)((j & 1) ^ (ts_rank == 1 ? 1 : 0)));
          const u32 remote = mapa_shared(partial, 0);
#pragma unroll
          for (int i = 0; i < BN / 8; ++i)
            st_cluster_v4f(remote + i * 2048, d[0][4 * i + 0], d[0][4 * i + 1], d[0][4 * i + 2], d[0][4 * i + 3]);
          mbar_arrive_release_cluster(mapa_shared(partial_full0, 0));
          continue;  // the leader runs the epilogue
        }
      }
#endif

#if FX_EPI_OVERLAP
      // ---- the hand-off: the tile's 16-bit values to the epilogue warps ----
      // Its buffer is free once the epilogue warps have read the previous tile's (the first
      // tile's is free). Fragment pairs as in the epilogue below: d[4j+0,1] at row lane/4 of the
      // warp's 16, columns 8j + 2 * (lane % 4) + {0,1}; d[4j+2,3] 8 rows down. Pairs past N take the
      // last pair's column values (their hand-off is never stored). N is even (no pair straddles
      // it): the overlapped epilogue is planned only where N % 8 == 0 (config_table.cpp).
      if (j > 0) bar_sync_n(FX_BAR_HANDOFF_FREE, FX_EPI_BAR_THREADS);
      {
        const u32 hrow = smem + S * STAGE_BYTES + (u32)((row0 + warp * 16 + lane / 4) * FX_HANDOFF_PITCH + (lane % 4) * 4);
        const long long col = (long long)tn * BN + (lane % 4) * 2;
#pragma unroll
        for (int jn = 0; jn < BN / 8; ++jn) {
          const long long n = min(col + jn * 8, p.N - 2);
          st_shared_u32(hrow + jn * 16, fx_handoff2(p, b, n, d[0][4 * jn + 0], d[0][4 * jn + 1]));
          st_shared_u32(hrow + jn * 16 + 8 * FX_HANDOFF_PITCH, fx_handoff2(p, b, n, d[0][4 * jn + 2], d[0][4 * jn + 3]));
        }
      }
      // the CTA's last tile with FX_EPI_LAST_SHARED: the joined epilogue below waits on FULL
      if (!FX_EPI_LAST_SHARED || t + ts.tile_step < ts.tiles) bar_arrive_n(FX_BAR_HANDOFF_FULL, FX_EPI_BAR_THREADS);
#else
      // ---- epilogue straight from the accumulator fragment ----
      // m64nNk16 f32 accumulator: d[4j+0,1] = (row, 8j + 2*(lane%4) + {0,1}), d[4j+2,3] = row + 8,
      // row = 16*warp + lane/4 within the 64-row block.
      const long long col = (long long)tn * BN + (lane % 4) * 2;
      // A tile wholly inside the output, with outputs that take paired (or staged) stores
      // everywhere, takes a branch-free path (fx_epilogue2_vec / _packed), so the compiler can
      // issue the epilogue's input loads of many column pairs together instead of one latency
      // per pair. Its column values (bias, per-column scales: fx_epilogue_cols) are computed once
      // per column pair and serve the thread's 2 * SUB rows there (the staged path: per 64-row
      // sub-tile, so 2 rows).
      const long long row = (long long)tm * BM + row0 + warp * 16 + lane / 4;
#if FX_SM90_STAGED
      // The staged epilogue; at the column edge (edge = true) its column indices are clamped to
      // the last ones inside the output (one copy of the code, the clamps computed in every tile:
      // at 4096^3 the 64x256 cells moved by -0.3 to +2.1 %, one sample each, bench/RESULTS.md Run
      // AG; two inlined copies, with and without the clamps, cost 1.4-1.7x the SASS).
      const auto staged_epilogue = [&](const bool edge) {
        // Per 16 x 64 block of the warp's rows: the fragment's packed pairs go to shared memory
        // (lane: rows lane/4 and +8, 4 bytes of each 16-byte column block), then each lane reads
        // 16 bytes (row 4*it + lane/8, column block lane%8) and stores them.
        const u32 stage = staging();
        const u32 sts = stage + (u32)((lane / 4) * FX_STAGE_PITCH + (lane % 4) * 4);
        const u32 lds = stage + (u32)((lane / 8) * FX_STAGE_PITCH + (lane % 8) * 16);
        const u32 bar = 1 + c * 4 + warp;
        const long long row_step4 = 4 * 2 * p.out[0].sm;  // bytes from row r to r + 4
        // the pair at (m, n) whose word is at shared address a (the staged input's pair there)
        auto pack = [&](long long m, long long n, float a0, float a1, const FxCol& c0, const FxCol& c1, u32 a) {
#if FX_SM90_STAGED_IN
          return fx_epilogue2_packed(p, b, m, n, a0, a1, c0, c1, ld_shared_u32(a));
#else
          (void)a;
          return fx_epilogue2_packed(p, b, m, n, a0, a1, c0, c1);
#endif
        };
#pragma unroll
        for (int sub = 0; sub < SUB; ++sub) {
          const long long row_l = (long long)tm * BM + row0 + sub * 64 + warp * 16 + lane / 8;
          const long long col_l = (long long)tn * BN + (lane % 8) * 8;
          char* const g = fx_staged_out(p, b, row_l, col_l);
          // the fragment's two rows (inputs read at row M - 1 past the edge) and which of the
          // lane's four stored rows are inside the output
          const long long row_lo = min(row + sub * 64, last_row), row_hi = min(row + sub * 64 + 8, last_row);
          bool store_row[4];
#pragma unroll
          for (int it = 0; it < 4; ++it) store_row[it] = row_l + 4 * it <= last_row;
#if FX_SM90_STAGED_IN
          // the input's 16 bytes of rows row_l + 4*it, block ch: the first block of sub-tile 0 is
          // in the buffer already (cp.async before the mainloop), the others are loaded one
          // block ahead into registers
          // at a column edge: the lane's input blocks clamped to the last one (col_in + in_span)
          const long long col_in = edge ? min(col_l, p.N - 8) : col_l, in_span = p.N - 8 - col_in;
          const char* gi[4];
          uint4 in_next[4];
#pragma unroll
          for (int it = 0; it < 4; ++it) {
            gi[it] = fx_staged_in(p, b, min(row_l + 4 * it, last_row), col_in);
            if (sub > 0) in_next[it] = __ldg(reinterpret_cast<const uint4*>(gi[it]));
          }
#endif
#pragma unroll
          for (int ch = 0; ch < BN / 64; ++ch) {
#if FX_SM90_STAGED_IN
            if (sub == 0 && ch == 0) {
              cp_async_wait_all();
            } else {
#pragma unroll
              for (int it = 0; it < 4; ++it) st_shared_v4(lds + it * 4 * FX_STAGE_PITCH, in_next[it]);
            }
            bar_sync_warp(bar);
            if (ch + 1 < BN / 64) {
#pragma unroll
              for (int it = 0; it < 4; ++it)
                in_next[it] = __ldg(reinterpret_cast<const uint4*>(
                    gi[it] + 2 * (edge ? min((long long)(ch + 1) * 64, in_span) : (long long)(ch + 1) * 64)));
            }
#endif
#pragma unroll
            for (int j8 = 0; j8 < 8; ++j8) {
              const int jn = ch * 8 + j8;
              // past N: the last column pair's inputs (the values are not stored)
              const long long n = edge ? min(col + jn * 8, p.N - 2) : col + jn * 8;
#if FX_SM90_EARLY_COLS
              const FxCol& c0 = early_cols[jn][0];
              const FxCol& c1 = early_cols[jn][1];
#else
              FxCol c0, c1;
              fx_epilogue_cols(p, b, n, c0, c1);
#endif
              const u32 a_lo = sts + j8 * 16, a_hi = a_lo + 8 * FX_STAGE_PITCH;
              st_shared_u32(a_lo, pack(row_lo, n, d[sub][4 * jn + 0], d[sub][4 * jn + 1], c0, c1, a_lo));
              st_shared_u32(a_hi, pack(row_hi, n, d[sub][4 * jn + 2], d[sub][4 * jn + 3], c0, c1, a_hi));
            }
            bar_sync_warp(bar);
            const bool store_col = !edge || col_l + ch * 64 < p.N;  // the lane's 8 columns, all in or all out
#pragma unroll
            for (int it = 0; it < 4; ++it) {
              const uint4 v = ld_shared_v4(lds + it * 4 * FX_STAGE_PITCH);
              if (store_row[it] && store_col)
                *reinterpret_cast<uint4*>(g + it * row_step4 + ch * 128) = v;  // aligned: fx_epilogue2_vec_ok
            }
            bar_sync_warp(bar);  // the block is read before the next one overwrites it
          }
        }
      };
      if (staged()) {
        staged_epilogue(col_edge);
      } else
#else
      if (whole_tile()) {
#pragma unroll
        for (int jn = 0; jn < BN / 8; ++jn) {
          FxCol c0, c1;
          fx_epilogue_cols(p, b, col + jn * 8, c0, c1);
#pragma unroll
          for (int sub = 0; sub < SUB; ++sub) {
            fx_epilogue2_vec(p, b, row + sub * 64, col + jn * 8, d[sub][4 * jn + 0], d[sub][4 * jn + 1], c0, c1);
            fx_epilogue2_vec(p, b, row + sub * 64 + 8, col + jn * 8, d[sub][4 * jn + 2], d[sub][4 * jn + 3], c0, c1);
          }
        }
      } else
#endif
      {
#pragma unroll
        for (int sub = 0; sub < SUB; ++sub)
#pragma unroll
          for (int jn = 0; jn < BN / 8; ++jn) {
            fx_sm90_edge_pair(p, b, row + sub * 64, col + jn * 8, d[sub][4 * jn + 0], d[sub][4 * jn + 1]);
            fx_sm90_edge_pair(p, b, row + sub * 64 + 8, col + jn * 8, d[sub][4 * jn + 2], d[sub][4 * jn + 3]);
          }
      }
#endif  // FX_EPI_OVERLAP
    }
#if FX_EPI_OVERLAP && FX_EPI_LAST_SHARED
    // The accumulators are dead: down to the epilogue warps' registers, so that the epilogue below,
    // which both roles reach, is one copy of the code allocated for one register count. The PTX ISA
    // wants a warpgroup's warps synchronized between two setmaxnreg; with one tile no barrier
    // came between the .inc and this .dec.
    bar_sync_n(FX_BAR_CONSUMERS, 128 * FX_CONSUMERS);
    setmaxnreg_dec<FX_PRODUCER_REGS>();
#endif
  }
#if FX_EPI_OVERLAP && FX_EPI_LAST_SHARED
  // The consumers join the epilogue warps for the CTA's last tile (one iteration of their loop).
  // (One call site: a second would inline the epilogue's code again.)
  if (wg > 0 || tid >= 32) {
    const TileSpace ts = tile_space();
    const bool consumer = wg > 0;
    const long long last = ts.tiles - 1 - (ts.tiles - 1 - ts.tile0) % ts.tile_step;
    overlap_epilogue_tiles(ts, consumer ? 3 + (wg - 1) * 4 + tid / 32 : tid / 32 - 1,
                           consumer && ts.tile0 < ts.tiles ? last : ts.tile0);
  }
#endif  // FX_EPI_OVERLAP
  if constexpr (CS > 1) {
    // no CTA may exit while a peer can still multicast into it, store into its shared memory or
    // arrive on its barriers
    __syncwarp();
    cluster_sync_all();
  }
}
