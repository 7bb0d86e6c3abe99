// The CUDA kernel of fxfuse::gemm_chain: pick a config, get (or JIT-compile) the generated
// kernel, fill FxParams from the inputs' strides, launch on torch's current stream. No CUDA
// headers and no CUDA build of torch needed: the driver is dlopen'd (cuda_driver.h), NVRTC is
// reached through codegen, and torch's current stream through the device-guard registry.
//
// When no kernel can be had (no libcuda/NVRTC, a spec codegen cannot emit, K == 0) the spec
// is evaluated with ATen ops on the device instead: correct, capturable, slower; one warning
// per reason and stats().fallbacks counts it. FXFUSE_STRICT=1 turns those into errors.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/cuda_driver.h"
#include "runtime/gemm_chain.h"
#include "runtime/kernel_cache.h"
#include "runtime/runtime_stats.h"
#include "runtime/torch_types.h"

#include "codegen/codegen.h"
#include "codegen/kernel_abi.h"
#include "codegen/tma_desc.h"
#include "runtime/kernel_loader.h"

namespace fxfuse::runtime {
namespace {

bool envFlag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

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

struct DeviceInfo {
  int sm = 0;  // 90 for sm_90
  int smCount = 0;
  int maxSmemOptin = 0;
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
    if (L == 'k') s->k = stride;
    if (L == 'n') s->n = stride;
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

// ---- One call -------------------------------------------------------------------------------

struct Plan {
  std::shared_ptr<const CachedSpec> entry;
  ChainShape shape;
  long long B = 1, M = 0, N = 0, K = 0;
  std::vector<at::Tensor> tensors;  // the inputs, made contiguous where the kernel needs it
  std::vector<LetterStrides> strides;
  codegen::ProblemShape problem;
  int aInput = -1, bInput = -1;     // value ids (operandInput)
};

Plan makePlan(at::TensorList inputs, c10::string_view specText) {
  Plan plan;
  plan.entry = specFor(specText);
  const ChainSpec& spec = plan.entry->spec;
  plan.shape = checkInputs(spec, inputs);
  plan.B = plan.shape.B.expect_int();
  plan.M = plan.shape.M.expect_int();
  plan.N = plan.shape.N.expect_int();
  plan.K = plan.shape.K.expect_int();
  TORCH_CHECK(inputs.size() <= 16 && spec.outputs.size() <= 4,
              "fxfuse::gemm_chain: the CUDA kernel takes at most 16 inputs and 4 outputs");
  plan.aInput = operandInput(spec, 0);
  plan.bInput = operandInput(spec, 1);
  plan.tensors.assign(inputs.begin(), inputs.end());
  plan.strides.resize(inputs.size());
  for (size_t i = 0; i < spec.values.size(); ++i) {
    const Value& v = spec.values[i];
    if (v.kind != ValueKind::Input) continue;
    at::Tensor& t = plan.tensors[v.slot];
    const std::string letters = dimLetters(v.dims);
    const bool operand = static_cast<int>(i) == plan.aInput || static_cast<int>(i) == plan.bInput;
    LetterStrides s;
    if ((operand && !innermostContiguous(t)) || !letterStrides(t, letters, &s)) {
      t = t.contiguous();  // freed stream-ordered by the caching allocator: safe after launch
      s = LetterStrides();
      TORCH_INTERNAL_ASSERT(letterStrides(t, letters, &s));
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
  return plan;
}

// Fills p.tma for the sm90_wgmma variant; false (and why) when the operands cannot be
// described by tensor maps, in which case the caller picks a variant without TMA.
bool encodeTensorMaps(const CudaDriver& d, const Plan& plan, const codegen::KernelConfig& c,
                      FxParams* params, std::string* why) {
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
  sm90::GemmProblem pr;
  pr.dtype = av.dtype == spec::DType::BF16 ? sm90::ElemType::BF16 : sm90::ElemType::F16;
  pr.batch = plan.B;
  pr.M = plan.M;
  pr.N = plan.N;
  pr.K = plan.K;
  pr.a_ptr = plan.tensors[av.slot].data_ptr();
  pr.a_sb = as.b;
  pr.a_sm = as.m;
  pr.a_sk = plan.K == 1 ? 1 : as.k;
  pr.b_ptr = plan.tensors[bv.slot].data_ptr();
  pr.b_sb = bs.b;
  pr.b_sk = bs.k;
  pr.b_sn = bs.n;
  pr.b_kmajor = plan.problem.b_kmajor;
  sm90::GemmConfig g;
  g.bm = c.bm;
  g.bn = c.bn;
  g.bk = c.bk;
  g.stages = c.stages;
  g.consumers = c.threads > 0 ? c.threads / 128 - 1 : c.bm / 64;
  sm90::TensorMapDesc maps[2];
  if (!sm90::describeTensorMaps(pr, g, maps, why)) return false;
  for (int i = 0; i < 2; ++i) {
    const sm90::TensorMapDesc& m = maps[i];
    const uint64_t dims[3] = {m.global_dim[0], m.global_dim[1], m.global_dim[2]};
    const uint64_t strides[2] = {m.global_stride_bytes[0], m.global_stride_bytes[1]};
    const cu::Result r = d.cuTensorMapEncodeTiled(
        reinterpret_cast<cu::TensorMap*>(params->tma[i]), m.data_type, m.rank,
        const_cast<void*>(m.global_address), dims, strides, m.box_dim, m.element_stride,
        m.interleave, m.swizzle, m.l2_promotion, m.oob_fill);
    if (r != cu::kSuccess) {
      *why = d.describe("cuTensorMapEncodeTiled", r);
      return false;
    }
  }
  return true;
}

struct Ready {
  std::shared_ptr<CudaKernel> kernel;
  FxParams params;
  std::string unavailable;  // non-empty: why no kernel (the caller falls back)
};

// Config → kernel (compiled or cached) → TMA maps. Throws for capture-time misses and
// driver failures; reports "unavailable" for what the ATen fallback answers.
Ready getReady(const CudaDriver& d, const Plan& plan, int device, cu::Stream stream) {
  Ready ready;
  std::memset(&ready.params, 0, sizeof ready.params);
  const DeviceInfo& info = deviceInfo(d, device);
  codegen::ProblemShape problem = plan.problem;
  for (int attempt = 0; attempt < 2; ++attempt) {
    KernelRequest req;
    req.config = codegen::chooseConfig(plan.entry->spec, problem, info.sm);
    req.device = device;
    req.arch = nvrtcArch(info.sm);
    req.maxSmemOptin = info.maxSmemOptin;
    req.mayCompile = [&] {
      int status = 0;
      const cu::Result r = d.cuStreamIsCapturing(stream, &status);
      return r == cu::kSuccess && status == cu::kCaptureStatusNone;
    };
    try {
      ready.kernel = getKernel(d, *plan.entry, req);
    } catch (const KernelUnavailable& e) {
      ready.unavailable = e.what();
      return ready;
    } catch (const KernelNotReady& e) {
      TORCH_CHECK(false, "fxfuse::gemm_chain: ", e.what());
    } catch (const std::runtime_error& e) {
      TORCH_CHECK(false, e.what());
    }
    if (req.config.variant != "sm90_wgmma") return ready;
    std::string why;
    if (encodeTensorMaps(d, plan, req.config, &ready.params, &why)) return ready;
    // The tensor maps reject this problem (odd N, K % 8, a row stride): tell the heuristic
    // the operands are misaligned, which rules TMA out, and choose again.
    ready.kernel = nullptr;
    ready.unavailable = "no tensor map for the TMA kernel (" + why + ")";
    problem.align_bytes_a = problem.align_bytes_b = 2;
  }
  return ready;  // still TMA after the retry: fall back with the reason
}

void fillParams(const Plan& plan, const std::vector<at::Tensor>& outputs, FxParams* p) {
  p->B = plan.B;
  p->M = plan.M;
  p->N = plan.N;
  p->K = plan.K;
  p->num_inputs = static_cast<int>(plan.tensors.size());
  p->num_outputs = static_cast<int>(outputs.size());
  for (size_t slot = 0; slot < plan.tensors.size(); ++slot) {
    const LetterStrides& s = plan.strides[slot];
    p->in[slot] = {plan.tensors[slot].data_ptr(), s.b, s.m, s.k, s.n};
  }
  for (size_t j = 0; j < outputs.size(); ++j)
    p->out[j] = {outputs[j].data_ptr(), plan.M * plan.N, plan.N, 1};
}

}  // namespace

std::vector<at::Tensor> gemmChainCuda(at::TensorList inputs, c10::string_view specText) {
  Plan plan = makePlan(inputs, specText);
  const ChainSpec& spec = plan.entry->spec;
  const c10::Device device = inputs[0].device();
  const c10::DeviceGuard guard(device);
  // K == 0: every output is the epilogue of a zero accumulator; not worth a kernel variant.
  if (plan.K == 0) return evaluateReference(spec, inputs, plan.shape);

  std::vector<at::Tensor> outputs;
  std::vector<int64_t> outShape;
  for (const c10::SymInt& s : plan.shape.outputShape()) outShape.push_back(s.expect_int());
  for (int id : spec.outputs)
    outputs.push_back(
        at::empty(outShape, inputs[0].options().dtype(toScalarType(spec.values[id].dtype))));
  if (plan.B * plan.M * plan.N == 0) return outputs;

  std::string why;
  const CudaDriver* d = loadCudaDriver(&why);
  if (!d) return fallback("the CUDA driver is unavailable (" + why + ")", spec, inputs, plan.shape);
  ensureContext(*d, device.index());
  const cu::Stream stream = currentStream(device);
  Ready ready = getReady(*d, plan, device.index(), stream);
  if (!ready.kernel) return fallback(ready.unavailable, spec, inputs, plan.shape);

  static const bool poison = envFlag("FXFUSE_POISON_OUTPUTS");
  if (poison)  // 0xFF bytes: NaN in every float dtype, so an unwritten element shows
    for (at::Tensor& o : outputs) o.view(at::kByte).fill_(255);
  fillParams(plan, outputs, &ready.params);
  const codegen::LaunchDims dims = codegen::launchDims(ready.kernel->source, plan.problem,
                                                       deviceInfo(*d, device.index()).smCount);
  void* args[] = {&ready.params};
  check(*d,
        d->cuLaunchKernel(ready.kernel->function, dims.grid[0], dims.grid[1], dims.grid[2],
                          dims.block, 1, 1, static_cast<unsigned>(dims.smem_bytes), stream, args,
                          nullptr),
        "cuLaunchKernel");
  stats().launches++;
  return outputs;
}

void precompileCuda(at::TensorList inputs, c10::string_view specText) {
  TORCH_CHECK(!inputs.empty() && inputs[0].is_cuda(),
              "fxfuse.precompile: pass the CUDA tensors (or same-shaped ones) the op will get");
  Plan plan = makePlan(inputs, specText);
  const c10::DeviceGuard guard(inputs[0].device());
  std::string why;
  const CudaDriver* d = loadCudaDriver(&why);
  if (!d) return;  // the op will fall back and warn
  ensureContext(*d, inputs[0].device().index());
  getReady(*d, plan, inputs[0].device().index(), currentStream(inputs[0].device()));
}

bool nvrtcAvailable() { return !nvrtcLibraryPath().empty(); }
bool cudaDriverAvailable() { return loadCudaDriver() != nullptr; }

}  // namespace fxfuse::runtime
