// Time model: the batch-1 512/128 calibration against the seed's TPOT table (seed 000), the
// overlap rule, and calibration files.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "sim/model/acceptance.h"
#include "sim/engine/engine.h"
#include "sim/workload/generators.h"
#include "sim/observe/metrics.h"
#include "sim/model/time_model.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

struct CalibrationPoint {
  SpecMode mode;
  Impl impl;
  double seed_tpot_ms;  // seed 000, batch-1 TPOT, 512 in / 128 out
  std::string name;
};

void PrintTo(const CalibrationPoint& p, std::ostream* os) { *os << p.name; }

// batch1-512 with 1000 requests: the sampling error of the acceptance length is then ~0.2%.
double SimulatedTpotMs(SpecMode mode, Impl impl, const std::string& preset_name = "batch1-512",
                       int64_t num_requests = 1000, int32_t concurrency = 1) {
  SchedulerConfig c;
  c.mode = mode;
  const WorkloadPreset preset = *FindWorkloadPreset(preset_name);
  Rng lengths(0, RngStream::kLengths);
  const std::vector<RequestSpec> reqs = *GeneratePreset(preset, num_requests, lengths);
  const AcceptanceModel acceptance(*AcceptancePreset(preset.acceptance_preset, 5), 5);
  // The shipped calibration: the engine's costs were fitted with its metadata costs.
  const TimeModel time_model(*LoadCalibration((testing_util::SourceRoot() / "workloads" / "calibration_h200.json").string()));
  EngineOptions options;
  options.concurrency = concurrency;
  options.time_impl = impl;
  Engine engine(c, reqs, acceptance, time_model, options, 0);
  MetricsObserver metrics(reqs);
  engine.AddObserver(&metrics);
  EXPECT_TRUE(engine.Run().ok());
  nlohmann::json s;
  EXPECT_TRUE(metrics.Finish(&s).ok());
  return metrics.serving_result().latency("tpot")->mean_ms;
}

class Batch1Calibration : public ::testing::TestWithParam<CalibrationPoint> {};

// "Before" in the seed is vLLM state (c), "After" is (d). The fit (docs/models.md, "Time
// model") reproduces each figure to within 3%.
TEST_P(Batch1Calibration, ReproducesTheSeedTpot) {
  const CalibrationPoint p = GetParam();
  const double tpot = SimulatedTpotMs(p.mode, p.impl);
  EXPECT_NEAR(tpot, p.seed_tpot_ms, 0.03 * p.seed_tpot_ms) << "simulated " << tpot << " ms";
}

INSTANTIATE_TEST_SUITE_P(
    Seed000, Batch1Calibration,
    ::testing::Values(CalibrationPoint{SpecMode::kNone, Impl::kDeviceChain, 6.091, "none_before"},
                      CalibrationPoint{SpecMode::kNone, Impl::kFused, 5.736, "none_after"},
                      CalibrationPoint{SpecMode::kDSpark, Impl::kDeviceChain, 1.657, "dspark_before"},
                      CalibrationPoint{SpecMode::kDSpark, Impl::kFused, 1.407, "dspark_after"},
                      CalibrationPoint{SpecMode::kAdaptive, Impl::kDeviceChain, 1.781, "adaptive_before"},
                      CalibrationPoint{SpecMode::kAdaptive, Impl::kFused, 1.457, "adaptive_after"}),
    [](const ::testing::TestParamInfo<CalibrationPoint>& info) { return info.param.name; });

// The criterion: the batch-1 TPOT reduction of each mode within 3 percentage points of
// the seed's 5.8 / 15.1 / 18.2 %, in that order.
TEST(Batch1Reductions, PerModeWithinThreePointsOfTheSeed) {
  const struct { SpecMode mode; double seed_pct; } rows[] = {
      {SpecMode::kNone, 5.82}, {SpecMode::kDSpark, 15.07}, {SpecMode::kAdaptive, 18.20}};
  for (const auto& r : rows) {
    const double pct = 100.0 * (1.0 - SimulatedTpotMs(r.mode, Impl::kFused) / SimulatedTpotMs(r.mode, Impl::kDeviceChain));
    EXPECT_NEAR(pct, r.seed_pct, 3.0) << SpecModeName(r.mode);
  }
}

