// CompileQueue (runtime/compile_queue.h): the worker pool behind background compiles.
#include "runtime/compile_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace fxfuse::runtime {
namespace {

using namespace std::chrono_literals;

// Each test declares what its jobs touch before the queue: the queue is destroyed first (joining
// its workers), also when an assertion ends the test early.
TEST(CompileQueue, RunsEveryJobOffTheCallingThread) {
  std::atomic<int> ran{0}, onCaller{0};
  const std::thread::id caller = std::this_thread::get_id();
  CompileQueue q(2);
  for (int i = 0; i < 20; ++i)
    q.submit([&] {
      if (std::this_thread::get_id() == caller) onCaller++;
      ran++;
    });
  ASSERT_TRUE(q.waitIdle(10000));
  EXPECT_EQ(ran.load(), 20);
  EXPECT_EQ(onCaller.load(), 0);
}

TEST(CompileQueue, RunsAtMostItsWorkersAtOnce) {
  std::atomic<int> now{0}, most{0};
  CompileQueue q(3);
  for (int i = 0; i < 12; ++i)
    q.submit([&] {
      const int n = ++now;
      for (int m = most.load(); n > m && !most.compare_exchange_weak(m, n);) {
      }
      std::this_thread::sleep_for(20ms);
      --now;
    });
  ASSERT_TRUE(q.waitIdle(10000));
  EXPECT_EQ(most.load(), 3);  // 12 jobs of 20 ms on 3 workers overlap: all three ran together
}

TEST(CompileQueue, WaitIdleTimesOutWhileAJobRuns) {
  std::atomic<bool> release{false};
  CompileQueue q(1);
  q.submit([&] {
    while (!release) std::this_thread::sleep_for(1ms);
  });
  EXPECT_FALSE(q.waitIdle(50));
  release = true;
  EXPECT_TRUE(q.waitIdle(10000));
}

TEST(CompileQueue, AThrowingJobLeavesTheWorkerRunning) {
  std::atomic<int> ran{0};
  CompileQueue q(1);
  q.submit([] { throw std::runtime_error("a faulty job"); });
  q.submit([&] { ran++; });
  ASSERT_TRUE(q.waitIdle(10000));
  EXPECT_EQ(ran.load(), 1);
}

TEST(CompileQueue, FinishDropsQueuedJobsAndWaitsForTheRunningOne) {
  std::atomic<bool> started{false}, release{false};
  std::atomic<int> finished{0}, queuedRan{0};
  CompileQueue q(1);
  q.submit([&] {
    started = true;
    while (!release) std::this_thread::sleep_for(1ms);
    finished++;
  });
  for (int i = 0; i < 5; ++i) q.submit([&] { queuedRan++; });
  while (!started) std::this_thread::sleep_for(1ms);
  std::thread releaser([&] {
    std::this_thread::sleep_for(30ms);
    release = true;
  });
  q.finish();  // returns only after the running job ended
  EXPECT_EQ(finished.load(), 1);
  EXPECT_EQ(queuedRan.load(), 0);
  releaser.join();
  EXPECT_FALSE(q.submit([&] { queuedRan++; }));  // after finish: dropped
  EXPECT_TRUE(q.waitIdle(1000));
  EXPECT_EQ(queuedRan.load(), 0);
}

TEST(CompileQueue, AForkedChildStartsOverWithoutItsParentsWorkers) {
  std::atomic<bool> release{false};
  CompileQueue q(1);
  q.submit([&] {
    while (!release) std::this_thread::sleep_for(1ms);
  });  // the parent's worker is busy when the child is forked
  const pid_t child = fork();
  if (child == 0) {
    // the parent's running job and worker are not in the child: a job of its own runs, and the
    // queue goes idle and finishes without waiting for the parent's
    std::atomic<int> ran{0};
    const bool queued = q.submit([&] { ran++; });
    const bool idle = q.waitIdle(10000);
    q.finish();
    _exit(queued && idle && ran == 1 ? 0 : 1);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  release = true;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_TRUE(q.waitIdle(10000));
}

// A fork while another thread holds the queue's mutex, with the parent's idle worker and a
// waitIdle caller waiting on its condition variables: the child must still run its jobs, one
// after another (each notification reaching its own worker). Forked many times, so that some
// forks land while the mutex is held (pthread_atfork handlers make the fork wait for it); the
// first hung or failed child ends the loop. Without the handlers about three runs in four fail
// (a helper's count on 2 cores), without the child's new condition variables every run.
TEST(CompileQueue, ChildrenForkedWhileTheQueueIsBusyRunTheirJobs) {
  std::atomic<bool> stop{false};
  CompileQueue q(2);
  q.submit([] {});  // starts a worker, which then waits for work
  ASSERT_TRUE(q.waitIdle(10000));
  std::thread holder([&] {  // takes and drops the queue's mutex without pause
    while (!stop) q.waitIdle(0);
  });
  std::thread waiter([&] {  // waits on the idle condition while a job runs
    while (!stop) {
      auto release = std::make_shared<std::atomic<bool>>(false);  // outlives a job left running
      q.submit([release, &stop] {
        while (!*release && !stop) std::this_thread::sleep_for(100us);
      });
      q.waitIdle(2);
      *release = true;
      q.waitIdle(10000);
    }
  });
  int hung = 0, failed = 0;
  for (int i = 0; i < 200 && hung == 0 && failed == 0; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      alarm(3);  // a hung child dies of SIGALRM
      std::atomic<int> ran{0};
      bool ok = true;
      for (int j = 0; j < 3; ++j) ok = q.submit([&] { ran++; }) && q.waitIdle(3000) && ok;
      _exit(ok && ran == 3 ? 0 : 1);
    }
    ASSERT_GT(child, 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    if (WIFSIGNALED(status)) hung++;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
  }
  stop = true;
  holder.join();
  waiter.join();
  EXPECT_EQ(hung, 0);
  EXPECT_EQ(failed, 0);
  EXPECT_TRUE(q.waitIdle(10000));
}

TEST(CompileQueue, BackgroundSwitchRoundTrips) {
  const bool before = backgroundCompileEnabled();
  setBackgroundCompile(true);
  EXPECT_TRUE(backgroundCompileEnabled());
  setBackgroundCompile(false);
  EXPECT_FALSE(backgroundCompileEnabled());
  setBackgroundCompile(before);
}

}  // namespace
}  // namespace fxfuse::runtime
