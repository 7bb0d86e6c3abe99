// A compiler that crashes, aborts, exits or hangs costs one kernel, not the process: compileNvrtc
// through the worker throws CompilerCrashed naming what happened. Runs with FXFUSE_NVRTC_PATH at the
// stand-in fake_nvrtc.cpp (tests/codegen/CMakeLists.txt), whose compile misbehaves as
// FAKE_NVRTC_COMPILE says; the worker inherits this process's environment at each spawn.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "codegen/codegen.h"
#include "codegen/nvrtc_worker.h"
#include "codegen/process_syscalls.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

KernelSource trivialKernel() { return test::bareKernel("fake_kernel"); }

struct Crash {
  std::string what;  // "" when none was thrown
  bool transient = false;
};

// compileNvrtc with FAKE_NVRTC_COMPILE=mode: the CompilerCrashed it threw.
Crash crashOf(const char* mode) {
  ::setenv("FAKE_NVRTC_COMPILE", mode, 1);
  try {
    compileNvrtc(trivialKernel(), "sm_90a");
  } catch (const CompilerCrashed& e) {
    return {e.what(), e.transient};
  }
  return {};
}
std::string crashText(const char* mode) { return crashOf(mode).what; }

// compileNvrtc with FAKE_NVRTC_COMPILE=mode: the log of the CompileError it threw ("" and a failure if none).
std::string compileErrorLog(const char* mode) {
  ::setenv("FAKE_NVRTC_COMPILE", mode, 1);
  try {
    compileNvrtc(trivialKernel(), "sm_90a");
    ADD_FAILURE() << "compiled";
  } catch (const CompileError& e) {
    return e.log;
  }
  return "";
}

using Clock = std::chrono::steady_clock;

// The pid the fake wrote to `pidfile` once its compile started (FAKE_NVRTC_PIDFILE); -1 after 20 s.
pid_t awaitWorkerPid(const std::string& pidfile) {
  for (const auto until = Clock::now() + std::chrono::seconds(20); Clock::now() < until;) {
    std::ifstream in(pidfile);
    long pid = 0;
    if (in >> pid && pid > 0) return static_cast<pid_t>(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

// Whether `pid` still runs: neither gone nor a zombie (a dead worker whose new parent has not reaped it).
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// A compile that hangs (FAKE_NVRTC_COMPILE=hang, a 60 s timeout) on its own thread, its worker's pid known.
class HangingCompile {
 public:
  explicit HangingCompile(const std::string& pidfile) : pidfile_(pidfile) {
    std::remove(pidfile_.c_str());
    ::setenv("FAKE_NVRTC_PIDFILE", pidfile_.c_str(), 1);
    ::setenv("FXFUSE_COMPILE_TIMEOUT_S", "60", 1);
    ::setenv("FAKE_NVRTC_COMPILE", "hang", 1);
    thread_ = std::thread([this] { crash_ = crashOf("hang"); });
    worker = awaitWorkerPid(pidfile_);
  }
  // Kills the worker (with `sig`) and waits for the compile's answer; once (then the worker's pid may
  // be another process's).
  Crash end(int sig = SIGKILL) {
    if (worker > 0) ::kill(worker, sig);
    worker = -1;
    if (thread_.joinable()) thread_.join();
    return crash_;
  }
  ~HangingCompile() {
    end();
    ::unsetenv("FAKE_NVRTC_PIDFILE");
    std::remove(pidfile_.c_str());
  }
  pid_t worker = -1;

 private:
  std::string pidfile_;
  std::thread thread_;
  Crash crash_;
};

// This process's pid file for `test` (two test runs at once must not read each other's workers).
std::string pidFile(const char* test) {
  return ::testing::TempDir() + "fxfuse_worker_" + std::to_string(::getpid()) + "_" + test + ".pid";
}

class NvrtcWorkerCrash : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("FXFUSE_NVRTC_PATH"), nullptr) << "run by CTest with the fake NVRTC";
    ASSERT_FALSE(nvrtcWorkerPath().empty());
  }
  void TearDown() override {
    for (const char* v : {"FAKE_NVRTC_COMPILE", "FXFUSE_COMPILE_TIMEOUT_S", "FXFUSE_NVRTC_WORKER", "FAKE_NVRTC_PIDFILE"})
      ::unsetenv(v);
  }
};

