// fxfuse-nvrtc-worker: compiles one kernel for the process that started it (nvrtc_worker.h). Reads a
// WorkerRequest from stdin to its end, compiles it with the libnvrtc the request names, writes a
// WorkerAnswer to stdout and exits. A crash or hang here costs the parent one kernel, not its process.
// Arguments (nvrtc_worker_spawn.cpp): the parent's pid and the seconds after which it ends itself
// (0: never); run by hand without them, it only compiles.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "codegen/nvrtc_library.h"
#include "codegen/nvrtc_worker.h"
#include "codegen/process_syscalls.h"

namespace {

std::string readStdin() {
  std::string in;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return in;
    in.append(buf, static_cast<size_t>(n));
  }
}

// The answer's descriptor: stdout as the parent gave it, kept aside before NVRTC loads (main), so that
// anything the compiler prints cannot mix into the answer.
int answerFd = 1;

bool writeAnswer(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(answerFd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

fxfuse::codegen::WorkerAnswer answer(const fxfuse::codegen::WorkerRequest& request) {
  using namespace fxfuse::codegen;
  // The parent's library, by its path: the same NVRTC (and version) that keys the kernel cache.
  ::setenv("FXFUSE_NVRTC_PATH", request.library.c_str(), 1);
  std::string why;
  const NvrtcApi* api = loadNvrtc({}, &why);
  if (!api) {
    WorkerAnswer a;
    a.failure = why;
    return a;
  }
  return compileInThisProcess(*api, request);
}

// Descriptors the user's process opened without close-on-exec came along through posix_spawn: closed
// before anything else, so the worker never holds a pipe or socket open that someone waits on. Where
// close_range is missing (Linux < 5.9), the ones /proc lists.
void closeInherited() {
  if (::syscall(SYS_close_range, 3u, ~0u, 0u) == 0) return;
  std::vector<int> open;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(dir)) {
      const int fd = std::atoi(e->d_name);
      if (fd > 2 && fd != ::dirfd(dir)) open.push_back(fd);
    }
    ::closedir(dir);
  }
  for (int fd : open) ::close(fd);
}

// A worker never outlives the compile it serves: it dies with its parent (even one killed by SIGKILL,
// which cannot kill it first; PR_SET_PDEATHSIG fires when the spawning thread ends, and that thread
// waits for this worker), and ends itself after its time limit, a backstop for a parent that can
// neither kill it nor die (stopped).
void tieToParent(int argc, char** argv) {
  if (argc < 3) return;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != static_cast<pid_t>(std::atol(argv[1]))) ::_exit(5);  // the parent died before prctl
  ::alarm(static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fxfuse::codegen;
  tieToParent(argc, argv);
  closeInherited();
  answerFd = ::dup(1);
  if (answerFd < 0 || ::dup2(2, 1) < 0) return 4;  // stdout now goes where stderr goes (/dev/null)
  WorkerRequest request;
  if (!decodeRequest(readStdin(), &request)) return 2;  // the parent reports a worker without an answer
  WorkerAnswer a;
  try {
    a = answer(request);
  } catch (const std::exception& e) {
    a = WorkerAnswer{};
    a.failure = e.what();
  }
  // _exit: NVRTC's static destructors have nothing to give the parent, and must not delay its answer
  ::_exit(writeAnswer(encodeAnswer(a)) ? 0 : 3);
}
