#include "runtime/kernel_loader.h"

#include <algorithm>

#include <atomic>
#include <mutex>
#include <optional>

#include "runtime/compile_queue.h"
#include "runtime/kernel_cache.h"
#include "runtime/runtime_stats.h"

namespace fxfuse::runtime {
namespace {

std::mutex& envMutex() {
  static std::mutex m;
  return m;
}
codegen::NvrtcEnv& envStorage() {
  static codegen::NvrtcEnv env;
  return env;
}

std::string memoryKey(const KernelRequest& r) {
  // describeConfig names every field that changes the kernel (ping-pong included)
  return codegen::describeConfig(r.config) + "|" + r.arch + "|dev" + std::to_string(r.device);
}

void check(const CudaDriver& d, cu::Result r, const char* what) {
  if (r != cu::kSuccess) throw std::runtime_error("fxfuse: " + d.describe(what, r));
}

// The disk-cache key of `src` (its code, NVRTC's version, the arch).
std::string diskKey(const codegen::KernelSource& src, const std::string& arch, const codegen::NvrtcEnv& env) {
  try {
    return cacheKey(src.code, codegen::nvrtcVersion(env), arch);
  } catch (const codegen::CodegenError& e) {
    throw KernelUnavailable(std::string("NVRTC is unavailable: ") + e.what());
  }
}

// A valid disk entry under `key` into *image (counted as a hit, or as a miss / rebuild).
bool cachedCubin(const std::string& key, std::string* image) {
  const DiskCache::Lookup found = diskCache().load(key, image);
  if (found == DiskCache::Lookup::Hit) {
    stats().diskHits++;
    return true;
  }
  (found == DiskCache::Lookup::Corrupt ? stats().diskRebuilds : stats().diskMisses)++;
  return false;
}

// `src` compiled by NVRTC and stored on disk under `key`.
std::string compiledCubin(const codegen::KernelSource& src, const std::string& arch, const codegen::NvrtcEnv& env,
                          const std::string& key) {
  codegen::Cubin compiled;
  try {
    compiled = codegen::compileNvrtc(src, arch, env);
  } catch (const codegen::CompileError& e) {
    // A generator bug: the op still answers correctly (ATen), the warning carries the log.
    throw KernelUnavailable(std::string("NVRTC rejected the generated kernel ") + src.name +
                            " (please report a bug): " + e.what() + "\n" + e.log);
  } catch (const codegen::CompilerCrashed& e) {
    // NVRTC itself failed in its worker process: this kernel only; the op answers with ATen.
    stats().compilerCrashes++;
    throw KernelUnavailable(std::string("the compiler failed on the generated kernel") +
                                (e.transient ? " (it will be tried again later): " : " (please report a bug): ") + e.what(),
                            e.transient);
  } catch (const codegen::CodegenError& e) {
    throw KernelUnavailable(std::string("NVRTC is unavailable: ") + e.what());
  }
  stats().kernelsCompiled++;
  if (compiled.in_process) stats().compilesInProcess++;
  (diskCache().store(key, compiled.image) ? stats().diskWrites : stats().diskWriteFailures)++;
  return std::move(compiled.image);
}

// The cubin for `src`: from disk when a valid entry exists, else compiled and stored.
std::string cubinFor(const codegen::KernelSource& src, const std::string& arch) {
  const codegen::NvrtcEnv env = nvrtcEnv();
  const std::string key = diskKey(src, arch, env);
  std::string image;
  return cachedCubin(key, &image) ? image : compiledCubin(src, arch, env, key);
}

// Unloads k's module (its context current), where the driver offers it: for a kernel nobody
// will launch. Errors are ignored: the module is then merely kept.
void unload(const CudaDriver& d, const CudaKernel& k) {
  if (k.module && d.cuModuleUnload) d.cuModuleUnload(k.module);
}

// Fills k, whose module is loaded, with its function and attributes, and takes src.
void readFunction(const CudaDriver& d, codegen::KernelSource src, const KernelRequest& r, CudaKernel& k) {
  check(d, d.cuModuleGetFunction(&k.function, k.module, src.name.c_str()), "cuModuleGetFunction");
  // The launcher checks it against the sm90 template's setmaxnreg budget (tma_desc.h).
  check(d, d.cuFuncGetAttribute(&k.numRegs, cu::kFuncAttrNumRegs, k.function), "cuFuncGetAttribute(NUM_REGS)");
  // Above 48 KB of dynamic shared memory a kernel must opt in, once per function.
  if (src.smem_bytes > 48 * 1024) {
    if (static_cast<long long>(src.smem_bytes) > r.maxSmemOptin)
      throw KernelUnavailable("kernel " + src.name + " needs " + std::to_string(src.smem_bytes) +
                              " bytes of shared memory; the device allows " + std::to_string(r.maxSmemOptin));
    check(d, d.cuFuncSetAttribute(k.function, cu::kFuncAttrMaxDynamicSharedSizeBytes, static_cast<int>(src.smem_bytes)),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  }
  src.code.clear();
  src.code.shrink_to_fit();
  k.source = std::move(src);
  k.device = r.device;
}

std::shared_ptr<CudaKernel> load(const CudaDriver& d, codegen::KernelSource src, const std::string& image,
                                 const KernelRequest& r) {
  auto k = std::make_shared<CudaKernel>();
  check(d, d.cuModuleLoadData(&k->module, image.data()), "cuModuleLoadData");
  try {
    readFunction(d, std::move(src), r, *k);
  } catch (...) {
    unload(d, *k);  // a module without a usable function (too much shared memory, a driver error)
    throw;
  }
  return k;
}

}  // namespace

// One kernel compiling on backgroundCompileQueue(): the worker compiles it and loads it into the
// requester's CUDA context, fills `kernel` (or, where the load failed there, only `image`; or
// `failure`), then publishes `state` in finished(); requesting threads read those only after seeing
// Done / Failed, or after abandon() failed (the worker had finished). A loaded kernel is taken
// without a driver call, so a CUDA graph may capture its first launch.
struct BackgroundCompile {
  enum State { Running, Done, Failed };
  std::atomic<int> state{Running};
  codegen::KernelSource source;
  std::string image;
  std::shared_ptr<CudaKernel> kernel;
  std::optional<KernelUnavailable> failure;  // what a request throws once the state is Failed

