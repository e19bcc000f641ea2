// The GPU executor on a device (skipped without one):
//  - a short simulated adaptive run through every implementation: fused, fused-suite and
//    device-chain equal the reference at every step, chain and cached diverge where the host
//    view is stale, and the top-B allocation ran on the device;
//  - the device top-B kernel rewrites the staged host boundaries into the plan's device view and
//    agrees with the independent CPU reference;
//  - one graph per GraphKey: captures == distinct keys (the suite's), replays == padded steps,
//    one key per padded size for an implementation that reads no host value;
//  - the executor's region check on the device gives, at every step, the counts,
//    classifications and rows of the whole-buffer oracle (WholeBufferOracle below: every output
//    buffer downloaded and compared on the CPU, the old check path).
// Buffer sizing (CapacityFor) runs without a device. The TPOT loop and the calibration fit:
// tests/studies/test_tpot_calibration_gpu.cu; `bench`: tests/cli/test_bench_gpu.cu.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/reference/topb_alloc.h"
#include "kernels/suite/metadata_graph.h"
#include "sim/model/acceptance.h"
#include "sim/engine/engine.h"
#include "sim/exec/gpu_executor.cuh"
#include "sim/model/time_model.h"
#include "tests/common/whole_buffer_check.cuh"
#include "tests/common/gpu_test_util.cuh"

namespace dspark::sim {
namespace {

// A small adaptive workload: a few mid-sized prompts (two chunked), outputs long enough for many
// verification / draft iterations, all arriving at once.
std::vector<RequestSpec> SmallWorkload() {
  const int32_t prompts[] = {300, 1100, 77, 640, 2500, 129, 900, 45};
  const int32_t outputs[] = {40, 33, 57, 21, 36, 48, 29, 64};
  std::vector<RequestSpec> w;
  for (int i = 0; i < 8; ++i) w.push_back({i, 0.0, prompts[i], outputs[i], {}});
  return w;
}

SchedulerConfig SmallScheduler(SpecMode mode) {
  SchedulerConfig c;
  c.mode = mode;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 4096;
  c.bt_stride_pad = 3;  // a row stride wider than the width
  return c;
}

// Forwards each step to the executor, and records what the test checks independently.
class ExecutorObserver final : public StepObserver {
 public:
  explicit ExecutorObserver(GpuExecutor* executor) : executor_(executor) {}
  absl::string_view name() const override { return "test_gpu_executor"; }
  absl::Status OnStep(const StepPlan& plan) override {
    if (plan.graph_padded) {
      ++padded_steps;
      const BatchSizes z = plan.sizes();
      // A draft step's graph differs from a verification's of the same sizes: its SWA decode
      // rows are non-causal (the executor's graph key holds the causal flag too).
      sizes.insert(std::make_tuple(z.num_reqs, z.num_tokens, z.num_decodes, z.num_decode_tokens, z.capacity,
                                   z.bt_width, z.bt_stride, !plan.draft_step));
    }
    auto arrays = plan.Arrays();
    if (!arrays.ok()) return arrays.status();
    if (plan.graph_padded) {
      const BatchSizes z = plan.sizes();
      sizes_and_host_total.insert(std::make_tuple(z.num_reqs, z.num_tokens, z.num_decodes, z.num_decode_tokens,
                                                  z.capacity, z.bt_width, z.bt_stride, !plan.draft_step,
                                                  (*arrays)->qsl_host.back()));
    }
    if ((*arrays)->topb.present) {
      ++adaptive_verifications;
      stale_host_qsl += (*arrays)->qsl_host != (*arrays)->qsl_device;
    }
    stale_any += plan.host_view_stale;
    vllm_keyed += VllmMetadataKey(ToBatchInputs(plan, **arrays)).has_value();
    return executor_->Execute(plan);
  }
  int64_t padded_steps = 0, adaptive_verifications = 0, stale_host_qsl = 0, stale_any = 0;
  int64_t vllm_keyed = 0;  // steps vLLM 0.33.0+ replays from a recorded metadata graph
  std::set<std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, bool>> sizes;
  // The same with the host token total (the real token count): what a host-total reader's
  // graph must not freeze.
  std::set<std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, bool, int32_t>>
      sizes_and_host_total;

