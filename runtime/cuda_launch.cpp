// The CUDA kernel of fxfuse::gemm_chain: pick a config, get (or JIT-compile) the generated
// kernel, fill FxParams from the inputs' strides, launch on torch's current stream. No CUDA
// headers and no CUDA build of torch needed: the driver is dlopen'd (cuda_driver.h), NVRTC is
// reached through codegen, and torch's current stream through the device-guard registry.
//
// Never slower than unfused: when the chosen variant is not a fast one (codegen::isFastVariant:
// the generic sm80_mma / simt template), the chain runs unfused: cuBLAS, then one generated
// epilogue kernel (pointwiseEntry; stats().pointwiseLaunches), or, where that path does not apply
// (a prologue, FXFUSE_NO_POINTWISE=1), the ATen evaluator (cuBLAS + ATen pointwise, before
// anything is compiled; stats().atenDispatch). Neither is an error. FXFUSE_FORCE_KERNEL=1 (read
// per call) launches the generic kernel instead (tests).
//
// When no kernel can be had (no libcuda/NVRTC, a spec codegen cannot emit, a kernel whose
// setmaxnreg budget does not hold, K == 0) the spec is evaluated with ATen ops on the device
// instead: correct, capturable, slower; one warning per reason and stats().fallbacks counts it.
// FXFUSE_STRICT=1 turns those into errors.
//
// Host overhead: the first call of a call site (spec, input dtypes/sizes/strides, base address
// mod 16, device) validates, plans, chooses and loads; the decision is kept in a small
// lock-protected map (CallEntry), so later calls only read data pointers, allocate outputs,
// fill FxParams and launch. sm90 tensor maps are re-encoded only when A/B pointers change.
// Split-K gemv kernels launch as thread block clusters through cuLaunchKernelEx, and on sm_90+ the
// gemv, Hopper and epilogue-alone kernels as programmatic dependents (launchesAsProgrammaticDependent).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <unordered_map>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/compile_queue.h"
#include "runtime/cuda_driver.h"
#include "runtime/gemm_chain.h"
#include "runtime/kernel_cache.h"
#include "runtime/kernel_choice.h"
#include "runtime/known_values_check.h"
#include "runtime/runtime_stats.h"
#include "runtime/torch_types.h"

#include "codegen/codegen.h"
#include "codegen/config_table.h"  // sm90ConfigOf, templateWaitsForPreviousKernel
#include "codegen/kernel_abi.h"
#include "codegen/tma_desc.h"
#include "runtime/kernel_loader.h"

namespace fxfuse::runtime {
namespace {

using codegen::envFlag;

// ---- torch's current CUDA stream, without CUDA headers ------------------------------------
// c10::Stream::id() is not the cudaStream_t (pool streams are encoded indices), so ask the
// CUDA guard implementation, which torch registers at load in every CUDA build, for the native
// handle. DeviceGuardImplInterface::getStreamNativeHandle exists in recent torch; for older
// ones, c10::cuda::CUDAStream::stream() is found in the already-loaded libc10_cuda (a
// CUDAStream is exactly a c10::Stream, so its address is a valid `this`).
template <class Impl>
auto nativeHandle(const Impl* impl, const c10::Stream& s, int)
    -> decltype(impl->getStreamNativeHandle(s)) {
  return impl->getStreamNativeHandle(s);
}
template <class Impl>
void* nativeHandle(const Impl*, const c10::Stream& s, long) {
  using StreamFn = void* (*)(const c10::Stream*);
  static auto fn = reinterpret_cast<StreamFn>(
      dlsym(RTLD_DEFAULT, "_ZNK3c104cuda10CUDAStream6streamEv"));
  TORCH_CHECK(fn, "fxfuse: cannot find c10::cuda::CUDAStream::stream() in the loaded torch");
  return fn(&s);
}

cu::Stream currentStream(const c10::Device& device) {
  const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  const c10::Stream stream = impl->getStream(device);
  return static_cast<cu::Stream>(nativeHandle(impl, stream, 0));
}

void check(const CudaDriver& d, cu::Result r, const char* what) {
  TORCH_CHECK(r == cu::kSuccess, "fxfuse: ", d.describe(what, r));
}

// Makes the device's primary context (the one torch uses) current on this thread: a thread
// that never called the CUDA runtime (e.g. an autograd worker) may have none.
void ensureContext(const CudaDriver& d, int deviceIndex) {
  cu::Context ctx = nullptr;
  check(d, d.cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  if (ctx) return;
  cu::Device dev = 0;
  check(d, d.cuDeviceGet(&dev, deviceIndex), "cuDeviceGet");
  check(d, d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(d, d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

// Whether t's device's current stream is capturing a CUDA graph, where reading an expect input (a copy to the
// host) would break the capture (known_values_check.h's CaptureQuery).
bool streamCapturing(const at::Tensor& t) {
  const CudaDriver* d = loadCudaDriver();
  if (!d || !t.is_cuda()) return false;
  ensureContext(*d, t.device().index());
  int status = 0;
  return d->cuStreamIsCapturing(currentStream(t.device()), &status) == cu::kSuccess &&
         status != cu::kCaptureStatusNone;
}

struct DeviceInfo {
  int sm = 0;  // 90 for sm_90
  int smCount = 0;
  int maxSmemOptin = 0;
  double dramBytesPerS = 0;  // peak, from the memory clock and bus width (0: the driver did not say)
  std::string gpu;  // "NVIDIA H200/sm90/132": what a measured kernel choice is valid for
};

const DeviceInfo& deviceInfo(const CudaDriver& d, int index) {
  static std::mutex mutex;
  static std::unordered_map<int, DeviceInfo> infos;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = infos.find(index);
  if (it != infos.end()) return it->second;
  cu::Device dev = 0;
  check(d, d.cuDeviceGet(&dev, index), "cuDeviceGet");
  int major = 0, minor = 0;
  DeviceInfo info;
  check(d, d.cuDeviceGetAttribute(&major, cu::kAttrComputeCapabilityMajor, dev), "cuDeviceGetAttribute");
  check(d, d.cuDeviceGetAttribute(&minor, cu::kAttrComputeCapabilityMinor, dev), "cuDeviceGetAttribute");
  check(d, d.cuDeviceGetAttribute(&info.smCount, cu::kAttrMultiprocessorCount, dev), "cuDeviceGetAttribute");
  check(d, d.cuDeviceGetAttribute(&info.maxSmemOptin, cu::kAttrMaxSharedMemoryPerBlockOptin, dev), "cuDeviceGetAttribute");
  info.sm = major * 10 + minor;
  int memoryKhz = 0, busBits = 0;  // double data rate: two transfers a clock
  if (d.cuDeviceGetAttribute(&memoryKhz, cu::kAttrMemoryClockRate, dev) == cu::kSuccess &&
      d.cuDeviceGetAttribute(&busBits, cu::kAttrGlobalMemoryBusWidth, dev) == cu::kSuccess && memoryKhz > 0 && busBits > 0)
    info.dramBytesPerS = 2.0 * memoryKhz * 1e3 * busBits / 8;
  char name[128] = "unnamed";
  if (d.cuDeviceGetName && d.cuDeviceGetName(name, sizeof name, dev) != cu::kSuccess) std::strcpy(name, "unnamed");
  name[sizeof name - 1] = '\0';
  info.gpu = std::string(name) + "/sm" + std::to_string(info.sm) + "/" + std::to_string(info.smCount);
  return infos.emplace(index, info).first->second;
}

// "sm_90a" on Hopper: wgmma and setmaxnreg need the arch-specific target; the cubin is built
// for the exact device it runs on, so losing forward compatibility costs nothing.
std::string nvrtcArch(int sm) { return "sm_" + std::to_string(sm) + (sm == 90 ? "a" : ""); }

std::vector<at::Tensor> fallback(const std::string& reason, const spec::ChainSpec& spec,
                                 at::TensorList inputs, const ChainShape& shape) {
  TORCH_CHECK(!envFlag("FXFUSE_STRICT"), "fxfuse::gemm_chain (FXFUSE_STRICT=1): ", reason);
  static std::mutex mutex;
  static std::unordered_map<std::string, bool> warned;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned[reason])
      TORCH_WARN("fxfuse::gemm_chain: ", reason,
                 "; evaluating with ATen ops on the device instead (correct, slower). "
                 "Warned once per reason.");
    warned[reason] = true;
  }
  stats().fallbacks++;
  return evaluateReference(spec, inputs, shape);
}


// ---- Operands -------------------------------------------------------------------------------

using spec::ChainSpec;
using spec::Space;
using spec::Value;
using spec::ValueKind;

struct LetterStrides {
  long long b = 0, m = 0, k = 0, n = 0;
};

// Element strides per logical letter. Several m dims collapse to one stride when they are
// laid out like one dim (size-1 dims aside); returns false when they are not.
bool letterStrides(const at::Tensor& t, const std::string& letters, LetterStrides* s) {
  int64_t lastM = -1;  // innermost m dim of size > 1 seen so far, scanning outward
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const char L = letters[d];
    const long long stride = t.stride(d);
    if (L == 'b') s->b = stride;
    if (spec::isKLetter(L)) s->k = stride;  // a 'g' ('p') dim's stride: the kernel reads it at k / kGroup (k / per)
    if (spec::isNLetter(L)) s->n = stride;  // a 'q' dim's: read at n / per
    if (L != 'm' || t.size(d) == 1) continue;
    if (lastM < 0) {
      s->m = stride;
    } else if (stride != t.stride(lastM) * t.size(lastM)) {
      return false;
    }
    lastM = d;
  }
  return true;
}

// A copy of t in which the dims of each letter lie next to each other in memory, each letter's
// dims in their own order, the letters ordered by their innermost dim (so the innermost dim stays
// innermost). letterStrides describes it always. A plain row-major copy is not enough: a batch
// folded into M from a transposed activation is labelled [m,k,m], and its two m dims are never
// adjacent in a row-major copy of that shape.
at::Tensor letterGroupedCopy(const at::Tensor& t, const std::string& letters) {
  const int64_t rank = t.dim();
  std::vector<int64_t> innermostOf(128, -1);  // per letter: its innermost dim
  for (int64_t d = 0; d < rank; ++d) innermostOf[static_cast<unsigned char>(letters[d])] = d;
  std::vector<int64_t> order(rank);  // memory order, outermost first
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return innermostOf[static_cast<unsigned char>(letters[a])] < innermostOf[static_cast<unsigned char>(letters[b])];
  });
  std::vector<int64_t> sizes(rank), back(rank), strides(rank);
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    sizes[i] = t.size(order[i]);
    back[order[i]] = i;
    strides[order[i]] = stride;
    stride *= sizes[i];
  }
  if (t.strides() == c10::IntArrayRef(strides)) return t;  // already laid out so (a later call's input)
  at::Tensor grouped = at::empty(sizes, t.options()).permute(back);
  grouped.copy_(t);
  return grouped;
}

