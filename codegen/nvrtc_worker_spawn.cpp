// The parent's side of the NVRTC worker (nvrtc_worker.h): find the executable, start one per compile,
// send the request, read the answer, reap the child.
//
// Why a fresh process per compile and not a long-lived server: a worker is ~0.02-0.05 s of a compile that
// takes 0.4-1.0 s (bench/RESULTS.md, Run BI), and a fresh one has no state a crash could have damaged.
// Why posix_spawn and not fork: the user's process has threads and a CUDA context; posix_spawn runs
// nothing of it in the child before exec.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/nvrtc_worker.h"
#include "codegen/process_syscalls.h"

extern char** environ;

namespace fxfuse::codegen {
namespace {

constexpr const char* kWorkerName = "fxfuse-nvrtc-worker";
// Where no process may be started (a sandbox), the one way to compile at all.
constexpr const char* kInProcessHint = "; where processes cannot be started, FXFUSE_COMPILE_IN_PROCESS=1 compiles here";

bool isExecutable(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string dirOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Closes a descriptor once, on every path out.
struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline` for poll(), rounded up (rounded down, poll would return early and
// the wait would spin through its last millisecond), at least 0.
int msLeft(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// A timeout from this many seconds (11 days) on means none (FXFUSE_COMPILE_TIMEOUT_S=inf): the deadline
// is then never (converting inf to the clock's ticks would overflow) and the worker sets no alarm.
constexpr double kNoLimitSeconds = 1e6;

// The compile's deadline.
Clock::time_point deadlineAfter(double timeout_s) {
  if (!(timeout_s < kNoLimitSeconds)) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
}

// How a transfer with the worker ended.
enum class Transfer { Done, Broken, TimedOut };

// Waits until `fd` is ready for `events` or the deadline passes.
Transfer await(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, msLeft(deadline));
    if (ready > 0) return Transfer::Done;
    if (ready == 0 && Clock::now() >= deadline) return Transfer::TimedOut;
    if (ready < 0 && errno != EINTR) return Transfer::Broken;
  }
}

// Sends all of `bytes`; Broken when the worker stopped reading (it died).
Transfer sendAll(int fd, const std::string& bytes, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    if (Transfer t = await(fd, POLLOUT, deadline); t != Transfer::Done) return t;
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Transfer::Broken;
    sent += static_cast<size_t>(n);
  }
  return Transfer::Done;
}

// Reads until a whole answer has come or the worker closes its end (Done: what came is all there is;
// Broken: the connection failed, e.g. reset by a dying worker).
// A whole answer ends the read without waiting for the close: a plain fork() elsewhere in the user's
// process (a DataLoader's workers) may hold a copy of the worker's end, and the close would not come.
Transfer readAll(int fd, std::string* out, Clock::time_point deadline) {
  char buf[1 << 16];
  WorkerAnswer whole;
  for (;;) {
    if (Transfer t = await(fd, POLLIN, deadline); t != Transfer::Done) return t;
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Transfer::Broken;
    if (n == 0) return Transfer::Done;  // closed
    out->append(buf, static_cast<size_t>(n));
    if (decodeAnswer(*out, &whole)) return Transfer::Done;
  }
}

// Signals that only come from outside the worker (the OOM killer, a user's kill, a hang-up): they say
// nothing about the source, so the compile may be tried again (CompilerCrashed::transient).
bool killedFromOutside(int sig) { return sig == SIGKILL || sig == SIGTERM || sig == SIGINT || sig == SIGHUP; }

// How the worker ended.
struct Exit {
  std::string failure;     // "" when it exited 0 (or was reaped by someone else)
  bool transient = false;  // killed from outside
};

// What waiting for the worker learned: nothing (someone else reaped it), or its signal or exit code.
struct Ended {
  bool known = false;
  int signal = 0;  // 0: it exited, with `code`
  int code = 0;
};

// One started worker. Killed (if it still runs) and reaped on every path out, exceptions included, so
// neither a hung worker nor a zombie outlives its compile. Signalled and waited for through a pidfd
// where the kernel has them: by pid, a kill() or waitpid() after someone else reaped the worker (a
// process that ignores SIGCHLD has its children reaped for it) could reach whatever process took its
// pid since. (The pidfd is opened just after the spawn; a worker reaped and its pid reused within
// that window would need to exit before reading its request.)
class WorkerProcess {
 public:
  explicit WorkerProcess(pid_t pid) : pid_(pid) {
    pidfd_.fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    gone_ = pidfd_.fd < 0 && errno == ESRCH;  // already exited and reaped: nothing left to signal
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  ~WorkerProcess() {  // formats nothing: it may run while an exception (bad_alloc) unwinds
    if (pid_ < 0) return;
    kill();
    wait();
  }

  void kill() {
    if (pid_ < 0 || gone_) return;
    if (pidfd_.fd >= 0 && ::syscall(SYS_pidfd_send_signal, pidfd_.fd, SIGKILL, nullptr, 0) == 0) return;
    if (pidfd_.fd >= 0 && errno == ESRCH) return;  // exited and reaped
    ::kill(pid_, SIGKILL);                          // no pidfd, or its call refused (a sandbox)
  }

  // Waits for the worker's end and says how it ended. A worker that already died stays a zombie
  // until this, so its own signal is what it reports, even after kill().
  Exit reap() {
    const Ended e = wait();
    if (e.signal) return {fmt::format("killed by signal {} ({})", e.signal, ::strsignal(e.signal)), killedFromOutside(e.signal)};
    if (e.code) return {fmt::format("exited with status {}", e.code)};
    return {};  // exited 0, or reaped for us (SIGCHLD ignored): the answer alone decides
  }

 private:
  // Waits for the worker, by its pidfd where there is one.
  Ended wait() {
    const pid_t pid = pid_;
    pid_ = -1;
    if (pidfd_.fd >= 0) {
      siginfo_t info{};
      int r;
      do r = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.fd), &info, WEXITED);
      while (r < 0 && errno == EINTR);
      if (r == 0) return info.si_code == CLD_EXITED ? Ended{true, 0, info.si_status} : Ended{true, info.si_status, 0};
      if (errno != EINVAL && errno != ENOSYS) return {};  // ECHILD: reaped for us
    }
    int status = 0;
    pid_t got;
    do got = ::waitpid(pid, &status, 0);
    while (got < 0 && errno == EINTR);
    if (got != pid) return {};
    return WIFSIGNALED(status) ? Ended{true, WTERMSIG(status), 0} : Ended{true, 0, WEXITSTATUS(status)};
  }

  pid_t pid_;
  Fd pidfd_;
  bool gone_ = false;
};

// Where the worker's stderr (and stdout: nvrtc_worker_main.cpp) goes: an anonymous in-memory file whose
// tail names a crash (a ptxas message, glibc's abort text), else /dev/null. Sealed at kStderrBytes: a
// compiler that floods it until the timeout keeps its first megabyte, not all of it in memory (its
// writes past that fail; pages are taken only as written).
constexpr off_t kStderrBytes = 1 << 20;
int stderrFile() {
  const int fd = ::memfd_create("fxfuse-nvrtc-worker-stderr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd >= 0) {
    if (::ftruncate(fd, kStderrBytes) == 0) ::fcntl(fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
    return fd;
  }
  const int unsealed = ::memfd_create("fxfuse-nvrtc-worker-stderr", MFD_CLOEXEC);  // a kernel without sealing
  return unsealed >= 0 ? unsealed : ::open("/dev/null", O_WRONLY | O_CLOEXEC);
}

// The last `most` bytes the worker wrote to stderrFile(), as "; its stderr ended: ..." ("" when none).
// Its descriptor's offset (shared with the worker's copy) is how much it wrote.
std::string stderrTail(int fd, size_t most = 2000) {
  const off_t written = fd < 0 ? -1 : ::lseek(fd, 0, SEEK_CUR);
  if (written <= 0) return "";
  const off_t from = written > static_cast<off_t>(most) ? written - static_cast<off_t>(most) : 0;
  std::string tail(static_cast<size_t>(written - from), '\0');
  const ssize_t n = ::pread(fd, tail.data(), tail.size(), from);
  if (n <= 0) return "";
  tail.resize(static_cast<size_t>(n));
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ' || tail.back() == '\0')) tail.pop_back();
  return tail.empty() ? "" : "; its stderr ended: " + tail;
}

// Starting failures that pass: the system was short of processes, descriptors or memory.
bool transientStartFailure(int err) {
  return err == EAGAIN || err == ENOMEM || err == EMFILE || err == ENFILE || err == EINTR;
}

// The worker's arguments: the parent's pid (it exits if that is no longer its parent) and the seconds
// after which it ends itself (0: never), a backstop where the parent cannot kill it.
std::vector<std::string> workerArgs(const std::string& worker, double timeout_s) {
  const double own_limit = timeout_s < kNoLimitSeconds ? std::ceil(timeout_s) + 10 : 0;
  return {worker, std::to_string(::getpid()), fmt::format("{:.0f}", own_limit)};
}

}  // namespace

std::string nvrtcWorkerPath() {
  // an explicit choice is used as given: a wrong path fails its compiles by name, not silently in-process;
  // set but empty is unset, as for every FXFUSE_ variable (it had meant "no worker": in-process compiles)
  if (const char* forced = std::getenv("FXFUSE_NVRTC_WORKER"); forced && *forced) return forced;
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&nvrtcWorkerPath), &info) && info.dli_fname) {
    const std::string beside = dirOf(info.dli_fname) + "/" + kWorkerName;
    if (isExecutable(beside)) return beside;
  }
#ifdef FXFUSE_NVRTC_WORKER_BUILT_AT
  if (isExecutable(FXFUSE_NVRTC_WORKER_BUILT_AT)) return FXFUSE_NVRTC_WORKER_BUILT_AT;
#endif
  return "";
}

WorkerAnswer compileInWorker(const std::string& worker, const WorkerRequest& request, double timeout_s) {
  const auto crashed = [&](const std::string& why, bool transient = false) {
    return CompilerCrashed(fmt::format("the NVRTC worker compiling {} {} ({})", request.name, why, worker), transient);
  };
  const auto cannotStart = [&](const char* what, int err) {
    return crashed(fmt::format("could not start: {}{}{}", what, std::strerror(err), kInProcessHint),
                   transientStartFailure(err));
  };
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw cannotStart("socketpair: ", errno);
  Fd mine{sv[0]}, theirs{sv[1]}, err{stderrFile()};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on 0, 1 and 2; the worker closes whatever else it inherited (descriptors
  // the user's process opened without close-on-exec) before it does anything else
  posix_spawn_file_actions_adddup2(&actions, theirs.fd, 0);
  posix_spawn_file_actions_adddup2(&actions, theirs.fd, 1);
  if (err.fd >= 0) posix_spawn_file_actions_adddup2(&actions, err.fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group: a Ctrl-C at the terminal interrupts the user's program, not its compiles
  // (the worker dies with its parent anyway: nvrtc_worker_main.cpp). Signals the parent blocks or
  // ignores (Python ignores SIGPIPE) are the defaults again, so the worker's own time limit works.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGALRM, SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGABRT}) sigaddset(&defaults, sig);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  const std::vector<std::string> args = workerArgs(worker, timeout_s);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, worker.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) throw cannotStart("", spawned);
  WorkerProcess process(pid);
  theirs.reset();  // the worker's end lives only in the worker: its exit closes the socket

  const Clock::time_point deadline = deadlineAfter(timeout_s);
  std::string reply;
  Transfer t = sendAll(mine.fd, encodeRequest(request), deadline);
  if (t == Transfer::Done) {
    ::shutdown(mine.fd, SHUT_WR);  // the worker reads to the end of the request
    t = readAll(mine.fd, &reply, deadline);
  }
  // A worker that did not finish is killed before it is waited for: reaping a hung one would hang us.
  if (t != Transfer::Done) process.kill();
  mine.reset();
  const Exit exit = process.reap();
  if (t == Transfer::TimedOut)
    throw crashed(fmt::format("ran past {} s and was killed (FXFUSE_COMPILE_TIMEOUT_S){}", timeout_s, stderrTail(err.fd)));
  if (!exit.failure.empty()) throw crashed(exit.failure + stderrTail(err.fd), exit.transient);
  WorkerAnswer answer;
  if (!decodeAnswer(reply, &answer)) throw crashed("ended without a whole answer" + stderrTail(err.fd));
  return answer;
}

}  // namespace fxfuse::codegen
