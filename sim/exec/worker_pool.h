// A fixed set of threads that runs the items [0, n) of one task at a time (the caller's thread
// takes items too), for the checked run's --jobs. Which thread runs an item never matters: each
// item writes only its own slot, and the caller reads the slots in item order afterwards.
//
// A checked step is ~100 us of work, so waking a sleeping thread per task (a futex wake and a
// reschedule, 5-50 us) was a large part of a step's wall time. A waiting thread (a worker for
// the next task, the caller for the workers to finish) therefore spins for kSpin first, then
// blocks as before: between the steps of a run the workers never sleep, and an idle pool costs
// no CPU once the spin has run out.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dspark::sim {

class WorkerPool {
 public:
  // `jobs` threads in all, counting the caller's; jobs <= 1 runs every item on the caller.
  explicit WorkerPool(int32_t jobs);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int32_t jobs() const { return static_cast<int32_t>(threads_.size()) + 1; }
  // fn(i) for every i in [0, n), returns when all are done. Not reentrant.
  void Run(int32_t n, const std::function<void(int32_t)>& fn);

  // The machine's cores (std::thread::hardware_concurrency), at least 1: --jobs's default.
  static int32_t DefaultJobs();

  // How long a waiting thread spins before it blocks.
  static constexpr std::chrono::microseconds kSpin{30};

 private:
  void Work();
  void TakeItems();

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_, done_;
  const std::function<void(int32_t)>* fn_ = nullptr;
  int32_t n_ = 0;
  std::atomic<int32_t> next_{0};
  std::atomic<int32_t> busy_{0};         // workers inside the current task
  std::atomic<uint64_t> generation_{0};  // tasks started
  std::atomic<bool> stop_{false};
};

}  // namespace dspark::sim
