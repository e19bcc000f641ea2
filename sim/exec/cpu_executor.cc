#include "sim/exec/cpu_executor.h"

#include <algorithm>
#include <memory>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "sim/exec/check_memory.h"
#include "sim/exec/executor_registry.h"

namespace dspark::sim {

namespace {

// A checked step allocates and frees its reference and host plans (vectors up to megabytes)
// every step. glibc would return such blocks to the system (mmap, or the heap trimmed) and fault
// them in again the next step: a third of the default workload's CPU time was page faults. Both
// thresholds pinned high keep the freed blocks for the next step (RSS: the peak step's, which
// the check holds anyway). Process-wide; the run's results do not depend on it.
void KeepFreedBlocks() {
#if defined(__GLIBC__)
  static const bool once = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's ceiling (DEFAULT_MMAP_THRESHOLD_MAX, 64-bit)
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return true;
  }();
  static_cast<void>(once);
#endif
}

}  // namespace

CpuExecutor::CpuExecutor(std::vector<Impl> impls, ModelConsts consts, int32_t jobs, bool dedup)
    : impls_(std::move(impls)) {
  KeepFreedBlocks();
  for (Impl impl : impls_) tally_.Of(impl);
  if (jobs == 0 && impls_.size() > 1) jobs = CheckProcess::DefaultJobs();
  const std::vector<std::vector<Impl>> groups = SplitIntoGroups(impls_, jobs);
  for (size_t g = 1; g < groups.size(); ++g) {
    absl::StatusOr<std::unique_ptr<CheckProcess>> p = CheckProcess::Start(groups[g], consts, dedup);
    if (!p.ok()) {  // this process checks them all; the results are the same
      processes_.clear();
      break;
    }
    processes_.push_back(*std::move(p));
  }
  own_ = std::make_unique<CheckGroup>(processes_.empty() ? impls_ : groups[0], consts, dedup);
}

CpuExecutor::~CpuExecutor() = default;

absl::Status CpuExecutor::Execute(const StepPlan& plan, const StepArrays& arrays) {
  if (impls_.empty()) return absl::OkStatus();
  const BatchInputs inputs = ToBatchInputs(plan, arrays);
  const std::string case_name(StepCaseName(plan.step_case));
  const auto in_step = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrFormat("step %d (%s): %s", plan.index, case_name, s.message()));
  };
  // The other processes start on the step, this one checks its own group meanwhile, then it
  // collects theirs: every result is in before the step counts (the engine shows a step to the
  // observers only once every executor returned).
  size_t submitted = 0;
  absl::Status failed;
  while (submitted < processes_.size() && failed.ok()) {
    failed = processes_[submitted]->Submit(inputs, arrays);
    if (failed.ok()) ++submitted;
  }
  std::vector<absl::StatusOr<SuiteRunResult>> results, theirs;
  absl::Status own = own_->Run(inputs, &results);
  for (size_t p = 0; p < submitted; ++p) {
    absl::Status collected = processes_[p]->Collect(&theirs);
    if (failed.ok() && !collected.ok()) failed = collected;
    for (auto& r : theirs) results.push_back(std::move(r));
  }
  if (!own.ok()) return in_step(own);
  if (!failed.ok()) return in_step(failed);
  for (size_t i = 0; i < impls_.size(); ++i) {
    const Impl impl = impls_[i];
    absl::StatusOr<SuiteRunResult>& result = results[i];
    if (!result.ok())
      return absl::Status(result.status().code(),
                          absl::StrFormat("step %d (%s), impl %s: %s", plan.index, case_name, ImplName(impl),
                                          result.status().message()));
    ImplTally& st = tally_.Of(impl);
    st.CountStep(plan.step_case, result->counters);
    KindCounts step_has{};
    for (const FieldMismatch& m : result->mismatches) {
      if (m.kind == MismatchKind::kBug)
        return absl::InternalError(absl::StrFormat(
            "metadata check: BUG in impl %s at step %d (%s): builder %s, field %s, first differing index %d "
            "(expected %d, got %d; %d cells differ)",
            ImplName(impl), plan.index, case_name, m.builder, m.field, m.index, m.expected, m.actual, m.count));
      st.CountMismatch(m, &step_has);
    }
    st.CountKinds(plan.step_case, step_has);
  }
  return absl::OkStatus();
}

