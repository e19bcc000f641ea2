#include "sim/exec/worker_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dspark::sim {

namespace {

void Relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or kSpin has passed; whether done() held.
template <typename F>
bool SpinFor(F&& done) {
  const auto until = std::chrono::steady_clock::now() + WorkerPool::kSpin;
  for (int32_t i = 0;; ++i) {
    if (done()) return true;
    Relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return done();
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
    generation_.fetch_add(1);  // last: a spinning worker reads fn_ and n_ once it sees it
  }
  start_.notify_all();
  TakeItems();
  if (!SpinFor([this] { return busy_.load() == 0; })) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return busy_.load() == 0; });
  }
  // Every worker has left TakeItems (busy_ is decremented after it, under mu_).
  std::lock_guard<std::mutex> lock(mu_);
  fn_ = nullptr;
}

void WorkerPool::Work() {
  uint64_t seen = 0;
  for (;;) {
    const auto started = [&] { return stop_.load() || generation_.load() != seen; };
    if (!SpinFor(started)) {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, started);
    }
    {
      // The task's fields were written under mu_ before generation_ moved: taking mu_ orders
      // this worker's reads after them.
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      seen = generation_.load();
    }
    TakeItems();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (busy_.fetch_sub(1) == 1) done_.notify_one();
    }
  }
}

}  // namespace dspark::sim