// The innermost dim (in the tensor's own order, size-1 dims aside) is contiguous: what the
// spec's dims order promises the generator for its A/B operands (FX_*_KMAJOR).
bool innermostContiguous(const at::Tensor& t) {
  for (int64_t d = t.dim() - 1; d >= 0; --d)
    if (t.size(d) != 1) return t.stride(d) == 1;
  return true;
}

// Largest power of two (≤ 16) dividing the base address and every non-unit stride, in bytes.
int alignBytes(const at::Tensor& t) {
  uint64_t bits = reinterpret_cast<uintptr_t>(t.data_ptr());
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) != 1)
      bits |= static_cast<uint64_t>(t.stride(d)) * t.element_size();
  int a = 16;
  while (a > 1 && bits % a) a /= 2;
  return a;
}

// ---- Planning (the first call of a call site) ---------------------------------------------

struct Plan {
  std::shared_ptr<const CachedSpec> entry;
  ChainShape shape;
  long long B = 1, M = 0, N = 0, K = 0;
  std::vector<at::Tensor> tensors;  // the inputs, made contiguous where the kernel needs it
  std::vector<std::string> copied;  // per slot: the dims letters when tensors[slot] is a letterGroupedCopy, else empty
  std::vector<LetterStrides> strides;
  codegen::ProblemShape problem;
  int aInput = -1, bInput = -1;     // value ids (operandInput)
  // A kernel in neither cache compiles in the background while this call runs ATen ops
  // (backgroundCompileEnabled, for the op's calls; precompile only where asked).
  bool background = false;
};

Plan makePlan(at::TensorList inputs, std::shared_ptr<const CachedSpec> entry) {
  Plan plan;
  plan.entry = std::move(entry);
  const ChainSpec& spec = plan.entry->spec;
  plan.shape = checkInputs(spec, inputs);
  // the kernels read the values' inputs; the expect lines' after them are checkExpects's alone
  inputs = inputs.slice(0, static_cast<size_t>(spec.numInputSlots()));
  plan.B = plan.shape.B.expect_int();
  plan.M = plan.shape.M.expect_int();
  plan.N = plan.shape.N.expect_int();
  plan.K = plan.shape.K.expect_int();
  TORCH_CHECK(inputs.size() <= 16 && spec.outputs.size() <= 4,
              "fxfuse::gemm_chain: the CUDA kernel takes at most 16 inputs and 4 outputs");
  plan.aInput = operandInput(spec, 0);
  plan.bInput = operandInput(spec, 1);
  plan.tensors.assign(inputs.begin(), inputs.end());
  plan.copied.assign(inputs.size(), std::string());
  plan.strides.resize(inputs.size());
  for (size_t i = 0; i < spec.values.size(); ++i) {
    const Value& v = spec.values[i];
    if (v.kind != ValueKind::Input) continue;
    at::Tensor& t = plan.tensors[v.slot];
    const std::string letters = dimLetters(v.dims);
    const bool operand = static_cast<int>(i) == plan.aInput || static_cast<int>(i) == plan.bInput;
    LetterStrides s;
    if ((operand && !innermostContiguous(t)) || !letterStrides(t, letters, &s)) {
      t = letterGroupedCopy(t, letters);  // freed stream-ordered by the caching allocator: safe after launch
      plan.copied[v.slot] = letters;
      s = LetterStrides();
      TORCH_INTERNAL_ASSERT(letterStrides(t, letters, &s), "fxfuse: no strides for dims ", letters);
    }
    plan.strides[v.slot] = s;
  }
  codegen::ProblemShape& p = plan.problem;
  p.B = plan.B;
  p.M = plan.M;
  p.N = plan.N;
  p.K = plan.K;
  setLayoutFromSpec(spec, &p);
  if (plan.aInput >= 0) p.align_bytes_a = alignBytes(plan.tensors[spec.values[plan.aInput].slot]);
  if (plan.bInput >= 0) p.align_bytes_b = alignBytes(plan.tensors[spec.values[plan.bInput].slot]);
  // epilogue inputs along n (not k): the Hopper fast path stages residuals (also along m) at 16
  // bytes and reads 16-bit column inputs in 4-byte pairs
  for (const Value& v : spec.values) {
    const bool alongN = v.dims.find('n') != std::string::npos, alongK = v.dims.find_first_of("kgp") != std::string::npos;
    if (v.kind != ValueKind::Input || !alongN || alongK)
      continue;
    const int a = plan.strides[v.slot].n == 1 ? alignBytes(plan.tensors[v.slot]) : 1;
    if (spec::isResidualInput(v))
      p.align_bytes_residual = std::min(p.align_bytes_residual, a);
    else if (spec::isHalfFloat(v.dtype))
      p.align_bytes_columns = std::min(p.align_bytes_columns, a);
  }
  return plan;
}

