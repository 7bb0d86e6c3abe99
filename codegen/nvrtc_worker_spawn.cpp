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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "codegen/codegen.h"
#include "codegen/nvrtc_worker.h"

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

// Milliseconds left until `deadline` for poll(), at least 0.
int msLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// How a transfer with the worker ended.
enum class Transfer { Done, Broken, TimedOut };

// Waits until `fd` is ready for `events` or the deadline passes.
Transfer await(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, msLeft(deadline));
    if (ready > 0) return Transfer::Done;
    if (ready == 0) return msLeft(deadline) == 0 ? Transfer::TimedOut : Transfer::Done;  // poll rounds down
    if (errno != EINTR) return Transfer::Broken;
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

// Reads until a whole answer has come or the worker closes its end (Done: what came is all there is).
// A whole answer ends the read without waiting for the close: a plain fork() elsewhere in the user's
// process (a DataLoader's workers) may hold a copy of the worker's end, and the close would not come.
Transfer readAll(int fd, std::string* out, Clock::time_point deadline) {
  char buf[1 << 16];
  WorkerAnswer whole;
  for (;;) {
    if (Transfer t = await(fd, POLLIN, deadline); t != Transfer::Done) return t;
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Transfer::Done;  // closed, or reset by a dying worker
    out->append(buf, static_cast<size_t>(n));
    if (decodeAnswer(*out, &whole)) return Transfer::Done;
  }
}

// The child's exit, as words for an error; "" when it exited 0. A process that ignores SIGCHLD has its
// children reaped for it (waitpid answers ECHILD): then the answer alone decides.
std::string reap(pid_t pid) {
  int status = 0;
  pid_t got;
  do got = ::waitpid(pid, &status, 0);
  while (got < 0 && errno == EINTR);
  if (got < 0) return "";
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "";
}

}  // namespace

std::string nvrtcWorkerPath() {
  // an explicit choice is used as given: a wrong path fails its compiles by name, not silently in-process
  if (const char* forced = std::getenv("FXFUSE_NVRTC_WORKER")) return forced;
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
  const auto crashed = [&](const std::string& why) {
    return CompilerCrashed(fmt::format("the NVRTC worker compiling {} {} ({})", request.name, why, worker));
  };
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw crashed(fmt::format("could not start: socketpair: {}{}", std::strerror(errno), kInProcessHint));
  Fd mine{sv[0]}, theirs{sv[1]};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on 0 and 1; every other descriptor of ours stays out of the child
  posix_spawn_file_actions_adddup2(&actions, theirs.fd, 0);
  posix_spawn_file_actions_adddup2(&actions, theirs.fd, 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  char* argv[] = {const_cast<char*>(worker.c_str()), nullptr};
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, worker.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw crashed(fmt::format("could not start: {}{}", std::strerror(spawned), kInProcessHint));
  theirs.reset();  // the worker's end lives only in the worker: its exit closes the socket

  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::string reply;
  Transfer t = sendAll(mine.fd, encodeRequest(request), deadline);
  if (t == Transfer::Done) {
    ::shutdown(mine.fd, SHUT_WR);  // the worker reads to the end of the request
    t = readAll(mine.fd, &reply, deadline);
  }
  // A worker that did not finish is killed before it is waited for: reaping a hung one would hang us.
  // One that already died stays a zombie until reaped, so its own signal is what reap() reports.
  if (t != Transfer::Done) ::kill(pid, SIGKILL);
  mine.reset();
  const std::string exit = reap(pid);
  if (t == Transfer::TimedOut)
    throw crashed(fmt::format("ran past {} s and was killed (FXFUSE_COMPILE_TIMEOUT_S)", timeout_s));
  if (!exit.empty()) throw crashed(exit);
  WorkerAnswer answer;
  if (!decodeAnswer(reply, &answer)) throw crashed("ended without a whole answer");
  return answer;
}

}  // namespace fxfuse::codegen
