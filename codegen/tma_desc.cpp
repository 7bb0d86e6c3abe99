// tma_desc.cpp — see tma_desc.h.  Pure host arithmetic; no CUDA headers.
#include "tma_desc.h"

#include <algorithm>
#include <vector>

namespace fxfuse {
namespace sm90 {

namespace {
bool fail(std::string* why, const std::string& msg) {
  if (why) *why = msg;
  return false;
}
bool aligned16(const void* p) { return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0; }
}  // namespace

bool describeTensorMaps(const GemmProblem& pr, const GemmConfig& cfg, TensorMapDesc maps[2],
                        std::string* why) {
  const long long es = 2;  // bf16 / fp16
  if (cfg.bk != 64) return fail(why, "bk must be 64");
  if (cfg.pingpong) {
    if (cfg.consumers != 2 || (cfg.bm != 64 && cfg.bm != 128) || cfg.bm * cfg.bn > 16384 || cfg.cluster_m != 1)
      return fail(why, "ping-pong needs 2 consumers, a 64x128, 64x256 or 128x128 tile and no cluster");
  } else if (cfg.bm != 64 * cfg.consumers || cfg.bm > 256) {
    return fail(why, "bm must be 64*consumers and <= 256");
  }
  if (cfg.bn != 128 && cfg.bn != 256) return fail(why, "bn must be 128 or 256");
  if (cfg.cluster_m != 1 && cfg.cluster_m != 2) return fail(why, "cluster_m must be 1 or 2");
  if (cfg.split_k != 1 && cfg.split_k != 2 && cfg.split_k != 4) return fail(why, "split_k must be 1, 2 or 4");
  if (cfg.split_k > 1 && (cfg.pingpong || cfg.consumers != 1 || cfg.cluster_m != 1))
    return fail(why, "split-K needs one cooperative consumer (bm 64) and cluster_m 1");
  if (!cfg.fitsSharedMemory())
    return fail(why, "stages*(bm+bn)*bk*2 plus the staging (and split-K) buffers too large");
  if (pr.M < 1 || pr.N < 1 || pr.K < 1 || pr.batch < 1) return fail(why, "empty problem");
  if (pr.M >= (1ll << 31) || pr.N >= (1ll << 31) || pr.K >= (1ll << 31)) return fail(why, "dim >= 2^31");
  if (pr.N % 2) return fail(why, "N must be even (epilogue column pairs)");
  if (!aligned16(pr.a_ptr) || !aligned16(pr.b_ptr)) return fail(why, "A/B base not 16-byte aligned");
  if (pr.a_sk != 1) return fail(why, "A must be K-contiguous (a_sk == 1)");
  const int dt = pr.dtype == ElemType::BF16 ? kTmaDtypeBF16 : kTmaDtypeF16;

  auto stride_ok = [](long long s_elems) { return s_elems > 0 && (s_elems * 2) % 16 == 0 && s_elems * 2 < (1ll << 40); };
  // Batch stride: the map needs a legal value even when the batch dim is 1 / broadcast.
  auto batch_stride = [&](long long sb, long long rows, long long row_stride) -> long long {
    if (pr.batch > 1 && sb != 0) return sb;
    long long s = rows * row_stride;
    s = (s + 7) / 8 * 8;  // keep it a 16-byte multiple
    return s;
  };

  // ---- A: [B][M][K], K contiguous.  dims {K, M, Ba}; box {64, 64, 1}: the kernel issues bm/64
  // boxes per stage (with the 128-byte swizzle, two stacked 64-row boxes are one 128-row box's
  // layout) and skips those wholly past M
  if (!stride_ok(pr.a_sm)) return fail(why, "A row stride (a_sm*2 bytes) must be a positive multiple of 16");
  TensorMapDesc& a = maps[0];
  a = TensorMapDesc();
  a.data_type = dt;
  a.global_address = pr.a_ptr;
  a.global_dim[0] = (unsigned long long)pr.K;
  a.global_dim[1] = (unsigned long long)pr.M;
  a.global_dim[2] = (unsigned long long)((pr.batch > 1 && pr.a_sb != 0) ? pr.batch : 1);
  a.global_stride_bytes[0] = (unsigned long long)(pr.a_sm * es);
  a.global_stride_bytes[1] = (unsigned long long)(batch_stride(pr.a_sb, pr.M, pr.a_sm) * es);
  if (!stride_ok(a.global_stride_bytes[1] / 2) || a.global_stride_bytes[1] % 16) return fail(why, "A batch stride must be a multiple of 16 bytes");
  a.box_dim[0] = 64;
  a.box_dim[1] = 64;
  a.box_dim[2] = 1;

  // ---- B
  TensorMapDesc& b = maps[1];
  b = TensorMapDesc();
  b.data_type = dt;
  b.global_address = pr.b_ptr;
  b.global_dim[2] = (unsigned long long)((pr.batch > 1 && pr.b_sb != 0) ? pr.batch : 1);
  if (pr.b_kmajor) {
    // stored [N,K] (K contiguous): dims {K, N, Bb}; box {64, bn, 1}
    if (pr.b_sk != 1) return fail(why, "b_kmajor needs b_sk == 1");
    if (!stride_ok(pr.b_sn)) return fail(why, "B row stride (b_sn*2 bytes) must be a positive multiple of 16");
    b.global_dim[0] = (unsigned long long)pr.K;
    b.global_dim[1] = (unsigned long long)pr.N;
    b.global_stride_bytes[0] = (unsigned long long)(pr.b_sn * es);
    b.global_stride_bytes[1] = (unsigned long long)(batch_stride(pr.b_sb, pr.N, pr.b_sn) * es);
    b.box_dim[0] = 64;
    b.box_dim[1] = (unsigned)(cfg.bn / cfg.cluster_m);
  } else {
    // stored [K,N] (N contiguous): dims {N, K, Bb}; box {64, 64, 1}; the kernel issues bn/64 boxes per stage
    if (pr.b_sn != 1) return fail(why, "!b_kmajor needs b_sn == 1");
    if (!stride_ok(pr.b_sk)) return fail(why, "B row stride (b_sk*2 bytes) must be a positive multiple of 16");
    b.global_dim[0] = (unsigned long long)pr.N;
    b.global_dim[1] = (unsigned long long)pr.K;
    b.global_stride_bytes[0] = (unsigned long long)(pr.b_sk * es);
    b.global_stride_bytes[1] = (unsigned long long)(batch_stride(pr.b_sb, pr.K, pr.b_sk) * es);
    b.box_dim[0] = 64;
    b.box_dim[1] = (unsigned)cfg.bk;
  }
  if (b.global_stride_bytes[1] % 16) return fail(why, "B batch stride must be a multiple of 16 bytes");
  b.box_dim[2] = 1;
  if (why) why->clear();
  return true;
}

LaunchGeometry launchGeometry(const GemmProblem& pr, const GemmConfig& cfg, int num_sms,
                              int max_active_clusters) {
  LaunchGeometry g;
  const long long ks = std::max(1, cfg.split_k);
  const long long cm = std::max(1, cfg.cluster_m);
  const long long mt = (pr.M + cfg.bm - 1) / cfg.bm;
  const long long nt = (pr.N + cfg.bn - 1) / cfg.bn;
  g.num_tiles = mt * nt * pr.batch;
  const long long cluster_tiles = (mt + cm - 1) / cm * nt * pr.batch;
  // the CTAs of one cluster: cm along M or ks along K (never both)
  const long long cs = cm * ks;
  long long clusters = max_active_clusters > 0 ? max_active_clusters : std::max(1, num_sms) / cs;
  clusters = std::max(1ll, std::min(cluster_tiles, clusters));
  g.grid[0] = (unsigned)(clusters * cs);
  g.cluster[0] = (unsigned)cs;
  g.block[0] = (unsigned)cfg.threads();
  g.dyn_smem_bytes = cfg.dynSmemBytes();
  return g;
}

std::string configDefines(const GemmConfig& c) {
  std::string s;
  auto def = [&](const char* k, int v) { s += "#define "; s += k; s += " "; s += std::to_string(v); s += "\n"; };
  def("FX_BM", c.bm);
  def("FX_BN", c.bn);
  def("FX_BK", c.bk);
  def("FX_STAGES", c.stages);
  def("FX_CONSUMERS", c.consumers);
  def("FX_THREADS", c.threads());
  def("FX_GROUP_M", c.group_m);
  def("FX_CLUSTER_M", c.cluster_m);
  def("FX_PINGPONG", c.pingpong ? 1 : 0);
  def("FX_SPLIT_K", c.split_k);
  def("FX_EPI_OVERLAP", c.epilogue_overlap ? 1 : 0);
  return s;
}

int entryRegs(const GemmConfig& cfg) {
  // the template's FX_SM90_MIN_BLOCKS: one consumer launches with bounds of 2 CTAs per SM
  const int min_blocks = cfg.consumers == 1 ? 2 : 1;
  const int r = (65536 / (cfg.threads() * min_blocks)) / 8 * 8;
  return r > 248 ? 248 : r;
}

int safeConsumerRegs(const GemmConfig& cfg, int kernel_num_regs) {
  const int freed = kernel_num_regs - cfg.producerRegs();
  int r = kernel_num_regs + (freed / cfg.consumers) / 8 * 8;
  if (r > 240) r = 240;
  return r;
}

bool setmaxnregSafe(const GemmConfig& cfg, int kernel_num_regs) {
  // what the template compiled in (FX_CONSUMER_REGS default) vs what the pool really allows
  const int producer_regs = cfg.producerRegs();
  const int entry = entryRegs(cfg);
  int compiled = entry + ((entry - producer_regs) / cfg.consumers) / 8 * 8;
  if (compiled > 240) compiled = 240;
  return cfg.consumers * (compiled - kernel_num_regs) <= kernel_num_regs - producer_regs;
}

}  // namespace sm90
}  // namespace fxfuse
