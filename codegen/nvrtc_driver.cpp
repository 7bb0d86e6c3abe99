// compileNvrtc: one generated source → cubin (+ PTX) through NVRTC. Every compile option
// lives in nvrtcOptions() below so cache keys and behaviour have a single source of truth.
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <utility>

#include "codegen/codegen.h"
#include "codegen/env_flag.h"
#include "codegen/nvrtc_library.h"
#include "codegen/nvrtc_worker.h"

namespace fxfuse::codegen {
namespace {

// Why each option is here:
//  - a real sm_XX target, so NVRTC emits a cubin (nvrtcGetCUBIN) and no JIT happens at load;
//  - C++17 like the host code;
//  - no --use_fast_math: the chain must match eager PyTorch (IEEE div/sqrt, no FTZ);
//  - ptxas -v: register and spill statistics land in the log, where tests read them;
//  - the CUDA include dir for cuda_fp16.h / cuda_bf16.h / cuda_fp8.h;
//  - with bypass_cache (NVRTC 12.9+ only; older ones reject the option): --no-cache, so that the
//    compile runs ptxas and its log holds the statistics (codegen.h compileNvrtc).
std::vector<std::string> nvrtcOptions(const std::string& arch, const std::string& includeDir, bool bypass_cache) {
  std::vector<std::string> opts = {
      "--gpu-architecture=" + arch,
      "-std=c++17",
      "--ptxas-options=-v",
      "-DNDEBUG",
  };
  if (!includeDir.empty()) opts.push_back("--include-path=" + includeDir);
  if (bypass_cache) opts.push_back("--no-cache");
  return opts;
}

std::pair<int, int> versionOf(const NvrtcApi& api) {
  int major = 0, minor = 0;
  api.version(&major, &minor);
  return {major, minor};
}

// NVRTC's driver-cache lookup exists from CUDA 12.9 (its --no-cache option with it).
bool hasDriverCache(const NvrtcApi& api) { return versionOf(api) >= std::pair<int, int>{12, 9}; }

// FXFUSE_COMPILE_IN_PROCESS=1: compile in this process, as before the worker existed (a compiler
// crash then ends the process; for debugging NVRTC itself, or where spawning is not allowed).
bool compileInProcess() { return envFlag("FXFUSE_COMPILE_IN_PROCESS"); }

// FXFUSE_COMPILE_TIMEOUT_S: how long one worker may compile before it is killed (default 300 s: a kernel
// takes 0.4-1.5 s, and up to four compile at once).
double compileTimeoutSeconds() {
  const char* v = std::getenv("FXFUSE_COMPILE_TIMEOUT_S");
  if (!v || !*v) return 300;  // set but empty is unset
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s > 0))
    throw CodegenError(fmt::format("FXFUSE_COMPILE_TIMEOUT_S={} is not a positive number of seconds", v));
  return s;
}

std::string numbered(const std::string& code) {
  std::ostringstream out;
  std::istringstream in(code);
  int n = 0;
  for (std::string line; std::getline(in, line);) out << fmt::format("{:5} | {}\n", ++n, line);
  return out.str();
}

const NvrtcApi& requireNvrtc(const NvrtcEnv& env) {
  std::string why;
  const NvrtcApi* api = loadNvrtc(env, &why);
  if (!api) throw CodegenError(why);
  return *api;
}

// Owns one nvrtcProgram; destroyed on every path out of compileNvrtc.
class Program {
 public:
  Program(const NvrtcApi& api, const std::string& code, const std::string& name) : api_(api) {
    check(api_.createProgram(&prog_, code.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr), "create");
  }
  ~Program() {
    if (prog_) api_.destroyProgram(&prog_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Returns NVRTC's result code (compile errors are reported by the caller with the log).
  int compile(const std::vector<std::string>& opts) {
    std::vector<const char*> argv;
    for (const std::string& o : opts) argv.push_back(o.c_str());
    return api_.compileProgram(prog_, static_cast<int>(argv.size()), argv.data());
  }

  std::string log() { return read(api_.getProgramLogSize, api_.getProgramLog, "log", true); }
  std::string cubin() { return read(api_.getCUBINSize, api_.getCUBIN, "cubin", false); }
  std::string ptx() { return read(api_.getPTXSize, api_.getPTX, "ptx", true); }

 private:
  using SizeFn = int (*)(void*, size_t*);
  using ReadFn = int (*)(void*, char*);

  std::string read(SizeFn size, ReadFn get, const char* what, bool text) {
    size_t n = 0;
    check(size(prog_, &n), what);
    std::string out(n, '\0');
    if (n) check(get(prog_, &out[0]), what);
    if (text && !out.empty() && out.back() == '\0') out.pop_back();  // sizes count the terminator
    return out;
  }

  void check(int result, const char* what) {
    if (result != 0)
      throw std::runtime_error(fmt::format("fxfuse internal error: nvrtc {} failed: {} (please report a bug)", what,
                                           api_.getErrorString(result)));
  }

  const NvrtcApi& api_;
  void* prog_ = nullptr;
};

}  // namespace

WorkerAnswer compileInThisProcess(const NvrtcApi& api, const WorkerRequest& request) {
  Program prog(api, request.code, request.name);
  WorkerAnswer out;
  out.result = prog.compile(request.options);
  out.result_name = api.getErrorString(out.result);
  out.log = prog.log();
  if (out.result != 0) return out;
  out.cubin = prog.cubin();
  if (request.want_ptx) out.ptx = prog.ptx();
  return out;
}

Cubin compileNvrtc(const KernelSource& src, const std::string& arch, const NvrtcEnv& env, bool want_ptx,
                   bool want_ptxas_statistics) {
  const NvrtcApi& api = requireNvrtc(env);
  if (api.include_dir.empty())
    throw CodegenError("CUDA headers (cuda_fp16.h, cuda_bf16.h) not found: set CUDA_HOME, or pip install "
                       "nvidia-cuda-runtime");
  WorkerRequest request;
  request.library = api.path;
  request.name = src.name;
  request.code = src.code;
  request.options = nvrtcOptions(arch, api.include_dir, want_ptxas_statistics && hasDriverCache(api));
  request.want_ptx = want_ptx;
  const std::string worker = compileInProcess() ? "" : nvrtcWorkerPath();
  WorkerAnswer answer = worker.empty() ? compileInThisProcess(api, request)
                                       : compileInWorker(worker, request, compileTimeoutSeconds());
  if (!answer.failure.empty())
    throw CompilerCrashed(fmt::format("the NVRTC worker could not compile {}: {} ({})", src.name, answer.failure, worker));
  if (answer.result != 0)
    throw CompileError(fmt::format("NVRTC failed to compile {} for {} ({}):\n{}\n--- source ---\n{}", src.name,
                                   arch, answer.result_name, answer.log, numbered(src.code)),
                       answer.log, numbered(src.code));
  Cubin out;
  out.log = std::move(answer.log);
  out.image = std::move(answer.cubin);
  out.ptx = std::move(answer.ptx);
  out.in_process = worker.empty();
  return out;
}

std::string nvrtcVersion(const NvrtcEnv& env) {
  const auto [major, minor] = versionOf(requireNvrtc(env));
  return fmt::format("{}.{}", major, minor);
}

std::string findNvrtc(const NvrtcEnv& env) {
  const NvrtcApi* api = loadNvrtc(env, nullptr);
  return api ? api->path : "";
}

}  // namespace fxfuse::codegen
