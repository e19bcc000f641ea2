// The GPU executor's reference worker (sim/exec/gpu_reference_worker.h): a job runs on another
// thread and is finished when Wait returns; what a job throws comes back from Wait (and is
// dropped by WaitNoThrow); the destructor waits for a running job.
#include "sim/exec/gpu_reference_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace dspark::sim {
namespace {

TEST(ReferenceWorker, RunsEachJobOnAnotherThreadAndWaitSeesItsResult) {
  ReferenceWorker w;
  w.Wait();  // no job yet
  for (int i = 0; i < 50; ++i) {
    int64_t sum = 0;
    std::thread::id ran_on;
    w.Start([&] {
      ran_on = std::this_thread::get_id();
      for (int k = 0; k <= i; ++k) sum += k;
    });
    w.Wait();
    EXPECT_EQ(sum, int64_t{i} * (i + 1) / 2);
    EXPECT_NE(ran_on, std::this_thread::get_id());
  }
}

TEST(ReferenceWorker, WaitRethrowsWhatTheJobThrewOnceAndWaitNoThrowDropsIt) {
  ReferenceWorker w;
  w.Start([] { throw std::runtime_error("reference failed"); });
  EXPECT_THROW(w.Wait(), std::runtime_error);
  w.Wait();  // thrown once only
  w.Start([] { throw std::runtime_error("again"); });
  w.WaitNoThrow();
  w.Wait();
  bool ran = false;
  w.Start([&] { ran = true; });
  w.Wait();
  EXPECT_TRUE(ran) << "the worker keeps running jobs after one threw";
}

TEST(ReferenceWorker, DestructorWaitsForARunningJob) {
  std::atomic<bool> done{false};
  {
    ReferenceWorker w;
    w.Start([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      done = true;
    });
  }
  EXPECT_TRUE(done.load());
}

}  // namespace
}  // namespace dspark::sim