 private:
  GpuExecutor* executor_;
};

struct ExecutorRun {
  std::unique_ptr<GpuExecutor> executor;
  std::unique_ptr<ExecutorObserver> observer;
  int64_t steps = 0;
};

ExecutorRun RunExecutor(SpecMode mode, const std::vector<Impl>& impls, uint64_t seed,
                        std::function<absl::Status(const StepPlan&, GpuSuite&)> after_check = {}) {
  ExecutorRun run;
  const SchedulerConfig sc = SmallScheduler(mode);
  static const std::vector<RequestSpec> workload = SmallWorkload();
  auto preset = AcceptancePreset("default", sc.spec_k);
  EXPECT_TRUE(preset.ok()) << preset.status();
  if (!preset.ok()) return run;
  const AcceptanceModel acceptance(*preset, sc.spec_k);
  const TimeModel time_model(DefaultTimeModelParams());
  GpuExecutorOptions o;
  o.impls = impls;
  o.capacity = CapacityFor(sc);
  o.cold_l2 = false;
  o.after_check = std::move(after_check);
  auto ex = GpuExecutor::Create(o);
  EXPECT_TRUE(ex.ok()) << ex.status();
  if (!ex.ok()) return run;
  run.executor = *std::move(ex);
  run.observer = std::make_unique<ExecutorObserver>(run.executor.get());
  EngineOptions eo;
  Engine engine(sc, workload, acceptance, time_model, eo, seed);
  engine.AddObserver(run.observer.get());
  const absl::Status s = engine.Run();
  EXPECT_TRUE(s.ok()) << s;
  run.steps = engine.steps();
  return run;
}

// Every registered implementation (read at run time: registrations happen in static initialisers).
const std::vector<Impl>& Every() { return ImplsOfModel(ModelKind::kV41); }

TEST(GpuExecutor, AdaptiveRunExactForDeviceImplsStaleForHostImpls) {
  DS_REQUIRE_GPU();
  ExecutorRun run = RunExecutor(SpecMode::kAdaptive, Every(), 7);
  ASSERT_NE(run.executor, nullptr);
  ASSERT_GT(run.steps, 20);
  EXPECT_EQ(run.executor->steps(), run.steps);
  ASSERT_GT(run.observer->adaptive_verifications, 0);
  EXPECT_EQ(run.executor->topb_launches(), run.observer->adaptive_verifications);
  EXPECT_GT(run.executor->topb_stale_steps(), 0) << "no adaptive step had a stale host split";
  EXPECT_EQ(run.executor->topb_stale_steps(), run.observer->stale_host_qsl);
  for (Impl impl : {Impl::kDeviceChain, Impl::kFused, Impl::kFusedSuite}) {
    const ExecutorImplStats& s = run.executor->stats(impl);
    SCOPED_TRACE(std::string(ImplName(impl)));
    EXPECT_EQ(s.check.steps, run.steps);
    // No stale-host cell and no bug; (c)'s old indexer chain may leave padding residue.
    EXPECT_EQ(s.check.cells[static_cast<int>(MismatchKind::kStaleHost)], 0);
    EXPECT_EQ(s.check.cells[static_cast<int>(MismatchKind::kBug)], 0);
    if (!impl.info().traits.old_indexer_chain)
      EXPECT_EQ(s.check.cells[static_cast<int>(MismatchKind::kPaddingResidue)], 0);
    EXPECT_GT(s.graph_replays, 0);
    EXPECT_EQ(s.graph_replays + s.eager_runs, run.steps);
    EXPECT_EQ(s.check.counters.host_syncs, 0);
    EXPECT_EQ(static_cast<int64_t>(s.gpu_us.size()), run.steps);
  }
  for (Impl impl : {Impl::kChain, Impl::kCached}) {
    const ExecutorImplStats& s = run.executor->stats(impl);
    SCOPED_TRACE(std::string(ImplName(impl)));
    EXPECT_GT(s.check.cells[static_cast<int>(MismatchKind::kStaleHost)], 0);
    EXPECT_GT(s.check.steps_with[static_cast<int>(MismatchKind::kStaleHost)], 0);
    EXPECT_LE(s.check.steps_with[static_cast<int>(MismatchKind::kStaleHost)], run.observer->stale_any);
    EXPECT_EQ(s.check.cells[static_cast<int>(MismatchKind::kBug)], 0);
    EXPECT_FALSE(s.first_stale_host.empty());
    EXPECT_EQ(s.graph_replays, 0) << "host-boundary implementations run eagerly";
    EXPECT_EQ(s.eager_runs, run.steps);
    EXPECT_EQ(s.staging_syncs, run.steps);
  }
  const std::string csv = run.executor->StepsCsv();
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + run.steps * static_cast<int64_t>(Every().size()));
  EXPECT_NE(csv.find(",dspark_adaptive_verify,fused-suite,"), std::string::npos);
  const nlohmann::json summary = run.executor->Summary();
  for (Impl impl : Every()) {
    const nlohmann::json& j = summary["impls"][std::string(ImplName(impl))];
    for (const char* key : {"stale_host", "padding_residue", "bug", "gpu_us", "launches_per_step", "by_case"})
      EXPECT_TRUE(j.contains(key)) << ImplName(impl) << " lacks " << key;
  }
}

// The test oracle of the executor's check: after every step, every implementation's whole
// output buffers and the device truth downloaded (WholeBufferCheck, tests/common/whole_buffer_check.cuh) and compared on the CPU
// (CompareSuite), then classified and counted as the executor counts: per implementation and
// kind the differing cells, the steps with one (overall and by case) and the cells by
// builder.field, the first stale-host divergence, and per (step, implementation) the cells of
// each kind (gpu_steps.csv's last three columns).
class WholeBufferOracle {
 public:
  struct Tally {
    std::array<int64_t, 3> cells{}, steps{};
    std::array<std::array<int64_t, 3>, kNumStepCases> steps_by_case{};
    std::map<std::string, std::array<int64_t, 3>> cells_by_field;
    std::string first_stale_host;
  };

