#include "sim/model/engine_clock.h"

#include <algorithm>

namespace dspark::sim {

void EngineClock::Wait(double until_us, StepTimes* t) {
  if (until_us > h_) {
    t->stall_us += until_us - h_;
    h_ = until_us;
  }
}

void EngineClock::Dispatch(int32_t launches, double gpu_us, StepTimes* t) {
  if (launches <= 0) {
    g_ = std::max(g_, h_) + gpu_us;
    return;
  }
  const double share = gpu_us / launches + p_.gpu_gap_us_per_launch;
  for (int32_t i = 0; i < launches; ++i) {
    h_ += p_.dispatch_us_per_launch;
    t->host_us += p_.dispatch_us_per_launch;
    g_ = std::max(g_, h_) + share;
  }
}

StepTimes EngineClock::Step(const StepWork& w, double now_us) {
  StepTimes t;
  h_ = std::max(h_, now_us);
  if (!w.joins_engine_step && p_.inflight_steps > 0 &&
      static_cast<int32_t>(ends_.size()) >= p_.inflight_steps)
    Wait(ends_[ends_.size() - static_cast<size_t>(p_.inflight_steps)], &t);
  t.stall_us = 0;  // waiting for a step slot is the previous steps' time, not a stall of this one
  t.start_us = h_;
  h_ += w.host_pre_us;
  t.host_us += w.host_pre_us;
  Dispatch(w.launches, w.meta_gpu_us, &t);
  for (int32_t s = 0; s < w.syncs; ++s) {
    Wait(g_, &t);
    h_ += p_.sync_us;
    t.host_us += p_.sync_us;
  }
  if (w.extra_launches > 0 || w.extra_gpu_us > 0) Dispatch(w.extra_launches, w.extra_gpu_us, &t);
  h_ += p_.graph_launch_us;
  t.host_us += p_.graph_launch_us;
  g_ = std::max(g_, h_) + w.forward_us;
  // A target step's sampled tokens exist once its forward (and sampling) ends: that copy is
  // what the batch queue waits on, not the draft that follows in the same engine step.
  if (!w.joins_engine_step) {
    ends_.push_back(g_);
    while (static_cast<int32_t>(ends_.size()) > std::max(1, p_.inflight_steps)) ends_.pop_front();
  }
  if (w.stage_sync) {
    Wait(last_copy_us_, &t);
    h_ += p_.sync_us;
    t.host_us += p_.sync_us;
    Dispatch(p_.stage_launches, 0.0, &t);
    last_copy_us_ = g_;
  }
  t.end_us = g_;
  return t;
}

}  // namespace dspark::sim
