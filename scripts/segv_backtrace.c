// A native backtrace when a process dies of SIGSEGV/SIGBUS (pytest's faulthandler shows only the
// Python frames). Found the static-libstdc++ crash of tests/GPU_RESULTS.md (session 2).
//   gcc -shared -fPIC -o /tmp/segv_backtrace.so scripts/segv_backtrace.c
//   LD_PRELOAD=/tmp/segv_backtrace.so python3 repro.py
// Frames inside fxfuse/_C show as _C.so(+offset): `addr2line -e <_C.so> -f -C <offset>` names them.
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

static void onFault(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  _exit(128 + sig);
}

__attribute__((constructor)) static void install(void) {
  signal(SIGSEGV, onFault);
  signal(SIGBUS, onFault);
}