  // A request that does not wait (precompile, the switch off) drops a Running job and compiles
  // itself; the worker then skips the compile and load it has not started, and unloads a module it
  // loaded, which nobody would launch. Whichever
  // side comes second under `handoff` acts: abandon() fails once the worker has finished (the
  // request then takes its result, `state` published), and the worker's finished() publishes
  // `state` unless the job was abandoned, which it returns.
  bool abandon() {
    std::lock_guard<std::mutex> lock(handoff);
    abandoned = !finishedRunning;
    return abandoned;
  }
  bool isAbandoned() {
    std::lock_guard<std::mutex> lock(handoff);
    return abandoned;
  }
  bool finished(State result) {
    std::lock_guard<std::mutex> lock(handoff);
    finishedRunning = true;
    if (!abandoned) state.store(result, std::memory_order_release);
    return abandoned;
  }

 private:
  std::mutex handoff;
  bool finishedRunning = false, abandoned = false;
};

namespace {
// Queues the compile of `src` (not on disk under `key`) and its load into the calling thread's
// CUDA context; returns its job, or null when no worker thread could be started.
std::shared_ptr<BackgroundCompile> startBackgroundCompile(const CudaDriver& d, const codegen::KernelSource& src,
                                                          const KernelRequest& r, const codegen::NvrtcEnv& env,
                                                          const std::string& key) {
  cu::Context context = nullptr;
  if (d.cuCtxGetCurrent(&context) != cu::kSuccess) context = nullptr;
  auto job = std::make_shared<BackgroundCompile>();
  job->source = src;
  KernelRequest where;  // what load() reads (not mayCompile: it holds the caller's stream)
  where.device = r.device;
  where.maxSmemOptin = r.maxSmemOptin;
  const CudaDriver* driver = &d;  // process-wide (cuda_driver.h)
  const bool queued = backgroundCompileQueue().submit([job, driver, context, where, arch = r.arch, env, key] {
    BackgroundCompile::State state = BackgroundCompile::Done;
    try {
      // a job dropped before it started or before its load skips the work (its requester compiles)
      if (!job->isAbandoned()) job->image = compiledCubin(job->source, arch, env, key);
      try {
        if (!job->isAbandoned() && context && driver->cuCtxSetCurrent(context) == cu::kSuccess)
          job->kernel = load(*driver, job->source, job->image, where);
      } catch (const std::exception&) {
        // left to the requesting thread, which loads `image` as it loads a disk hit
      }
    } catch (const KernelUnavailable& e) {
      job->failure = e;
      state = BackgroundCompile::Failed;
    } catch (const std::exception& e) {
      job->failure.emplace(e.what());
      state = BackgroundCompile::Failed;
    } catch (...) {
      job->failure.emplace("the background compile of " + job->source.name + " failed");
      state = BackgroundCompile::Failed;
    }
    if (job->finished(state) && job->kernel) unload(*driver, *job->kernel);  // abandoned: nobody will launch it
  });
  if (!queued) return nullptr;
  stats().backgroundCompiles++;
  return job;
}

KernelCompiling compiling(const std::string& key) {
  return KernelCompiling("the kernel for this spec and shape class (" + key + ") is compiling in the background");
}

KernelNotReady notReady(const std::string& key) {
  return KernelNotReady("the kernel for this spec and shape class (" + key +
                        ") is not compiled yet, and compiling is not allowed during CUDA graph capture. Run the "
                        "op once before capturing (warm-up), or call fxfuse._C.precompile(inputs, spec); with "
                        "background compiles, fxfuse.wait_for_compiles() after the warm-up.");
}
}  // namespace

bool waitForBackgroundCompiles(long long timeout_ms) { return backgroundCompileQueue().waitIdle(timeout_ms); }

namespace {
// A background compile's failure, thrown; getKernel records it in spec.unavailable, which decides from
// then on (the job is dropped, so a transient failure's retry compiles again).
[[noreturn]] void failedInBackground(const CachedSpec& spec, decltype(spec.compiling)::iterator job) {
  const KernelUnavailable failure = *job->second->failure;
  spec.compiling.erase(job);
  throw failure;
}

// getKernel past its memory hits, under spec.kernelsMutex.
std::shared_ptr<CudaKernel> getKernelLocked(const CudaDriver& d, const CachedSpec& spec, const KernelRequest& r,
                                            const std::string& key) {
  // mayCompile costs a driver call (stream capture status): asked once per request, when needed.
  std::optional<bool> may_compile;
  const auto mayCompile = [&] {
    if (!may_compile) may_compile = !r.mayCompile || r.mayCompile();
    return *may_compile;
  };
  codegen::KernelSource src;
  std::string image;
  if (auto job = spec.compiling.find(key); job != spec.compiling.end()) {
    BackgroundCompile& c = *job->second;
    switch (c.state.load(std::memory_order_acquire)) {
      case BackgroundCompile::Failed:
        failedInBackground(spec, job);
      case BackgroundCompile::Running:
        if (r.background) throw compiling(key);
        if (!mayCompile()) throw notReady(key);  // the job stays: loaded after the capture
        if (c.abandon()) {  // a request that does not wait (precompile, the switch off) compiles below
          spec.compiling.erase(job);
          break;
        }
        // the worker finished since the state was read: its result, as when Failed or Done
        if (c.state.load(std::memory_order_acquire) == BackgroundCompile::Failed) failedInBackground(spec, job);
        [[fallthrough]];
      default:  // Done
        if (c.kernel) {  // loaded by the worker: no driver call, so a capture may take it
          std::shared_ptr<CudaKernel> kernel = std::move(c.kernel);
          spec.compiling.erase(job);
          spec.kernels.emplace(key, kernel);
          return kernel;
        }
        if (!mayCompile()) throw notReady(key);  // the job stays: its load waits until the capture ends
        src = std::move(c.source);  // built, not loaded by the worker: load it here
        image = std::move(c.image);
        spec.compiling.erase(job);
    }
  }
  if (image.empty()) {
    if (!mayCompile()) {
      // A transient failure whose backoff has passed is tried again by compiling, which a capture does not
      // allow: the calls since the failure ran ATen, so this one does too. KernelNotReady here had made the
      // fused path raise inside a capture its warm-up had prepared (review, session 53).
      if (const UnavailableKernels::Failure* earlier = spec.unavailable.recorded(key))
        throw KernelRetryAfterCapture(earlier->why);
      throw notReady(key);
    }
    try {
      src = codegen::generate(spec.spec, r.config);
    } catch (const codegen::CodegenError& e) {
      throw KernelUnavailable(std::string("codegen cannot emit this spec: ") + e.what());
    }
    if (r.background) {
      const codegen::NvrtcEnv env = nvrtcEnv();
      const std::string disk = diskKey(src, r.arch, env);
      if (!cachedCubin(disk, &image)) {
        if (auto job = startBackgroundCompile(d, src, r, env, disk)) {
          spec.compiling.emplace(key, std::move(job));
          throw compiling(key);
        }
        image = compiledCubin(src, r.arch, env, disk);  // no worker thread: compile here
      }
    } else {
      image = cubinFor(src, r.arch);
    }
  }
  std::shared_ptr<CudaKernel> kernel;
  try {
    kernel = load(d, src, image, r);
  } catch (const KernelUnavailable&) {
    throw;  // the function is unusable here (its shared memory): a rebuild would build the same
  } catch (const std::runtime_error&) {
    // A cubin that passed the checksum but does not load (e.g. written by a different driver
    // stack into a shared cache): rebuild it once from source before giving up.
    stats().diskRebuilds++;
    const codegen::NvrtcEnv env = nvrtcEnv();
    image = compiledCubin(src, r.arch, env, diskKey(src, r.arch, env));
    kernel = load(d, src, image, r);
  }
  spec.kernels.emplace(key, kernel);
  return kernel;
}
}  // namespace

std::shared_ptr<CudaKernel> getKernel(const CudaDriver& d, const CachedSpec& spec,
                                      const KernelRequest& r) {
  const std::string key = memoryKey(r);
  // One compile at a time per spec: a second thread wanting the same kernel waits for it
  // rather than compiling it again.
  std::lock_guard<std::mutex> lock(spec.kernelsMutex);
  auto it = spec.kernels.find(key);
  if (it != spec.kernels.end()) {
    stats().memoryHits++;
    return it->second;
  }
  if (const UnavailableKernels::Failure* failed = spec.unavailable.find(key, UnavailableKernels::Clock::now()))
    throw KernelUnavailable(failed->why, failed->transient());
  try {
    return getKernelLocked(d, spec, r, key);
  } catch (const KernelRetryAfterCapture&) {
    throw;  // the retry is still due: not another failure
  } catch (const KernelUnavailable& e) {
    spec.unavailable.record(key, e.what(), e.transient, UnavailableKernels::Clock::now());
    throw;
  }
}

int operandInput(const spec::ChainSpec& spec, int which) {
  const int id = spec.values[spec.mmIndex()].operands[which];
  if (spec.values[id].kind == spec::ValueKind::Input) return id;
  const spec::Space space = which == 0 ? spec::Space::A : spec::Space::B;
  const std::string need = which == 0 ? "mk" : "kn";
  for (size_t i = 0; i < spec.values.size(); ++i) {
    const spec::Value& v = spec.values[i];
    std::string letters = dimLetters(v.dims);
    // a packed int4 weight is the operand's input too: k packed ('p', GPTQ's words and the u8 bytes) or n packed
    // ('q', AWQ's words: the gemv's loader reads them, FX_B_NWORDS); a 'q' input without k (AWQ's and GPTQ's zero
    // points, `[g,q]`) is not
    std::replace(letters.begin(), letters.end(), 'p', 'k');
    std::replace(letters.begin(), letters.end(), 'q', 'n');
    if (v.kind == spec::ValueKind::Input && v.space == space &&
        letters.find(need[0]) != std::string::npos && letters.find(need[1]) != std::string::npos)
      return static_cast<int>(i);
  }
  return -1;
}

namespace {

// The input value's innermost named dim is along k (k, its group, or k packed).
bool innermostIsK(const spec::ChainSpec& spec, int id) {
  const std::string letters = dimLetters(spec.values[id].dims);
  for (auto it = letters.rbegin(); it != letters.rend(); ++it)
    if (*it != '1') return spec::isKLetter(*it);
  return false;
}

}  // namespace

bool operandKMajor(const spec::ChainSpec& spec, int which) {
  const int id = operandInput(spec, which);
  return id >= 0 && innermostIsK(spec, id);
}

void setLayoutFromSpec(const spec::ChainSpec& spec, codegen::ProblemShape* shape) {
  const int a = operandInput(spec, 0), b = operandInput(spec, 1);
  if (a >= 0) shape->a_kmajor = innermostIsK(spec, a);
  if (b >= 0) shape->b_kmajor = innermostIsK(spec, b);
}

void setNvrtcSearchDirs(std::vector<std::string> libDirs, std::vector<std::string> includeDirs) {
  std::lock_guard<std::mutex> lock(envMutex());
  envStorage().extra_lib_dirs = std::move(libDirs);
  envStorage().extra_include_dirs = std::move(includeDirs);
}

codegen::NvrtcEnv nvrtcEnv() {
  std::lock_guard<std::mutex> lock(envMutex());
  return envStorage();
}

std::string nvrtcLibraryPath() { return codegen::findNvrtc(nvrtcEnv()); }

}  // namespace fxfuse::runtime
