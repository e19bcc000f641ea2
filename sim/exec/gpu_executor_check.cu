// The GPU executor's check of one step (gpu_executor.cuh, step 3): one CPU reference per step,
// every implementation compared over every defined region on the device, and the
// differences classified and counted exactly as CompareSuite classifies them.
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "sim/exec/gpu_executor_state.cuh"

namespace dspark::sim {

using namespace gpu_executor_internal;

absl::Status GpuExecutor::State::PrepareCheck(const BatchInputs& guess, const SuiteReference* want,
                                              StepDelta& delta) {
  if (check == nullptr) return absl::FailedPreconditionError("the executor was created without its check");
  const auto t0 = std::chrono::steady_clock::now();
  absl::Status s = check->Prepare(*suite, options.impls, want, &guess);
  delta.check_us += MicrosSince(t0);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("region check: ", s.message()));
  return absl::OkStatus();
}

absl::Status GpuExecutor::State::EnqueueCheck(StepDelta& delta) {
  if (check == nullptr) return absl::FailedPreconditionError("the executor was created without its check");
  const auto t0 = std::chrono::steady_clock::now();
  absl::Status s = check->Enqueue();
  delta.check_us += MicrosSince(t0);
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat("region check: ", s.message()));
  return absl::OkStatus();
}

absl::Status GpuExecutor::State::FinishCheck(const StepPlan& plan, StepDelta& delta) {
  const std::string case_name(StepCaseName(plan.step_case));
  const auto t0 = std::chrono::steady_clock::now();
  if (check == nullptr) return absl::FailedPreconditionError("the executor was created without its check");
  absl::StatusOr<std::vector<SuiteRunResult>> finished = check->Finish();
  if (!finished.ok())
    return absl::Status(finished.status().code(), absl::StrCat("region check: ", finished.status().message()));
  const std::vector<SuiteRunResult>& results = *finished;
  delta.check_us += MicrosSince(t0);

  std::map<Impl, size_t> row_of;
  for (size_t i = 0; i < delta.rows.size(); ++i) row_of[delta.rows[i].impl] = i;
  for (size_t i = 0; i < options.impls.size(); ++i) {
    const Impl impl = options.impls[i];
    ExecutorImplStats& s = delta.stats[impl];
    const std::string impl_name(ImplName(impl));
    KindCounts has{};
    for (const FieldMismatch& m : results[i].mismatches) {
      const int k = static_cast<int>(m.kind);
      if (m.kind == MismatchKind::kBug)
        return absl::InternalError(absl::StrFormat(
            "BUG in impl %s: builder %s, field %s, first differing index %d (expected %d, got %d; %d cells "
            "differ)%s",
            impl_name, m.builder, m.field, m.index, m.expected, m.actual, m.count,
            ReadsHostBoundaries(impl) ? " with a host view equal to the device's" : ""));
      s.check.CountMismatch(m, &has);
      delta.rows[row_of[impl]].cells[k] += m.count;
      if (m.kind == MismatchKind::kStaleHost && s.first_stale_host.empty())
        s.first_stale_host = absl::StrFormat(
            "step %d (%s): builder %s, field %s, first differing index %d (expected %d, got %d; %d cells)",
            plan.index, case_name, m.builder, m.field, m.index, m.expected, m.actual, m.count);
    }
    s.check.CountKinds(plan.step_case, has);
  }
  return absl::OkStatus();
}

}  // namespace dspark::sim