// The other figure the host terms are fitted on: SPEED-Bench at concurrency 1 (32 requests of
// 8192 in / 1024 out, adaptive), TPOT reduction (c) -> (d) within 3 points of the seed's 19.3 %.
TEST(SpeedBenchConcurrencyOne, ReductionWithinThreePointsOfTheSeed) {
  const double before = SimulatedTpotMs(SpecMode::kAdaptive, Impl::kDeviceChain, "speed-8k", 32);
  const double after = SimulatedTpotMs(SpecMode::kAdaptive, Impl::kFused, "speed-8k", 32);
  EXPECT_NEAR(100.0 * (1.0 - after / before), 19.31, 3.0) << before << " -> " << after << " ms";
}

// Predicted, not fitted: at concurrency 8 the GPU's engine step outlasts the host's, so (c)'s
// extra dispatch is hidden (seed 2.35 %). Counting each draft as a batch-queue slot of its own
// exposed it after every short draft step (11.2 %); this guards the engine-step rule.
TEST(SpeedBenchConcurrencyEight, ReductionIsHiddenByOverlap) {
  const double before = SimulatedTpotMs(SpecMode::kAdaptive, Impl::kDeviceChain, "speed-8k", 32, 8);
  const double after = SimulatedTpotMs(SpecMode::kAdaptive, Impl::kFused, "speed-8k", 32, 8);
  EXPECT_NEAR(100.0 * (1.0 - after / before), 2.35, 3.0) << before << " -> " << after << " ms";
}

// Eager launches are host dispatch and GPU work; with nothing queued the host's dispatch is on
// the critical path, so a step alone costs the host's pre-launch work, the dispatch (or the
// GPU's share, the larger per launch), the graph launch and the forward.
TEST(TimeModel, AStepAloneChargesDispatchGapsAndForward) {
  TimeModelParams params = DefaultTimeModelParams();
  params.engine.dispatch_us_per_launch = 10.0;
  params.engine.gpu_gap_us_per_launch = 1.0;
  params.engine.graph_launch_us = 5.0;
  const TimeModel model(params);
  StepPlan plan;
  plan.step_case = StepCase::kDecode;
  plan.num_reqs_real = plan.num_reqs = 1;
  plan.num_tokens_real = plan.num_tokens = 1;
  plan.sum_seq_lens = 600;
  const StepCost chain = model.Cost(plan, Impl::kChain, false);
  const StepCost fused = model.Cost(plan, Impl::kFused, false);
  const double host_pre = params.sched_us + params.sched_us_per_req;
  const double forward = model.ForwardUs(false, 1, 600, 0.0);
  // chain: 102 launches of 10 us dispatch; the last one's GPU share (191.10 / 102 + 1 us)
  // ends before the graph launch (5 us) is dispatched. fused: 8 launches, and the last one's
  // share (46.27 / 8 + 1 us) outlasts the graph launch.
  EXPECT_NEAR(chain.wall_us, host_pre + 102 * 10.0 + 5.0 + forward, 1e-6);
  EXPECT_NEAR(fused.wall_us, host_pre + 8 * 10.0 + (46.27 / 8 + 1.0) + forward, 1e-6);
  EXPECT_DOUBLE_EQ(chain.gpu_us - fused.gpu_us, 191.10 - 46.27);
  // Metadata GPU cost grows with tokens above the reference size.
  EXPECT_DOUBLE_EQ(model.MetadataGpuUs(Impl::kFused, StepCase::kDecode, 96), 46.27);
  EXPECT_DOUBLE_EQ(model.MetadataGpuUs(Impl::kFused, StepCase::kDecode, 1096), 46.27 + 2.5);
}

