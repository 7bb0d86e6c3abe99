// fxfuse-nvrtc-worker: compiles one kernel for the process that started it (nvrtc_worker.h). Reads a
// WorkerRequest from stdin to its end, compiles it with the libnvrtc the request names, writes a
// WorkerAnswer to stdout and exits. A crash or hang here costs the parent one kernel, not its process.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <string>

#include "codegen/nvrtc_library.h"
#include "codegen/nvrtc_worker.h"

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

}  // namespace

int main() {
  using namespace fxfuse::codegen;
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