  absl::Status Check(const StepPlan& plan, GpuSuite& suite, const std::vector<Impl>& impls) {
    for (Impl impl : impls) {
      absl::StatusOr<SuiteRunResult> r = WholeBufferCheck(suite, impl);
      if (!r.ok()) return r.status();
      Tally& t = tally[impl];
      std::array<int64_t, 3> row{};
      std::array<bool, 3> has{};
      for (const FieldMismatch& m : r->mismatches) {
        const int k = static_cast<int>(m.kind);
        has[k] = true;
        t.cells[k] += m.count;
        row[k] += m.count;
        t.cells_by_field[m.builder + "." + m.field][k] += m.count;
        if (m.kind == MismatchKind::kStaleHost && t.first_stale_host.empty())
          t.first_stale_host = absl::StrFormat(
              "step %d (%s): builder %s, field %s, first differing index %d (expected %d, got %d; %d cells)",
              plan.index, std::string(StepCaseName(plan.step_case)), m.builder, m.field, m.index, m.expected,
              m.actual, m.count);
      }
      for (int k = 0; k < 3; ++k)
        if (has[k]) {
          ++t.steps[k];
          ++t.steps_by_case[static_cast<int>(plan.step_case)][k];
        }
      rows.push_back(absl::StrCat(plan.index, ",", std::string(ImplName(impl)), ",", row[0], ",", row[1], ",", row[2]));
    }
    return absl::OkStatus();
  }

