// The small sweep the sweep tests share.
#pragma once

#include <string>

#include "sim/studies/sweep.h"

namespace dspark::testing_util {

// 2 batch sizes x 2 concurrencies x 2 modes x 2 impls = 16 points; adaptive at batch 2000 is
// invalid (4 points skipped), so 12 run.
inline sim::SweepConfig TinySweep(const std::string& out) {
  sim::SweepConfig c;
  c.workloads = {"batch1-512"};
  c.concurrency = {1, 2};
  c.batch_sizes = {2, 2000};
  c.num_requests = {2};
  c.modes = {sim::SpecMode::kNone, sim::SpecMode::kAdaptive};
  c.impls = {Impl::kChain, Impl::kFused};
  c.run_args = {"--no-check"};
  c.out_dir = out;
  c.progress = sim::ProgressStyle::kNone;
  return c;
}

}  // namespace dspark::testing_util
