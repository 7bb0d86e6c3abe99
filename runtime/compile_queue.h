// Kernel compiles off the calling thread (background compile, kernel_loader.h): a bounded pool
// of worker threads running queued jobs in order. Torch-free and driver-free (a job is any
// callable), so it is unit-tested on the CPU (tests/runtime/compile_queue_test.cpp).
//
// Why a pool and not a thread per kernel: a model rewritten with dynamic shapes can meet a dozen
// new kernels in its first calls; NVRTC takes one core per compile for 0.4-1 s, and as many
// compiles at once as there are kernels would take every core from the model's own host work.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fxfuse::runtime {

class CompileQueue {
 public:
  // At most `workers` jobs run at once (at least 1); threads start at the first submit.
  explicit CompileQueue(int workers);
  // Drops the jobs not started, waits for the running ones (finish()).
  ~CompileQueue();
  CompileQueue(const CompileQueue&) = delete;
  CompileQueue& operator=(const CompileQueue&) = delete;

  // Queues `job`; it runs on a worker thread. A job must not throw: an escaping exception is
  // swallowed (the worker lives on), so jobs report their own failures. False when the job was
  // not queued: after finish(), or when no worker thread exists and none could be started.
  bool submit(std::function<void()> job);
  // Blocks until no job is queued or running, or `timeout_ms` (< 0: no limit) has passed.
  // True when idle.
  bool waitIdle(long long timeout_ms = -1);
  // Stops: drops the queued jobs and joins the workers (the running jobs finish first). For
  // interpreter exit, before the libraries a job uses (NVRTC) are unloaded.
  void finish();
  int workers() const { return workers_; }

 private:
  void work();
  // In a child forked from a process with workers: the threads are not there (a join would
  // hang), nor are the jobs they ran, nor the waits on the condition variables; start over
  // empty. Requires mutex_ held.
  void startOver();
  // pthread_atfork handlers over every live queue: a fork waits until no thread holds a queue's
  // mutex (a child copying it locked would hang at its first use), and both sides release it, the
  // child after starting every queue over.
  static void lockEveryQueueForFork();
  static void unlockEveryQueueAfterFork();
  static void startEveryQueueOverInChild();

  const int workers_;
  std::mutex mutex_;
  // Pointers so that a forked child can replace them: its copies may count waiters (the
  // parent's threads) that are not there, who would take the child's notifications.
  std::unique_ptr<std::condition_variable> wake_;  // a job was queued, or finish()
  std::unique_ptr<std::condition_variable> idle_;  // a job ended
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  int running_ = 0;
  bool stopped_ = false;
};

// The process-wide queue of background compiles: min(4, cores) workers.
CompileQueue& backgroundCompileQueue();

// Whether the op compiles a missing kernel in the background and answers with ATen meanwhile
// (instead of compiling before it answers). Off unless FXFUSE_BACKGROUND_COMPILE=1 or set here.
bool backgroundCompileEnabled();
void setBackgroundCompile(bool enabled);

}  // namespace fxfuse::runtime