// The sm90 template's tensor-map problem and config for a plan (pointers filled per call).
// False (and why) when TMA cannot read the operands at all.
bool tmaProblem(const CudaDriver& d, const Plan& plan, const codegen::KernelConfig& c,
                sm90::GemmProblem* pr, sm90::GemmConfig* g, int* aSlot, int* bSlot,
                std::string* why) {
  const ChainSpec& spec = plan.entry->spec;
  const Value& mm = spec.values[spec.mmIndex()];
  if (plan.aInput != mm.operands[0] || plan.bInput != mm.operands[1]) {
    *why = "TMA needs raw A and B operands";
    return false;
  }
  if (!d.cuTensorMapEncodeTiled) {
    *why = "the driver lacks cuTensorMapEncodeTiled";
    return false;
  }
  const Value& av = spec.values[plan.aInput];
  const Value& bv = spec.values[plan.bInput];
  const LetterStrides& as = plan.strides[av.slot];
  const LetterStrides& bs = plan.strides[bv.slot];
  pr->dtype = av.dtype == spec::DType::BF16 ? sm90::ElemType::BF16 : sm90::ElemType::F16;
  pr->batch = plan.B;
  pr->M = plan.M;
  pr->N = plan.N;
  pr->K = plan.K;
  pr->a_ptr = plan.tensors[av.slot].data_ptr();
  pr->a_sb = as.b;
  pr->a_sm = as.m;
  pr->a_sk = plan.K == 1 ? 1 : as.k;
  pr->b_ptr = plan.tensors[bv.slot].data_ptr();
  pr->b_sb = bs.b;
  pr->b_sk = bs.k;
  pr->b_sn = bs.n;
  pr->b_kmajor = plan.problem.b_kmajor;
  *g = codegen::sm90ConfigOf(c);
  *aSlot = av.slot;
  *bSlot = bv.slot;
  return true;
}

// Encodes p.tma[0] (A) and p.tma[1] (B) for the sm90_wgmma variant; false (and why) when the
// operands cannot be described by tensor maps.
bool encodeTensorMaps(const CudaDriver& d, const sm90::GemmProblem& pr, const sm90::GemmConfig& g,
                      unsigned char (*tma)[128], std::string* why) {
  sm90::TensorMapDesc maps[2];
  if (!sm90::describeTensorMaps(pr, g, maps, why)) return false;
  for (int i = 0; i < 2; ++i) {
    const sm90::TensorMapDesc& m = maps[i];
    const uint64_t dims[3] = {m.global_dim[0], m.global_dim[1], m.global_dim[2]};
    const uint64_t strides[2] = {m.global_stride_bytes[0], m.global_stride_bytes[1]};
    const cu::Result r = d.cuTensorMapEncodeTiled(
        reinterpret_cast<cu::TensorMap*>(tma[i]), m.data_type, m.rank,
        const_cast<void*>(m.global_address), dims, strides, m.box_dim, m.element_stride,
        m.interleave, m.swizzle, m.l2_promotion, m.oob_fill);
    if (r != cu::kSuccess) {
      if (why) *why = d.describe("cuTensorMapEncodeTiled", r);
      return false;
    }
  }
  return true;
}

// ---- The per-call-site cache ----------------------------------------------------------------
// Everything a call decides from its spec and the inputs' metadata (dtypes, sizes, strides,
// 16-byte alignment class of the base pointers, device): the validated problem, the variant,
// the loaded kernel, launch geometry, the tensor-map problem. A hit skips input validation,
// chooseConfig (which copies and validates the spec), launchDims and every string build; only
// the data pointers are read per call. Keyed per spec entry (pointer: entries live forever).

struct CallEntry {
  // Aten: evaluateReference. Kernel: the fused kernel. Pointwise: cuBLAS product (fp32), then
  // the epilogue-alone kernel over it (kernels/epilogue_pointwise.cuh) reading slot accSlot.
  enum class Kind { Aten, Kernel, Pointwise };
  Kind kind = Kind::Aten;
  std::shared_ptr<const CachedSpec> spec;
  ChainShape shape;     // concrete; for the ATen evaluator
  long long B = 1, M = 0, N = 0, K = 0;
  std::vector<int64_t> outShape;
  std::vector<at::ScalarType> outDtypes;
  // FXFUSE_POISON_OUTPUTS as it was when this call site was planned (read once per plan, not
  // per launch; a test that sets it plans again: new call site, or set_kernel_choice)
  bool poison = false;
  // Kind::Kernel
  std::shared_ptr<CudaKernel> kernel;
  std::vector<LetterStrides> strides;  // per slot, of the tensor the kernel reads
  std::vector<std::string> copy;       // per slot: pass letterGroupedCopy(tensor, copy[slot]) when not empty
  bool anyCopy = false;
  codegen::LaunchDims dims;       // as launched (cluster only when cuLaunchKernelEx exists)
  codegen::LaunchDims plainDims;  // the same problem with split-K cluster S = 1
  bool cluster = false;           // dims.cluster product > 1: launch with cuLaunchKernelEx
  bool pdl = false;               // launch as a programmatic dependent (launchesAsProgrammaticDependent)
  // Set when the driver refused the programmatic launch and the plain one succeeded: later calls of the
  // call site launch plainly (no attempt, refusal and warning per call).
  mutable std::atomic<bool> pdlRefused{false};
  int accSlot = -1;  // Kind::Pointwise
  // Good for this call only, not stored for the call site: the ATen evaluation taken because
  // the epilogue kernel could not be compiled now (the first call inside a CUDA graph capture),
  // or while the kernel compiles in the background (`compiling`).
  bool transient = false;
  bool compiling = false;
  // Kind::Aten because the epilogue kernel failed: each call counts as a fallback (and raises
  // under FXFUSE_STRICT); the call site plans again from retryAt on (max: never).
  bool fallback = false;
  std::chrono::steady_clock::time_point retryAt = std::chrono::steady_clock::time_point::max();
  // sm90_wgmma: tensor maps, re-encoded only when the A/B pointers change.
  bool tma = false;
  int aSlot = -1, bSlot = -1;
  sm90::GemmProblem tmaProblem;
  sm90::GemmConfig tmaConfig;
  mutable std::mutex tmaMutex;
  mutable const void* lastA = nullptr;
  mutable const void* lastB = nullptr;
  alignas(64) mutable unsigned char lastTma[2][128];
};

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& v) const noexcept {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
    for (int64_t x : v) {
      h ^= static_cast<uint64_t>(x) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    }
    return static_cast<size_t>(h * 0xff51afd7ed558ccdull);
  }
};

