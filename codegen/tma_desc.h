// tma_desc.h — host-side contract of codegen/kernels/sm90_wgmma_gemm.cuh (no torch, no CUDA headers).
//
// For one problem it says:
//   * the two tensor maps the kernel reads from p.tma[0] (A) and p.tma[1] (B): every argument of
//     cuTensorMapEncodeTiled (numeric enum values are the CUDA driver API's, listed below);
//   * the launch geometry: persistent grid, block, dynamic shared memory, the compiled-in cluster
//     (CTA pairs along M, or split-K's CTAs along K).
//
// Runtime recipe:
//   GemmConfig cfg = chooseConfig(M, N, K, B, num_sms);      // hopper_tile_choice.h, or your own; same values as the FX_* macros
//   std::string defs = configDefines(cfg);                    // prepend to the generated source
//   TensorMapDesc maps[2]; std::string why;
//   if (!describeTensorMaps(problem, cfg, maps, &why)) -> fall back (why says which rule failed)
//   for i in 0,1: cuTensorMapEncodeTiled((CUtensorMap*)p.tma[i], (CUtensorMapDataType)maps[i].data_type,
//        maps[i].rank, (void*)maps[i].global_address, maps[i].global_dim, maps[i].global_stride_bytes,
//        maps[i].box_dim, maps[i].element_stride, (CUtensorMapInterleave)maps[i].interleave,
//        (CUtensorMapSwizzle)maps[i].swizzle, (CUtensorMapL2promotion)maps[i].l2_promotion,
//        (CUtensorMapFloatOOBfill)maps[i].oob_fill);
//   LaunchGeometry g = launchGeometry(problem, cfg, num_sms);
//   cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, g.dyn_smem_bytes) once per function;
//   cuLaunchKernel(f, g.grid[0..2], g.block[0..2], g.dyn_smem_bytes, stream, {&params}, nullptr);
//   cfg.cluster_m == 2: the kernel carries __cluster_dims__(2,1,1), so cuLaunchKernel launches
//   clusters by itself (g.cluster says {2,1,1} for information; cuLaunchKernelEx with
//   CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {2,1,1} is the equivalent explicit form).  Pass
//   max_active_clusters = cuOccupancyMaxActiveClusters(f, config{grid=(num_sms), block, dyn smem,
//   cluster 2x1x1}) to launchGeometry: a persistent grid larger than what is co-resident would
//   serialize.  Query it once per (function, smem) and cache it.
//   The tensor maps embed the base pointers: re-encode when A/B pointers change (64 bytes of
//   arithmetic on the host, ~1 us; or patch with cuTensorMapReplaceAddress).
#pragma once
#include <string>

