#include "sim/exec/gpu_reference_worker.h"

#include <utility>

namespace dspark::sim {

ReferenceWorker::ReferenceWorker() : thread_([this] { Loop(); }) {}

ReferenceWorker::~ReferenceWorker() {
  WaitNoThrow();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ReferenceWorker::Start(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = std::move(job);
    busy_ = true;
    error_ = nullptr;
  }
  cv_.notify_all();
}

void ReferenceWorker::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
  if (error_ != nullptr) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ReferenceWorker::WaitNoThrow() noexcept {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !busy_; });
  error_ = nullptr;
}

void ReferenceWorker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || busy_; });
    if (busy_) {
      std::function<void()> job = std::move(job_);
      lock.unlock();
      std::exception_ptr error;
      try {
        job();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      error_ = error;
      busy_ = false;
      cv_.notify_all();
      continue;
    }
    if (stop_) return;
  }
}

}  // namespace dspark::sim