struct CallCache {
  std::mutex mutex;
  // Bumped when kernel choices change: a decision planned under an older generation is not
  // stored (setKernelChoiceCuda may clear the map while another thread plans).
  uint64_t generation = 0;
  std::unordered_map<std::vector<int64_t>, std::shared_ptr<const CallEntry>, KeyHash> map;
};

CallCache& callCache() {
  static auto* c = new CallCache();  // leaked: ops may run during static destruction
  return *c;
}

constexpr size_t kMaxCallEntries = 4096;  // dynamic shapes: drop all and start over

// The key of a call: [spec, device, force, #inputs, per input: dtype, rank, base address mod
// 16, sizes, strides]. False when the inputs are of a kind the cache does not describe
// (undefined, not strided, on different devices): the slow path then raises or handles them.
bool callKey(const CachedSpec* spec, at::TensorList inputs, std::vector<int64_t>* key) {
  key->clear();
  if (inputs.empty()) return false;
  const c10::Device device = inputs[0].device();
  key->push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(spec)));
  key->push_back(device.index());
  // Switches that change the decision (tests flip them between calls on the same inputs)
  key->push_back((envFlag("FXFUSE_FORCE_KERNEL") ? 1 : 0) | (codegen::pointwiseEnabled() ? 0 : 2));
  key->push_back(static_cast<int64_t>(inputs.size()));
  for (const at::Tensor& t : inputs) {
    if (!t.defined() || t.layout() != at::kStrided || t.device() != device) return false;
    const int64_t rank = t.dim();
    key->push_back(static_cast<int64_t>(t.scalar_type()));
    key->push_back(rank);
    key->push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.const_data_ptr()) & 15));
    const auto sizes = t.sizes();
    const auto strides = t.strides();
    for (int64_t d = 0; d < rank; ++d) key->push_back(sizes[d]);
    for (int64_t d = 0; d < rank; ++d) key->push_back(strides[d]);
  }
  return true;
}

std::shared_ptr<const CallEntry> findCall(const std::vector<int64_t>& key) {
  CallCache& c = callCache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.map.find(key);
  return it == c.map.end() ? nullptr : it->second;
}

std::shared_ptr<CallEntry> atenEntry(const Plan& plan) {
  auto e = std::make_shared<CallEntry>();
  e->kind = CallEntry::Kind::Aten;
  e->poison = envFlag("FXFUSE_POISON_OUTPUTS");
  e->spec = plan.entry;
  e->shape = plan.shape;
  e->B = plan.B;
  e->M = plan.M;
  e->N = plan.N;
  e->K = plan.K;
  return e;
}

// Stores `call` under `key` (whose force bit says whether FXFUSE_FORCE_KERNEL was set when it
// was planned: the two settings decide differently, so they are cached apart).
void insertCall(const std::vector<int64_t>& key, std::shared_ptr<const CallEntry> call, uint64_t generation) {
  CallCache& c = callCache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.generation != generation) return;  // planned before a kernel choice changed
  if (c.map.size() >= kMaxCallEntries) c.map.clear();
  c.map[key] = std::move(call);
}

void warnOnce(const std::string& key, const std::string& message) {
  static std::mutex mutex;
  static std::unordered_map<std::string, bool> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned[key]) TORCH_WARN(message);
  warned[key] = true;
}

// What getKernel needs to find or build `config` for this device; it may compile only
// outside a CUDA graph capture on `stream` (else KernelNotReady), in the background where `plan` says so.
KernelRequest kernelRequest(const CudaDriver& d, const Plan& plan, const codegen::KernelConfig& config, int device,
                            const DeviceInfo& info, cu::Stream stream) {
  KernelRequest req;
  req.config = config;
  req.background = plan.background;
  req.device = device;
  req.arch = nvrtcArch(info.sm);
  req.maxSmemOptin = info.maxSmemOptin;
  req.mayCompile = [&d, stream] {
    int status = 0;
    const cu::Result r = d.cuStreamIsCapturing(stream, &status);
    return r == cu::kSuccess && status == cu::kCaptureStatusNone;
  };
  return req;
}

// ATen ops for this call while its kernel compiles in the background (KernelCompiling): not
// stored for the call site, which plans again at its next call and launches the kernel once built.
std::shared_ptr<CallEntry> whileCompiling(const Plan& plan) {
  auto e = atenEntry(plan);
  e->transient = e->compiling = true;
  return e;
}

// A launching entry (Kernel or Pointwise) for `plan`: outputs, input strides and the input
// copies `copy` (per slot, as Plan::copied) the kernel needs.
std::shared_ptr<CallEntry> launchEntry(const Plan& plan, CallEntry::Kind kind, std::shared_ptr<CudaKernel> kernel,
                                       std::vector<std::string> copy) {
  auto e = atenEntry(plan);
  e->kind = kind;
  e->kernel = std::move(kernel);
  for (const c10::SymInt& s : plan.shape.outputShape()) e->outShape.push_back(s.expect_int());
  for (int id : plan.entry->spec.outputs) e->outDtypes.push_back(toScalarType(plan.entry->spec.values[id].dtype));
  e->strides = plan.strides;
  e->copy = std::move(copy);
  for (const std::string& c : e->copy) e->anyCopy = e->anyCopy || !c.empty();
  return e;
}

// The candidate kernel whose describeConfig text is `choice`, if any.
std::optional<codegen::KernelConfig> candidateNamed(const ChainSpec& spec, const codegen::ProblemShape& problem,
                                                    int sm, const std::string& choice) {
  for (const codegen::KernelConfig& c : codegen::candidateConfigs(spec, problem, sm))
    if (codegen::describeConfig(c) == choice) return c;
  return std::nullopt;
}

// Programmatic dependent launch (sm_90+) of the gemv, the Hopper kernel and the epilogue-alone
// kernel: the driver processes the launch ahead and starts the kernel's CTAs as the previous
// kernel's CTAs exit; each template reads only its parameters (and sets up shared memory) before
// fx_grid_dependency_wait (device/fx_prelude.cuh), which returns once that kernel has completed and
// its writes are visible. Decode steps and decode batches are chains of short kernels, where a
// launch's latency and prologue are a share of each: the gemv back to back 5-13 % less time per
// call at M = 1-16 (bench/RESULTS.md Run BB call 6); the Hopper kernel and cuBLAS + the epilogue
// kernel at 64-256 rows 1-10 % (Run BC call 2). Only a template that waits is launched so
// (codegen::templateWaitsForPreviousKernel: not the generic pre-Hopper one). FXFUSE_PDL=0 launches
// every kernel as a plain stream dependent (A/B; read when a call site is planned).
bool launchesAsProgrammaticDependent(const codegen::KernelConfig& config, const DeviceInfo& info,
                                     const CudaDriver& d) {
  const char* off = std::getenv("FXFUSE_PDL");
  return info.sm >= 90 && d.cuLaunchKernelEx != nullptr && !(off && std::string(off) == "0") &&
         codegen::templateWaitsForPreviousKernel(config.variant);
}