  std::map<Impl, Tally> tally;
  std::vector<std::string> rows;  // "step,impl,stale_host,padding_residue,bug"
};

// StepsCsv's rows as WholeBufferOracle::rows writes them.
std::vector<std::string> CellRows(const std::string& csv) {
  std::vector<std::string> out;
  bool header = true;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipEmpty())) {
    if (header) {
      header = false;
      continue;
    }
    const std::vector<absl::string_view> c = absl::StrSplit(line, ',');
    out.push_back(absl::StrCat(c[0], ",", c[2], ",", c[c.size() - 3], ",", c[c.size() - 2], ",", c[c.size() - 1]));
  }
  return out;
}

// The executor's check on the device against the whole-buffer oracle at every step (the adaptive
// run has stale-host steps of chain and cached, and (c)'s padding residue, so every path of the
// device check is taken: device counts, span downloads, classification).
TEST(GpuExecutor, TheDeviceCheckAgreesWithTheWholeBufferOracle) {
  DS_REQUIRE_GPU();
  WholeBufferOracle oracle;
  ExecutorRun run = RunExecutor(SpecMode::kAdaptive, Every(), 7, [&](const StepPlan& plan, GpuSuite& suite) {
    return oracle.Check(plan, suite, Every());
  });
  ASSERT_NE(run.executor, nullptr);
  ASSERT_GT(run.steps, 20);
  for (Impl impl : Every()) {
    SCOPED_TRACE(std::string(ImplName(impl)));
    const ExecutorImplStats& a = run.executor->stats(impl);
    const WholeBufferOracle::Tally& b = oracle.tally[impl];
    EXPECT_EQ(a.check.steps, run.steps);
    EXPECT_EQ(a.check.cells, b.cells);
    EXPECT_EQ(a.check.steps_with, b.steps);
    EXPECT_EQ(a.check.steps_with_by_case, b.steps_by_case);
    EXPECT_EQ(a.check.cells_by_field, b.cells_by_field);
    EXPECT_EQ(a.first_stale_host, b.first_stale_host);
  }
  EXPECT_GT(oracle.tally[Impl::kChain].cells[static_cast<int>(MismatchKind::kStaleHost)], 0)
      << "the run must exercise the stale-host classification";
  EXPECT_EQ(CellRows(run.executor->StepsCsv()), oracle.rows);
  const RegionCheckStats c = run.executor->region_check_stats();
  EXPECT_EQ(c.steps, run.steps);
  EXPECT_EQ(c.references_computed, 0) << "the plan's device view is the truth at every step";
  EXPECT_EQ(c.device_compares, run.steps);
  EXPECT_GT(c.mirrored, 0) << "chain and cached diverge on stale steps";
  EXPECT_LT(c.mirrored, run.steps * static_cast<int64_t>(Every().size()));
  const nlohmann::json summary = run.executor->Summary();
  EXPECT_EQ(summary["check"]["method"], "device");
  EXPECT_EQ(summary["check"]["order"], "prepare");
}

TEST(GpuExecutor, DSparkRunWithoutAdaptiveHasNoDeviceAllocation) {
  DS_REQUIRE_GPU();
  ExecutorRun run = RunExecutor(SpecMode::kDSpark, {Impl::kCached, Impl::kFusedSuite}, 3);
  ASSERT_NE(run.executor, nullptr);
  EXPECT_EQ(run.executor->topb_launches(), 0);
  EXPECT_EQ(run.executor->stats(Impl::kFusedSuite).check.cells, (std::array<int64_t, 3>{0, 0, 0}));
  // DSpark draft steps carry upper-bound host seq_lens, which no builder reads for decode rows,
  // and without adaptive verification the host split is right: (b) is exact too
  // (docs/states.md s.4).
  EXPECT_EQ(run.executor->stats(Impl::kCached).check.steps_with[0], 0);
}

