// The TPOT loop on a device (skipped without one): it completes every request with no capture
// inside the timing, and the forward stand-in lasts what it is asked to. The calibration fit and
// its round trip through the time model's loader run without a device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "kernels/common/device_buffer.cuh"
#include "sim/exec/gpu_executor.cuh"
#include "sim/model/acceptance.h"
#include "sim/model/time_model.h"
#include "sim/studies/calibration_fit.cuh"
#include "sim/studies/tpot_loop.cuh"
#include "tests/common/gpu_test_util.cuh"

namespace dspark::sim {
namespace {

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
