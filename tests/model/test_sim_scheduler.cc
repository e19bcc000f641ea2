// Scheduler invariants over whole simulated runs: budgets, padding, KV accounting, every
// request finishing exactly once, and the host/device views of each step.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sim/model/acceptance.h"
#include "sim/engine/engine.h"
#include "sim/workload/generators.h"
#include "sim/observe/metrics.h"
#include "sim/model/scheduler.h"
#include "sim/model/time_model.h"

namespace dspark::sim {
namespace {

TEST(CaptureSizes, WithoutSpeculation) {
  // max = min(256 * 1 * 2, 512) = 512.
  const std::vector<int32_t> s = GraphCaptureSizes(256, 16384, 0);
  EXPECT_EQ(s.front(), 1);
  EXPECT_EQ(s[3], 8);
  EXPECT_EQ(s.back(), 512);
  EXPECT_TRUE(std::find(s.begin(), s.end(), 248) != s.end());
  EXPECT_TRUE(std::find(s.begin(), s.end(), 272) != s.end());
  EXPECT_TRUE(std::find(s.begin(), s.end(), 264) == s.end());
  EXPECT_EQ(s.size(), 3u + 31u + 17u);
}

TEST(CaptureSizes, SpeculationRoundsUpToMultiplesOfOnePlusK) {
  const std::vector<int32_t> s = GraphCaptureSizes(256, 16384, 5);
  for (int32_t v : s) EXPECT_EQ(v % 6, 0) << v;
  EXPECT_EQ(std::vector<int32_t>(s.begin(), s.begin() + 8),
            (std::vector<int32_t>{6, 12, 18, 24, 36, 42, 48, 60}));
  EXPECT_EQ(s.back(), 516);  // 512 rounded up
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_TRUE(std::adjacent_find(s.begin(), s.end()) == s.end());
}

TEST(CaptureSizes, SmallLimits) {
  // max = min(2 * 6 * 2, 512) = 24; then capped at 20 batched tokens.
  EXPECT_EQ(GraphCaptureSizes(2, 20, 5), (std::vector<int32_t>{6, 12, 18}));
  EXPECT_EQ(GraphCaptureSizes(3, 100, 0), (std::vector<int32_t>{1, 2, 4}));
}

struct InvariantParam {
  SpecMode mode;
  bool tight_kv;
  bool graphs;
  int32_t concurrency;
  std::string name;
};

void PrintTo(const InvariantParam& p, std::ostream* os) { *os << p.name; }

// Checks every step's plan and arrays, and counts request events.
class InvariantObserver final : public StepObserver {
 public:
  InvariantObserver(const SchedulerConfig& c, const std::vector<int32_t>& sizes, size_t n)
      : c_(c), sizes_(sizes), finished_(n, 0) {}
  absl::string_view name() const override { return "invariants"; }

  void OnFinished(int32_t req, double) override { ++finished_[req]; }
  void OnPreempted(int32_t, double) override { ++preemptions_; }

