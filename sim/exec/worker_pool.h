// A fixed set of threads that runs the items [0, n) of one task at a time (the caller's thread
// takes items too), for the checked run's --jobs. Which thread runs an item never matters: each
// item writes only its own slot, and the caller reads the slots in item order afterwards.
//
// The checked run starts one task per step, ~100 us apart, and a futex wake-up costs a sleeping
// worker tens of microseconds on a small VM: so a worker polls for the next task for up to
// kSpinFor after finishing one before it blocks, and the caller polls for the workers' end for
// as long before it blocks. Results never depend on it, only the wall time.
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

  // How long a thread polls before it blocks (see above).
  static constexpr std::chrono::microseconds kSpinFor{200};

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
  std::atomic<uint64_t> generation_{0};  // tasks started (written under mu_)
  std::atomic<bool> stop_{false};        // (written under mu_)
};

}  // namespace dspark::sim
