// MetricsObserver keeps only the per-step records steps.csv writes (every --steps-csv-stride-th
// step), so that a long `run` does not hold one record per step; its summary still covers
// every step.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/model/acceptance.h"
#include "sim/engine/engine.h"
#include "sim/workload/generators.h"
#include "sim/observe/metrics.h"
#include "sim/model/time_model.h"

namespace dspark::sim {
namespace {

TEST(MetricsRecords, StrideKeepsEveryNthStepAndTheSameSummary) {
  SchedulerConfig c;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 512;
  c.max_model_len = 2048;
  Rng lengths(3, RngStream::kLengths);
  std::vector<RequestSpec> reqs(40);
  for (size_t i = 0; i < reqs.size(); ++i)
    reqs[i] = {static_cast<int64_t>(i), 0.0, 1 + static_cast<int32_t>(lengths.UniformInt(1500)),
               1 + static_cast<int32_t>(lengths.UniformInt(200)), {}};
  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  EngineOptions options;
  options.concurrency = 8;
  Engine engine(c, reqs, acceptance, time_model, options, 9);
  MetricsObserver every(reqs), seventh(reqs, 7);
  engine.AddObserver(&every);
  engine.AddObserver(&seventh);
  ASSERT_TRUE(engine.Run().ok());
  const int64_t steps = engine.steps();
  ASSERT_GT(steps, 50);
  EXPECT_EQ(static_cast<int64_t>(every.steps().size()), steps);
  ASSERT_EQ(static_cast<int64_t>(seventh.steps().size()), (steps + 6) / 7);
  for (size_t i = 0; i < seventh.steps().size(); ++i) EXPECT_EQ(seventh.steps()[i].index, static_cast<int64_t>(7 * i));
  EXPECT_EQ(seventh.StepsCsv(7), every.StepsCsv(7));
  nlohmann::json a, b;
  ASSERT_TRUE(every.Finish(&a).ok());
  ASSERT_TRUE(seventh.Finish(&b).ok());
  EXPECT_EQ(a.dump(), b.dump());  // bit-identical, including the per-case step aggregates
  EXPECT_EQ(ServingResultJson(every.serving_result()).dump(), ServingResultJson(seventh.serving_result()).dump());
  EXPECT_EQ(b["steps"]["total"].get<int64_t>(), steps);
}

// Feeds a MetricsObserver the single events (StepObserver's default OnOutcomes), not the
// records its own OnOutcomes takes in one loop.
class SingleEvents final : public StepObserver {
 public:
  explicit SingleEvents(MetricsObserver* metrics) : m_(metrics) {}
  absl::string_view name() const override { return "single-events"; }
  void OnStart(const Engine& engine) override { m_->OnStart(engine); }
  absl::Status OnStep(const StepPlan& plan) override { return m_->OnStep(plan); }
  void OnArrival(int32_t req, double time_s) override { m_->OnArrival(req, time_s); }
  void OnTokens(int32_t req, double time_s, int32_t tokens) override { m_->OnTokens(req, time_s, tokens); }
  void OnVerification(int32_t req, int32_t proposed, int32_t verified, int32_t accepted) override {
    m_->OnVerification(req, proposed, verified, accepted);
  }
  void OnFinished(int32_t req, double time_s) override { m_->OnFinished(req, time_s); }
  void OnPreempted(int32_t req, double time_s) override { m_->OnPreempted(req, time_s); }

 private:
  MetricsObserver* m_;
};

// A step's request events as records (MetricsObserver::OnOutcomes) give the metrics the same
// events one by one give, bit for bit: adaptive runs with preemptions, several seeds.
TEST(MetricsRecords, OutcomeRecordsEqualSingleEvents) {
  for (uint64_t seed : {1, 2, 3}) {
    SchedulerConfig c;
    c.max_num_seqs = 16;
    c.max_num_batched_tokens = 512;
    c.max_model_len = 2048;
    c.num_kv_blocks = 120;  // tight: preemptions
    Rng lengths(seed, RngStream::kLengths);
    std::vector<RequestSpec> reqs(60);
    for (size_t i = 0; i < reqs.size(); ++i)
      reqs[i] = {static_cast<int64_t>(i), 0.001 * static_cast<double>(i),
                 1 + static_cast<int32_t>(lengths.UniformInt(1200)),
                 1 + static_cast<int32_t>(lengths.UniformInt(300)), {}};
    const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
    const TimeModel time_model(DefaultTimeModelParams());
    EngineOptions options;
    options.concurrency = 24;
    Engine engine(c, reqs, acceptance, time_model, options, seed);
    MetricsObserver records(reqs), singles(reqs);
    SingleEvents adaptor(&singles);
    engine.AddObserver(&records);
    engine.AddObserver(&adaptor);
    ASSERT_TRUE(engine.Run().ok());
    ASSERT_GT(records.mean_acceptance_length(), 1.0);
    nlohmann::json a, b;
    ASSERT_TRUE(records.Finish(&a).ok());
    ASSERT_TRUE(singles.Finish(&b).ok());
    EXPECT_EQ(a.dump(), b.dump()) << "seed " << seed;
    EXPECT_EQ(ServingResultJson(records.serving_result()).dump(), ServingResultJson(singles.serving_result()).dump()) << "seed " << seed;
    EXPECT_EQ(records.RequestsCsv(), singles.RequestsCsv()) << "seed " << seed;
  }
}

}  // namespace
}  // namespace dspark::sim