  absl::Status OnStep(const StepPlan& p) override {
    ++steps_;
    EXPECT_LE(p.num_tokens_real, c_.max_num_batched_tokens);
    EXPECT_LE(p.num_reqs_real, c_.max_num_seqs);
    EXPECT_GT(p.num_reqs_real, 0);
    if (p.graph_padded) {
      EXPECT_TRUE(std::binary_search(sizes_.begin(), sizes_.end(), p.num_tokens)) << p.num_tokens;
      EXPECT_GE(p.num_tokens, p.num_tokens_real);
      EXPECT_EQ(p.num_prefills, 0);
      ++padded_;
    } else {
      EXPECT_EQ(p.num_tokens, p.num_tokens_real);
      EXPECT_EQ(p.num_reqs, p.num_reqs_real);
    }
    EXPECT_TRUE(ValidateBatchSizes(p.sizes()).ok());
    auto arrays = p.Arrays();
    if (!arrays.ok()) return arrays.status();
    const StepArrays& a = **arrays;
    const int32_t r_total = p.num_reqs, m = p.num_tokens_real;
    EXPECT_EQ(a.qsl_device[0], 0);
    EXPECT_EQ(a.qsl_host[0], 0);
    EXPECT_EQ(a.qsl_device[p.num_reqs_real], m);
    for (int32_t r = 0; r < r_total; ++r) {
      EXPECT_LE(a.qsl_device[r], a.qsl_device[r + 1]);
      EXPECT_LE(a.qsl_host[r], a.qsl_host[r + 1]);
      if (r >= p.num_reqs_real) {
        EXPECT_EQ(a.qsl_device[r + 1], m);
        EXPECT_EQ(a.seq_lens_device[r], 0);
        EXPECT_EQ(a.seq_lens_host[r], 0);
      } else {
        const int32_t q = a.qsl_device[r + 1] - a.qsl_device[r];
        EXPECT_GE(a.seq_lens_device[r], q);
        EXPECT_LE(a.seq_lens_device[r], c_.max_model_len);
        EXPECT_LE(a.seq_lens_host[r], c_.max_model_len);
      }
    }
    // The host always knows the total.
    EXPECT_EQ(a.qsl_host[r_total], a.qsl_device[r_total]);
    const bool differs = a.qsl_host != a.qsl_device || a.seq_lens_host != a.seq_lens_device;
    EXPECT_EQ(differs, p.host_view_stale) << "step " << p.index;
    const bool qsl_differs = a.qsl_host != a.qsl_device;
    switch (p.step_case) {
      case StepCase::kDecode:
        EXPECT_EQ(c_.mode, SpecMode::kNone);
        EXPECT_FALSE(differs);
        break;
      case StepCase::kSpecVerify:
        EXPECT_EQ(c_.mode, SpecMode::kDSpark);
        EXPECT_FALSE(differs);  // the host chose every k_r itself
        break;
      case StepCase::kSpecDraft:
        EXPECT_EQ(c_.mode, SpecMode::kDSpark);
        EXPECT_FALSE(qsl_differs);
        for (int32_t r = 0; r < p.num_reqs_real; ++r)  // host: upper bound
          EXPECT_GE(a.seq_lens_host[r], a.seq_lens_device[r]);
        stale_draft_ += differs;
        break;
      case StepCase::kAdaptiveVerify:
        EXPECT_EQ(c_.mode, SpecMode::kAdaptive);
        EXPECT_EQ(p.num_tokens_real, p.num_reqs_real + p.draft_budget);
        stale_adaptive_ += qsl_differs;
        ++adaptive_verify_;
        break;
      case StepCase::kAdaptiveDraft:
        EXPECT_EQ(c_.mode, SpecMode::kAdaptive);
        stale_adaptive_draft_ += qsl_differs;
        break;
      case StepCase::kMixed:
        EXPECT_GT(p.num_prefills, 0);
        EXPECT_LT(p.num_prefills, p.num_reqs_real);
        break;
      case StepCase::kPrefill:
      case StepCase::kChunkedPrefill:
        EXPECT_EQ(p.num_prefills, p.num_reqs_real);
        EXPECT_FALSE(differs);
        break;
    }
    // Block table rows and slot mapping.
    std::set<int64_t> slots;
    for (int32_t r = 0; r < r_total; ++r) {
      const int32_t* row = &a.block_table[static_cast<size_t>(r) * p.bt_stride];
      int32_t held = 0;
      while (held < p.bt_width && row[held] != 0) ++held;
      for (int32_t col = held; col < p.bt_width; ++col) EXPECT_EQ(row[col], 0);
      for (int32_t col = p.bt_width; col < p.bt_stride; ++col) EXPECT_EQ(row[col], -1);
      if (r >= p.num_reqs_real) EXPECT_EQ(held, 0);
      for (int32_t t = a.qsl_device[r]; t < a.qsl_device[r + 1]; ++t) {
        const int64_t slot = a.slot_mapping[t];
        const int32_t pos = a.seq_lens_device[r] - (a.qsl_device[r + 1] - a.qsl_device[r]) +
                            (t - a.qsl_device[r]);
        EXPECT_EQ(slot, int64_t{row[pos / c_.block_size]} * c_.block_size + pos % c_.block_size);
        EXPECT_TRUE(slots.insert(slot).second) << "slot written twice in step " << p.index;
      }
    }
    for (int32_t t = m; t < p.num_tokens; ++t) EXPECT_EQ(a.slot_mapping[t], -1);
    return ::testing::Test::HasFailure() ? absl::InternalError("invariant broken") : absl::OkStatus();
  }