// Whether an epilogue op reads input slot `slot` (then the kernel needs its strides, and any
// copy the plan made of it); the epilogue-alone kernel does not read A and B otherwise.
bool epilogueReadsSlot(const ChainSpec& spec, int slot) {
  for (size_t i = spec.mmIndex() + 1; i < spec.values.size(); ++i)
    for (int o : spec.values[i].operands)
      if (spec.values[o].kind == ValueKind::Input && spec.values[o].slot == slot) return true;
  return false;
}

// A chain without a fast fused kernel: cuBLAS for the product (chainProduct), then the chain's epilogue in one
// generated pass (what Inductor's unfused graph costs), instead of one ATen kernel per op.
// The ATen entry where that kernel does not apply (a prologue, 16 inputs), is switched off
// (FXFUSE_NO_POINTWISE=1) or cannot be had (compile error: warned once).
std::shared_ptr<CallEntry> pointwiseEntry(const CudaDriver& d, const Plan& plan, int device, const DeviceInfo& info,
                                          cu::Stream stream) {
  const ChainSpec& spec = plan.entry->spec;
  if (!codegen::pointwiseApplies(spec) || !codegen::pointwiseEnabled()) return atenEntry(plan);
  const KernelRequest req = kernelRequest(d, plan, codegen::pointwiseConfig(), device, info, stream);
  // A failed kernel is not tried again for a while (for good when codegen cannot emit it):
  // retrying at every call, or at every new call site of a dynamic shape, would regenerate and
  // recompile (0.1-1 s) each time. Meanwhile the call site runs ATen ops, counted as fallbacks.
  using Clock = std::chrono::steady_clock;
  constexpr auto kRetryAfter = std::chrono::seconds(30);
  auto failed = [&](Clock::time_point retryAt) {
    auto e = atenEntry(plan);
    e->fallback = true;
    e->retryAt = retryAt;
    return e;
  };
  {
    std::lock_guard<std::mutex> lock(plan.entry->kernelsMutex);
    if (Clock::now() < plan.entry->pointwiseRetryAt) return failed(plan.entry->pointwiseRetryAt);
  }
  std::shared_ptr<CudaKernel> kernel;
  try {
    kernel = getKernel(d, *plan.entry, req);
  } catch (const KernelCompiling&) {
    return whileCompiling(plan);
  } catch (const KernelNotReady&) {
    // First call inside a CUDA graph capture: ATen for this call, the kernel at the next plan.
    auto e = atenEntry(plan);
    e->transient = true;
    return e;
  } catch (const std::exception& e) {
    // for good where the kernel cannot be had, unless that may pass (KernelUnavailable::transient)
    const auto* unavailable = dynamic_cast<const KernelUnavailable*>(&e);
    const Clock::time_point retryAt =
        unavailable && !unavailable->transient ? Clock::time_point::max() : Clock::now() + kRetryAfter;
    {
      std::lock_guard<std::mutex> lock(plan.entry->kernelsMutex);
      plan.entry->pointwiseRetryAt = retryAt;
    }
    TORCH_CHECK(!envFlag("FXFUSE_STRICT"), "fxfuse::gemm_chain (FXFUSE_STRICT=1): no epilogue kernel: ", e.what());
    warnOnce(std::string("pointwise: ") + e.what(),
             std::string("fxfuse::gemm_chain: no epilogue kernel (") + e.what() +
                 "); evaluating the chain with ATen ops instead. Warned once.");
    return failed(retryAt);
  }
  std::vector<std::string> copy = plan.copied;
  for (int slot : {spec.values[plan.aInput].slot, spec.values[plan.bInput].slot})
    if (!epilogueReadsSlot(spec, slot)) copy[slot].clear();  // at::mm reads any strides
  auto e = launchEntry(plan, CallEntry::Kind::Pointwise, kernel, std::move(copy));
  e->accSlot = spec.numInputSlots();
  e->dims = e->plainDims = codegen::launchDims(kernel->source, plan.problem, info.smCount, info.dramBytesPerS);
  e->pdl = launchesAsProgrammaticDependent(kernel->source.config, info, d);
  return e;
}