// A crash is named with what the compiler last wrote to stderr, and holds for good (not transient:
// the same source crashes again).
TEST_F(NvrtcWorkerCrash, ASegfaultIsNamedAndTheProcessLives) {
  const Crash c = crashOf("segv");
  EXPECT_NE(c.what.find("killed by signal 11"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("fake_kernel"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("its stderr ended: fake ptxas: internal error in the register allocator"), std::string::npos)
      << c.what;
  EXPECT_FALSE(c.transient);
}

TEST_F(NvrtcWorkerCrash, AnAbortIsNamed) {
  const Crash c = crashOf("abort");
  EXPECT_NE(c.what.find("killed by signal 6"), std::string::npos) << c.what;
  EXPECT_NE(c.what.find("fake ptxas: internal error"), std::string::npos) << c.what;
  EXPECT_FALSE(c.transient);
}

// A compiler that floods stderr (4 MB) is still named by its crash, in a message of bounded size: the
// in-memory file is sealed at 1 MB, and its writes failing past that must not change how it ends.
TEST_F(NvrtcWorkerCrash, AFloodOnStderrIsCappedAndTheCrashStillNamed) {
  const Crash c = crashOf("flood");
  EXPECT_NE(c.what.find("killed by signal 11"), std::string::npos) << c.what.substr(0, 300);
  EXPECT_NE(c.what.find("its stderr ended: xxxx"), std::string::npos) << c.what.substr(0, 300);
  EXPECT_LT(c.what.size(), 4000u);
}

// What the compiler prints, to stdout too, never mixes into the answer: the compile error comes back whole.
TEST_F(NvrtcWorkerCrash, ACompilerThatPrintsCannotCorruptTheAnswer) {
  EXPECT_NE(compileErrorLog("chatty").find("the fake NVRTC compiles nothing"), std::string::npos);
}

// A worker killed from outside (the OOM killer, a user's kill) says nothing about the source: the
// failure is transient, so the kernel is tried again later (runtime/unavailable_kernels.h). The worker
// runs in its own process group, so a Ctrl-C at the terminal reaches the user's program, not it.
TEST_F(NvrtcWorkerCrash, AWorkerKilledFromOutsideMayBeTriedAgain) {
  HangingCompile compile(pidFile("killed"));
  ASSERT_GT(compile.worker, 0) << "the worker never started compiling";
  EXPECT_EQ(::getpgid(compile.worker), compile.worker);
  EXPECT_NE(::getpgid(compile.worker), ::getpgrp());
  const Crash c = compile.end(SIGTERM);
  EXPECT_NE(c.what.find("killed by signal 15"), std::string::npos) << c.what;
  EXPECT_TRUE(c.transient) << c.what;
}

// Descriptors this process opened without close-on-exec are not held by the worker: a pipe's reader
// sees its end when this process closes its write end, while the worker still compiles.
TEST_F(NvrtcWorkerCrash, TheWorkerHoldsNoInheritedDescriptor) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);  // no O_CLOEXEC: posix_spawn passes both ends to the worker
  HangingCompile compile(pidFile("fds"));
  ASSERT_GT(compile.worker, 0);
  ::close(p[1]);
  pollfd r{p[0], POLLIN, 0};
  const int ready = ::poll(&r, 1, 2000);
  char byte;
  EXPECT_EQ(ready, 1) << "the worker holds the pipe's write end";
  if (ready == 1) {
    EXPECT_EQ(::read(p[0], &byte, 1), 0);
  }
  ::close(p[0]);
}

