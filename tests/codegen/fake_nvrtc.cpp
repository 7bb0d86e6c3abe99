// A stand-in libnvrtc for the NVRTC worker's tests (nvrtc_worker_crash_test.cpp): every entry point
// fxfuse binds, where nvrtcCompileProgram misbehaves as env FAKE_NVRTC_COMPILE says (read at each
// compile, so one test process drives several workers): "segv", "abort", "hang", "exit" (the process
// exits 7 mid-compile), or anything else "fail" (an ordinary compile error with a log).
#include <signal.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

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
  if (m == "segv") ::raise(SIGSEGV);
  if (m == "abort") std::abort();
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
