// The TPOT loop's host-side parts (sim/studies/tpot_loop.cu): spinning on the host clock, the
// scheduler's request events, the steps' completion times on the host clock and the closed-loop
// client. Not part of the loop's interface (tpot_loop.cuh).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "kernels/common/cuda_check.h"
#include "sim/model/scheduler.h"

namespace dspark::sim::tpot_internal {

using Clock = std::chrono::steady_clock;

inline void SpinUntil(Clock::time_point until) {
  while (Clock::now() < until) {
  }
}

inline Clock::time_point After(Clock::time_point t, double us) {
  return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(us));
}

// The scheduler's request events, with the step that produced them (their time is that step's
// completion, known only once its event has completed).
class EventLog final : public SchedulerEvents {
 public:
  enum class Kind { kArrival, kTokens, kVerification, kFinished, kPreempted };
  struct Event {
    Kind kind;
    int32_t req;
    int64_t step;     // producing step (kTokens, kFinished)
    double time_s;    // [s] kArrival, kPreempted
    int32_t a, b, c;  // tokens | proposed, verified, accepted
  };

  int64_t current_step = 0;
  double now_s = 0;
  std::vector<Event> events;
  std::vector<int32_t> finished_now;  // requests that finished in the step being committed

  void Arrival(int32_t req, double t) { events.push_back({Kind::kArrival, req, -1, t, 0, 0, 0}); }
  void OnTokens(int32_t req, double, int32_t tokens) override {
    events.push_back({Kind::kTokens, req, current_step, 0, tokens, 0, 0});
  }
  void OnVerification(int32_t req, int32_t proposed, int32_t verified, int32_t accepted) override {
    events.push_back({Kind::kVerification, req, current_step, 0, proposed, verified, accepted});
  }
  void OnFinished(int32_t req, double) override {
    events.push_back({Kind::kFinished, req, current_step, 0, 0, 0, 0});
    finished_now.push_back(req);
  }
  void OnPreempted(int32_t req, double) override { events.push_back({Kind::kPreempted, req, -1, now_s, 0, 0, 0}); }
};

// Completion times of the steps' events on the host's clock. Times are chained from an origin
// event whose host time is known (recorded and waited for at the start), re-based every 0.5 s so
// that cudaEventElapsedTime's float milliseconds stay precise to well under a microsecond.
// This object owns CUDA events that are destroyed exactly once.
class StepClock {
 public:
  StepClock() = default;
  ~StepClock() {
    for (auto& [step, e] : pending_) CUDA_CHECK_NOTHROW(cudaEventDestroy(e));
    for (cudaEvent_t e : free_) CUDA_CHECK_NOTHROW(cudaEventDestroy(e));
    if (origin_ != nullptr) CUDA_CHECK_NOTHROW(cudaEventDestroy(origin_));
  }
  StepClock(const StepClock&) = delete;
  StepClock& operator=(const StepClock&) = delete;

  // Records the origin on `stream`, waits for it, and returns the host time that is t = 0.
  absl::StatusOr<Clock::time_point> Start(cudaStream_t stream) {
    CUDA_RETURN_IF_ERROR(cudaEventCreate(&origin_));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(origin_, stream));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(origin_));
    origin_s_ = 0;
    return Clock::now();
  }

  absl::StatusOr<cudaEvent_t> Record(int64_t step, cudaStream_t stream) {
    cudaEvent_t e = nullptr;
    if (!free_.empty()) {
      e = free_.back();
      free_.pop_back();
    } else {
      CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
    }
    CUDA_RETURN_IF_ERROR(cudaEventRecord(e, stream));
    if (static_cast<size_t>(step) >= time_s_.size()) time_s_.resize(static_cast<size_t>(step) + 1, -1.0);
    pending_.emplace_back(step, e);
    return e;
  }

  // Resolves every completed event at the front (events complete in step order).
  absl::Status Poll() {
    while (!pending_.empty()) {
      const cudaError_t q = cudaEventQuery(pending_.front().second);
      if (q == cudaErrorNotReady) {
        // Not an error, but the runtime records it as the last error: clear it, or the next
        // launch check (cudaGetLastError) would report it.
        (void)cudaGetLastError();
        break;
      }
      CUDA_RETURN_IF_ERROR(q);
      DS_RETURN_IF_ERROR(ResolveFront());
    }
    return absl::OkStatus();
  }

  // Waits until `step`'s event completed and resolves up to it.
  absl::Status WaitFor(int64_t step) {
    while (!pending_.empty() && pending_.front().first <= step) {
      CUDA_RETURN_IF_ERROR(cudaEventSynchronize(pending_.front().second));
      DS_RETURN_IF_ERROR(ResolveFront());
    }
    return absl::OkStatus();
  }

  absl::Status Drain() { return WaitFor(INT64_MAX); }

  // [s] since the origin; -1 while unresolved.
  double time_s(int64_t step) const {
    return static_cast<size_t>(step) < time_s_.size() ? time_s_[static_cast<size_t>(step)] : -1.0;
  }

 private:
  absl::Status ResolveFront() {
    auto [step, e] = pending_.front();
    pending_.pop_front();
    float ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, origin_, e));
    const double t = origin_s_ + 1e-3 * static_cast<double>(ms);
    time_s_[static_cast<size_t>(step)] = t;
    if (t - origin_s_ > 0.5) {
      free_.push_back(origin_);
      origin_ = e;
      origin_s_ = t;
    } else {
      free_.push_back(e);
    }
    return absl::OkStatus();
  }

  cudaEvent_t origin_ = nullptr;
  double origin_s_ = 0;
  std::deque<std::pair<int64_t, cudaEvent_t>> pending_;
  std::vector<cudaEvent_t> free_;
  std::vector<double> time_s_;
};

// Closed-loop client: `slots` requests in flight (all at once when 0).
class ClientSlots {
 public:
  ClientSlots(int32_t concurrency, size_t n) : n_(n), slots_(concurrency > 0 ? concurrency : static_cast<int64_t>(n)) {}
  template <class SubmitFn>
  void SubmitAvailable(const SubmitFn& submit) {
    while (next_ < n_ && slots_ > 0) {
      --slots_;
      submit(static_cast<int32_t>(next_++));
    }
  }
  void Free(size_t count) { slots_ += static_cast<int64_t>(count); }
  bool more() const { return next_ < n_; }

 private:
  size_t n_;
  size_t next_ = 0;
  int64_t slots_;
};

}  // namespace dspark::sim::tpot_internal
