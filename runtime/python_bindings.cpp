// fxfuse._C: the pass, dumps of generated code, cache control and counters for Python.
// Importing the module also registers the torch op (gemm_chain_op.cpp, linked in).
#include <torch/csrc/utils/pybind.h>

#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "codegen/codegen.h"
#include "codegen/cublas_share.h"
#include "codegen/nvrtc_worker.h"
#include "runtime/compile_queue.h"
#include "runtime/gemm_chain.h"
#include "runtime/kernel_cache.h"
#include "runtime/kernel_loader.h"
#include "runtime/runtime_stats.h"

#if FXFUSE_HAVE_PASS && __has_include("pass/run_pass.h")
#include "pass/gemm_anchor.h"
#include "pass/run_pass.h"
#define FXFUSE_RUN_PASS 1
#endif

namespace py = pybind11;

namespace fxfuse::runtime {
namespace {

std::string runPass(const std::string& ir, const std::string& options) {
#if FXFUSE_RUN_PASS
  py::gil_scoped_release release;  // pure C++; let other Python threads run
  return fxfuse::runPassJson(ir, options);
#else
  (void)ir;
  (void)options;
  throw std::runtime_error("fxfuse._C was built without the pass library (pass/run_pass.h)");
#endif
}

bool isGemmOp(const std::string& target) {
#if FXFUSE_RUN_PASS
  return fxfuse::pass::isGemmTarget(target);
#else
  (void)target;
  throw std::runtime_error("fxfuse._C was built without the pass library (pass/gemm_anchor.h)");
#endif
}

int smFromArch(const std::string& arch) {
  const int sm = codegen::smFromArch(arch);
  if (sm < 0) throw py::value_error("arch must look like 'sm_90', got '" + arch + "'");
  return sm;
}

spec::ChainSpec parsed(const std::string& text) {
  try {
    return getCachedSpec(text)->spec;
  } catch (const spec::SpecError& e) {
    throw py::value_error(std::string("invalid spec: ") + e.what());
  }
}

codegen::KernelSource generateFor(const std::string& specText, long long M, long long N,
                                  long long K, long long B, const std::string& arch) {
  const spec::ChainSpec spec = parsed(specText);
  return codegen::generate(spec, codegen::chooseConfigForSize(spec, M, N, K, B, smFromArch(arch)));
}

// generateFor's kernel compiled by NVRTC (cubin and PTX) for the arch's exact target (sm_90a
// on Hopper, as the op compiles it), without the GIL.
fxfuse::codegen::Cubin compiledFor(const std::string& specText, long long M, long long N, long long K,
                                   long long B, const std::string& arch) {
  const codegen::KernelSource src = generateFor(specText, M, N, K, B, arch);
  const int sm = smFromArch(arch);
  py::gil_scoped_release release;
  return codegen::compileNvrtc(src, "sm_" + std::to_string(sm) + (sm == 90 ? "a" : ""), nvrtcEnv(),
                               /*want_ptx=*/true);
}

// The variant the op would pick for an aligned problem of this size, and whether it is a fast
// one (else the op evaluates the chain with ATen): the planner's profitability question.
py::tuple kernelVariant(const std::string& specText, long long M, long long N, long long K,
                        long long B, const std::string& arch) {
  const codegen::KernelConfig config =
      codegen::chooseConfigForSize(parsed(specText), M, N, K, B, smFromArch(arch));
  return py::make_tuple(config.variant, codegen::isFastVariant(config));
}

py::dict statsDict() {
  py::dict d;
  for (const auto& [name, value] : stats().snapshot()) d[py::str(name)] = value;
  d["specs_parsed"] = cachedSpecCount();
  return d;
}

}  // namespace
}  // namespace fxfuse::runtime

