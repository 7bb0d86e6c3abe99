// A compiler that crashes, aborts, exits or hangs costs one kernel, not the process: compileNvrtc
// through the worker throws CompilerCrashed naming what happened. Runs with FXFUSE_NVRTC_PATH at the
// stand-in fake_nvrtc.cpp (tests/codegen/CMakeLists.txt), whose compile misbehaves as
// FAKE_NVRTC_COMPILE says; the worker inherits this process's environment at each spawn.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "codegen/codegen.h"
#include "codegen/nvrtc_worker.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

KernelSource trivialKernel() { return test::bareKernel("fake_kernel"); }

// compileNvrtc with FAKE_NVRTC_COMPILE=mode; the CompilerCrashed's text, or "" when none was thrown.
std::string crashText(const char* mode) {
  ::setenv("FAKE_NVRTC_COMPILE", mode, 1);
  try {
    compileNvrtc(trivialKernel(), "sm_90a");
  } catch (const CompilerCrashed& e) {
    return e.what();
  }
  return "";
}

class NvrtcWorkerCrash : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("FXFUSE_NVRTC_PATH"), nullptr) << "run by CTest with the fake NVRTC";
    ASSERT_FALSE(nvrtcWorkerPath().empty());
  }
  void TearDown() override {
    for (const char* v : {"FAKE_NVRTC_COMPILE", "FXFUSE_COMPILE_TIMEOUT_S", "FXFUSE_NVRTC_WORKER"}) ::unsetenv(v);
  }
};

TEST_F(NvrtcWorkerCrash, ASegfaultIsNamedAndTheProcessLives) {
  const std::string what = crashText("segv");
  EXPECT_NE(what.find("killed by signal 11"), std::string::npos) << what;
  EXPECT_NE(what.find("fake_kernel"), std::string::npos) << what;
}

TEST_F(NvrtcWorkerCrash, AnAbortIsNamed) {
  const std::string what = crashText("abort");
  EXPECT_NE(what.find("killed by signal 6"), std::string::npos) << what;
}

TEST_F(NvrtcWorkerCrash, AnExitMidCompileIsNamed) {
  const std::string what = crashText("exit");
  EXPECT_NE(what.find("exited with status 7"), std::string::npos) << what;
}

TEST_F(NvrtcWorkerCrash, AHangIsKilledAtTheTimeout) {
  ::setenv("FXFUSE_COMPILE_TIMEOUT_S", "0.5", 1);
  const auto start = std::chrono::steady_clock::now();
  const std::string what = crashText("hang");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(what.find("ran past 0.5 s and was killed"), std::string::npos) << what;
  EXPECT_GE(took, 0.5);
  EXPECT_LT(took, 10.0);
}

// The fake's ordinary compile error comes back as the CompileError it is, log included.
TEST_F(NvrtcWorkerCrash, AnOrdinaryCompileErrorIsNotACrash) {
  ::setenv("FAKE_NVRTC_COMPILE", "fail", 1);
  try {
    compileNvrtc(trivialKernel(), "sm_90a");
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log.find("the fake NVRTC compiles nothing"), std::string::npos) << e.log;
  }
}

TEST_F(NvrtcWorkerCrash, AWorkerThatCannotStartOrAnswerIsNamed) {
  ::setenv("FXFUSE_NVRTC_WORKER", "/nonexistent/fxfuse-nvrtc-worker", 1);
  std::string what = crashText("fail");
  EXPECT_NE(what.find("could not start"), std::string::npos) << what;
  EXPECT_NE(what.find("FXFUSE_COMPILE_IN_PROCESS=1"), std::string::npos) << what;  // the way out, named
  ::setenv("FXFUSE_NVRTC_WORKER", "/bin/true", 1);  // reads nothing, answers nothing, exits 0
  what = crashText("fail");
  EXPECT_NE(what.find("without a whole answer"), std::string::npos) << what;
  ::setenv("FXFUSE_NVRTC_WORKER", "/bin/false", 1);
  what = crashText("fail");
  EXPECT_NE(what.find("exited with status 1"), std::string::npos) << what;
}

// What the worker prevents: the same crash in this process ends it (FXFUSE_COMPILE_IN_PROCESS=1).
TEST_F(NvrtcWorkerCrash, InProcessTheSameCrashKillsTheCaller) {
  ::setenv("FAKE_NVRTC_COMPILE", "segv", 1);
  ::setenv("FXFUSE_COMPILE_IN_PROCESS", "1", 1);
  EXPECT_EXIT(compileNvrtc(trivialKernel(), "sm_90a"), ::testing::KilledBySignal(SIGSEGV), "");
  ::unsetenv("FXFUSE_COMPILE_IN_PROCESS");
}

}  // namespace
}  // namespace fxfuse::codegen
