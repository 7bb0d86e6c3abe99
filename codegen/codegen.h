// Chain spec → CUDA source → cubin. No torch, no CUDA at build time (NVRTC is dlopen'ed).
// Contract: docs/interfaces.md ("codegen API", "Kernel ABI", "Kernel templates and hooks").
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "spec/chain_spec.h"

namespace fxfuse::codegen {

// What the runtime knows about one call, for picking a kernel variant.
struct ProblemShape {
  long long B = 1, M = 0, N = 0, K = 0;
  bool a_kmajor = true;   // A's (m,k), (m,k+1) adjacent
  bool b_kmajor = false;  // B stored [N,K] (k contiguous); false: [K,N] (n contiguous)
  int align_bytes_a = 16; // largest power of two dividing A's base address and row stride, bytes
  int align_bytes_b = 16;
  // The same, smallest over the epilogue's inputs along m and n (residuals); 1 where one is not
  // contiguous along n. The Hopper fast path stages such an input only at 16 (else its whole
  // launch takes the per-element edge path), so below 16 the planner does not count on it.
  int align_bytes_residual = 16;
  // The same over the 16-bit epilogue inputs along n without m (a bias, a column scale), which
  // the fast path reads in 4-byte pairs: below 4 the planner does not count on it.
  int align_bytes_columns = 16;
};

// variant: "simt" (fp32 FFMA), "sm80_mma" (mma.sync), "sm90_wgmma", "gemv".
// gemv: bm = 8 * FX_GEMV_MTILES rows per CTA, bn = 128 columns, bk = k per pipeline stage
// (128 / bytes of the streamed weight element), stages = FX_GEMV_STAGES, threads = 128;
// max_cluster = the largest split-K cluster launchDims may ask for (1: no clusters, sm_80).
struct KernelConfig {
  std::string variant;
  int bm = 0, bn = 0, bk = 0, stages = 0, threads = 0;
  int max_cluster = 1;
  bool pingpong = false;  // sm90_wgmma: two consumer warpgroups alternate whole tiles (FX_PINGPONG)
  int split_k = 1;        // sm90_wgmma: a cluster of 2 or 4 CTAs shares each tile along K (FX_SPLIT_K)
  bool wgmma = false;     // gemv: the weights multiplied by wgmma (FX_GEMV_WGMMA; gemvConfig); bn 128 or 64,
                          // bk 128 or (K x N weights at bn 128) 64 for 8-bit weights, 64 for 16-bit ones
  int weight_bytes = 0;   // gemv: bytes of the streamed weight element, 1 or 2 (gemvConfigWith); 0 in a config
                          // written without it: bk says (gemvWeightBytesOf)
  bool nibbles = false;   // gemv: packed int4 weights (FX_B_NIBBLES, from the spec): stages of packed bytes, half
                          // the 8-bit ones, and one expanded tile (dynamicSmemBytes)
  // sm90_wgmma, cooperative 128-row tiles: the epilogue runs in the producer warpgroup's other
  // warps from a 16-bit hand-off in shared memory while the consumers start the next tile
  // (FX_EPI_OVERLAP; hooks.h epilogueHandoff says which chains have one).
  bool epilogue_overlap = false;
  // With epilogue_overlap: the consumers, done with their last tile, give back their registers and
  // join the epilogue warps on that tile's epilogue (FX_EPI_LAST_SHARED; kernels/sm90_wgmma_gemm.cuh).
  // Worth it where a CTA has few tiles, so its last epilogue is a large share (overlapRule).
  bool last_epilogue_shared = false;
};

// What would run a chain left unfused: eager PyTorch (cuBLAS, then one ATen kernel per
// pointwise op; fxfuse.rewrite's programs) or Inductor (cuBLAS, then one fused Triton pointwise
// kernel; the torch.compile backend).
enum class Baseline { Eager, Inductor };

// True for the variants that beat (or match) the baseline on the problems chooseConfig gives
// them. Against eager: "sm90_wgmma" and "gemv". Against Inductor: "gemv" only (the Hopper
// kernel is not faster than mm + Inductor's fused pointwise kernel at every shape: bench/RESULTS.md
// Runs E, M, Y; beatsBaseline names where it wins). False for the generic fallbacks ("sm80_mma", "simt"), which are
// correct but may be slower than cuBLAS + ATen elementwise: the runtime runs such chains
// unfused through ATen on CUDA, so that a rewrite never makes a model slower.
bool isFastVariant(const KernelConfig& config, Baseline baseline = Baseline::Eager);

// Whether the fused kernel `config` (chooseConfigForSize's answer for this spec and size) beats
// the baseline there: isFastVariant, and against Inductor also the Hopper kernel at the shapes
// where it was measured faster than torch.compile (M x B >= 4096 and K = 1024 with N >= 4096, or
// K = 4096 with N = 1024, a residual only added after GELU(tanh) or SiLU: 1.06-1.83x in
// bench/RESULTS.md Runs F, L, M, Y, Z; decode batches and split-K, Run AC; one matrix of 512-2048
// rows at K = 4096 with a well-filled tile, Run AI).
bool beatsBaseline(const spec::ChainSpec& spec, const KernelConfig& config, long long M, long long N, long long K,
                   long long B, Baseline baseline);
// Why the Hopper kernel is not counted faster than torch.compile for this chain and size (the
// measured boxes of beatsBaseline, in words for the report); "" inside them.
std::string inductorRefusal(const spec::ChainSpec& spec, long long M, long long N, long long K, long long B);

// How the runtime sizes the grid for a KernelSource (launchDims does it; this says how).
enum class GridPolicy {
  Tiles,       // grid (ceil(N/bn), ceil(M/bm), B): one CTA per output tile
  Persistent,  // grid (min(sm_count, tiles), 1, 1) (split-K: whole clusters): CTAs loop over tiles
  // gemv: grid (ceil(N/bn), S, B * ceil(M/bm)), cluster (1, S, 1): S CTAs of one cluster split
  // K and reduce through distributed shared memory. S in {1, 2, 4, 8} from the problem and the
  // SM count (gemvSplitK in config_table.h); S = 1 whenever config.max_cluster == 1.
  SplitKCluster,
  // epilogue_pointwise: grid (gx, gy, 1), gx = max(1, min(ceil(ceil(N/2) / threads), 16 *
  // sm_count)) blocks over a row's column pairs, gy = min(B * M, max(1, 16 * sm_count / gx),
  // 65535) over the rows; both dims grid-stride loops.
  Elementwise,
};

struct KernelSource {
  std::string name;   // fxfuse_<16 hex digits of the spec and config>; the extern "C" symbol
  std::string code;   // complete translation unit for NVRTC
  KernelConfig config;
  size_t smem_bytes = 0;  // dynamic shared memory to pass at launch (0: the kernel uses static)
  // smem_bytes > 48 KB: before the first launch the function must opt in with
  // cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem_bytes)
  // (and the device's CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN must allow it).
  bool smem_optin = false;
  GridPolicy grid = GridPolicy::Tiles;
};

// Launch geometry for one call. A cluster other than (1,1,1) cannot go through cuLaunchKernel:
// launch with cuLaunchKernelEx and one CUlaunchAttribute
// {CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, clusterDim = {cluster[0], cluster[1], cluster[2]}}
// (grid[i] is always a multiple of cluster[i]). smem_bytes > 48 KB needs the opt-in above
// (KernelSource::smem_optin) once per loaded function before any launch.
struct LaunchDims {
  unsigned grid[3] = {1, 1, 1};
  unsigned block = 0;
  size_t smem_bytes = 0;
  unsigned cluster[3] = {1, 1, 1};
};

// User-facing failure: the spec uses something codegen cannot emit (reason is stable text).
struct CodegenError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// NVRTC rejected a generated source. what() holds the log and the numbered source.
struct CompileError : std::runtime_error {
  CompileError(const std::string& what, std::string log, std::string numbered_source)
      : std::runtime_error(what), log(std::move(log)), source(std::move(numbered_source)) {}
  std::string log;
  std::string source;
};

// The compiler itself failed on a generated source: NVRTC or its ptxas crashed or hung in the
// worker process (nvrtc_worker.h), or the worker could not be started. The caller's process lives on.
// `transient`: the failure says nothing about the source (the worker could not be started for want of
// processes or memory, or was killed from outside: the OOM killer, a user's kill), so a later attempt
// may succeed; otherwise (a crash, an exit without an answer, the timeout) the same source fails again.
struct CompilerCrashed : std::runtime_error {
  explicit CompilerCrashed(const std::string& what, bool transient = false)
      : std::runtime_error(what), transient(transient) {}
  bool transient;
};

// Where to look for libnvrtc and the CUDA headers besides the defaults (env
// FXFUSE_NVRTC_PATH, the loader path, CUDA_HOME, /usr/local/cuda, pip's nvidia/cu13).
// runtime/ passes the pip package dirs it learns from Python here.
struct NvrtcEnv {
  std::vector<std::string> extra_lib_dirs;
  std::vector<std::string> extra_include_dirs;
};

struct Cubin {
  std::string image;  // cubin bytes for cuModuleLoadData
  std::string ptx;    // filled when compileNvrtc is asked for it (same compile, for dumps)
  std::string log;    // NVRTC log, with ptxas -v statistics (registers, spills) unless NVRTC answered
                      // from the driver's cache (compileNvrtc's want_ptxas_statistics)
  // compiled in the calling process, not in the NVRTC worker (FXFUSE_COMPILE_IN_PROCESS=1, or no
  // worker executable found: nvrtcWorkerPath()); a compiler crash would then have ended the process
  bool in_process = false;
};

// --- Selection (codegen/config_table.cpp) ---
KernelConfig chooseConfig(const spec::ChainSpec& spec, const ProblemShape& shape, int sm_arch);
// The kernel the op would pick for an aligned problem of this size, its operands laid out as the
// spec's dims say: the planner's profitability question (pass/profitability.cpp) and
// fxfuse._C.kernel_variant. The op itself decides per call from the real strides.
KernelConfig chooseConfigForSize(const spec::ChainSpec& spec, long long M, long long N, long long K, long long B,
                                 int sm_arch);
// Why the Hopper kernel would not take this chain at this size (the first of the heuristic's
// conditions it fails, in words for the fusion report); "" where it would.
std::string hopperRefusalForSize(const spec::ChainSpec& spec, long long M, long long N, long long K, long long B,
                                 int sm_arch);
// Where eager runs this chain's epilogue as one kernel and that kernel is SiLU (ATen's, cheaper
// than the op's epilogue kernel): why the Hopper kernel does not beat eager at this size (its work
// share at or under K / (K + 700) from 1025 rows, K counted to 8192; under 0.29 at N <= 128 on 128x128 in
// one round; config_table.cpp), in words; "" where it does or
// the chain is not SiLU alone. For the pass (pass/profitability.cpp), which then leaves the chain
// to eager; the op itself compares with its own unfused path (hopperRefusalForSize).
std::string siluAgainstEagerRefusal(const spec::ChainSpec& spec, long long M, long long N, long long K, long long B);
// The work-share refusal's figures for a plain one-matrix problem of this size (config_table.cpp):
// the heuristic's Hopper tile, the share of its rounds' slots doing real work times the tile's
// throughput, and the shares at or under which the kernel is refused, in general and for SiLU
// alone (outside the rule's range, N < 512 or under 16 GFLOP, both 0; M <= 256 / <= 1024, each 0).
// bench/sm90/tile_rule_check.py --share prints them beside the measurement.
struct HopperWorkShare {
  int bm = 0, bn = 0;
  double share = 0, least = 0, least_silu = 0;
};
HopperWorkShare hopperWorkShareForSize(long long M, long long N, long long K);
// Every config the op may run for this problem, the heuristic's choice (chooseConfig) first,
// then, where that is a gemv of 8-bit weights on sm_90, its other products, widths and stages (mma.sync,
// wgmma at 128 and 64 columns, and for K x N weights at 64 k a stage), then the other Hopper tiles (ping-pong 64x256 / 64x128, cooperative
// 128x256 / 128x128) where the Hopper kernel applies, whatever the epilogue: what a measured autotune times
// (python/fxfuse/autotune.py). The op runs the one fxfuse._C.set_kernel_choice names.
std::vector<KernelConfig> candidateConfigs(const spec::ChainSpec& spec, const ProblemShape& shape, int sm_arch);
// The same for an aligned problem of this size (as chooseConfigForSize): fxfuse._C.kernel_candidates.
std::vector<KernelConfig> candidateConfigsForSize(const spec::ChainSpec& spec, long long M, long long N, long long K,
                                                  long long B, int sm_arch);
// The epilogue-alone kernel (kernels/epilogue_pointwise.cuh) over a product the runtime
// computed with cuBLAS: never chosen by chooseConfig; the op runs it for chains without a
// fast fused kernel whose operands need no prologue (pointwiseApplies).
KernelConfig pointwiseConfig();
bool pointwiseApplies(const spec::ChainSpec& spec);
// The fewest elementwise kernels over the whole output that eager runs after its GEMM for that path
// (cuBLAS, then the one epilogue-alone kernel) to beat eager: two passes over the output become one.
// With one (SiLU alone, a bias add) eager's own kernel is as good (bench/RESULTS.md Run AE). The pass
// keeps an unfused chain for the path from here on (pass/profitability.cpp), and the gemv's rule at
// 33-64 rows is taken below it, where the path does not apply (config_table.cpp gemvDenseOneOpRowsAhead).
constexpr int kEagerKernelsTheUnfusedPathBeats = 2;
// Whether an environment switch is on: set to anything but "" or "0". The runtime's switches
// (FXFUSE_FORCE_KERNEL, FXFUSE_STRICT, ...) and pointwiseEnabled read theirs through it.
bool envFlag(const char* name);
// Whether that path is switched on: FXFUSE_NO_POINTWISE unset, empty or "0" (read on every call:
// tests switch it). The runtime and the pass's profitability rule both ask here, so a chain the
// pass keeps for the path is never run by the ATen evaluator instead.
bool pointwiseEnabled();
// "sm90_wgmma 64x256x64 s5 t384 pingpong": one text per distinct kernel (cache keys, reports).
std::string describeConfig(const KernelConfig& config);
// "sm_90", "sm_90a", "90" -> 90; -1 when the text has no digits.
int smFromArch(const std::string& arch);
// Launch geometry for a source and a problem (sm_count matters for Persistent and for the
// split-K cluster size of SplitKCluster; dram_bytes_per_s, the GPU's peak memory bandwidth, for
// that of 16-bit weights: gemvSplitKForBandwidth; 0 = not known, the H200's rule).
LaunchDims launchDims(const KernelSource& src, const ProblemShape& shape, int sm_count, double dram_bytes_per_s = 0);

// --- Generation (codegen/generate.cpp) ---
KernelSource generate(const spec::ChainSpec& spec, const KernelConfig& config);
// Only the per-spec part of the source (config macros and hooks): what golden files hold.
std::string generateHooks(const spec::ChainSpec& spec, const KernelConfig& config);

// --- NVRTC (codegen/nvrtc_driver.cpp) ---
// arch: "sm_80", "sm_90a", … Throws CompileError on a compile error, CodegenError when NVRTC
// or the CUDA headers cannot be found.
// NVRTC from CUDA 12.9 on a machine with a CUDA driver may answer from the driver's compute cache,
// keyed by the program after its front end (comments do not count), and such an answer's log is
// empty: want_ptxas_statistics bypasses that cache (--no-cache) so that Cubin::log holds ptxas's
// register and spill statistics (the tests that read them; the runtime has its own kernel cache).
Cubin compileNvrtc(const KernelSource& src, const std::string& arch, const NvrtcEnv& env = {},
                   bool want_ptx = false, bool want_ptxas_statistics = false);
// NVRTC's version as "13.0" (part of every cache key); throws CodegenError when not found.
std::string nvrtcVersion(const NvrtcEnv& env = {});
// The library path NVRTC was loaded from, or "" when it cannot be found (never throws).
std::string findNvrtc(const NvrtcEnv& env = {});

}  // namespace fxfuse::codegen