// Async scheduling: the host prepares step i + 1 while step i runs, but never more than
// inflight_steps steps are queued.
TEST(EngineClock, AsyncSchedulingOverlapsUpToTheInflightDepth) {
  EngineCostParams p;
  p.inflight_steps = 2;
  StepWork w;
  w.host_pre_us = 100;
  w.forward_us = 1000;
  EngineClock clock(p);
  StepTimes a = clock.Step(w, 0), b = clock.Step(w, 0), c = clock.Step(w, 0);
  EXPECT_EQ(a.start_us, 0);
  EXPECT_EQ(a.end_us, 1100);
  EXPECT_EQ(b.start_us, 100);   // overlaps step a's forward
  EXPECT_EQ(b.end_us, 2100);
  EXPECT_EQ(c.start_us, 1100);  // waits for step a: two steps queued at most
  EXPECT_EQ(c.end_us, 3100);
  p.inflight_steps = 1;
  EngineClock serial(p);
  serial.Step(w, 0);
  StepTimes s = serial.Step(w, 0);
  EXPECT_EQ(s.start_us, 1100);
  EXPECT_EQ(s.end_us, 2200);
}

// A DSpark draft step is part of its target's engine step (vLLM's sample_tokens ->
// propose_draft): it takes no batch-queue slot, and the queue waits on the target's sampled
// tokens, not on the draft's end.
TEST(EngineClock, DraftStepsJoinTheirTargetsEngineStep) {
  EngineCostParams p;
  p.inflight_steps = 2;
  StepWork target, draft;
  target.host_pre_us = 100;
  target.forward_us = 1000;
  draft.host_pre_us = 50;
  draft.forward_us = 200;
  draft.joins_engine_step = true;
  EngineClock clock(p);
  const StepTimes t0 = clock.Step(target, 0), d0 = clock.Step(draft, 0);
  const StepTimes t1 = clock.Step(target, 0), d1 = clock.Step(draft, 0);
  const StepTimes t2 = clock.Step(target, 0);
  EXPECT_EQ(t0.end_us, 1100);
  EXPECT_EQ(d0.start_us, 100);   // right after its target's host work
  EXPECT_EQ(d0.end_us, 1300);
  EXPECT_EQ(t1.start_us, 150);   // the second engine step fills the queue
  EXPECT_EQ(t1.end_us, 2300);
  EXPECT_EQ(d1.start_us, 250);
  EXPECT_EQ(d1.end_us, 2500);
  EXPECT_EQ(t2.start_us, 1100);  // waits for engine step 0's sampled tokens, not its draft
  EXPECT_EQ(t2.end_us, 3500);
  // Counted as engine steps of their own, drafts fill the queue: the second draft waits for
  // the first draft's end (1300) where, joined, it started at 250.
  EngineClock separate(p);
  draft.joins_engine_step = false;
  separate.Step(target, 0);
  separate.Step(draft, 0);
  EXPECT_EQ(separate.Step(target, 0).start_us, 1100);
  EXPECT_EQ(separate.Step(draft, 0).start_us, 1300);
}

// stage_confidences waits for the copy the previous draft step queued: with a deep queue, that
// is a stall to the end of the previous step's GPU work.
TEST(EngineClock, StageConfidencesSyncStallsToThePreviousCopy) {
  EngineCostParams p;
  p.inflight_steps = 4;
  p.sync_us = 5;
  StepWork w;
  w.host_pre_us = 100;
  w.forward_us = 1000;
  w.stage_sync = true;
  EngineClock clock(p);
  StepTimes a = clock.Step(w, 0), b = clock.Step(w, 0), c = clock.Step(w, 0);
  EXPECT_EQ(a.stall_us, 0);
  EXPECT_EQ(b.start_us, 105);
  EXPECT_EQ(b.stall_us, 1100 - 205);  // until step a's copy (its GPU end)
  EXPECT_EQ(c.start_us, 1105);
  EXPECT_EQ(b.end_us, 2100);
}

