#include "sim/exec/cpu_executor.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "kernels/reference/token_map.h"
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
    : impls_(std::move(impls)), consts_(consts), suite_(consts),
      pool_(std::min<int32_t>(std::max(jobs, 1), static_cast<int32_t>(impls_.size()))) {
  KeepFreedBlocks();
  for (Impl impl : impls_) tally_.Of(impl);
  if (dedup) suite_.EnableDedup(impls_);
  dedup_ = dedup;
}

namespace {

// f()'s result, or ResourceExhausted where it ran out of host memory past the pre-flight
// (CheckCpuCheckMemory): an error, not a crash.
template <typename T, typename F>
absl::StatusOr<T> OrOutOfMemory(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of host memory in the metadata check");
  }
}

}  // namespace

absl::Status CpuExecutor::Execute(const StepPlan& plan, const StepArrays& arrays) {
  if (impls_.empty()) return absl::OkStatus();
  const BatchInputs inputs = ToBatchInputs(plan, arrays);
  const int c = static_cast<int>(plan.step_case);
  const std::string case_name(StepCaseName(plan.step_case));
  const auto in_step = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrFormat("step %d (%s): %s", plan.index, case_name, s.message()));
  };
  // One suite for every implementation (each its own buffers and backend) and one reference per
  // step, shared by every implementation: it is built from the device view and the layout.
  if (absl::Status s = suite_.Prepare(inputs.sizes); !s.ok()) return in_step(s);
  const int32_t n = static_cast<int32_t>(impls_.size());
  SuiteReference want;
  std::vector<absl::StatusOr<SuiteRunResult>> results(impls_.size(), absl::UnknownError("not run"));
  if (!dedup_) {  // each implementation on its own: the reference first, then run and compare
    want = ComputeSuiteReference(inputs, suite_.layout(), consts_);
    pool_.Run(n, [&](int32_t i) {
      results[i] = OrOutOfMemory<SuiteRunResult>([&] { return suite_.Run(impls_[i], inputs, &want); });
    });
  } else {
    // One task of 2n + 1 items. Items [0, n + 1): the reference is computed while the
    // implementations run (only its token map is needed before). Items [n + 1, 2n + 1): each
    // implementation compared, once the reference and its own emulation are done (its buffers,
    // and the shared builders' it reads, are final then: a sharer's emulation returns only after
    // the leader's builder has). Items are taken in index order, so a compare waits only on
    // items that running threads already hold. Item order (which thread takes what, never the
    // results): the first implementation leads most shared builders, so it goes first, with the
    // reference next to it; then the leader of the rest (impl_of); the compares in the same order.
    token_map_ = ref::TokenToReq(inputs.device.query_start_loc, inputs.sizes.num_reqs, inputs.sizes.num_tokens);
    if (absl::Status s = suite_.BeginStep(inputs, token_map_); !s.ok()) return in_step(s);
    std::vector<absl::StatusOr<OpCounters>> counters(impls_.size(), absl::UnknownError("not run"));
    absl::StatusOr<bool> want_made = absl::UnknownError("not run");
    std::atomic<bool> want_ready{false};
    const std::unique_ptr<std::atomic<bool>[]> emulated(new std::atomic<bool>[impls_.size()]);
    for (int32_t i = 0; i < n; ++i) emulated[i] = false;
    const auto await = [](const std::atomic<bool>& flag) {
      for (int32_t spins = 0; !flag.load(std::memory_order_acquire); ++spins) {
        if ((spins & 63) == 63) std::this_thread::yield();
      }
    };
    // 0, n - 2, n - 1, n - 3, ..., 1: the first implementation leads what most of the others
    // share (in `all` vllm-pre47474: SWA, MLA, ring, the old indexer chain); the one next to the
    // reference leads what it does not run (vllm-0.34: the fused indexer), so that neither thread
    // waits on the other's builder; then fused-suite, which shares nothing.
    const auto impl_of = [n](int32_t j) {
      if (j == 0 || n < 3) return j;
      if (j <= 2) return n - 3 + j;
      return n - j;
    };
    pool_.Run(2 * n + 1, [&](int32_t item) {
      if (item == 1) {
        want_made = OrOutOfMemory<bool>([&] {
          want = ComputeSuiteReference(inputs, suite_.layout(), consts_);
          return true;
        });
        want_ready.store(true, std::memory_order_release);
        return;
      }
      if (item <= n) {
        const int32_t i = impl_of(item == 0 ? 0 : item - 1);
        counters[i] = OrOutOfMemory<OpCounters>([&] { return suite_.Emulate(impls_[i], inputs); });
        emulated[i].store(true, std::memory_order_release);
        return;
      }
      const int32_t i = impl_of(item - n - 1);
      await(want_ready);
      await(emulated[i]);
      if (!want_made.ok()) {
        results[i] = want_made.status();
      } else if (!counters[i].ok()) {
        results[i] = counters[i].status();
      } else {
        results[i] = OrOutOfMemory<SuiteRunResult>(
            [&] { return SuiteRunResult{*counters[i], suite_.Compare(impls_[i], inputs, want)}; });
      }
    });
    if (!want_made.ok()) return in_step(want_made.status());
  }
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
