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
  EXPECT_EQ(every.serving_result().dump(), seventh.serving_result().dump());
  EXPECT_EQ(b["steps"]["total"].get<int64_t>(), steps);
}

}  // namespace
}  // namespace dspark::sim
