#include "sim/exec/worker_pool.h"

#include <algorithm>

namespace dspark::sim {

WorkerPool::WorkerPool(int32_t jobs) {
  for (int32_t i = 1; i < jobs; ++i) threads_.emplace_back([this] { Work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int32_t WorkerPool::DefaultJobs() {
  return std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
}

void WorkerPool::TakeItems() {
  for (int32_t i; (i = next_.fetch_add(1)) < n_;) (*fn_)(i);
}

void WorkerPool::Run(int32_t n, const std::function<void(int32_t)>& fn) {
  if (threads_.empty() || n <= 1) {
    for (int32_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    busy_ = static_cast<int32_t>(threads_.size());
    ++generation_;
  }
  start_.notify_all();
  TakeItems();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [this] { return busy_ == 0; });
  fn_ = nullptr;
}

void WorkerPool::Work() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    TakeItems();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

}  // namespace dspark::sim
