#include "sim/exec/worker_pool.h"

#include <algorithm>

namespace dspark::sim {
namespace {

// Polls done() for up to WorkerPool::kSpinFor (the clock read every 8 polls), yielding between polls; true if it held.
template <typename Done>
bool SpinUntil(Done done) {
  const auto until = std::chrono::steady_clock::now() + WorkerPool::kSpinFor;
  for (uint32_t i = 1;; ++i) {
    if (done()) return true;
    if ((i & 7) == 0 && std::chrono::steady_clock::now() >= until) return done();
    std::this_thread::yield();  // a runnable thread on this core goes first
  }
}

}  // namespace

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
    generation_.fetch_add(1, std::memory_order_release);  // after the task: a poller reads it first
  }
  start_.notify_all();
  TakeItems();
  if (!SpinUntil([this] { return busy_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return busy_.load(std::memory_order_acquire) == 0; });
  }
  fn_ = nullptr;
}

void WorkerPool::Work() {
  uint64_t seen = 0;
  const auto started = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
  for (;;) {
    if (!SpinUntil(started)) {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, started);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    TakeItems();
    if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);  // so that the caller is waiting or has not yet looked
      done_.notify_one();
    }
  }
}

}  // namespace dspark::sim