namespace fxfuse {
namespace sm90 {

enum class ElemType { F16, BF16 };

// Kernel template configuration: must match the FX_* macros the kernel was compiled with.
struct GemmConfig {
  int bm = 128;        // FX_BM = 64 * consumers (cooperative) or 64 / 128 (ping-pong)
  int bn = 256;        // FX_BN: 128 or 256
  int bk = 64;         // FX_BK: 64 only
  int stages = 4;      // FX_STAGES: smem ring depth
  int consumers = 2;   // FX_CONSUMERS: MMA warpgroups (warpgroup 0 is the TMA producer)
  int group_m = 16;    // FX_GROUP_M: grouped tile order
  int cluster_m = 1;   // FX_CLUSTER_M: 1, or 2 = CTA pairs share (multicast) the B tile
  bool pingpong = false;  // FX_PINGPONG: each of the 2 consumers owns whole bm x bn tiles (bm 64/128)
  int split_k = 1;     // FX_SPLIT_K: 1, or 2 / 4 CTAs (a cluster) share each tile along K (bm 64, 1 consumer)
  // FX_EPI_OVERLAP: the producer warpgroup's three other warps run the epilogue from the
  // consumers' 16-bit hand-off, beside the next tile's mainloop (cooperative, 2 consumers, no
  // cluster, no split-K)
  bool epilogue_overlap = false;
  int threads() const { return 128 * (consumers + 1); }
  // FX_PRODUCER_REGS: the producer warpgroup's setmaxnreg target (88 where its warps also run the
  // epilogue; the consumers, 2 x 208, take the rest of 3 x 168)
  int producerRegs() const { return epilogue_overlap ? 88 : 40; }
  // FX_HANDOFF_PITCH: a hand-off row's bytes, 16 more than its bn 16-bit values so that a
  // fragment's 8 rows of 4-byte stores hit 8 different bank groups
  int handoffPitch() const { return bn * 2 + 16; }
  // FX_STAGES*(BM+BN)*BK*2 + FX_STAGE_BYTES (the staged stores' 16 rows x 144 B per consumer
  // warp; with the overlapped epilogue instead FX_HANDOFF_BYTES, bm rows of handoffPitch) +
  // FX_SPLITK_BYTES (split-K: the leader's f32 buffer for one peer's partial tile) + 1024
  // (alignment slack for the 1024-B swizzle atoms)
  long long dynSmemBytes() const {
    const long long epilogue = epilogue_overlap ? (long long)bm * handoffPitch() : (long long)consumers * 4 * 16 * 144;
    return (long long)stages * (bm + bn) * bk * 2 + epilogue + (split_k > 1 ? (long long)bm * bn * 4 : 0) + 1024;
  }
  // the kernel's static shared memory: its mbarriers (FX_STATIC_BAR_BYTES)
  long long staticSmemBytes() const { return (2LL * stages + 2 + (split_k > 1 ? 2 : 0)) * 8; }
  // whether the dynamic part and the static barriers fit the 227 KB a block may use on sm_90
  bool fitsSharedMemory() const { return dynSmemBytes() + staticSmemBytes() <= 227 * 1024; }
};

// Logical problem: out[b][m][n] = sum_k A[b][m][k] * B[b][k][n]; strides in ELEMENTS, sb = 0 means
// broadcast over the batch.  A must have a_sk == 1.  b_kmajor: false -> B stored [K,N] (b_sn == 1,
// the `x @ w` case, FX_B_KMAJOR=0); true -> B stored [N,K] (b_sk == 1, F.linear weight, FX_B_KMAJOR=1).
struct GemmProblem {
  ElemType dtype = ElemType::BF16;
  long long batch = 1, M = 0, N = 0, K = 0;
  const void* a_ptr = nullptr; long long a_sb = 0, a_sm = 0, a_sk = 1;
  const void* b_ptr = nullptr; long long b_sb = 0, b_sk = 0, b_sn = 1;
  bool b_kmajor = false;
};

// Enum values of the CUDA driver API (cuda.h), so no CUDA header is needed here.
constexpr int kTmaDtypeF16 = 6;          // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
constexpr int kTmaDtypeBF16 = 9;         // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
constexpr int kTmaInterleaveNone = 0;    // CU_TENSOR_MAP_INTERLEAVE_NONE
constexpr int kTmaSwizzle128B = 3;       // CU_TENSOR_MAP_SWIZZLE_128B
constexpr int kTmaL2Promotion256B = 3;   // CU_TENSOR_MAP_L2_PROMOTION_L2_256B
constexpr int kTmaOobFillNone = 0;       // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (out-of-bounds -> zeros)

struct TensorMapDesc {
  int data_type = 0;                       // CUtensorMapDataType
  unsigned rank = 3;                       // always 3: {inner, outer, batch}
  const void* global_address = nullptr;    // 16-byte aligned
  unsigned long long global_dim[3] = {0, 0, 0};      // innermost first
  unsigned long long global_stride_bytes[2] = {0, 0}; // strides of dims 1 and 2 (multiples of 16)
  unsigned box_dim[3] = {0, 0, 0};
  unsigned element_stride[3] = {1, 1, 1};
  int interleave = kTmaInterleaveNone;
  int swizzle = kTmaSwizzle128B;
  int l2_promotion = kTmaL2Promotion256B;
  int oob_fill = kTmaOobFillNone;
};

// B's box along N is bn / cluster_m for the [N,K] layout (each CTA of a pair loads half).
// Fills maps[0] (A -> p.tma[0]) and maps[1] (B -> p.tma[1]).  Returns false (and why) when the
// problem can't use this kernel: unaligned base, non-unit inner stride, row strides not multiples
// of 16 bytes (K % 8 / N % 8 for contiguous tensors), K < 1, config out of range.
bool describeTensorMaps(const GemmProblem& pr, const GemmConfig& cfg, TensorMapDesc maps[2],
                        std::string* why = nullptr);

struct LaunchGeometry {
  unsigned grid[3] = {1, 1, 1};     // persistent: min(#tiles, num_sms)
  unsigned block[3] = {1, 1, 1};    // cfg.threads()
  unsigned cluster[3] = {1, 1, 1};  // {cluster_m or split_k,1,1}; compiled into the kernel (__cluster_dims__)
  long long dyn_smem_bytes = 0;     // needs CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  long long num_tiles = 0;          // ceil(M/bm) * ceil(N/bn) * batch
};
// max_active_clusters: cuOccupancyMaxActiveClusters for cluster_m == 2 or split_k > 1 (0 = assume
// num_sms / cluster size). Split-K: one cluster of split_k CTAs per tile, grid = split_k * clusters.
LaunchGeometry launchGeometry(const GemmProblem& pr, const GemmConfig& cfg, int num_sms,
                              int max_active_clusters = 0);

// "#define FX_BM 128\n#define FX_BN 256\n..." for the generated source (before the template).
std::string configDefines(const GemmConfig& cfg);

// setmaxnreg guard.  The kernel's consumer warpgroups raise their register limit with setmaxnreg.inc,
// which can only take what the producer's setmaxnreg.dec returned to the CTA.  The template assumes
// ptxas allocated entryRegs(cfg) per thread (168 for 384 threads, which every measured build had).
// After loading, compare cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS): if this returns false, do
// not launch (it would hang); recompile with "#define FX_CONSUMER_REGS <safeConsumerRegs(...)>".
// One consumer (FX_BM 64 cooperative, the split-K tiles): entry 128 (launch bounds of 2 CTAs per
// SM, FX_SM90_MIN_BLOCKS), the consumer raised to 216.
// The producer's target is cfg.producerRegs() (40; 88 with the overlapped epilogue: its consumers
// get 208).
int entryRegs(const GemmConfig& cfg);
int safeConsumerRegs(const GemmConfig& cfg, int kernel_num_regs);
bool setmaxnregSafe(const GemmConfig& cfg, int kernel_num_regs);

}  // namespace sm90
}  // namespace fxfuse
