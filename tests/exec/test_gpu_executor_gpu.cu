// The GPU executor, the TPOT loop and `bench` on a device (skipped without one):
//  - a short simulated adaptive run through every implementation: fused, fused-suite and
//    device-chain equal the reference at every step, chain and cached diverge where the host
//    view is stale, and the top-B allocation ran on the device;
//  - the device top-B kernel rewrites the staged host boundaries into the plan's device view and
//    agrees with the independent CPU reference;
//  - one graph per padded size: captures == distinct graph keys, replays == padded steps;
//  - the TPOT loop completes every request with no capture inside the timing, and the forward
//    stand-in lasts what it is asked to;
//  - a tiny `bench` writes bench.json with every key of the schema the plots read.
// Host-only pieces (option parsing, buffer sizing, the calibration fit and its round trip through
// the time model's loader) run without a device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/reference/topb_alloc.h"
#include "sim/model/acceptance.h"
#include "sim/cli/cmd_bench.cuh"
#include "sim/engine/engine.h"
#include "sim/exec/gpu_executor.cuh"
#include "sim/studies/metadata_bench.cuh"
#include "sim/model/time_model.h"
#include "sim/studies/tpot_loop.cuh"
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
    if ((*arrays)->topb.present) {
      ++adaptive_verifications;
      stale_host_qsl += (*arrays)->qsl_host != (*arrays)->qsl_device;
    }
    stale_any += plan.host_view_stale;
    return executor_->Execute(plan);
  }
  int64_t padded_steps = 0, adaptive_verifications = 0, stale_host_qsl = 0, stale_any = 0;
  std::set<std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, bool>> sizes;

 private:
  GpuExecutor* executor_;
};

struct ExecutorRun {
  std::unique_ptr<GpuExecutor> executor;
  std::unique_ptr<ExecutorObserver> observer;
  int64_t steps = 0;
};

ExecutorRun RunExecutor(SpecMode mode, const std::vector<Impl>& impls, uint64_t seed,
                        GpuCheckMethod method = GpuCheckMethod::kDevice) {
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
  o.check_method = method;
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
const std::vector<Impl>& Every() { return AllImpls(); }

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
    EXPECT_EQ(s.steps, run.steps);
    // No stale-host cell and no bug; (c)'s old indexer chain may leave padding residue.
    EXPECT_EQ(s.mismatch_cells[static_cast<int>(MismatchKind::kStaleHost)], 0);
    EXPECT_EQ(s.mismatch_cells[static_cast<int>(MismatchKind::kBug)], 0);
    if (!impl.info().traits.old_indexer_chain)
      EXPECT_EQ(s.mismatch_cells[static_cast<int>(MismatchKind::kPaddingResidue)], 0);
    EXPECT_GT(s.graph_replays, 0);
    EXPECT_EQ(s.graph_replays + s.eager_runs, run.steps);
    EXPECT_EQ(s.counters.host_syncs, 0);
    EXPECT_EQ(static_cast<int64_t>(s.gpu_us.size()), run.steps);
  }
  for (Impl impl : {Impl::kChain, Impl::kCached}) {
    const ExecutorImplStats& s = run.executor->stats(impl);
    SCOPED_TRACE(std::string(ImplName(impl)));
    EXPECT_GT(s.mismatch_cells[static_cast<int>(MismatchKind::kStaleHost)], 0);
    EXPECT_GT(s.mismatch_steps[static_cast<int>(MismatchKind::kStaleHost)], 0);
    EXPECT_LE(s.mismatch_steps[static_cast<int>(MismatchKind::kStaleHost)], run.observer->stale_any);
    EXPECT_EQ(s.mismatch_cells[static_cast<int>(MismatchKind::kBug)], 0);
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

// StepsCsv less its timing columns (gpu_us, host_us).
std::string UntimedCsv(const std::string& csv) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(csv, '\n')) {
    std::vector<absl::string_view> cols = absl::StrSplit(line, ',');
    if (cols.size() > 7) cols.erase(cols.begin() + 6, cols.begin() + 8);
    absl::StrAppend(&out, absl::StrJoin(cols, ","), "\n");
  }
  return out;
}

