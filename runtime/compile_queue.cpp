#include "runtime/compile_queue.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <system_error>

#include <pthread.h>

#include "codegen/env_flag.h"

namespace fxfuse::runtime {
namespace {
// Every constructed, not yet destroyed queue (for the fork handlers). Never destroyed: a queue
// may outlive static destruction (backgroundCompileQueue()).
struct LiveQueues {
  std::mutex mutex;
  std::set<CompileQueue*> queues;
};
LiveQueues& liveQueues() {
  static auto* live = new LiveQueues;
  return *live;
}
}  // namespace

CompileQueue::CompileQueue(int workers)
    : workers_(std::max(1, workers)),
      wake_(std::make_unique<std::condition_variable>()),
      idle_(std::make_unique<std::condition_variable>()) {
  static std::once_flag registered;
  std::call_once(registered, [] {
    liveQueues();  // constructed before a handler can run (a fork during its construction would hang the child)
    // (fails only without memory for the handlers: forks then run unguarded, as before)
    pthread_atfork(&CompileQueue::lockEveryQueueForFork, &CompileQueue::unlockEveryQueueAfterFork,
                   &CompileQueue::startEveryQueueOverInChild);
  });
  std::lock_guard<std::mutex> lock(liveQueues().mutex);
  liveQueues().queues.insert(this);
}

void CompileQueue::lockEveryQueueForFork() {
  liveQueues().mutex.lock();  // also keeps queues from being created or destroyed meanwhile
  for (CompileQueue* q : liveQueues().queues) q->mutex_.lock();
}

void CompileQueue::unlockEveryQueueAfterFork() {
  for (CompileQueue* q : liveQueues().queues) q->mutex_.unlock();
  liveQueues().mutex.unlock();
}

void CompileQueue::startEveryQueueOverInChild() {
  for (CompileQueue* q : liveQueues().queues) q->startOver();
  unlockEveryQueueAfterFork();
}

void CompileQueue::startOver() {
  // std::thread objects of the parent's workers: destroying or joining them is not possible here;
  // nor destroying condition variables the parent's threads waited on
  new std::vector<std::thread>(std::move(threads_));  // leaked on purpose
  threads_.clear();
  wake_.release();  // leaked on purpose
  idle_.release();
  wake_ = std::make_unique<std::condition_variable>();
  idle_ = std::make_unique<std::condition_variable>();
  queue_.clear();
  running_ = 0;
}

CompileQueue::~CompileQueue() {
  finish();
  std::lock_guard<std::mutex> lock(liveQueues().mutex);
  liveQueues().queues.erase(this);
}

bool CompileQueue::submit(std::function<void()> job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopped_) return false;
  queue_.push_back(std::move(job));
  if (static_cast<int>(threads_.size()) < workers_ &&
      static_cast<int>(threads_.size()) < running_ + static_cast<int>(queue_.size())) {
    try {
      threads_.emplace_back([this] { work(); });
    } catch (const std::system_error&) {
      // out of threads: the workers there are take the job; with none it would never run
      if (threads_.empty()) {
        queue_.pop_back();
        return false;
      }
    }
  }
  wake_->notify_one();
  return true;
}

void CompileQueue::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_->wait(lock, [this] { return stopped_ || !queue_.empty(); });
    if (stopped_) return;
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    try {
      job();
    } catch (...) {
      // a job reports its own failure (header); the worker must outlive a faulty one
    }
    lock.lock();
    --running_;
    idle_->notify_all();
  }
}

bool CompileQueue::waitIdle(long long timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto idle = [this] { return running_ == 0 && (queue_.empty() || stopped_); };
  if (timeout_ms < 0) {
    idle_->wait(lock, idle);
    return true;
  }
  return idle_->wait_for(lock, std::chrono::milliseconds(timeout_ms), idle);
}

void CompileQueue::finish() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    queue_.clear();
    threads.swap(threads_);
  }
  wake_->notify_all();
  idle_->notify_all();
  for (std::thread& t : threads) t.join();
}

CompileQueue& backgroundCompileQueue() {
  // Not destroyed at exit (a static's destructor could run while a job still uses NVRTC or the
  // disk cache); fxfuse's Python module calls finish() at interpreter exit instead.
  static auto* q = new CompileQueue(static_cast<int>(std::min(4u, std::max(1u, std::thread::hardware_concurrency()))));
  return *q;
}

namespace {
std::atomic<int>& backgroundFlag() {
  static std::atomic<int> flag{envFlag("FXFUSE_BACKGROUND_COMPILE") ? 1 : 0};
  return flag;
}
}  // namespace

bool backgroundCompileEnabled() { return backgroundFlag().load(std::memory_order_relaxed) != 0; }
void setBackgroundCompile(bool enabled) { backgroundFlag().store(enabled ? 1 : 0); }

}  // namespace fxfuse::runtime
