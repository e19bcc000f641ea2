// The CPU executor, the metadata check (docs/design.md s.6): every step's inputs go through the CPU
// reference (built from the device view) and through each selected implementation's emulated
// builder suite; every output field is compared exactly. Differences are counted per
// implementation, builder, field, case and kind (stale-host divergence, padding residue, bug),
// never folded together.
// A bug stops the run, naming the step, implementation, builder, field and first index.
// The check may run in several processes (run --jobs); its results are the same.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/suite/suite.h"
#include "sim/engine/step_executor.h"
#include "sim/exec/check_group.h"
#include "sim/exec/check_process.h"
#include "sim/model/step_plan.h"

namespace dspark::sim {

class CpuExecutor : public StepExecutor {
 public:
  // jobs: processes of the check (run --jobs): the implementations are split into that many
  // groups of consecutive ones (SplitIntoGroups); this process checks the first group, a
  // CheckProcess each other one, all in step (sim/exec/check_process.h). Where a process cannot
  // start, this one checks every implementation; 0 asks CheckProcess::DefaultJobs (only where
  // there are two implementations to split, as the run starts). dedup: builder-level deduplication within a
  // group (kernels/suite/builder_memo.h; run --no-dedup turns it off). Results depend on neither.
  explicit CpuExecutor(std::vector<Impl> impls, ModelConsts consts = {}, int32_t jobs = 1, bool dedup = true);
  ~CpuExecutor() override;

  absl::string_view name() const override { return "metadata_check"; }
  absl::Status Execute(const StepPlan& plan, const StepArrays& arrays) override;
  absl::Status Finish(nlohmann::json* section) override;

  const CheckTally* check_tally() const override { return &tally_; }
  double other_processes_cpu_s() const override {
    double s = 0;
    for (const auto& p : processes_) s += p->cpu_s();
    return s;
  }

  // Processes checking the run's steps, this one included, and the others' ids (for tests).
  int32_t processes() const { return 1 + static_cast<int32_t>(processes_.size()); }
  std::vector<pid_t> process_ids() const {
    std::vector<pid_t> ids;
    for (const auto& p : processes_) ids.push_back(p->pid());
    return ids;
  }

 private:
  std::vector<Impl> impls_;  // the check's order: this process's group, then each process's
  std::unique_ptr<CheckGroup> own_;
  std::vector<std::unique_ptr<CheckProcess>> processes_;
  CheckTally tally_;  // one entry per implementation, in impls_ order
};

}  // namespace dspark::sim