  SchedulerConfig c_;
  std::vector<int32_t> sizes_;
  std::vector<int> finished_;
  int64_t steps_ = 0, padded_ = 0, preemptions_ = 0;
  int64_t stale_draft_ = 0, stale_adaptive_ = 0, stale_adaptive_draft_ = 0, adaptive_verify_ = 0;
};

class SchedulerInvariants : public ::testing::TestWithParam<InvariantParam> {};

TEST_P(SchedulerInvariants, HoldOnEveryStep) {
  const InvariantParam ip = GetParam();
  SchedulerConfig c;
  c.mode = ip.mode;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 256;
  c.max_model_len = 1024;
  c.num_kv_blocks = ip.tight_kv ? 20 : 0;
  c.cuda_graphs = ip.graphs;
  c.bt_stride_pad = 3;
  // Random short requests, Poisson arrivals.
  Rng lengths(5, RngStream::kLengths), arrivals(5, RngStream::kArrivals);
  std::vector<RequestSpec> reqs(60);
  for (size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].id = static_cast<int64_t>(i);
    reqs[i].prompt_len = 1 + static_cast<int32_t>(lengths.UniformInt(900));
    reqs[i].output_len = 1 + static_cast<int32_t>(lengths.UniformInt(150));
  }
  reqs[3].output_len = 1;  // finishes at prefill
  reqs[4].prompt_len = 1000;
  reqs[4].output_len = 24;  // runs into max_model_len
  ASSERT_TRUE(AssignArrivals(reqs, 200.0, 1.0, arrivals).ok());
  TruncateToModelLen(reqs, c.max_model_len);

  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  EngineOptions options;
  options.concurrency = ip.concurrency;
  options.check_kv_each_step = true;
  Engine engine(c, reqs, acceptance, time_model, options, 1234);
  InvariantObserver inv(c, engine.scheduler().capture_sizes(), reqs.size());
  MetricsObserver metrics(reqs);
  engine.AddObserver(&inv);
  engine.AddObserver(&metrics);
  const absl::Status run = engine.Run();
  ASSERT_TRUE(run.ok()) << run;
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(inv.finished_[i], 1) << "request " << i;
  nlohmann::json summary;
  ASSERT_TRUE(metrics.Finish(&summary).ok());  // every request emitted exactly output_len tokens
  EXPECT_EQ(metrics.serving_result().completed, 60);
  EXPECT_EQ(engine.scheduler().kv().num_used(), 0);
  if (ip.tight_kv) EXPECT_GT(inv.preemptions_, 0);
  if (ip.graphs) EXPECT_GT(inv.padded_, 0);
  if (ip.mode == SpecMode::kDSpark) EXPECT_GT(inv.stale_draft_, 0);
  if (ip.mode == SpecMode::kAdaptive) {
    EXPECT_GT(inv.adaptive_verify_, 0);
    EXPECT_GT(inv.stale_adaptive_, 0);  // totals equal (checked above), splits differ
    EXPECT_GT(inv.stale_adaptive_draft_, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, SchedulerInvariants,
    ::testing::Values(InvariantParam{SpecMode::kNone, false, true, 0, "none"},
                      InvariantParam{SpecMode::kNone, true, true, 0, "none_tight_kv"},
                      InvariantParam{SpecMode::kDSpark, false, true, 0, "dspark"},
                      InvariantParam{SpecMode::kDSpark, true, false, 0, "dspark_tight_kv_eager"},
                      InvariantParam{SpecMode::kAdaptive, false, true, 0, "adaptive"},
                      InvariantParam{SpecMode::kAdaptive, true, true, 0, "adaptive_tight_kv"},
                      InvariantParam{SpecMode::kAdaptive, false, false, 3, "adaptive_eager_c3"}),
    [](const ::testing::TestParamInfo<InvariantParam>& info) { return info.param.name; });

TEST(Scheduler, UnschedulableRequestIsAnError) {
  SchedulerConfig c;
  c.mode = SpecMode::kNone;
  c.max_num_seqs = 2;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 4096;
  c.num_kv_blocks = 3;  // 2 usable blocks: a 1000-token prompt never fits
  const std::vector<RequestSpec> reqs = {{0, 0.0, 1000, 5, {}}};
  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  Engine engine(c, reqs, acceptance, time_model, EngineOptions{}, 1);
  const absl::Status s = engine.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(s.message()).find("request id 0 cannot be scheduled"), std::string::npos) << s;
}

TEST(Scheduler, ClosedLoopKeepsAtMostConcurrencyRequestsInFlight) {
  SchedulerConfig c;
  c.mode = SpecMode::kDSpark;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 2048;
  c.max_model_len = 2048;
  std::vector<RequestSpec> reqs(20);
  for (size_t i = 0; i < reqs.size(); ++i) reqs[i] = {static_cast<int64_t>(i), 0.0, 100, 30, {}};
  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  EngineOptions options;
  options.concurrency = 3;
  Engine engine(c, reqs, acceptance, time_model, options, 1);
  struct Peak final : StepObserver {
    absl::string_view name() const override { return "peak"; }
    absl::Status OnStep(const StepPlan& p) override {
      peak = std::max(peak, p.num_reqs_real);
      return absl::OkStatus();
    }
    int32_t peak = 0;
  } peak;
  engine.AddObserver(&peak);
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_EQ(peak.peak, 3);
}

TEST(StepPlan, ToBatchInputsPointsAtThePlansArrays) {
  SchedulerConfig c;
  c.mode = SpecMode::kAdaptive;
  c.max_num_seqs = 6;
  c.max_num_batched_tokens = 512;
  c.max_model_len = 640;
  c.bt_stride_pad = 5;
  std::vector<RequestSpec> reqs(6);
  for (size_t i = 0; i < reqs.size(); ++i)
    reqs[i] = {static_cast<int64_t>(i), 0.001 * i, 30 + 17 * static_cast<int32_t>(i), 40, {}};
  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  Engine engine(c, reqs, acceptance, time_model, EngineOptions{}, 3);
  struct Wiring final : StepObserver {
    absl::string_view name() const override { return "wiring"; }
    absl::Status OnStep(const StepPlan& p) override {
      auto in = ToBatchInputs(p);
      if (!in.ok()) return in.status();
      const StepArrays& a = **p.Arrays();  // cached: the same arrays, built once
      EXPECT_EQ(in->device.query_start_loc, a.qsl_device.data());
      EXPECT_EQ(in->device.seq_lens, a.seq_lens_device.data());
      EXPECT_EQ(in->device.block_table, a.block_table.data());
      EXPECT_EQ(in->device.slot_mapping, a.slot_mapping.data());
      EXPECT_EQ(in->host.query_start_loc, a.qsl_host.data());
      EXPECT_EQ(in->host.seq_lens, a.seq_lens_host.data());
      EXPECT_EQ(in->sizes.num_reqs, p.num_reqs);
      EXPECT_EQ(in->sizes.num_tokens, p.num_tokens);
      EXPECT_EQ(in->sizes.bt_width, 10);
      EXPECT_EQ(in->sizes.bt_stride, 15);
      EXPECT_EQ(a.qsl_device.size(), static_cast<size_t>(p.num_reqs) + 1);
      EXPECT_EQ(a.block_table.size(), static_cast<size_t>(p.num_reqs) * 15);
      EXPECT_EQ(a.slot_mapping.size(), static_cast<size_t>(p.num_tokens));
      EXPECT_TRUE(ValidateBatchSizes(in->sizes).ok());
      ++steps;
      return absl::OkStatus();
    }
    int steps = 0;
  } wiring;
  engine.AddObserver(&wiring);
  ASSERT_TRUE(engine.Run().ok());
  EXPECT_GT(wiring.steps, 10);
}

TEST(Engine, AnObserverErrorStopsTheRun) {
  SchedulerConfig c;
  c.mode = SpecMode::kDSpark;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 256;
  c.max_model_len = 512;
  const std::vector<RequestSpec> reqs = {{0, 0.0, 50, 50, {}}};
  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  Engine engine(c, reqs, acceptance, time_model, EngineOptions{}, 3);
  struct Failing final : StepObserver {
    absl::string_view name() const override { return "failing"; }
    absl::Status OnStep(const StepPlan& p) override {
      return p.index == 3 ? absl::InternalError("fused: bug at step 3") : absl::OkStatus();
    }
  } failing;
  engine.AddObserver(&failing);
  const absl::Status s = engine.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(engine.steps(), 3);
}

}  // namespace
}  // namespace dspark::sim