// The decision for a plan: the unfused path (pointwiseEntry: variant not fast, not forced, or
// a measured "aten"), a kernel entry, or null with *reason set (no kernel: the caller falls
// back). Compiles only for launching entries.
// Throws for capture-time misses and driver failures.
std::shared_ptr<CallEntry> prepare(const CudaDriver& d, const Plan& plan, int device,
                                   cu::Stream stream, std::string* reason) {
  const ChainSpec& spec = plan.entry->spec;
  const DeviceInfo& info = deviceInfo(d, device);
  codegen::ProblemShape problem = plan.problem;
  codegen::KernelConfig config;
  sm90::GemmProblem tmaPr;
  sm90::GemmConfig tmaCfg;
  int aSlot = -1, bSlot = -1;
  alignas(64) unsigned char tma[2][128];
  std::memset(tma, 0, sizeof tma);
  bool useTma = false;
  // A measured choice (setKernelChoice) overrides the heuristic and its "fast" rule: it was
  // timed against the other candidates and against the ATen evaluation on this problem.
  const std::string choice = lookupKernelChoice(*plan.entry, problemClass(plan.problem), info.gpu);
  // "aten" = the unfused path measured fastest: cuBLAS + the epilogue kernel where it applies,
  // else ATen ops. FXFUSE_FORCE_KERNEL (tests) asks for a fused kernel: it outranks "aten".
  if (choice == kAtenOpsChoice) return atenEntry(plan);
  if (choice == kAtenChoice && !envFlag("FXFUSE_FORCE_KERNEL")) return pointwiseEntry(d, plan, device, info, stream);
  // a measured kernel is taken as it is, or not at all (no retry below); "aten" under
  // FXFUSE_FORCE_KERNEL names no candidate: the heuristic's kernel
  const std::optional<codegen::KernelConfig> measuredConfig =
      choice.empty() ? std::nullopt : candidateNamed(spec, problem, info.sm, choice);
  const bool measured = measuredConfig.has_value();
  if (measured) config = *measuredConfig;
  for (int attempt = 0;; ++attempt) {
    if (!measured) config = codegen::chooseConfig(spec, problem, info.sm);
    if (config.variant != "sm90_wgmma") break;
    std::string why;
    if (tmaProblem(d, plan, config, &tmaPr, &tmaCfg, &aSlot, &bSlot, &why) &&
        encodeTensorMaps(d, tmaPr, tmaCfg, tma, &why)) {
      useTma = true;
      break;
    }
    // A measured Hopper tile the tensor maps reject is not silently replaced by another
    // kernel (the measurement would credit it with that kernel's time): fall back, with why.
    if (measured) {
      *reason = "the measured kernel '" + choice + "' cannot read these operands (" + why + ")";
      return nullptr;
    }
    // The tensor maps reject this problem (odd N, K % 8, a row stride): tell the heuristic
    // the operands are misaligned, which rules TMA out, and choose again.
    if (attempt == 1) {
      *reason = "no tensor map for the TMA kernel (" + why + ")";
      return nullptr;
    }
    problem.align_bytes_a = problem.align_bytes_b = 2;
  }

  // Never slower than unfused: a variant that may lose to cuBLAS + ATen pointwise is not run;
  // the chain takes the unfused path (cuBLAS + the epilogue kernel, or ATen ops).
  const bool fast = measured || codegen::isFastVariant(config);
  const bool force = !fast && envFlag("FXFUSE_FORCE_KERNEL");
  if (!fast && !force) return pointwiseEntry(d, plan, device, info, stream);

  const KernelRequest req = kernelRequest(d, plan, config, device, info, stream);
  std::shared_ptr<CudaKernel> kernel;
  try {
    kernel = getKernel(d, *plan.entry, req);
  } catch (const KernelUnavailable& e) {
    *reason = e.what();
    return nullptr;
  } catch (const KernelCompiling&) {
    return whileCompiling(plan);
  } catch (const KernelNotReady& e) {
    TORCH_CHECK(false, "fxfuse::gemm_chain: ", e.what());
  } catch (const std::runtime_error& e) {
    TORCH_CHECK(false, e.what());
  }
  // setmaxnreg: the consumer warpgroups take registers the producer freed; if ptxas allocated
  // fewer per thread than the template assumed, setmaxnreg.inc would wait forever.
  if (config.variant == "sm90_wgmma" &&
      !sm90::setmaxnregSafe(codegen::sm90ConfigOf(config), kernel->numRegs)) {
    stats().unsafeRegisterFallbacks++;
    *reason = "kernel " + kernel->source.name + " was allocated " +
              std::to_string(kernel->numRegs) + " registers per thread, fewer than its " +
              "setmaxnreg budget assumes (" + std::to_string(sm90::entryRegs(tmaCfg)) +
              "): launching it could hang, so it is not launched (please report a bug)";
    return nullptr;
  }

  auto e = launchEntry(plan, CallEntry::Kind::Kernel, kernel, plan.copied);
  try {
    e->dims = codegen::launchDims(kernel->source, plan.problem, info.smCount, info.dramBytesPerS);
    codegen::KernelSource plain = kernel->source;  // code was dropped at load: cheap copy
    plain.config.max_cluster = 1;
    e->plainDims = codegen::launchDims(plain, plan.problem, info.smCount, info.dramBytesPerS);
  } catch (const codegen::CodegenError& err) {
    *reason = err.what();
    return nullptr;
  }
  const auto& cl = e->dims.cluster;
  if (cl[0] * cl[1] * cl[2] > 1) {
    if (d.cuLaunchKernelEx) {
      e->cluster = true;
    } else {
      // A plain launch with grid.y = S would leave each CTA a cluster of one (the kernel reads
      // the cluster size from the hardware), each computing the whole K: launch S = 1 instead.
      warnOnce("no cuLaunchKernelEx",
               "fxfuse::gemm_chain: the CUDA driver lacks cuLaunchKernelEx; split-K gemv "
               "kernels run without thread block clusters (slower). Warned once.");
      e->dims = e->plainDims;
    }
  }
  e->pdl = launchesAsProgrammaticDependent(kernel->source.config, info, d);
  if (useTma) {
    e->tma = true;
    e->aSlot = aSlot;
    e->bSlot = bSlot;
    e->tmaProblem = tmaPr;
    e->tmaConfig = tmaCfg;
    e->lastA = tmaPr.a_ptr;
    e->lastB = tmaPr.b_ptr;
    std::memcpy(e->lastTma, tma, sizeof tma);
  }
  return e;
}

// ---- One call -------------------------------------------------------------------------------

// Test hook: FXFUSE_PDL_REFUSE_FOR_TEST=1 answers every programmatic launch with
// CUDA_ERROR_NOT_SUPPORTED without launching, as a driver without the attribute would (no GPU here
// refuses it). Read once.
bool refuseProgrammaticLaunchForTest() {
  static const bool refuse = [] {
    const char* v = std::getenv("FXFUSE_PDL_REFUSE_FOR_TEST");
    return v && std::string(v) == "1";
  }();
  return refuse;
}
constexpr cu::Result kErrorNotSupported = 801;  // CUDA_ERROR_NOT_SUPPORTED

