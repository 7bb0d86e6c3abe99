#include "runtime/cuda_driver.h"

#include <dlfcn.h>

namespace fxfuse::runtime {
namespace {

// Entry points are looked up by their unversioned names: for everything used here those are
// the current ABI (cuda.h maps none of them to a _v2), and the explicit-stream variants are
// the ones torch's own streams expect (torch does not build with per-thread default streams).
template <class Fn>
bool bind(void* lib, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!*fn && missing->empty()) *missing = name;
  return *fn != nullptr;
}

struct Loaded {
  CudaDriver driver{};
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    l.why = std::string("libcuda.so.1 not found (") + (err ? err : "no error text") + ")";
    return l;
  }
  CudaDriver& d = l.driver;
  d.path = "libcuda.so.1";
  std::string missing;
  bind(lib, "cuInit", &d.cuInit, &missing);
  bind(lib, "cuDriverGetVersion", &d.cuDriverGetVersion, &missing);
  bind(lib, "cuGetErrorName", &d.cuGetErrorName, &missing);
  bind(lib, "cuGetErrorString", &d.cuGetErrorString, &missing);
  bind(lib, "cuDeviceGet", &d.cuDeviceGet, &missing);
  bind(lib, "cuDeviceGetAttribute", &d.cuDeviceGetAttribute, &missing);
  bind(lib, "cuCtxGetCurrent", &d.cuCtxGetCurrent, &missing);
  bind(lib, "cuCtxSetCurrent", &d.cuCtxSetCurrent, &missing);
  bind(lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain, &missing);
  bind(lib, "cuModuleLoadData", &d.cuModuleLoadData, &missing);
  bind(lib, "cuModuleGetFunction", &d.cuModuleGetFunction, &missing);
  bind(lib, "cuFuncSetAttribute", &d.cuFuncSetAttribute, &missing);
  bind(lib, "cuFuncGetAttribute", &d.cuFuncGetAttribute, &missing);
  bind(lib, "cuLaunchKernel", &d.cuLaunchKernel, &missing);
  bind(lib, "cuStreamIsCapturing", &d.cuStreamIsCapturing, &missing);
  if (!missing.empty()) {
    l.why = "libcuda.so.1 lacks " + missing + " (driver too old?)";
    return l;  // the handle stays open: harmless, and dlclose of libcuda is unsafe
  }
  std::string optional;
  bind(lib, "cuTensorMapEncodeTiled", &d.cuTensorMapEncodeTiled, &optional);
  bind(lib, "cuLaunchKernelEx", &d.cuLaunchKernelEx, &optional);  // CUDA 11.8+
  bind(lib, "cuDeviceGetName", &d.cuDeviceGetName, &optional);
  bind(lib, "cuModuleUnload", &d.cuModuleUnload, &optional);
  const cu::Result r = d.cuInit(0);
  if (r != cu::kSuccess) {
    l.why = d.describe("cuInit", r);
    return l;
  }
  l.ok = true;
  return l;
}

}  // namespace

std::string CudaDriver::describe(const char* what, cu::Result r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  return std::string(what) + " failed: " + (name ? name : "CUresult " + std::to_string(r)) +
         " (" + (text ? text : "no description") + ")";
}

const CudaDriver* loadCudaDriver(std::string* why) {
  static const Loaded loaded = load();  // thread-safe one-time initialization
  if (!loaded.ok && why) *why = loaded.why;
  return loaded.ok ? &loaded.driver : nullptr;
}

}  // namespace fxfuse::runtime
