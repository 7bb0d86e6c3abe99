// getKernel's background compiles (runtime/kernel_loader.h) without a GPU: NVRTC compiles for
// real, a fake driver stands in for libcuda (it counts module loads and unloads).
#include "runtime/kernel_loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "runtime/compile_queue.h"
#include "runtime/kernel_cache.h"
#include "runtime/runtime_stats.h"
#include "runtime/spec_cache.h"

namespace fxfuse::runtime {
namespace {

using namespace std::chrono_literals;

std::atomic<int> moduleLoads{0}, moduleUnloads{0};
// The worker's cuCtxSetCurrent (before its load) waits while holdWorkers; its cuModuleLoadData
// signals workerLoading and waits while holdWorkerLoads (the tests' thread never waits).
std::atomic<bool> holdWorkers{false}, holdWorkerLoads{false}, workerLoading{false};
const std::thread::id testThread = std::this_thread::get_id();

cu::Result ctxGetCurrent(cu::Context* c) {
  *c = reinterpret_cast<cu::Context>(std::uintptr_t{0x10});
  return cu::kSuccess;
}
cu::Result ctxSetCurrent(cu::Context) {
  while (holdWorkers) std::this_thread::sleep_for(1ms);
  return cu::kSuccess;
}
cu::Result moduleLoadData(cu::Module* m, const void*) {
  if (std::this_thread::get_id() != testThread) {
    workerLoading = true;
    while (holdWorkerLoads) std::this_thread::sleep_for(1ms);
  }
  *m = reinterpret_cast<cu::Module>(static_cast<std::uintptr_t>(0x1000 + ++moduleLoads));
  return cu::kSuccess;
}
cu::Result moduleUnload(cu::Module) {
  ++moduleUnloads;
  return cu::kSuccess;
}
cu::Result moduleGetFunction(cu::Function* f, cu::Module m, const char*) {
  *f = reinterpret_cast<cu::Function>(m);
  return cu::kSuccess;
}
cu::Result funcGetAttribute(int* v, int, cu::Function) {
  *v = 128;
  return cu::kSuccess;
}
cu::Result funcSetAttribute(cu::Function, int, int) { return cu::kSuccess; }

CudaDriver fakeDriver() {
  CudaDriver d{};
  d.cuCtxGetCurrent = ctxGetCurrent;
  d.cuCtxSetCurrent = ctxSetCurrent;
  d.cuModuleLoadData = moduleLoadData;
  d.cuModuleUnload = moduleUnload;
  d.cuModuleGetFunction = moduleGetFunction;
  d.cuFuncGetAttribute = funcGetAttribute;
  d.cuFuncSetAttribute = funcSetAttribute;
  return d;
}

// A spec text no other call of this function returns (the spec cache keeps a spec's kernels in
// memory for the process: a repeated test would find them there).
std::string specText() {
  static std::atomic<int> which{0};
  return "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
         "%3 = const " + std::to_string(++which) + ".5 : f32\n%4 = mul %2 %3 : f32\n%5 = convert %4 : bf16\noutput %5\n";
}

KernelRequest request(bool background) {
  KernelRequest r;
  r.config = codegen::KernelConfig{"sm80_mma", 64, 128, 32, 2, 128};
  r.arch = "sm_80";
  r.maxSmemOptin = 227 * 1024;
  r.background = background;
  return r;
}

class BackgroundCompileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* off = std::getenv("FXFUSE_NO_NVRTC");
    if (off && std::string(off) == "1") GTEST_SKIP() << "FXFUSE_NO_NVRTC=1";
    ASSERT_FALSE(nvrtcLibraryPath().empty()) << "libnvrtc not found; set FXFUSE_NVRTC_PATH or FXFUSE_NO_NVRTC=1";
    char dir[] = "/tmp/fxfuse-loader-test-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    cacheDir = dir;
    previousCacheDir = diskCache().directory();
    diskCache().setDirectory(cacheDir);  // empty: every kernel is a miss
    moduleLoads = moduleUnloads = 0;
    workerLoading = false;
  }
  void TearDown() override {
    holdWorkers = holdWorkerLoads = false;
    waitForBackgroundCompiles(60000);  // before the environment changes under a compile thread
    ::unsetenv("FXFUSE_NVRTC_WORKER");
    ::unsetenv("FXFUSE_COMPILE_IN_PROCESS");
    if (cacheDir.empty()) return;
    diskCache().setDirectory(previousCacheDir);
    std::error_code ignored;
    std::filesystem::remove_all(cacheDir, ignored);
  }
  std::string cacheDir, previousCacheDir;
  const CudaDriver driver = fakeDriver();
};