// vllm-0.34 as vLLM 0.34.0 runs it: the FULL uniform-decode steps (no speculation) replay
// graphs recorded under vLLM's key, with the KV-cache groups as concurrent branches, every other
// step builds eagerly; every step's outputs equal the reference either way.
TEST(GpuExecutor, Vllm034ReplaysVllmKeyedGraphsForUniformDecodeOnly) {
  DS_REQUIRE_GPU();
  for (SpecMode mode : {SpecMode::kNone, SpecMode::kAdaptive}) {
    SCOPED_TRACE(std::string(SpecModeName(mode)));
    ExecutorRun run = RunExecutor(mode, {Impl::kVllm034, Impl::kFused}, 5);
    ASSERT_NE(run.executor, nullptr);
    const ExecutorImplStats& s = run.executor->stats(Impl::kVllm034);
    EXPECT_EQ(s.check.cells, (std::array<int64_t, 3>{0, 0, 0}));
    EXPECT_EQ(s.graph_replays, run.observer->vllm_keyed);
    EXPECT_EQ(s.graph_replays + s.eager_runs, run.steps);
    if (mode == SpecMode::kNone) EXPECT_GT(s.graph_replays, 0) << "no FULL uniform-decode step";
    EXPECT_EQ(s.captures, s.distinct_keys);
    EXPECT_EQ(run.executor->stats(Impl::kFused).check.cells, (std::array<int64_t, 3>{0, 0, 0}));
  }
}

// One graph per padded size: the executor captures each distinct key once and replays it.
TEST(GpuExecutor, OneGraphPerPaddedSize) {
  DS_REQUIRE_GPU();
  ExecutorRun run = RunExecutor(SpecMode::kAdaptive, {Impl::kFused, Impl::kFusedSuite, Impl::kDeviceChain}, 11);
  ASSERT_NE(run.executor, nullptr);
  const int64_t distinct = static_cast<int64_t>(run.observer->sizes.size());
  ASSERT_GT(run.observer->padded_steps, distinct) << "the run should revisit padded sizes";
  for (Impl impl : {Impl::kFused, Impl::kFusedSuite, Impl::kDeviceChain}) {
    const ExecutorImplStats& s = run.executor->stats(impl);
    SCOPED_TRACE(std::string(ImplName(impl)));
    // The executor counts the suite's own keys (kernels/suite/graph_key.h): one capture each.
    EXPECT_EQ(s.captures, s.distinct_keys);
    if (ReadsHostTotals(impl)) {
      // (c) and (d) size ops and plan rows from host totals, which vary inside one padded size.
      EXPECT_GE(s.distinct_keys, static_cast<int64_t>(run.observer->sizes_and_host_total.size()));
      EXPECT_GT(static_cast<int64_t>(run.observer->sizes_and_host_total.size()), distinct)
          << "the host totals never varied inside a padded size";
      EXPECT_LE(s.captures, s.graph_replays);
    } else {
      EXPECT_EQ(s.distinct_keys, distinct);
    }
    EXPECT_EQ(s.graph_replays, run.observer->padded_steps);
    EXPECT_GT(s.graph_nodes, 0);
  }
}

// The device allocation kernel, step by step: staged host boundaries in, the plan's device view
// and the CPU reference's allocation out.
class TopBObserver final : public StepObserver {
 public:
  TopBObserver() {
    auto t = DeviceTopB::Create(64);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) topb_ = *std::move(t);
    qsl_ = DeviceBuffer<int32_t>(65);
  }
  absl::string_view name() const override { return "test_topb"; }
  absl::Status OnStep(const StepPlan& plan) override {
    auto arrays = plan.Arrays();
    if (!arrays.ok()) return arrays.status();
    const StepArrays& a = **arrays;
    if (!a.topb.present) return absl::OkStatus();
    ++checked;
    EXPECT_EQ(a.topb.num_decodes + static_cast<int32_t>(a.topb.tail_offsets.size()), plan.num_reqs);
    std::vector<int32_t> staged = a.qsl_host;
    staged.resize(qsl_.size(), -1);
    qsl_.Upload(staged);
    if (absl::Status s = topb_->Launch(a.topb, plan.num_reqs, qsl_.get(), stream_.get()); !s.ok()) return s;
    if (absl::Status s = topb_->Verify(a.topb, a.qsl_device, qsl_.get(), stream_.get(), plan.index); !s.ok())
      return s;
    std::vector<int32_t> got = qsl_.Download();
    got.resize(static_cast<size_t>(plan.num_reqs) + 1);
    const ref::TopBAllocation want = ref::TopBAlloc(a.topb.scores, a.topb.max_drafts, a.topb.max_k, a.topb.budget,
                                                    a.topb.base_tokens, a.topb.tail_offsets);
    EXPECT_EQ(got, want.query_start_loc) << "step " << plan.index;
    EXPECT_EQ(got, a.qsl_device) << "step " << plan.index;
    if (got != a.qsl_host) ++rewritten_differs_from_host;
    return absl::OkStatus();
  }
  int64_t checked = 0, rewritten_differs_from_host = 0;

 private:
  std::unique_ptr<DeviceTopB> topb_;
  DeviceBuffer<int32_t> qsl_;
  CudaStream stream_;
};