cu::Result launch(const CudaDriver& d, const CudaKernel& k, const codegen::LaunchDims& dims,
                  bool cluster, bool pdl, cu::Stream stream, void** args) {
  if (pdl && refuseProgrammaticLaunchForTest()) return kErrorNotSupported;
  if (!cluster && !pdl)
    return d.cuLaunchKernel(k.function, dims.grid[0], dims.grid[1], dims.grid[2], dims.block, 1,
                            1, static_cast<unsigned>(dims.smem_bytes), stream, args, nullptr);
  cu::LaunchAttribute attrs[2];
  std::memset(attrs, 0, sizeof attrs);
  unsigned n = 0;
  if (cluster) {
    attrs[n].id = cu::kLaunchAttrClusterDimension;
    attrs[n].value.clusterDim.x = dims.cluster[0];
    attrs[n].value.clusterDim.y = dims.cluster[1];
    attrs[n].value.clusterDim.z = dims.cluster[2];
    ++n;
  }
  if (pdl) {
    attrs[n].id = cu::kLaunchAttrProgrammaticStreamSerialization;
    attrs[n].value.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cu::LaunchConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = dims.grid[0];
  cfg.gridDimY = dims.grid[1];
  cfg.gridDimZ = dims.grid[2];
  cfg.blockDimX = dims.block;
  cfg.blockDimY = 1;
  cfg.blockDimZ = 1;
  cfg.sharedMemBytes = static_cast<unsigned>(dims.smem_bytes);
  cfg.hStream = stream;
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  return d.cuLaunchKernelEx(&cfg, k.function, args, nullptr);
}

std::vector<at::Tensor> runCall(const CallEntry& c, at::TensorList inputs) {
  const ChainSpec& spec = c.spec->spec;
  if (c.kind == CallEntry::Kind::Aten) {
    if (c.fallback) {
      TORCH_CHECK(!envFlag("FXFUSE_STRICT"), "fxfuse::gemm_chain (FXFUSE_STRICT=1): no epilogue kernel for ",
                  "this chain (the warning above says why)");
      stats().fallbacks++;
    } else {
      stats().atenDispatch++;
    }
    return evaluateReference(spec, inputs, c.shape);
  }
  const c10::Device device = inputs[0].device();
  const CudaDriver* d = loadCudaDriver();
  TORCH_INTERNAL_ASSERT(d, "fxfuse: kernel entry without a CUDA driver");
  ensureContext(*d, device.index());
  const cu::Stream stream = currentStream(device);

  std::vector<at::Tensor> outputs;
  outputs.reserve(c.outDtypes.size());
  const at::TensorOptions options = inputs[0].options();
  for (at::ScalarType dt : c.outDtypes) outputs.push_back(at::empty(c.outShape, options.dtype(dt)));
  if (c.poison)  // 0xFF bytes: NaN in every float dtype, so an unwritten element shows
    for (at::Tensor& o : outputs) o.view(at::kByte).fill_(255);

  // Contiguous copies where the kernel needs them (kept alive until after the launch; the
  // caching allocator frees them stream-ordered).
  std::vector<at::Tensor> copies;
  if (c.anyCopy) copies.resize(inputs.size());
  FxParams params;
  std::memset(&params, 0, sizeof params);
  params.B = c.B;
  params.M = c.M;
  params.N = c.N;
  params.K = c.K;
  params.num_inputs = static_cast<int>(inputs.size());
  params.num_outputs = static_cast<int>(outputs.size());
  const void* ptrs[16];
  for (size_t slot = 0; slot < inputs.size(); ++slot) {
    const at::Tensor* t = &inputs[slot];
    if (c.anyCopy && !c.copy[slot].empty()) {
      copies[slot] = letterGroupedCopy(*t, c.copy[slot]);
      t = &copies[slot];
    }
    ptrs[slot] = t->const_data_ptr();
    const LetterStrides& s = c.strides[slot];
    params.in[slot] = {ptrs[slot], s.b, s.m, s.k, s.n};
  }
  for (size_t j = 0; j < outputs.size(); ++j)
    params.out[j] = {outputs[j].data_ptr(), c.M * c.N, c.N, 1};
  at::Tensor product;  // Kind::Pointwise: on this stream, alive until after the launch
  if (c.kind == CallEntry::Kind::Pointwise) {
    product = chainProduct(spec, inputs, c.shape);
    params.in[c.accSlot] = {product.const_data_ptr(), c.M * c.N, c.N, 0, 1};
  }

  if (c.tma) {
    const void* a = ptrs[c.aSlot];
    const void* b = ptrs[c.bSlot];
    std::lock_guard<std::mutex> lock(c.tmaMutex);
    if (a != c.lastA || b != c.lastB) {
      sm90::GemmProblem pr = c.tmaProblem;
      pr.a_ptr = a;
      pr.b_ptr = b;
      std::string why;
      if (!encodeTensorMaps(*d, pr, c.tmaConfig, c.lastTma, &why)) {
        c.lastA = c.lastB = nullptr;  // lastTma may be half-written
        return fallback("no tensor map for the TMA kernel (" + why + ")", spec, inputs, c.shape);
      }
      c.lastA = a;
      c.lastB = b;
    }
    std::memcpy(params.tma, c.lastTma, sizeof params.tma);
  }

  void* args[] = {&params};
  bool pdl = c.pdl && !c.pdlRefused.load(std::memory_order_relaxed);
  cu::Result r = launch(*d, *c.kernel, c.dims, c.cluster, pdl, stream, args);
  if (r != cu::kSuccess && pdl) {
    // A launch error is not sticky: the same kernel runs as a plain stream dependent (its wait is
    // then a no-op). If that launch succeeds the attribute was the cause: warned, and remembered for
    // the call site; else the cluster's warning below names what was.
    const cu::Result first = r;
    pdl = false;
    r = launch(*d, *c.kernel, c.dims, c.cluster, false, stream, args);
    if (r == cu::kSuccess) {
      stats().pdlLaunchRefusals++;
      c.pdlRefused.store(true, std::memory_order_relaxed);
      warnOnce("programmatic launch failed: " + c.kernel->source.name,
               "fxfuse::gemm_chain: " + d->describe("cuLaunchKernelEx (programmatic dependent launch)", first) +
                   "; launched " + c.kernel->source.name + " as a plain stream dependent instead, from now on. Warned once.");
    }
  }
  if (r != cu::kSuccess && c.cluster) {
    // A launch-configuration error (e.g. the cluster does not fit next to other work) is not
    // sticky: run the same kernel without clusters, which it supports (S = 1).
    warnOnce("cluster launch failed: " + c.kernel->source.name,
             "fxfuse::gemm_chain: " + d->describe("cuLaunchKernelEx (cluster)", r) +
                 "; launching " + c.kernel->source.name + " without clusters instead. Warned once.");
    r = launch(*d, *c.kernel, c.plainDims, false, false, stream, args);
    pdl = false;
  } else if (r == cu::kSuccess && c.cluster) {
    stats().clusterLaunches++;
  }
  if (r == cu::kSuccess && pdl) stats().pdlLaunches++;
  check(*d, r, c.cluster ? "cuLaunchKernelEx" : "cuLaunchKernel");
  stats().launches++;
  if (c.kind == CallEntry::Kind::Pointwise) stats().pointwiseLaunches++;
  if (c.kernel->source.config.split_k > 1) stats().hopperSplitKLaunches++;  // sm90 split-K only
  if (c.kernel->source.config.epilogue_overlap) stats().hopperOverlapLaunches++;
  return outputs;
}

// The first call of a call site (or one the cache cannot describe): validates, plans, decides,
// maybe compiles (in the background: `background`); stores the decision under `key` (null: not
// cacheable), unless it holds only while the kernel compiles.
std::vector<at::Tensor> planAndRun(at::TensorList inputs, std::shared_ptr<const CachedSpec> entry,
                                   const std::vector<int64_t>* key, bool run, bool background) {
  Plan plan = makePlan(inputs, std::move(entry));
  plan.background = background;
  const ChainSpec& spec = plan.entry->spec;
  const c10::Device device = inputs[0].device();
  const c10::DeviceGuard guard(device);
  // Before anything computes: never a wrong answer. Not for a precompile, whose inputs may be stand-ins of the
  // right shapes (every later call checks, on the cached path too).
  if (run) checkExpects(spec, inputs, plan.K, streamCapturing);
  inputs = inputs.slice(0, static_cast<size_t>(spec.numInputSlots()));  // what the kernels and the ATen path read
  // K == 0: every output is the epilogue of a zero accumulator; not worth a kernel variant.
  if (plan.K == 0) return run ? evaluateReference(spec, inputs, plan.shape) : std::vector<at::Tensor>{};
  if (plan.B * plan.M * plan.N == 0) {
    std::vector<at::Tensor> outputs;
    if (!run) return outputs;
    std::vector<int64_t> outShape;
    for (const c10::SymInt& s : plan.shape.outputShape()) outShape.push_back(s.expect_int());
    for (int id : spec.outputs)
      outputs.push_back(
          at::empty(outShape, inputs[0].options().dtype(toScalarType(spec.values[id].dtype))));
    return outputs;
  }

  std::string why;
  const CudaDriver* d = loadCudaDriver(&why);
  if (!d) {
    if (!run) return {};  // the op will fall back and warn
    return fallback("the CUDA driver is unavailable (" + why + ")", spec, inputs, plan.shape);
  }
  ensureContext(*d, device.index());
  const cu::Stream stream = currentStream(device);
  std::string reason;
  uint64_t generation = 0;
  {
    CallCache& c = callCache();
    std::lock_guard<std::mutex> lock(c.mutex);
    generation = c.generation;
  }
  std::shared_ptr<const CallEntry> call = prepare(*d, plan, device.index(), stream, &reason);
  if (!call) return run ? fallback(reason, spec, inputs, plan.shape) : std::vector<at::Tensor>{};
  if (key && !call->transient) insertCall(*key, call, generation);
  if (!run) return {};
  if (call->compiling) stats().backgroundCompileCalls++;
  return runCall(*call, inputs);
}

// The dispatcher picks the CUDA kernel when any input is on CUDA; every later step (call-site
// key, device guard, kernel pointers, input slots) assumes all inputs are, on one device, and
// that the spec takes exactly that many (numOpInputs: the values' inputs, then the expect lines', which the kernels
// never read: they get the first numInputSlots()). Checked before anything else, for run and precompile.
std::shared_ptr<const CachedSpec> checkedSpec(at::TensorList inputs, c10::string_view specText, const char* who) {
  TORCH_CHECK(!inputs.empty(), who, ": no inputs");
  for (size_t i = 0; i < inputs.size(); ++i)
    TORCH_CHECK(inputs[i].defined() && inputs[i].is_cuda() && inputs[i].device() == inputs[0].device(), who,
                ": input ", i, " is on ", inputs[i].defined() ? inputs[i].device().str() : std::string("(undefined)"),
                "; all inputs must be CUDA tensors on one device (input 0 is on ",
                inputs[0].defined() ? inputs[0].device().str() : std::string("(undefined)"), ")");
  auto entry = specFor(specText);
  TORCH_CHECK(static_cast<size_t>(entry->spec.numOpInputs()) == inputs.size(), who, ": the spec takes ",
              entry->spec.numOpInputs(), " inputs, got ", inputs.size());
  return entry;
}

}  // namespace