// The region check on the device, by span download and the old whole-buffer download count and
// classify the same cells at every step (the adaptive run has stale-host steps of chain and
// cached, and (c)'s padding residue, so every path of the device check is taken).
TEST(GpuExecutor, CheckMethodsGiveIdenticalResults) {
  DS_REQUIRE_GPU();
  ExecutorRun whole = RunExecutor(SpecMode::kAdaptive, Every(), 7, GpuCheckMethod::kWhole);
  ASSERT_NE(whole.executor, nullptr);
  for (GpuCheckMethod method : {GpuCheckMethod::kDevice, GpuCheckMethod::kSpans}) {
    SCOPED_TRACE(method == GpuCheckMethod::kDevice ? "device" : "spans");
    ExecutorRun run = RunExecutor(SpecMode::kAdaptive, Every(), 7, method);
    ASSERT_NE(run.executor, nullptr);
    ASSERT_EQ(run.steps, whole.steps);
    for (Impl impl : Every()) {
      SCOPED_TRACE(std::string(ImplName(impl)));
      const ExecutorImplStats &a = run.executor->stats(impl), &b = whole.executor->stats(impl);
      EXPECT_EQ(a.steps, b.steps);
      EXPECT_EQ(a.mismatch_cells, b.mismatch_cells);
      EXPECT_EQ(a.mismatch_steps, b.mismatch_steps);
      EXPECT_EQ(a.mismatch_steps_by_case, b.mismatch_steps_by_case);
      EXPECT_EQ(a.cells_by_field, b.cells_by_field);
      EXPECT_EQ(a.first_stale_host, b.first_stale_host);
      EXPECT_EQ(a.graph_replays, b.graph_replays);
    }
    EXPECT_EQ(UntimedCsv(run.executor->StepsCsv()), UntimedCsv(whole.executor->StepsCsv()));
    const RegionCheckStats c = run.executor->region_check_stats();
    EXPECT_EQ(c.steps, run.steps);
    EXPECT_EQ(c.references_computed, 0) << "the plan's device view is the truth at every step";
    if (method == GpuCheckMethod::kDevice) {
      EXPECT_EQ(c.device_compares, run.steps);
      EXPECT_GT(c.mirrored, 0) << "chain and cached diverge on stale steps";
      EXPECT_LT(c.mirrored, run.steps * static_cast<int64_t>(Every().size()));
    } else {
      EXPECT_EQ(c.mirrored, run.steps * static_cast<int64_t>(Every().size()));
    }
    const nlohmann::json summary = run.executor->Summary();
    EXPECT_EQ(summary["check"]["method"], method == GpuCheckMethod::kDevice ? "device" : "spans");
  }
  EXPECT_EQ(whole.executor->Summary()["check"]["method"], "whole");
}

TEST(GpuExecutor, DSparkRunWithoutAdaptiveHasNoDeviceAllocation) {
  DS_REQUIRE_GPU();
  ExecutorRun run = RunExecutor(SpecMode::kDSpark, {Impl::kCached, Impl::kFusedSuite}, 3);
  ASSERT_NE(run.executor, nullptr);
  EXPECT_EQ(run.executor->topb_launches(), 0);
  EXPECT_EQ(run.executor->stats(Impl::kFusedSuite).mismatch_cells, (std::array<int64_t, 3>{0, 0, 0}));
  // DSpark draft steps carry upper-bound host seq_lens, which no builder reads for decode rows,
  // and without adaptive verification the host split is right: (b) is exact too
  // (VLLM_CODE_MAP.md s.4).
  EXPECT_EQ(run.executor->stats(Impl::kCached).mismatch_steps[0], 0);
}

