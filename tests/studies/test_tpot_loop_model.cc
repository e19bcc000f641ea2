// The batch-1 TPOT table's one composition (sim/studies/tpot_loop_model.h): it is the CPU model's
// figure from the same inputs, bench's row assembly is it, and the only input bench changes is the
// metadata GPU µs (and launch counts) it measured. CPU only.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sim/studies/run.h"
#include "sim/studies/tpot_loop_model.h"
#include "tests/common/test_paths.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string CalibrationPath() {
  return (testing_util::SourceRoot() / "workloads" / "calibration_h200.json").string();
}

TimeModelParams Calibration() {
  absl::StatusOr<TimeModelParams> p = LoadCalibration(CalibrationPath());
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// The CPU model's figure for one sample as `dspark-sim run` computes it: batch1-512, one request,
// seed `seed`, the shipped calibration.
double RunCommandTpotMs(SpecMode mode, Impl impl, uint64_t seed) {
  std::vector<std::string> args = {"run", "--workload", "batch1-512", "--num-requests", "1", "--seed",
                                   std::to_string(seed), "--mode", std::string(SpecModeName(mode)),
                                   "--time-impl", std::string(ImplName(impl)), "--no-check",
                                   "--calibration", CalibrationPath(), "--out",
                                   (fs::path(::testing::TempDir()) / "tpot_loop_model_run").string()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::string help;
  absl::StatusOr<RunConfig> c = ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
  EXPECT_TRUE(c.ok()) << c.status();
  absl::StatusOr<RunResult> r = ExecuteRun(*c);
  EXPECT_TRUE(r.ok()) << r.status();
  return r->serving.latency("tpot")->mean_ms;
}

// The calibration's own metadata table as bench.json's "metadata" rows would carry it.
ojson CalibrationAsBenchRows(const TimeModelParams& p, const std::vector<Impl>& impls) {
  ojson rows = ojson::array();
  for (Impl impl : impls)
    for (int c = 0; c < kNumStepCases; ++c) {
      const ImplCost& cost = p.impls[impl.index()];
      rows.push_back({{"case", std::string(StepCaseName(static_cast<StepCase>(c)))},
                      {"impl", std::string(ImplName(impl))},
                      {"method", "graph"},
                      {"gpu_us_median", cost.gpu_us[c]},
                      {"launches", cost.launches[c]}});
      // The eager method's rows are not the calibration's measurement: they must be ignored.
      rows.push_back({{"case", std::string(StepCaseName(static_cast<StepCase>(c)))},
                      {"impl", std::string(ImplName(impl))},
                      {"method", "eager"},
                      {"gpu_us_median", 1e6},
                      {"launches", 1}});
    }
  return rows;
}

const SpecMode kModes[] = {SpecMode::kNone, SpecMode::kDSpark, SpecMode::kAdaptive};

// Each sample of the composition is exactly the `run` command's TPOT of that schedule: the
// composition is the CPU model, not a copy of it.
TEST(Batch1Composition, EachSampleIsTheRunCommandsTpot) {
  const TimeModelParams p = Calibration();
  for (SpecMode mode : kModes)
    for (Impl impl : {Impl::kDeviceChain, Impl::kFused}) {
      absl::StatusOr<Batch1Tpot> t = ComposeBatch1Tpot(p, mode, impl, 2, 1);
      ASSERT_TRUE(t.ok()) << t.status();
      ASSERT_EQ(t->sample_tpot_ms.size(), 2u);
      for (int s = 0; s < 2; ++s)
        EXPECT_DOUBLE_EQ(t->sample_tpot_ms[s], RunCommandTpotMs(mode, impl, 1 + s)) << SpecModeName(mode) << " "
                                                                                     << ImplName(impl) << " sample " << s;
    }
}

// bench's rows with the calibration's own µs as the "measured" section are the CPU model's
// figures, bit for bit; and the eager rows, whose method is not the calibration's, are ignored.
TEST(Batch1Composition, BenchRowsWithTheCalibrationsMetadataAreTheCpuModel) {
  const TimeModelParams p = Calibration();
  const std::vector<Impl> impls = {Impl::kDeviceChain, Impl::kFused};
  std::string source;
  const std::vector<MeasuredMetadata> measured = MeasuredFromBenchRows(CalibrationAsBenchRows(p, impls), 16, true, &source);
  EXPECT_EQ(measured.size(), impls.size() * kNumStepCases);
  EXPECT_NE(source.find("measured"), std::string::npos) << source;
  const std::vector<SpecMode> modes(std::begin(kModes), std::end(kModes));
  absl::StatusOr<std::vector<Batch1Row>> rows = AssembleBatch1Rows(p, measured, modes, impls, 8, 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 6u);
  const ojson j = Batch1RowsJson(*rows, source);
  ASSERT_EQ(j.size(), 6u);
  for (size_t i = 0; i < rows->size(); ++i) {
    const Batch1Row& r = (*rows)[i];
    absl::StatusOr<Batch1Tpot> cpu = ComposeBatch1Tpot(p, r.mode, r.impl, 8, 1);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    EXPECT_EQ(r.tpot.sample_tpot_ms, cpu->sample_tpot_ms) << SpecModeName(r.mode) << " " << ImplName(r.impl);
    EXPECT_EQ(j[i]["tpot_ms"].get<double>(), cpu->mean_tpot_ms);
    EXPECT_EQ(j[i]["mode"], std::string(SpecModeName(r.mode)));
    EXPECT_EQ(j[i]["impl"], std::string(ImplName(r.impl)));
    EXPECT_EQ(j[i]["composed_samples"].get<int64_t>(), 8);
    EXPECT_TRUE(r.has_before);
  }
  // (c) -> (d) per mode, from the same rows.
  EXPECT_EQ((*rows)[0].reduction_vs_before_pct, 0.0);
  EXPECT_DOUBLE_EQ((*rows)[1].reduction_vs_before_pct,
                   100.0 * (1.0 - (*rows)[1].tpot.mean_tpot_ms / (*rows)[0].tpot.mean_tpot_ms));
  EXPECT_GT((*rows)[1].reduction_vs_before_pct, 0.0);
}

// The metadata µs are the one input bench changes: lowering (d)'s measured decode suite changes
// only (d)'s no-DSpark row, which is GPU-bound at batch 1, by nearly all of the difference per token.
TEST(Batch1Composition, MeasuredMetadataIsTheOnlyDifference) {
  const TimeModelParams p = Calibration();
  const double cal_us = p.impls[Impl::kFused.index()].gpu_us[static_cast<int>(StepCase::kDecode)];
  const int32_t cal_launches = p.impls[Impl::kFused.index()].launches[static_cast<int>(StepCase::kDecode)];
  const std::vector<MeasuredMetadata> measured = {{Impl::kFused, StepCase::kDecode, cal_us - 50.0, cal_launches}};
  const std::vector<Impl> impls = {Impl::kDeviceChain, Impl::kFused};
  absl::StatusOr<std::vector<Batch1Row>> base = AssembleBatch1Rows(p, {}, {SpecMode::kNone, SpecMode::kDSpark}, impls, 4, 1);
  absl::StatusOr<std::vector<Batch1Row>> low = AssembleBatch1Rows(p, measured, {SpecMode::kNone, SpecMode::kDSpark}, impls, 4, 1);
  ASSERT_TRUE(base.ok() && low.ok());
  EXPECT_EQ((*low)[0].tpot.sample_tpot_ms, (*base)[0].tpot.sample_tpot_ms) << "(c) none must not change";
  EXPECT_EQ((*low)[2].tpot.sample_tpot_ms, (*base)[2].tpot.sample_tpot_ms) << "(c) dspark must not change";
  EXPECT_EQ((*low)[3].tpot.sample_tpot_ms, (*base)[3].tpot.sample_tpot_ms) << "no decode step in DSpark mode";
  const double drop_us = 1e3 * ((*base)[1].tpot.mean_tpot_ms - (*low)[1].tpot.mean_tpot_ms);
  EXPECT_GT(drop_us, 45.0);
  EXPECT_LE(drop_us, 50.0);
}

TEST(Batch1Composition, MetadataNotMeasuredAsTheCalibrationIsNotUsed) {
  const TimeModelParams p = Calibration();
  const ojson rows = CalibrationAsBenchRows(p, {Impl::kFused});
  std::string source;
  EXPECT_TRUE(MeasuredFromBenchRows(rows, 4, true, &source).empty());
  EXPECT_NE(source.find("calibration"), std::string::npos) << source;
  EXPECT_TRUE(MeasuredFromBenchRows(rows, 16, false, &source).empty());
  EXPECT_NE(source.find("warm"), std::string::npos) << source;
  EXPECT_TRUE(MeasuredFromBenchRows(ojson::array(), 16, true, &source).empty());
  EXPECT_NE(source.find("no metadata"), std::string::npos) << source;
}

// The seed comparison's criterion on the CPU model (the shipped calibration) and on the last H200 bench's
// measured metadata (an H200 bench at e3f8b19, tests/fixtures/h200/bench_e3f8b19.json): what `bench` reports from
// those measurements. Each (c) -> (d) reduction within 3 points of the seed's 5.8 / 15.1 / 18.2 %.
TEST(Batch1Composition, CpuModelAndAnH200BenchsMetadataGiveTheSeedsReductions) {
  std::ifstream f(testing_util::TestDir() / "fixtures" / "h200" / "bench_e3f8b19.json");
  ASSERT_TRUE(f.good());
  const ojson bench = ojson::parse(f);
  std::string source;
  const std::vector<MeasuredMetadata> measured = MeasuredFromBenchRows(bench["metadata"], 16, true, &source);
  ASSERT_EQ(measured.size(), 40u) << source;  // 5 impls x 8 cases
  const std::vector<SpecMode> modes(std::begin(kModes), std::end(kModes));
  const double seed_pct[] = {5.82, 15.07, 18.20};
  for (const bool h200 : {false, true}) {
    absl::StatusOr<std::vector<Batch1Row>> rows = AssembleBatch1Rows(
        Calibration(), h200 ? measured : std::vector<MeasuredMetadata>{}, modes, {Impl::kDeviceChain, Impl::kFused},
        1000, 1);
    ASSERT_TRUE(rows.ok()) << rows.status();
    for (int m = 0; m < 3; ++m) {
      const Batch1Row& before = (*rows)[2 * m];
      const Batch1Row& after = (*rows)[2 * m + 1];
      std::printf("batch-1 %s, %s: %.4f -> %.4f ms, %.2f %% (seed %.1f %%), acceptance %.3f\n",
                  h200 ? "H200 bench metadata" : "calibration", std::string(SpecModeName(modes[m])).c_str(),
                  before.tpot.mean_tpot_ms, after.tpot.mean_tpot_ms, after.reduction_vs_before_pct, seed_pct[m],
                  after.tpot.mean_acceptance_length);
      EXPECT_NEAR(after.reduction_vs_before_pct, seed_pct[m], 3.0) << SpecModeName(modes[m]) << (h200 ? " H200" : " CPU");
    }
  }
}

}  // namespace
}  // namespace dspark::sim