std::vector<at::Tensor> gemmChainCuda(at::TensorList inputs, c10::string_view specText) {
  auto entry = checkedSpec(inputs, specText, "fxfuse::gemm_chain");
  const size_t slots = static_cast<size_t>(entry->spec.numInputSlots());
  // An input with the negation bit (torch._neg_view) holds -x lazily, and the kernels read its memory:
  // resolved first (a copy, only then; the CPU kernel goes through ATen ops, which resolve it). Not an expect
  // line's input, which no kernel reads: a copy per call would be a new tensor to check at every call.
  for (size_t i = 0; i < slots; ++i)
    if (inputs[i].is_neg()) {
      std::vector<at::Tensor> resolved(inputs.begin(), inputs.end());
      for (size_t j = 0; j < slots; ++j) resolved[j] = resolved[j].resolve_neg();
      return gemmChainCuda(resolved, specText);
    }
  thread_local std::vector<int64_t> key;
  // (over all the op's inputs: an entry stands for the expect inputs' dtypes and sizes checkInputs passed)
  const bool cacheable = callKey(entry.get(), inputs, &key);
  if (cacheable) {
    std::shared_ptr<const CallEntry> call = findCall(key);
    // (a fallback entry is planned again once its retry time has come)
    if (call && !(call->fallback && std::chrono::steady_clock::now() >= call->retryAt)) {
      stats().callCacheHits++;
      const c10::DeviceGuard guard(inputs[0].device());
      checkExpects(entry->spec, inputs, call->K, streamCapturing);  // a lookup per expect line once checked
      return runCall(*call, inputs.slice(0, slots));
    }
  }
  return planAndRun(inputs, std::move(entry), cacheable ? &key : nullptr, /*run=*/true, backgroundCompileEnabled());
}

void precompileCuda(at::TensorList inputs, c10::string_view specText, bool background) {
  // the CUDA tensors (or same-shaped ones) the op will get
  auto entry = checkedSpec(inputs, specText, "fxfuse.precompile");
  std::vector<int64_t> key;
  const bool cacheable = callKey(entry.get(), inputs, &key);
  planAndRun(inputs, std::move(entry), cacheable ? &key : nullptr, /*run=*/false, background);
}

namespace {
// The plan and device of a choice question: what the op would plan for these inputs.
struct ChoiceContext {
  Plan plan;
  const DeviceInfo* info = nullptr;
};

ChoiceContext choiceContext(at::TensorList inputs, c10::string_view specText, const char* who) {
  ChoiceContext ctx{makePlan(inputs, checkedSpec(inputs, specText, who))};
  std::string why;
  const CudaDriver* d = loadCudaDriver(&why);
  TORCH_CHECK(d, who, ": the CUDA driver is unavailable (", why, ")");
  ctx.info = &deviceInfo(*d, inputs[0].device().index());
  return ctx;
}
}  // namespace

std::vector<std::string> kernelCandidatesCuda(at::TensorList inputs, c10::string_view specText) {
  const ChoiceContext ctx = choiceContext(inputs, specText, "fxfuse.kernel_candidates");
  std::vector<std::string> out;
  for (const codegen::KernelConfig& c : codegen::candidateConfigs(ctx.plan.entry->spec, ctx.plan.problem, ctx.info->sm))
    out.push_back(codegen::describeConfig(c));
  return out;
}

std::string kernelChoiceCuda(at::TensorList inputs, c10::string_view specText) {
  const ChoiceContext ctx = choiceContext(inputs, specText, "fxfuse.kernel_choice");
  return lookupKernelChoice(*ctx.plan.entry, problemClass(ctx.plan.problem), ctx.info->gpu);
}

void setKernelChoiceCuda(at::TensorList inputs, c10::string_view specText, const std::string& choice,
                         bool persist) {
  const ChoiceContext ctx = choiceContext(inputs, specText, "fxfuse.set_kernel_choice");
  if (!choice.empty() && choice != kAtenChoice && choice != kAtenOpsChoice) {
    TORCH_CHECK(candidateNamed(ctx.plan.entry->spec, ctx.plan.problem, ctx.info->sm, choice).has_value(),
                "fxfuse.set_kernel_choice: '", choice, "' is not a kernel candidate for this problem "
                "(fxfuse._C.kernel_candidates lists them), nor 'aten', 'aten-ops' or ''");
  }
  const bool stored =
      recordKernelChoice(*ctx.plan.entry, problemClass(ctx.plan.problem), ctx.info->gpu, choice, persist);
  if (!stored) TORCH_WARN("fxfuse: the kernel choice could not be stored on disk; the next process measures again");
  CallCache& c = callCache();  // call sites decided before must decide again
  std::lock_guard<std::mutex> lock(c.mutex);
  c.map.clear();
  ++c.generation;
}

LaunchGeometry launchGeometryCuda(at::TensorList inputs, c10::string_view specText) {
  const ChoiceContext ctx = choiceContext(inputs, specText, "fxfuse.launch_geometry");
  const codegen::KernelConfig config = codegen::chooseConfig(ctx.plan.entry->spec, ctx.plan.problem, ctx.info->sm);
  const codegen::LaunchDims d = codegen::launchDims(codegen::generate(ctx.plan.entry->spec, config), ctx.plan.problem,
                                                    ctx.info->smCount, ctx.info->dramBytesPerS);
  LaunchGeometry g;
  g.kernel = codegen::describeConfig(config);
  for (int i = 0; i < 3; ++i) {
    g.grid[i] = d.grid[i];
    g.cluster[i] = d.cluster[i];
  }
  g.smCount = ctx.info->smCount;
  g.dramBytesPerS = ctx.info->dramBytesPerS;
  return g;
}

bool nvrtcAvailable() { return !nvrtcLibraryPath().empty(); }
bool cudaDriverAvailable() { return loadCudaDriver() != nullptr; }

}  // namespace fxfuse::runtime