TEST(DeviceTopB, RewritesStagedHostBoundariesIntoThePlansDeviceView) {
  DS_REQUIRE_GPU();
  const SchedulerConfig sc = SmallScheduler(SpecMode::kAdaptive);
  const std::vector<RequestSpec> workload = SmallWorkload();
  auto preset = AcceptancePreset("default", sc.spec_k);
  ASSERT_TRUE(preset.ok());
  const AcceptanceModel acceptance(*preset, sc.spec_k);
  const TimeModel time_model(DefaultTimeModelParams());
  Engine engine(sc, workload, acceptance, time_model, EngineOptions{}, 5);
  TopBObserver observer;
  engine.AddObserver(&observer);
  ASSERT_TRUE(engine.Run().ok());
  // The budget (vLLM's argmax over the cost tables) covers every draft in most steps of this
  // small workload, and then the allocation is skipped, as vLLM skips it.
  EXPECT_GT(observer.checked, 0);
  EXPECT_GT(observer.rewritten_differs_from_host, 0) << "the kernel never changed the host split";
}

TEST(DeviceTopB, RejectsInputsThatDoNotFit) {
  DS_REQUIRE_GPU();
  auto t = DeviceTopB::Create(4);
  ASSERT_TRUE(t.ok());
  DeviceBuffer<int32_t> qsl(8);
  CudaStream stream;
  TopBInputs in;
  in.present = true;
  in.num_decodes = 5;
  in.max_k = 5;
  in.scores.assign(25, 0.5f);
  in.max_drafts.assign(5, 5);
  in.budget = 3;
  EXPECT_EQ((*t)->Launch(in, 5, qsl.get(), stream.get()).code(), absl::StatusCode::kOutOfRange);
  in.num_decodes = 2;
  in.scores.assign(10, 0.5f);
  in.max_drafts.assign(2, 5);
  EXPECT_EQ((*t)->Launch(in, 3, qsl.get(), stream.get()).code(), absl::StatusCode::kInvalidArgument)
      << "tail_offsets missing for the third request";
  TopBInputs absent;
  EXPECT_EQ((*t)->Launch(absent, 1, qsl.get(), stream.get()).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(GpuExecutorCapacity, HoldsEveryStepTheSchedulerCanPlan) {
  SchedulerConfig c;  // 256 seqs, 16384 tokens, 16384 model length
  c.mode = SpecMode::kDSpark;
  c.bt_stride_pad = 5;
  const GpuSuiteCapacity cap = CapacityFor(c);
  EXPECT_EQ(cap.max_tokens, 16384);
  EXPECT_EQ(cap.max_reqs, 516) << "graph padding pads requests to N / q with N up to the largest capture size";
  EXPECT_EQ(cap.max_bt_stride, 16384 / 64 + 5);
  c.max_num_batched_tokens = 300;
  c.max_num_seqs = 40;
  c.mode = SpecMode::kNone;
  const GpuSuiteCapacity small = CapacityFor(c);
  EXPECT_EQ(small.max_tokens, 300);
  EXPECT_EQ(small.max_reqs, 80);  // capture sizes up to min(40 * 2, 512) = 80
}

}  // namespace
}  // namespace dspark::sim