// One graph per padded size: the executor captures each distinct key once and replays it.
TEST(GpuExecutor, OneGraphPerPaddedSize) {
  DS_REQUIRE_GPU();
  ExecutorRun run = RunExecutor(SpecMode::kAdaptive, {Impl::kFused, Impl::kFusedSuite, Impl::kDeviceChain}, 11);
  ASSERT_NE(run.executor, nullptr);
  const int64_t distinct = static_cast<int64_t>(run.observer->sizes.size());
  ASSERT_GT(run.observer->padded_steps, distinct) << "the run should revisit padded sizes";
  for (Impl impl : {Impl::kFused, Impl::kFusedSuite}) {
    const ExecutorImplStats& s = run.executor->stats(impl);
    SCOPED_TRACE(std::string(ImplName(impl)));
    if (ReadsHostTotals(impl)) {
      // (d) plans the prefill rows (#57207 segments, indexer chunks) on the host: a padded
      // size is still one graph, re-captured (updated in place) when its host plan changes.
      EXPECT_EQ(s.distinct_keys, distinct);
      EXPECT_GE(s.captures, distinct);
      EXPECT_LE(s.captures, s.graph_replays);
    } else {
      EXPECT_EQ(s.captures, distinct);
      EXPECT_EQ(s.distinct_keys, distinct);
    }
    EXPECT_EQ(s.graph_replays, run.observer->padded_steps);
    EXPECT_GT(s.graph_nodes, 0);
  }
  // device-chain's op sizes also come from the host totals, which vary inside one padded size.
  const ExecutorImplStats& dc = run.executor->stats(Impl::kDeviceChain);
  EXPECT_EQ(dc.captures, dc.distinct_keys);
  EXPECT_GE(dc.captures, distinct);
  EXPECT_EQ(dc.graph_replays, run.observer->padded_steps);
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

TEST(TpotLoop, ForwardStandInLastsWhatItIsAskedTo) {
  DS_REQUIRE_GPU();
  CudaStream stream;
  for (double us : {50.0, 600.0, 3000.0}) {
    auto measured = MeasureForwardStandIn(us, stream.get());
    ASSERT_TRUE(measured.ok()) << measured.status();
    EXPECT_GE(*measured, us * 0.99) << us;
    EXPECT_LE(*measured, us + 40.0) << us;
  }
}

TEST(TpotLoop, CompletesEveryRequestWithoutCapturesInsideTheTiming) {
  DS_REQUIRE_GPU();
  SchedulerConfig sc;
  sc.mode = SpecMode::kAdaptive;
  sc.max_num_seqs = 4;
  sc.max_num_batched_tokens = 1024;
  sc.max_model_len = 2048;
  auto loop = TpotLoop::Create(CapacityFor(sc));
  ASSERT_TRUE(loop.ok()) << loop.status();
  auto preset = AcceptancePreset("repeated-prompt", sc.spec_k);
  ASSERT_TRUE(preset.ok());
  const std::vector<RequestSpec> workload = {{0, 0.0, 200, 24, {}}, {1, 0.0, 96, 17, {}}};
  std::map<Impl, TpotLoopResult> results;
  for (Impl impl : {Impl::kChain, Impl::kFused}) {
    TpotLoopOptions o;
    o.impl = impl;
    o.scheduler = sc;  // the same schedule for both implementations
    o.acceptance = *preset;
    o.time_params = DefaultTimeModelParams();
    o.concurrency = 1;
    o.model_host = false;
    o.seed = 9;
    auto r = (*loop)->Run(o, workload);
    ASSERT_TRUE(r.ok()) << r.status();
    SCOPED_TRACE(std::string(ImplName(impl)));
    EXPECT_EQ(r->completed, 2);
    EXPECT_EQ(r->output_tokens, 24 + 17);
    EXPECT_EQ(r->late_captures, 0);
    // repeated-prompt confidences (~0.9) make the budget cover every draft, so vLLM's allocation
    // kernel is skipped here; DeviceTopB.* exercises it.
    EXPECT_LE(r->topb_launches, r->steps);
    EXPECT_EQ(r->client_syncs, 1) << "the second request is submitted once the first one's last step completed";
    // The forward stand-ins run back to back on the device between the first submission and the
    // last completion (all but the zombie draft step after the last verification).
    EXPECT_GE(r->duration_s * 1e6, 0.9 * r->forward_us_per_step * static_cast<double>(r->steps));
    EXPECT_GT(r->tpot_ms_mean, 0.0);
    // Every first token needs at least one target forward.
    EXPECT_GE(r->ttft_ms_mean * 1e3, DefaultTimeModelParams().target.fixed_us);
    results[impl] = *r;
  }
  EXPECT_EQ(results[Impl::kChain].graph_replays, 0);
  EXPECT_EQ(results[Impl::kChain].staging_syncs, results[Impl::kChain].steps);
  EXPECT_GT(results[Impl::kFused].graph_replays, 0);
  EXPECT_EQ(results[Impl::kFused].staging_syncs, 0);
  // Same seed, same simulated outcomes: the same steps and tokens whatever the implementation.
  EXPECT_EQ(results[Impl::kChain].steps, results[Impl::kFused].steps);
}

TEST(Bench, TinyRunWritesEveryKeyOfTheSchema) {
  DS_REQUIRE_GPU();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dspark_bench_test_" + std::to_string(::getpid()));
  BenchConfig cfg;
  cfg.argv = {"bench", "--test"};
  cfg.out_dir = dir.string();
  cfg.reps = 10;
  cfg.min_samples = 10;
  cfg.warmup = 1;
  cfg.impls = {Impl::kChain, Impl::kFused, Impl::kFusedSuite};
  cfg.cases = {SeedCase::kDecode, SeedCase::kAdaptiveVerify};
  cfg.tpot_samples = 1;
  cfg.tpot_modes = {SpecMode::kDSpark};
  auto out = RunBench(cfg);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->bugs.empty()) << out->bugs.front();
  std::ifstream f(dir / "bench.json");
  ASSERT_TRUE(f.good());
  const nlohmann::json j = nlohmann::json::parse(f);
  for (const char* key : {"meta", "floor_us", "metadata", "tpot"}) ASSERT_TRUE(j.contains(key)) << key;
  for (const char* key : {"gpu", "driver", "clocks", "git_sha", "git_dirty", "argv", "schema_version", "date_utc"})
    EXPECT_TRUE(j["meta"].contains(key)) << "meta." << key;
  EXPECT_EQ(j["floor_us"].size(), 2u) << "floor_us is exactly {graph, eager}";
  EXPECT_TRUE(j["floor_us"]["graph"].is_number());
  EXPECT_TRUE(j["floor_us"]["eager"].is_number());
  EXPECT_GT(j["floor_us"]["graph"].get<double>(), 0.0);
  // 2 cases x 3 impls x 2 methods.
  ASSERT_EQ(j["metadata"].size(), 12u);
  const std::set<std::string> case_names = {"prefill", "chunked_prefill", "mixed", "decode", "dspark_verify",
                                            "dspark_adaptive_verify", "dspark_draft", "dspark_adaptive_draft"};
  int64_t chain_stale = 0;
  for (const nlohmann::json& e : j["metadata"]) {
    for (const char* key : {"case", "impl", "method", "gpu_us_median", "gpu_us_p10", "gpu_us_p90", "samples",
                            "launches", "speedup_vs_chain", "stale_host", "padding_residue", "bug"})
      ASSERT_TRUE(e.contains(key)) << key << " in " << e.dump();
    EXPECT_TRUE(case_names.count(e["case"].get<std::string>())) << e["case"];
    EXPECT_TRUE(e["method"] == "graph" || e["method"] == "eager");
    EXPECT_EQ(e["samples"].get<int64_t>(), 10);
    EXPECT_LE(e["gpu_us_p10"].get<double>(), e["gpu_us_median"].get<double>());
    EXPECT_LE(e["gpu_us_median"].get<double>(), e["gpu_us_p90"].get<double>());
    EXPECT_GT(e["launches"].get<int64_t>(), 0);
    EXPECT_EQ(e["bug"].get<int64_t>(), 0);
    // Only the host mappings of (a) and (b) read the host split (VLLM_CODE_MAP.md s.4).
    const absl::StatusOr<Impl> impl = ParseImpl(e["impl"].get<std::string>());
    ASSERT_TRUE(impl.ok()) << impl.status();
    if (*impl == Impl::kChain) EXPECT_DOUBLE_EQ(e["speedup_vs_chain"].get<double>(), 1.0);
    if (ReadsHostBoundaries(*impl)) {
      if (e["case"] == "dspark_adaptive_verify") chain_stale += e["stale_host"].get<int64_t>();
    } else {
      EXPECT_EQ(e["stale_host"].get<int64_t>(), 0) << e.dump();
    }
  }
  EXPECT_GT(chain_stale, 0) << "chain must diverge on the stale adaptive-verification boundaries";
  ASSERT_EQ(j["tpot"].size(), 3u);
  for (const nlohmann::json& e : j["tpot"]) {
    for (const char* key : {"mode", "impl", "tpot_ms", "ttft_ms", "itl_ms", "output_tok_s"})
      ASSERT_TRUE(e.contains(key)) << key << " in " << e.dump();
    EXPECT_EQ(e["mode"], "dspark");
    EXPECT_GT(e["tpot_ms"].get<double>(), 0.0);
    EXPECT_EQ(e["late_captures"].get<int64_t>(), 0);
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "bench_metadata.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "bench_tpot.csv"));
  std::filesystem::remove_all(dir);
}

// ---- Host-only pieces (no device needed).

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return argv;
}