TEST_F(BackgroundCompileTest, AnswersCompilingUntilTheWorkerLoadedTheKernel) {
  const auto spec = getCachedSpec(specText());
  holdWorkers = true;
  EXPECT_THROW(getKernel(driver, *spec, request(true)), KernelCompiling);
  EXPECT_THROW(getKernel(driver, *spec, request(true)), KernelCompiling);  // still compiling: not queued again
  holdWorkers = false;
  ASSERT_TRUE(waitForBackgroundCompiles(60000));
  EXPECT_EQ(moduleLoads.load(), 1);  // loaded by the worker
  const std::shared_ptr<CudaKernel> k = getKernel(driver, *spec, request(true));
  ASSERT_NE(k, nullptr);
  EXPECT_NE(k->function, nullptr);
  EXPECT_EQ(moduleLoads.load(), 1);  // the request took the worker's kernel, no load of its own
  EXPECT_EQ(getKernel(driver, *spec, request(false)), k);  // then a memory hit
  EXPECT_EQ(moduleUnloads.load(), 0);
}

// precompile (a request that does not wait) while the same kernel compiles in the background:
// it compiles and loads its own. A worker dropped before its load skips it; one dropped during its
// load unloads the module, which nobody will launch.
TEST_F(BackgroundCompileTest, ARequestThatDoesNotWaitLeavesTheWorkerNoModule) {
  const auto spec = getCachedSpec(specText());
  holdWorkers = true;  // were the job not dropped during its compile, its worker would wait before the load
  EXPECT_THROW(getKernel(driver, *spec, request(true)), KernelCompiling);
  const std::shared_ptr<CudaKernel> own = getKernel(driver, *spec, request(false));  // drops it at once
  ASSERT_NE(own, nullptr);
  EXPECT_EQ(moduleLoads.load(), 1);
  holdWorkers = false;
  ASSERT_TRUE(waitForBackgroundCompiles(60000));
  EXPECT_EQ(moduleLoads.load(), 1);  // the worker saw the job dropped: no load
  EXPECT_EQ(getKernel(driver, *spec, request(true)), own);  // the job is gone: the request's kernel stays
  EXPECT_EQ(moduleUnloads.load(), 0);
}

