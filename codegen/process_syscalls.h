// Linux system calls the NVRTC worker uses (nvrtc_worker_spawn.cpp, nvrtc_worker_main.cpp), numbered
// here where the C library's headers predate them (glibc < 2.32, e.g. manylinux2014): the numbers are
// the same on every architecture since Linux 5.1's unified table. On an older kernel the call fails
// with ENOSYS and the callers fall back (kill / waitpid by pid, closing descriptors one by one).
#pragma once

#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef P_PIDFD
#define P_PIDFD 3  // waitid's idtype for a pidfd (Linux 5.4)
#endif
