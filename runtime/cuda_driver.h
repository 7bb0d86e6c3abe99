// The CUDA driver API, loaded at run time (dlopen libcuda.so.1): the extension builds without
// the CUDA toolkit and imports on machines without a GPU driver. Only the few types, enums and
// entry points fxfuse uses are spelled here, with their values from cuda.h (CUDA 12/13 ABI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fxfuse::runtime {

namespace cu {
using Result = int;  // CUresult; 0 is CUDA_SUCCESS
using Device = int;
using Context = struct CUctx_st*;
using Module = struct CUmod_st*;
using Function = struct CUfunc_st*;
using Stream = struct CUstream_st*;

struct alignas(64) TensorMap {  // CUtensorMap: opaque, 128 bytes
  uint64_t opaque[16];
};

constexpr Result kSuccess = 0;
// CUdevice_attribute
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrMemoryClockRate = 36;  // kHz
constexpr int kAttrGlobalMemoryBusWidth = 37;  // bits
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrMaxSharedMemoryPerBlockOptin = 97;
// CUfunction_attribute
constexpr int kFuncAttrNumRegs = 4;
constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;
// CUlaunchAttributeID
constexpr int kLaunchAttrClusterDimension = 4;
constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;
// CUstreamCaptureStatus
constexpr int kCaptureStatusNone = 0;
// CUtensorMapDataType
constexpr int kTensorMapFloat16 = 6;
constexpr int kTensorMapFloat32 = 7;
constexpr int kTensorMapBFloat16 = 9;
// CUtensorMapInterleave / Swizzle / L2promotion / FloatOOBfill
constexpr int kTensorMapInterleaveNone = 0;
constexpr int kTensorMapSwizzle128B = 3;
constexpr int kTensorMapL2Promotion128B = 2;
constexpr int kTensorMapOobFillNone = 0;  // out-of-bounds elements read as zero

// CUlaunchAttribute / CUlaunchConfig (cuda.h, CUDA 12/13): the cluster dimension and programmatic
// stream serialization (programmatic dependent launch) are used.
union LaunchAttributeValue {  // CUlaunchAttributeValue: 64 bytes, pointer-aligned
  char pad[64];
  struct {
    unsigned x, y, z;
  } clusterDim;
  int programmaticStreamSerializationAllowed;
  void* align_;  // the real union holds pointers (CUevent, base_ptr): 8-byte alignment
};
struct LaunchAttribute {  // CUlaunchAttribute
  int id;                 // CUlaunchAttributeID (an enum: int-sized)
  char pad[8 - sizeof(int)];
  LaunchAttributeValue value;
};
struct LaunchConfig {  // CUlaunchConfig
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  Stream hStream;
  LaunchAttribute* attrs;
  unsigned numAttrs;
};
static_assert(sizeof(LaunchAttributeValue) == 64, "CUlaunchAttributeValue layout");
static_assert(sizeof(LaunchAttribute) == 72 && offsetof(LaunchAttribute, value) == 8,
              "CUlaunchAttribute layout");
static_assert(offsetof(LaunchConfig, hStream) == 32 && offsetof(LaunchConfig, attrs) == 40 &&
                  offsetof(LaunchConfig, numAttrs) == 48 && sizeof(LaunchConfig) == 56,
              "CUlaunchConfig layout");
}  // namespace cu

struct CudaDriver {
  cu::Result (*cuInit)(unsigned);
  cu::Result (*cuDriverGetVersion)(int*);
  cu::Result (*cuGetErrorName)(cu::Result, const char**);
  cu::Result (*cuGetErrorString)(cu::Result, const char**);
  cu::Result (*cuDeviceGet)(cu::Device*, int);
  cu::Result (*cuDeviceGetAttribute)(int*, int, cu::Device);
  cu::Result (*cuDeviceGetName)(char*, int, cu::Device) = nullptr;  // optional (names a GPU in cache keys)
  cu::Result (*cuCtxGetCurrent)(cu::Context*);
  cu::Result (*cuCtxSetCurrent)(cu::Context);
  cu::Result (*cuDevicePrimaryCtxRetain)(cu::Context*, cu::Device);
  cu::Result (*cuModuleLoadData)(cu::Module*, const void*);
  cu::Result (*cuModuleUnload)(cu::Module) = nullptr;  // optional: without it a module is never unloaded
  cu::Result (*cuModuleGetFunction)(cu::Function*, cu::Module, const char*);
  cu::Result (*cuFuncSetAttribute)(cu::Function, int, int);
  cu::Result (*cuFuncGetAttribute)(int*, int, cu::Function);
  cu::Result (*cuLaunchKernel)(cu::Function, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, cu::Stream, void**, void**);
  cu::Result (*cuStreamIsCapturing)(cu::Stream, int*);
  // Optional (CUDA 11.8+): cluster and programmatic dependent launches. Without it the split-K gemv
  // runs with S = 1, and the gemv, Hopper and epilogue-alone kernels as plain stream dependents.
  cu::Result (*cuLaunchKernelEx)(const cu::LaunchConfig*, cu::Function, void**, void**);
  // Optional (absent from drivers older than CUDA 12): only the TMA variants need it.
  cu::Result (*cuTensorMapEncodeTiled)(cu::TensorMap*, int, unsigned, void*, const uint64_t*,
                                       const uint64_t*, const unsigned*, const unsigned*, int,
                                       int, int, int);
  std::string path;

  // "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
  std::string describe(const char* what, cu::Result r) const;
};

// Loads libcuda.so.1 once (thread-safe) and calls cuInit. Returns nullptr and fills *why
// when the library or a required entry point is missing, or cuInit fails. Never throws.
const CudaDriver* loadCudaDriver(std::string* why = nullptr);

}  // namespace fxfuse::runtime
