// The CPU executor, the metadata check (docs/design.md s.6): every step's inputs go through the CPU
// reference (built from the device view) and through each selected implementation's emulated
// builder suite; every output field is compared exactly. Differences are counted per
// implementation, builder, field, case and kind (stale-host divergence, padding residue, bug),
// never folded together.
// A bug stops the run, naming the step, implementation, builder, field and first index.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/suite/suite.h"
#include "sim/engine/step_executor.h"
#include "sim/exec/worker_pool.h"
#include "sim/model/step_plan.h"

namespace dspark::sim {

class CpuExecutor : public StepExecutor {
 public:
  // jobs: threads that run the implementations of a step (run --jobs); dedup: builder-level
  // deduplication (kernels/suite/builder_memo.h; run --no-dedup turns it off). Results depend on
  // neither.
  explicit CpuExecutor(std::vector<Impl> impls, ModelConsts consts = {}, int32_t jobs = 1, bool dedup = true);

  absl::string_view name() const override { return "metadata_check"; }
  absl::Status Execute(const StepPlan& plan, const StepArrays& arrays) override;
  absl::Status Finish(nlohmann::json* section) override;

  struct KindCounts {
    int64_t steps = 0;  // steps with at least one differing field of this kind
    int64_t cells = 0;  // differing elements, summed over fields and steps
  };
  struct ImplStats {
    int64_t steps = 0;
    OpCounters counters;                                          // summed over steps
    std::array<KindCounts, 3> kinds{};                            // by MismatchKind
    std::map<std::string, std::array<int64_t, 3>> by_builder;     // cells by builder and kind
    std::map<std::string, std::array<int64_t, 3>> by_case;        // steps by case and kind
    std::map<std::string, std::array<int64_t, 3>> by_field;       // cells by builder.field and kind
    std::array<int64_t, kNumStepCases> steps_by_case{};
    std::array<int64_t, kNumStepCases> launches_by_case{};
    int64_t launches_in_graphs = 0;  // launches of the steps replayed from a recorded graph
  };

 private:
  std::vector<Impl> impls_;
  ModelConsts consts_;
  CpuSuite suite_;
  bool dedup_ = true;
  std::vector<int32_t> token_map_;  // the step's reference token map, read by the builder memo
  std::map<Impl, ImplStats> stats_;
  WorkerPool pool_;
};

}  // namespace dspark::sim