// A kernel the device cannot run (more shared memory than it allows) is refused once: its module
// unloaded, no rebuild from source (the same source builds the same cubin), and no new attempt at
// the next request (a compile that failed or crashed is remembered the same way: CachedSpec::unavailable).
TEST_F(BackgroundCompileTest, AKernelTooLargeForTheDeviceIsNotRebuilt) {
  const auto spec = getCachedSpec(specText());
  KernelRequest r = request(false);
  r.config = codegen::KernelConfig{"gemv", 8, 128, 64, 4, 128};  // a 69 KB pipeline
  r.maxSmemOptin = 48 * 1024 + 1;  // above 48 KB the kernel must fit this
  const long long compiled = stats().kernelsCompiled.load(), rebuilds = stats().diskRebuilds.load();
  EXPECT_THROW(getKernel(driver, *spec, r), KernelUnavailable);
  EXPECT_EQ(stats().kernelsCompiled - compiled, 1);
  EXPECT_EQ(stats().diskRebuilds - rebuilds, 0);
  EXPECT_EQ(moduleLoads.load(), 1);
  EXPECT_EQ(moduleUnloads.load(), 1);
  // asked again (the op's next call): the same refusal, without a compile, a disk read or a load
  const long long hits = stats().diskHits.load();
  try {
    getKernel(driver, *spec, r);
    ADD_FAILURE() << "no refusal the second time";
  } catch (const KernelUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("bytes of shared memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(stats().kernelsCompiled - compiled, 1);
  EXPECT_EQ(stats().diskHits - hits, 0);
  EXPECT_EQ(moduleLoads.load(), 1);
}

// A compiler worker killed from outside (here: one that kills itself with SIGKILL, as the OOM killer
// would) says nothing about the source: the kernel is refused without a new attempt until its backoff
// (10 s: unavailable_kernels.h) has passed, then compiled, in the foreground and in the background.
TEST_F(BackgroundCompileTest, AKernelWhoseCompilerWasKilledFromOutsideIsTriedAgainLater) {
  // the script in the build folder, not under /tmp (which may be mounted noexec)
  const std::string worker = std::filesystem::current_path() / ("killed-worker-" + std::to_string(::getpid()) + ".sh");
  const std::string runs = cacheDir + "/runs";
  {
    std::ofstream script(worker);
    script << "#!/bin/sh\necho run >> '" << runs << "'\nkill -KILL $$\n";
  }
  std::filesystem::permissions(worker, std::filesystem::perms::owner_all);
  const auto countRuns = [&] {
    std::ifstream in(runs);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  };
  ::setenv("FXFUSE_NVRTC_WORKER", worker.c_str(), 1);
  const auto foreground = getCachedSpec(specText()), background = getCachedSpec(specText());
  try {
    getKernel(driver, *foreground, request(false));
    ADD_FAILURE() << "compiled through a worker that kills itself";
  } catch (const KernelUnavailable& e) {
    EXPECT_TRUE(e.transient);
    EXPECT_NE(std::string(e.what()).find("tried again later"), std::string::npos) << e.what();
  }
  EXPECT_THROW(getKernel(driver, *background, request(true)), KernelCompiling);
  ASSERT_TRUE(waitForBackgroundCompiles(60000));
  EXPECT_THROW(getKernel(driver, *background, request(true)), KernelUnavailable);  // the job's failure
  EXPECT_EQ(countRuns(), 2);
  EXPECT_THROW(getKernel(driver, *foreground, request(false)), KernelUnavailable);  // within the backoff:
  EXPECT_THROW(getKernel(driver, *background, request(true)), KernelUnavailable);   // no new attempt
  EXPECT_EQ(countRuns(), 2);
  ::unsetenv("FXFUSE_NVRTC_WORKER");  // the real worker again
  std::this_thread::sleep_for(UnavailableKernels::kFirstRetry + 100ms);
  // past the backoff but inside a CUDA graph capture (no compiling): ATen again, as since the failure, not
  // KernelNotReady, which the fused path raises (review, session 53)
  KernelRequest capturing = request(false);
  capturing.mayCompile = [] { return false; };
  try {
    getKernel(driver, *foreground, capturing);
    ADD_FAILURE() << "a kernel inside a capture";
  } catch (const KernelUnavailable& e) {
    EXPECT_TRUE(e.transient);
  }
  EXPECT_EQ(countRuns(), 2);
  EXPECT_NE(getKernel(driver, *foreground, request(false)), nullptr);
  EXPECT_THROW(getKernel(driver, *background, request(true)), KernelCompiling);
  ASSERT_TRUE(waitForBackgroundCompiles(60000));
  EXPECT_NE(getKernel(driver, *background, request(true)), nullptr);
  EXPECT_EQ(countRuns(), 2);
  std::filesystem::remove(worker);
}

// compiles_in_process counts the compiles that ran in this process instead of the NVRTC worker.
TEST_F(BackgroundCompileTest, ACompileInThisProcessIsCounted) {
  const long long before = stats().compilesInProcess.load(), compiled = stats().kernelsCompiled.load();
  ASSERT_NE(getKernel(driver, *getCachedSpec(specText()), request(false)), nullptr);  // in the worker
  EXPECT_EQ(stats().compilesInProcess - before, 0);
  ::setenv("FXFUSE_COMPILE_IN_PROCESS", "1", 1);
  ASSERT_NE(getKernel(driver, *getCachedSpec(specText()), request(false)), nullptr);
  ::unsetenv("FXFUSE_COMPILE_IN_PROCESS");
  EXPECT_EQ(stats().compilesInProcess - before, 1);
  EXPECT_EQ(stats().kernelsCompiled - compiled, 2);
}

// A request asks mayCompile (a driver call) at most once, also where it drops a running job.
TEST_F(BackgroundCompileTest, ARequestAsksMayCompileOnce) {
  const auto spec = getCachedSpec(specText());
  holdWorkers = true;
  EXPECT_THROW(getKernel(driver, *spec, request(true)), KernelCompiling);
  int asked = 0;
  KernelRequest r = request(false);
  r.mayCompile = [&asked] {
    ++asked;
    return true;
  };
  ASSERT_NE(getKernel(driver, *spec, r), nullptr);  // drops the job, compiles its own
  EXPECT_EQ(asked, 1);
}

TEST_F(BackgroundCompileTest, AJobDroppedDuringItsLoadUnloadsTheModule) {
  const auto spec = getCachedSpec(specText());
  holdWorkerLoads = true;  // the worker compiles, then waits inside its load
  EXPECT_THROW(getKernel(driver, *spec, request(true)), KernelCompiling);
  for (int i = 0; i < 60000 && !workerLoading; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(workerLoading.load());
  const std::shared_ptr<CudaKernel> own = getKernel(driver, *spec, request(false));  // a disk hit now
  ASSERT_NE(own, nullptr);
  holdWorkerLoads = false;
  ASSERT_TRUE(waitForBackgroundCompiles(60000));
  EXPECT_EQ(moduleLoads.load(), 2);
  EXPECT_EQ(moduleUnloads.load(), 1);  // the worker's
  EXPECT_EQ(getKernel(driver, *spec, request(true)), own);
}

}  // namespace
}  // namespace fxfuse::runtime
