// A stand-in libnvrtc for the NVRTC worker's tests (nvrtc_worker_crash_test.cpp): every entry point
// fxfuse binds, where nvrtcCompileProgram misbehaves as env FAKE_NVRTC_COMPILE says (read at each
// compile, so one test process drives several workers): "segv" and "abort" (each after a line on
// stderr, as ptxas or glibc would write), "hang", "exit" (the process exits 7 mid-compile), "chatty" (an
// ordinary compile error after printing to stdout and stderr), "flood" (4 MB on stderr, then SIGSEGV), or
// anything else "fail" (an ordinary
// compile error with a log). With FAKE_NVRTC_PIDFILE set, each compile first writes its process id
// there (the tests find the worker by it).
#include <signal.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
void say(int fd, const char* text) {
  if (::write(fd, text, std::strlen(text)) < 0) return;
}
void writePidFile() {
  const char* path = std::getenv("FAKE_NVRTC_PIDFILE");
  if (!path) return;
  const std::string tmp = std::string(path) + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%d\n", static_cast<int>(::getpid()));
    std::fclose(f);
    std::rename(tmp.c_str(), path);  // whole or absent for the reader
  }
}
}  // namespace

extern "C" {

const char* nvrtcGetErrorString(int r) { return r == 0 ? "NVRTC_SUCCESS" : "NVRTC_ERROR_COMPILATION"; }
int nvrtcVersion(int* major, int* minor) {
  *major = 13;
  *minor = 0;
  return 0;
}
int nvrtcCreateProgram(void** p, const char*, const char*, int, const char* const*, const char* const*) {
  *p = std::malloc(1);
  return 0;
}
int nvrtcDestroyProgram(void** p) {
  std::free(*p);
  *p = nullptr;
  return 0;
}
int nvrtcCompileProgram(void*, int, const char* const*) {
  const char* mode = std::getenv("FAKE_NVRTC_COMPILE");
  const std::string m = mode ? mode : "";
  writePidFile();
  if (m == "segv" || m == "abort") say(2, "fake ptxas: internal error in the register allocator\n");
  if (m == "segv") ::raise(SIGSEGV);
  if (m == "abort") std::abort();
  if (m == "flood") {  // 4 MB on stderr, then a crash
    std::string line(1023, 'x');
    line += '\n';
    for (int i = 0; i < 4096; ++i) say(2, line.c_str());
    ::raise(SIGSEGV);
  }
  if (m == "chatty") {
    for (int i = 0; i < 2000; ++i) say(1, "FXA1 stdout noise that must not reach the answer\n");
    say(2, "stderr noise\n");
  }
  if (m == "hang")
    for (;;) ::pause();
  if (m == "exit") ::_exit(7);
  return 6;  // NVRTC_ERROR_COMPILATION
}
constexpr char kLog[] = "fake.cu(1): error: the fake NVRTC compiles nothing";
int nvrtcGetProgramLogSize(void*, size_t* n) {
  *n = sizeof kLog;
  return 0;
}
int nvrtcGetProgramLog(void*, char* out) {
  std::memcpy(out, kLog, sizeof kLog);
  return 0;
}
int nvrtcGetPTXSize(void*, size_t* n) {
  *n = 0;
  return 0;
}
int nvrtcGetPTX(void*, char*) { return 0; }
int nvrtcGetCUBINSize(void*, size_t* n) {
  *n = 0;
  return 0;
}
int nvrtcGetCUBIN(void*, char*) { return 0; }
}