TEST(BenchArgs, DefaultsAreTheSeedsTables) {
  std::vector<std::string> args = {"bench"};
  std::vector<char*> argv = Argv(args);
  std::string help;
  auto c = ParseBenchArgs(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(help.empty());
  EXPECT_TRUE(c->cold_l2);
  EXPECT_GE(c->reps, 100);
  EXPECT_EQ(c->batch, 16);
  EXPECT_EQ(c->impls.size(), 5u);
  EXPECT_EQ(c->cases.size(), 8u);
  EXPECT_EQ(c->tpot_modes.size(), 3u);
  EXPECT_FALSE(c->full_run);
  EXPECT_TRUE(c->Validate().ok());
}

TEST(BenchArgs, RejectsContradictionsAndBadValues) {
  const std::vector<std::vector<std::string>> bad = {
      {"bench", "--cold-l2", "--warm-l2"}, {"bench", "--impl", "triton"},  {"bench", "--cases", "decode,nope"},
      {"bench", "--tpot-modes", "fast"},   {"bench", "--host-standin", "x"}};
  for (std::vector<std::string> args : bad) {
    std::vector<char*> argv = Argv(args);
    std::string help;
    auto c = ParseBenchArgs(static_cast<int>(argv.size()), argv.data(), &help);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << args[1];
  }
  std::vector<std::string> args = {"bench", "--reps", "5", "--warm-l2", "--cases", "verify,dspark_draft",
                                   "--full-run", "--full-run-requests", "3"};
  std::vector<char*> argv = Argv(args);
  std::string help;
  auto c = ParseBenchArgs(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->cold_l2);
  EXPECT_EQ(c->cases, (std::vector<SeedCase>{SeedCase::kVerify, SeedCase::kDraft}));
  EXPECT_TRUE(c->full_run);
  EXPECT_EQ(c->full_run_requests, 3);
  EXPECT_EQ(c->Validate().code(), absl::StatusCode::kInvalidArgument) << "--reps 5 is below 10";
}

TEST(BenchCases, BothSpellingsAndAll) {
  auto all = ParseBenchCases("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 8u);
  auto two = ParseBenchCases("dspark_adaptive_verify, adaptive_verify ,decode");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(*two, (std::vector<SeedCase>{SeedCase::kAdaptiveVerify, SeedCase::kDecode}));
  EXPECT_EQ(BenchCaseName(SeedCase::kVerify), "dspark_verify");
  EXPECT_EQ(BenchCaseName(SeedCase::kAdaptiveDraft), "dspark_adaptive_draft");
  for (SeedCase c : kAllSeedCases)
    EXPECT_EQ(BenchCaseName(c), std::string(StepCaseName(static_cast<StepCase>(static_cast<int>(c)))))
        << "bench.json and the calibration use the step-case names";
  EXPECT_EQ(ParseBenchCases("verify2").status().code(), absl::StatusCode::kInvalidArgument);
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

TEST(Calibration, FitRoundTripsThroughTheTimeModelLoader) {
  // fused: decode grows 0.5 µs per token above 96; verify 0.25 µs per token; prefill has no slope.
  std::vector<CalibrationPoint> pts = {
      {Impl::kFused, SeedCase::kDecode, 16, 16, 40.0},   {Impl::kFused, SeedCase::kDecode, 64, 64, 41.0},
      {Impl::kFused, SeedCase::kDecode, 256, 256, 120.0}, {Impl::kFused, SeedCase::kVerify, 16, 96, 50.0},
      {Impl::kFused, SeedCase::kVerify, 64, 384, 122.0}, {Impl::kFused, SeedCase::kPrefill, 16, 8192, 100.0},
      {Impl::kFused, SeedCase::kPrefill, 64, 8192, 900.0}, {Impl::kChain, SeedCase::kDecode, 16, 16, 190.0},
      {Impl::kChain, SeedCase::kVerify, 4, 24, 150.0}};
  // Calibration keys are the canonical names of the registry.
  const std::string kFusedKey(ImplName(Impl::kFused)), kChainKey(ImplName(Impl::kChain));
  const nlohmann::ordered_json m =
      FitCalibration(pts, {Impl::kChain, Impl::kFused}, {SeedCase::kPrefill, SeedCase::kDecode, SeedCase::kVerify});
  ASSERT_TRUE(m.contains(kFusedKey));
  EXPECT_DOUBLE_EQ(m[kFusedKey]["gpu_us"]["decode"].get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(m[kFusedKey]["gpu_us"]["dspark_verify"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(m[kFusedKey]["gpu_us"]["prefill"].get<double>(), 100.0);
  // Least squares over (x, y) = (160, 80) and (288, 72) through the origin.
  const double slope = (160.0 * 80 + 288.0 * 72) / (160.0 * 160 + 288.0 * 288);
  EXPECT_DOUBLE_EQ(m[kFusedKey]["gpu_us_per_token"].get<double>(), slope);
  EXPECT_FALSE(m[kFusedKey]["serializes_host"].get<bool>());
  EXPECT_TRUE(m[kChainKey]["serializes_host"].get<bool>());
  EXPECT_FALSE(m[kChainKey].contains("gpu_us_per_token")) << "no point above the reference";
  EXPECT_FALSE(m[kChainKey]["gpu_us"].contains("dspark_verify")) << "no point at the reference batch";

  nlohmann::ordered_json doc;
  doc["meta"] = {{"gpu", "test GPU"}, {"driver", "0.0"}, {"date", "2026-01-01"}, {"measurements", {1, 2}}};
  doc["metadata"] = m;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("dspark_calib_test_" + std::to_string(::getpid()) + ".json"))
          .string();
  {
    std::ofstream f(path);
    f << doc.dump(2);
  }
  auto p = LoadCalibration(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(p.ok()) << p.status();
  const ImplCost& fused = p->impls[Impl::kFused.index()];
  EXPECT_DOUBLE_EQ(fused.gpu_us[static_cast<int>(StepCase::kDecode)], 40.0);
  EXPECT_DOUBLE_EQ(fused.gpu_us[static_cast<int>(StepCase::kSpecVerify)], 50.0);
  EXPECT_DOUBLE_EQ(fused.gpu_us_per_token, slope);
  EXPECT_FALSE(fused.estimated);
  EXPECT_NE(p->source_device.find("test GPU"), std::string::npos);
}

}  // namespace
}  // namespace dspark::sim