absl::Status CpuExecutor::Finish(nlohmann::json* section) {
  nlohmann::json& out = *section;
  out["kinds"] = {"stale_host", "padding_residue", "bug"};
  out["units"] = "stale_host / padding_residue / bug and by_case: steps with at least one differing field; "
                 "divergence.*.cells: differing elements";
  out["note"] =
      "Outputs of every implementation compared exactly with the CPU reference built from the device view. "
      "stale_host: a host-boundary implementation read stale host state; padding_residue: the old chain "
      "zeroes only column 0 of padding block-table rows; bug: anything else (the run stops on one).";
  for (const auto& [impl, st] : tally_.impls) {
    const auto per_step = [&](int64_t v) { return st.steps ? static_cast<double>(v) / st.steps : 0.0; };
    nlohmann::json j;
    j["steps_checked"] = st.steps;
    j["reads_host_boundaries"] = ReadsHostBoundaries(impl);
    j["graph_capturable"] = GraphCapturable(impl);
    j["launches_per_step"] = per_step(st.counters.Launches());
    j["kernels_per_step"] = per_step(st.counters.kernels);
    j["h2d_copies_per_step"] = per_step(st.counters.h2d_copies);
    j["host_syncs_per_step"] = per_step(st.counters.host_syncs);
    j["host_array_ops_per_step"] = per_step(st.counters.host_array_ops);
    if (impl.info().execution != MetadataExecution::kEager) {
      // How vLLM runs it (vllm-0.34): replayed steps are one graph launch each, holding
      // launches_in_graphs; the other steps' launches are issued one by one.
      j["execution"] = std::string(MetadataExecutionName(impl.info().execution));
      j["graph_launches_per_step"] = per_step(st.counters.graph_launches);
      j["launches_in_graphs_per_step"] = per_step(st.launches_in_graphs);
      j["eager_launches_per_step"] = per_step(st.counters.Launches() - st.launches_in_graphs);
    }
    for (int k = 0; k < kNumMismatchKinds; ++k) {
      const char* kind = kMismatchKindKeys[k];
      j["divergence"][kind] = {{"steps", st.steps_with[k]}, {"cells", st.cells[k]}};
      for (const auto& [b, v] : st.cells_by_builder)
        if (v[k]) j["divergence"][kind]["cells_by_builder"][b] = v[k];
      for (const auto& [f, v] : st.cells_by_field)
        if (v[k]) j["divergence"][kind]["cells_by_field"][f] = v[k];
      for (int c = 0; c < kNumStepCases; ++c)
        if (st.steps_with_by_case[c][k])
          j["divergence"][kind]["steps_by_case"][std::string(StepCaseName(static_cast<StepCase>(c)))] =
              st.steps_with_by_case[c][k];
    }
    // The flat shape sweep rows and plots read: steps with a difference, per kind and case.
    for (int k = 0; k < kNumMismatchKinds; ++k) j[kMismatchKindKeys[k]] = st.steps_with[k];
    j["by_case"] = nlohmann::json::object();
    for (int c = 0; c < kNumStepCases; ++c) {
      if (!st.steps_by_case[c]) continue;
      const std::string cs(StepCaseName(static_cast<StepCase>(c)));
      for (int k = 0; k < kNumMismatchKinds; ++k) j["by_case"][cs][kMismatchKindKeys[k]] = st.steps_with_by_case[c][k];
    }
    for (int c = 0; c < kNumStepCases; ++c) {
      if (!st.steps_by_case[c]) continue;
      const std::string cs(StepCaseName(static_cast<StepCase>(c)));
      j["cases"][cs] = {{"steps", st.steps_by_case[c]},
                        {"launches_per_step", static_cast<double>(st.launches_by_case[c]) / st.steps_by_case[c]}};
    }
    out["impls"][std::string(ImplName(impl))] = std::move(j);
  }
  return absl::OkStatus();
}

namespace {

const RegisterExecutor kRegisterCpuExecutor(
    "metadata-check", kCpuExecutorOrder,
    [](const ExecutorRequest& request) -> absl::StatusOr<std::unique_ptr<StepExecutor>> {
      if (!request.check || request.impls.empty()) return std::unique_ptr<StepExecutor>();
      DS_RETURN_IF_ERROR(CheckCpuCheckMemory(request, AvailableHostMemory()));
      return std::unique_ptr<StepExecutor>(
          std::make_unique<CpuExecutor>(request.impls, request.consts, request.jobs, request.dedup));
    });

}  // namespace

}  // namespace dspark::sim