// An eager launch costs the host its dispatch and the GPU its share plus a launch gap; the
// GPU runs a launch only once it is dispatched.
TEST(EngineClock, EagerLaunchesRunAfterTheirDispatch) {
  EngineCostParams p;
  p.dispatch_us_per_launch = 10;
  p.gpu_gap_us_per_launch = 2;
  StepWork w;
  w.launches = 4;
  w.meta_gpu_us = 80;  // 20 per launch + 2 gap: slower than the dispatch
  EngineClock clock(p);
  const StepTimes t = clock.Step(w, 0);
  EXPECT_EQ(t.end_us, 10 + 4 * 22);
  EXPECT_EQ(t.host_us, 40);
}

TEST(TimeModel, ImplNames) {
  EXPECT_EQ(*ParseImplKey("device-chain"), Impl::kDeviceChain);
  EXPECT_FALSE(ParseImplKey("triton").ok());
  auto all = ParseImplKeyList("fused,all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), ImplsOfModel(ModelKind::kV41).size());
  EXPECT_EQ(all->front(), Impl::kFused);
  EXPECT_FALSE(ParseImplKeyList("").ok());
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TimeModel, CalibrationFileOverridesDefaults) {
  const std::string path = WriteTemp("calib.json", R"({
    "meta": {"gpu": "NVIDIA H200", "driver": "580", "date": "2025-01-01"},
    "metadata": {"fused-suite": {"gpu_us": {"decode": 6.5, "dspark_adaptive_verify": 7.0},
                                  "serializes_host": false, "host_us": 3}},
    "forward": {"drafter": {"fixed_us": 400}},
    "host": {"sched_us": 90}
  })");
  auto p = LoadCalibration(path);
  ASSERT_TRUE(p.ok()) << p.status();
  const ImplCost& suite = p->impls[Impl::kFusedSuite.index()];
  EXPECT_EQ(suite.gpu_us[static_cast<int>(StepCase::kDecode)], 6.5);
  EXPECT_EQ(suite.gpu_us[static_cast<int>(StepCase::kAdaptiveVerify)], 7.0);
  EXPECT_FALSE(suite.estimated);
  EXPECT_EQ(suite.host_us, 3.0);
  EXPECT_EQ(p->drafter.fixed_us, 400.0);
  EXPECT_EQ(p->sched_us, 90.0);
  EXPECT_EQ(p->target.fixed_us, DefaultTimeModelParams().target.fixed_us);
  EXPECT_EQ(p->source_device, "gpu=NVIDIA H200, driver=580, date=2025-01-01");
}

TEST(TimeModel, CalibrationFileErrorsNameTheKey) {
  auto bad_case = LoadCalibration(WriteTemp("c1.json", R"({"metadata": {"fused": {"gpu_us": {"decod": 1}}}})"));
  ASSERT_FALSE(bad_case.ok());
  EXPECT_NE(std::string(bad_case.status().message()).find("key 'metadata.fused.gpu_us.decod': unknown case"),
            std::string::npos) << bad_case.status();
  auto bad_impl = LoadCalibration(WriteTemp("c2.json", R"({"metadata": {"triton": {}}})"));
  ASSERT_FALSE(bad_impl.ok());
  EXPECT_NE(std::string(bad_impl.status().message()).find("metadata.triton"), std::string::npos);
  auto negative = LoadCalibration(WriteTemp("c3.json", R"({"host": {"sched_us": -1}})"));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(std::string(negative.status().message()).find("key 'host.sched_us': expected a number of us in [0, 1e9], got -1"),
            std::string::npos) << negative.status();
  EXPECT_FALSE(LoadCalibration(WriteTemp("c4.json", "{not json")).ok());
  EXPECT_EQ(LoadCalibration("/nonexistent.json").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace dspark::sim