// A worker does not outlive its parent, even one killed by SIGKILL (which could not kill the worker first).
TEST_F(NvrtcWorkerCrash, AWorkerDiesWithItsParent) {
  const std::string pidfile = pidFile("orphan");
  std::remove(pidfile.c_str());
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {  // the parent-to-be-killed: compiles, hanging, until it is killed
    ::setenv("FAKE_NVRTC_PIDFILE", pidfile.c_str(), 1);
    ::setenv("FXFUSE_COMPILE_TIMEOUT_S", "60", 1);
    crashText("hang");
    ::_exit(0);
  }
  const pid_t worker = awaitWorkerPid(pidfile);
  // watched by a pidfd (readable once it ends) where the kernel has one: its pid could be reused
  const int watch = worker > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, worker, 0)) : -1;
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  ASSERT_GT(worker, 0) << "the worker never started compiling";
  bool died = false;
  if (watch >= 0) {
    pollfd ended{watch, POLLIN, 0};
    died = ::poll(&ended, 1, 5000) == 1;
    if (!died) ::syscall(SYS_pidfd_send_signal, watch, SIGKILL, nullptr, 0);  // not left behind by a failing test
    ::close(watch);
  } else {
    for (const auto until = Clock::now() + std::chrono::seconds(5); !died && Clock::now() < until;) {
      died = !running(worker);
      if (!died) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!died) ::kill(worker, SIGKILL);
  }
  EXPECT_TRUE(died) << "the worker " << worker << " outlived its parent";
  std::remove(pidfile.c_str());
}

// The worker's own time limit (its second argument), a backstop where the parent can neither kill it nor
// die: given a request that never ends, it is gone by SIGALRM after that many seconds.
TEST_F(NvrtcWorkerCrash, AWorkerEndsItselfAtItsOwnLimit) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const std::string worker = nvrtcWorkerPath();
  const std::string me = std::to_string(::getpid());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(sv[1], 0);
    ::dup2(sv[1], 1);
    ::execl(worker.c_str(), worker.c_str(), me.c_str(), "1", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  pid_t got = 0;
  for (const auto until = Clock::now() + std::chrono::seconds(10); got == 0 && Clock::now() < until;) {
    got = ::waitpid(pid, &status, WNOHANG);
    if (got == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (got == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  ::close(sv[0]);
  ::close(sv[1]);
  ASSERT_EQ(got, pid) << "the worker ran past its own 1 s limit";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) << status;
}

// FXFUSE_COMPILE_TIMEOUT_S=inf is no limit (converting it to the clock's ticks would overflow).
TEST_F(NvrtcWorkerCrash, AnInfiniteTimeoutIsNoLimit) {
  ::setenv("FXFUSE_COMPILE_TIMEOUT_S", "inf", 1);
  ::setenv("FAKE_NVRTC_COMPILE", "fail", 1);
  EXPECT_THROW(compileNvrtc(trivialKernel(), "sm_90a"), CompileError);
}

TEST_F(NvrtcWorkerCrash, AnExitMidCompileIsNamed) {
  const std::string what = crashText("exit");
  EXPECT_NE(what.find("exited with status 7"), std::string::npos) << what;
}

// A hang is killed at the timeout, and holds for good: a compile that takes a hundred times its usual
// time hangs (FXFUSE_COMPILE_TIMEOUT_S raises the limit where a machine is that slow).
TEST_F(NvrtcWorkerCrash, AHangIsKilledAtTheTimeout) {
  ::setenv("FXFUSE_COMPILE_TIMEOUT_S", "0.5", 1);
  const auto start = std::chrono::steady_clock::now();
  const Crash c = crashOf("hang");
  const std::string& what = c.what;
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(c.transient);
  EXPECT_NE(what.find("ran past 0.5 s and was killed"), std::string::npos) << what;
  EXPECT_GE(took, 0.5);
  EXPECT_LT(took, 10.0);
}

// The fake's ordinary compile error comes back as the CompileError it is, log included.
TEST_F(NvrtcWorkerCrash, AnOrdinaryCompileErrorIsNotACrash) {
  EXPECT_NE(compileErrorLog("fail").find("the fake NVRTC compiles nothing"), std::string::npos);
}

TEST_F(NvrtcWorkerCrash, AWorkerThatCannotStartOrAnswerIsNamed) {
  ::setenv("FXFUSE_NVRTC_WORKER", "/nonexistent/fxfuse-nvrtc-worker", 1);
  const Crash missing = crashOf("fail");
  std::string what = missing.what;
  EXPECT_NE(what.find("could not start"), std::string::npos) << what;
  EXPECT_FALSE(missing.transient);  // ENOENT: not a passing shortage
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
