// One group of the metadata check's implementations on a suite of its own: what one process of
// the check runs each step (sim/exec/cpu_executor.h runs the first group itself and hands each
// other group to a CheckProcess, sim/exec/check_process.h). A group's results do not depend on
// which implementations share it: grouping changes only which builders are deduplicated.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/suite/suite.h"

namespace dspark::sim {

class CheckGroup {
 public:
  // dedup: builder-level deduplication among the group's implementations
  // (kernels/suite/builder_memo.h; run --no-dedup turns it off).
  CheckGroup(std::vector<Impl> impls, ModelConsts consts, bool dedup);

  const std::vector<Impl>& impls() const { return impls_; }

  // The step through every implementation of the group: the reference from the device view,
  // then each implementation emulated and compared exactly. `results` gets one entry per
  // implementation, in impls() order (an implementation's own failure, e.g. out of host
  // memory); a non-OK return is the step's own (its sizes, its reference).
  absl::Status Run(const BatchInputs& in, std::vector<absl::StatusOr<SuiteRunResult>>* results);

 private:
  std::vector<Impl> impls_;
  ModelConsts consts_;
  bool dedup_;
  CpuSuite suite_;
  std::vector<int32_t> token_map_;  // the step's reference token map, read by the builder memo
};

// The implementations split into at most `parts` groups of consecutive implementations, as even
// in count as can be (the first groups one larger): consecutive implementations share the most
// builders (kernels/suite/builder_memo.h), so each group keeps its sharing.
std::vector<std::vector<Impl>> SplitIntoGroups(const std::vector<Impl>& impls, int32_t parts);

}  // namespace dspark::sim
