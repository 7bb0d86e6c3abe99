// One NVRTC compile in a child process (the fxfuse-nvrtc-worker executable), so that a crash or a hang
// of NVRTC or of the ptxas inside it fails that one kernel with a named error (the op then runs its
// unfused ATen ops) instead of killing the user's program. Session 46 met such a crash: NVRTC 13.0's
// ptxas died with SIGSEGV on one generated kernel; nothing in-process can survive that.
//
// The parent sends a WorkerRequest over a socket pair (not pipes: a write to a worker that died must
// return EPIPE, never raise SIGPIPE in the user's process) and reads a WorkerAnswer back.
#pragma once

#include <string>
#include <vector>

namespace fxfuse::codegen {

struct NvrtcApi;

struct WorkerRequest {
  std::string library;  // the libnvrtc the parent loaded (its version keys the kernel cache)
  std::string name;     // the program's name, for NVRTC's log
  std::string code;
  std::vector<std::string> options;
  bool want_ptx = false;
};

struct WorkerAnswer {
  int result = 0;            // nvrtcResult of the compile (0: success)
  std::string result_name;   // nvrtcGetErrorString(result)
  std::string log, cubin, ptx;
  std::string failure;       // set by the worker when it could not compile at all (e.g. no NVRTC)
};

// Wire format: a tag, then each field as a 64-bit length and its bytes (nvrtc_worker_wire.cpp).
std::string encodeRequest(const WorkerRequest& r);
bool decodeRequest(const std::string& bytes, WorkerRequest* r);
std::string encodeAnswer(const WorkerAnswer& a);
bool decodeAnswer(const std::string& bytes, WorkerAnswer* a);

// The worker executable to use: env FXFUSE_NVRTC_WORKER (as given), else fxfuse-nvrtc-worker beside the binary
// or shared library holding this code (the Python package: beside _C.so), else where this build
// wrote it. "" when none exists (compileNvrtc then compiles in-process).
std::string nvrtcWorkerPath();

// Runs `request` with NVRTC in this process (nvrtc_driver.cpp): what the worker does, and what
// compileNvrtc does itself with FXFUSE_COMPILE_IN_PROCESS=1 or without a worker. Throws
// std::runtime_error when an NVRTC call other than the compile fails.
WorkerAnswer compileInThisProcess(const NvrtcApi& api, const WorkerRequest& request);

// Runs `request` in a fresh worker (nvrtc_worker_spawn.cpp). Throws CompilerCrashed when the worker
// dies by a signal, exits without a whole answer, or runs past `timeout_s` (it is then killed).
WorkerAnswer compileInWorker(const std::string& worker, const WorkerRequest& request, double timeout_s);

}  // namespace fxfuse::codegen