PYBIND11_MODULE(_C, m) {
  using namespace fxfuse::runtime;
  m.doc() = "fxfuse native library: the fusion pass, the gemm_chain op and its kernel caches";
  // Warnings from the disk cache reach Python as UserWarning through torch's warning handler.
  diskCache().setWarnHandler([](const std::string& msg) { TORCH_WARN("fxfuse: ", msg); });

  py::register_exception<fxfuse::codegen::CodegenError>(m, "CodegenError", PyExc_RuntimeError);

  m.def("run_pass", &runPass, py::arg("ir_text"), py::arg("options_json") = "{}",
        "Runs the fusion pass on the textual IR; returns the result JSON (docs/interfaces.md).");
  m.def("is_gemm_op", &isGemmOp, py::arg("target"),
        "Whether the ATen op named `target` (\"aten.mm.default\") is a matrix product: one the pass matches "
        "or one its report names unsupported_gemm_op (the pass's list, pass/gemm_anchor.h).");
  m.def(
      "generate_cuda",
      [](const std::string& spec, long long M, long long N, long long K, const std::string& arch,
         long long B) {
        const fxfuse::codegen::KernelSource src = generateFor(spec, M, N, K, B, arch);
        return py::make_tuple(src.name, src.code);
      },
      py::arg("spec"), py::arg("M"), py::arg("N"), py::arg("K"), py::arg("arch") = "sm_90",
      py::arg("B") = 1, "(kernel name, CUDA source) the op would compile for this problem.");
  m.def("kernel_variant", &kernelVariant, py::arg("spec"), py::arg("M"), py::arg("N"),
        py::arg("K"), py::arg("B") = 1, py::arg("arch") = "sm_90",
        "(variant, fast): the kernel the op would pick for this problem (aligned operands); "
        "fast=False means the op would run it unfused (cuBLAS + the epilogue kernel, or ATen ops).");
  m.def(
      "kernel_candidates_for_size",
      [](const std::string& specText, long long M, long long N, long long K, long long B, const std::string& arch) {
        std::vector<std::string> out;
        for (const fxfuse::codegen::KernelConfig& c :
             fxfuse::codegen::candidateConfigsForSize(parsed(specText), M, N, K, B, smFromArch(arch)))
          out.push_back(fxfuse::codegen::describeConfig(c));
        return out;
      },
      py::arg("spec"), py::arg("M"), py::arg("N"), py::arg("K"), py::arg("B") = 1, py::arg("arch") = "sm_90",
      "The kernels a measured autotune may choose from for an aligned problem of this size, the "
      "heuristic's first (kernel_candidates answers for real CUDA inputs).");
  m.def(
      "hopper_work_share",
      [](long long M, long long N, long long K) {
        if (M < 1 || N < 1 || K < 1) throw py::value_error("hopper_work_share: M, N and K must be positive");
        const fxfuse::codegen::HopperWorkShare w = fxfuse::codegen::hopperWorkShareForSize(M, N, K);
        py::dict d;
        d["tile"] = std::to_string(w.bm) + "x" + std::to_string(w.bn);
        d["share"] = w.share;
        d["least"] = w.least;
        d["least_silu"] = w.least_silu;
        return d;
      },
      py::arg("M"), py::arg("N"), py::arg("K"),
      "The work-share refusal's figures for a plain one-matrix problem of this size: the heuristic's "
      "Hopper tile, its share and the shares at or under which it is refused (general, SiLU alone; "
      "0 outside the rule's range).");
  m.def(
      "cublas_work_share",
      [](long long M, long long N, int num_sms) {
        if (M < 1 || N < 1 || num_sms < 1) throw py::value_error("cublas_work_share: M, N and num_sms must be positive");
        return fxfuse::codegen::cublasWorkShare(M, N, num_sms);
      },
      py::arg("M"), py::arg("N"), py::arg("num_sms") = 132,
      "The share of cuBLAS's tile slots that hold real outputs for one M x N matrix, as the work-share "
      "refusal counts it (codegen/cublas_share.h); 0 where its tiles do not fill one round.");
  m.def(
      "kernel_candidates",
      [](const std::vector<at::Tensor>& inputs, const std::string& spec) { return kernelCandidatesCuda(inputs, spec); },
      py::arg("inputs"), py::arg("spec"),
      "The kernels the op may run for these CUDA inputs (codegen::describeConfig texts), the heuristic's first.");
  m.def(
      "launch_geometry",
      [](const std::vector<at::Tensor>& inputs, const std::string& spec) {
        const LaunchGeometry g = launchGeometryCuda(inputs, spec);
        py::dict d;
        d["kernel"] = g.kernel;
        d["grid"] = py::make_tuple(g.grid[0], g.grid[1], g.grid[2]);
        d["cluster"] = py::make_tuple(g.cluster[0], g.cluster[1], g.cluster[2]);
        d["sm_count"] = g.smCount;
        d["dram_bytes_per_s"] = g.dramBytesPerS;
        return d;
      },
      py::arg("inputs"), py::arg("spec"),
      "The heuristic's kernel for these CUDA inputs and how it launches on their GPU: kernel, grid, cluster, "
      "sm_count and the peak memory bandwidth the driver states (dram_bytes_per_s; 0 if not).");
  m.def(
      "kernel_choice",
      [](const std::vector<at::Tensor>& inputs, const std::string& spec) {
        py::gil_scoped_release release;  // may read the disk cache
        return kernelChoiceCuda(inputs, spec);
      },
      py::arg("inputs"), py::arg("spec"),
      "The measured choice in force for these inputs' problem (set here or read from the disk "
      "cache), or '' (the heuristic).");
  m.def(
      "set_kernel_choice",
      [](const std::vector<at::Tensor>& inputs, const std::string& spec, const std::string& choice, bool persist) {
        py::gil_scoped_release release;  // may write (and fsync) a disk cache entry
        setKernelChoiceCuda(inputs, spec, choice, persist);
      },
      py::arg("inputs"), py::arg("spec"), py::arg("choice"), py::arg("persist") = false,
      "Makes the op run `choice` (a kernel_candidates entry, 'aten' = the unfused path, 'aten-ops' = "
      "ATen ops alone, or '' for the heuristic) "
      "for this spec and these inputs' problem; persist=True also keeps it in the disk cache.");
  m.def(
      "compile_ptx",
      [](const std::string& spec, long long M, long long N, long long K, const std::string& arch,
         long long B) { return compiledFor(spec, M, N, K, B, arch).ptx; },
      py::arg("spec"), py::arg("M"), py::arg("N"), py::arg("K"), py::arg("arch") = "sm_90",
      py::arg("B") = 1, "PTX of the kernel generate_cuda() returns (compiled with NVRTC).");
  m.def(
      "compile_cubin",
      [](const std::string& spec, long long M, long long N, long long K, const std::string& arch, long long B) {
        return py::bytes(compiledFor(spec, M, N, K, B, arch).image);
      },
      py::arg("spec"), py::arg("M"), py::arg("N"), py::arg("K"), py::arg("arch") = "sm_90", py::arg("B") = 1,
      "The cubin of the kernel generate_cuda() returns (for SASS checks with cuobjdump).");
  m.def(
      "precompile",
      [](const std::vector<at::Tensor>& inputs, const std::string& spec, bool background) {
        py::gil_scoped_release release;
        precompileCuda(inputs, spec, background);
      },
      py::arg("inputs"), py::arg("spec"), py::arg("background") = false,
      "Compiles and loads the kernel gemm_chain(inputs, spec) will launch, without launching: "
      "call it before CUDA graph capture. The inputs may be any tensors of the same shapes, "
      "strides and alignment class (the values of a spec's expect inputs are checked by the op's calls, "
      "not here: call the op once before capture too). background=True queues a kernel in neither cache for a "
      "background compile and returns at once (fxfuse.wait_for_compiles waits for it).");
  m.def("stats", &statsDict, "Counters of the op and its kernel caches.");
  m.def("reset_stats", [] { stats().reset(); });
  m.def("cache_dir", [] { return diskCache().directory(); }, "The disk kernel cache directory.");
  m.def("set_cache_dir", [](const std::string& dir) { diskCache().setDirectory(dir); },
        py::arg("path"), "Moves the disk kernel cache (overrides FXFUSE_CACHE_DIR).");
  m.def("set_nvrtc_paths", &setNvrtcSearchDirs, py::arg("lib_dirs"),
        py::arg("include_dirs") = std::vector<std::string>{},
        "Extra directories to search for libnvrtc and the CUDA headers.");
  m.def("set_background_compile", &setBackgroundCompile, py::arg("enabled"),
        "Process-wide: a kernel in neither cache compiles on a worker thread while the op answers "
        "with ATen ops (overrides FXFUSE_BACKGROUND_COMPILE).");
  m.def("background_compile", &backgroundCompileEnabled, "Whether set_background_compile is on.");
  m.def(
      "wait_for_compiles",
      [](std::optional<double> timeout_s) {
        py::gil_scoped_release release;
        // None or beyond a day (inf included): no limit
        const bool bounded = timeout_s && *timeout_s < 86400.0;
        return waitForBackgroundCompiles(bounded ? static_cast<long long>(std::max(0.0, *timeout_s) * 1000.0) : -1);
      },
      py::arg("timeout_s") = std::nullopt,
      "Blocks until no background compile is queued or running (True), or timeout_s has passed "
      "(False). The kernels load at their next call.");
  m.def(
      "finish_background_compiles",
      [] {
        py::gil_scoped_release release;
        backgroundCompileQueue().finish();
      },
      "Drops the queued background compiles and waits for the running ones (at interpreter exit).");
  m.def("nvrtc_available", &nvrtcAvailable);
  m.def("nvrtc_path", &nvrtcLibraryPath);
  m.def("nvrtc_worker_path", &fxfuse::codegen::nvrtcWorkerPath,
        "The fxfuse-nvrtc-worker executable compiles run in; \"\" when none was found (they then run in "
        "this process, where a compiler crash would end it).");
  m.def("cuda_driver_available", &cudaDriverAvailable);
  m.def("library_version", [] { return std::string(libraryVersion()); },
        "Changes whenever any source compiled into the library changes.");
}
