// The roofline forward (sim/model/time_model_forward.h): its terms by hand, and its keys in a
// calibration file.
#include <cmath>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "sim/model/time_model.h"
#include "sim/model/time_model_forward.h"

namespace dspark::sim {
namespace {

// A toy model whose terms are round numbers: 1 layer, 4 experts top-2, no shared expert,
// 1e6 bytes per expert, 1 TB/s (1e6 bytes/us), 1 TFLOPS (1e6 FLOP/us) at full efficiency.
RooflineForward Toy() {
  RooflineForward r;
  r.moe_layers = 1;
  r.routed_experts = 4;
  r.experts_per_token = 2;
  r.shared_experts = 0;
  r.expert_params = 1e6;
  r.expert_bytes_per_param = 1.0;
  r.dense_params = 0;
  r.attn_flops_per_token = 0;
  r.attn_flops_per_pair = 0;
  r.kv_bytes_per_ctx_token = 0;
  r.tensor_parallel = 1;
  r.hbm_tb_per_s = 1.0;
  r.peak_tflops = 1.0;
  r.sm_count = 2;
  r.floor_us = 100;
  r.compute_efficiency = 1.0;
  return r;
}

TEST(RooflineForward, ExpertsTouchedFollowIndependentTopKRouting) {
  const RooflineForward r = Toy();
  // One token touches k = 2 experts; two tokens 4 * (1 - (1/2)^2) = 3; many tokens all 4.
  EXPECT_DOUBLE_EQ(RooflineTerms(r, 1, 0, 0).experts_touched, 2.0);
  EXPECT_DOUBLE_EQ(RooflineTerms(r, 2, 0, 0).experts_touched, 3.0);
  EXPECT_NEAR(RooflineTerms(r, 64, 0, 0).experts_touched, 4.0, 1e-12);
  RooflineForward shared = r;
  shared.shared_experts = 1;
  EXPECT_DOUBLE_EQ(RooflineTerms(shared, 1, 0, 0).experts_touched, 3.0);
}

// vLLM's graph-capture dummy tokens are all alike: one routing for every token, so k experts
// whatever N, while the math still counts every token.
TEST(RooflineForward, AlikeTokensTouchOnlyKExperts) {
  const RooflineForward r = Toy();
  EXPECT_DOUBLE_EQ(RooflineTerms(r, 64, 0, 0, 1).experts_touched, 2.0);
  EXPECT_DOUBLE_EQ(RooflineTerms(r, 64, 0, 0, 2).experts_touched, 3.0);
  EXPECT_DOUBLE_EQ(RooflineTerms(r, 1, 0, 0, 64).experts_touched, 2.0);  // at most num_tokens
  EXPECT_DOUBLE_EQ(RooflineTerms(r, 64, 0, 0, -1).experts_touched, RooflineTerms(r, 64, 0, 0).experts_touched);
  EXPECT_LT(RooflineTerms(r, 64, 0, 0, 1).moe_us, RooflineTerms(r, 64, 0, 0).moe_us + 1e-12);
}

TEST(RooflineForward, MoeIsTheMaxOfWeightReadsAndMath) {
  const RooflineForward r = Toy();
  // 1 token: reads 2 experts = 2e6 bytes = 2 us; math 2 * 1 * 2 * 1e6 = 4e6 FLOP = 4 us.
  EXPECT_DOUBLE_EQ(RooflineTerms(r, 1, 0, 0).moe_us, 4.0);
  RooflineForward slow_memory = r;
  slow_memory.hbm_tb_per_s = 0.1;  // reads 20 us
  EXPECT_DOUBLE_EQ(RooflineTerms(slow_memory, 1, 0, 0).moe_us, 20.0);
  RooflineForward half = r;
  half.compute_efficiency = 0.5;  // math 8 us
  EXPECT_DOUBLE_EQ(RooflineTerms(half, 1, 0, 0).moe_us, 8.0);
  RooflineForward tp = r;
  tp.tensor_parallel = 4;  // each rank holds a quarter of every expert
  EXPECT_DOUBLE_EQ(RooflineTerms(tp, 1, 0, 0).moe_us, 1.0);
}

TEST(RooflineForward, DenseKvAndRowTerms) {
  RooflineForward r = Toy();
  r.moe_layers = 0;
  r.dense_params = 3e6;           // 3 us of reads
  r.attn_flops_per_pair = 10;     // 10 FLOP per pair
  r.kv_bytes_per_ctx_token = 2;   // 2 bytes per context token
  r.row_latency_us_per_ctx_token = 0.5;
  // 2 tokens: math 2 * 2 * 3e6 + 1000 pairs * 10 = 1.201e7 FLOP = 12.01 us > 3 us of reads.
  const ForwardTerms t = RooflineTerms(r, 2, 500, 1000.0);
  EXPECT_DOUBLE_EQ(t.dense_us, 12.01);
  EXPECT_DOUBLE_EQ(t.kv_us, 1e-3);
  // 500 context tokens per row on average, 2 rows in one wave of 2 SMs.
  EXPECT_DOUBLE_EQ(t.rows_us, 250.0);
  // 5 rows need 3 waves.
  EXPECT_DOUBLE_EQ(RooflineTerms(r, 5, 0, 2500.0).rows_us, 0.5 * 500 * 3);
  EXPECT_DOUBLE_EQ(t.total_us(), 100 + 12.01 + 1e-3 + 250.0);
  EXPECT_DOUBLE_EQ(RooflineTerms(r, 0, 0, 0).total_us(), 100 + 3.0);
}

TEST(RooflineForward, TimeModelUsesItForTheTargetOnly) {
  TimeModelParams p = DefaultTimeModelParams();
  ASSERT_TRUE(p.target_roofline_on);
  const TimeModel model(p);
  EXPECT_DOUBLE_EQ(model.ForwardUs(false, 6, 3456, 3441.0),
                   RooflineTerms(p.target_roofline, 6, 3456, 3441.0).total_us());
  EXPECT_DOUBLE_EQ(model.ForwardUs(true, 6, 3456, 0.0), p.drafter.fixed_us + 6 * p.drafter.per_token_us +
                                                             3456 * p.drafter.per_ctx_token_us);
  // More tokens touch more experts: a 48-token verification costs more than a 6-token one by
  // more than the old linear slope of 20 us per token.
  EXPECT_GT(model.ForwardUs(false, 48, 0, 0) - model.ForwardUs(false, 6, 0, 0), 42 * 20.0);
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(RooflineForward, CalibrationKeys) {
  auto p = LoadCalibration(WriteTemp("r1.json", R"({"forward": {"target_roofline":
      {"method": "m", "floor_us": 1000, "compute_efficiency": 0.25, "routed_experts": 64, "sm_count": 132}}})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->target_roofline_on);
  EXPECT_EQ(p->target_roofline.floor_us, 1000.0);
  EXPECT_EQ(p->target_roofline.compute_efficiency, 0.25);
  EXPECT_EQ(p->target_roofline.routed_experts, 64);
  EXPECT_EQ(p->target_roofline.sm_count, 132);
  EXPECT_EQ(p->target_roofline.experts_per_token, RooflineForward{}.experts_per_token);

  auto linear = LoadCalibration(WriteTemp("r2.json", R"({"forward": {"target": {"fixed_us": 5000}}})"));
  ASSERT_TRUE(linear.ok()) << linear.status();
  EXPECT_FALSE(linear->target_roofline_on);
  EXPECT_DOUBLE_EQ(TimeModel(*linear).ForwardUs(false, 1, 0, 0), 5000 + linear->target.per_token_us);

  const struct { const char* text; const char* message; } bad[] = {
      {R"({"forward": {"target": {}, "target_roofline": {}}})", "not both"},
      {R"({"forward": {"target_roofline": {"experts": 8}}})", "key 'forward.target_roofline.experts': unknown key"},
      {R"({"forward": {"target_roofline": {"floor_us": -1}}})", "expected a number >= 0"},
      {R"({"forward": {"target_roofline": {"compute_efficiency": 2}}})", "expected a number in (0, 1]"},
      {R"({"forward": {"target_roofline": {"moe_layers": 1.5}}})", "expected an integer"},
      {R"({"forward": {"target_roofline": {"experts_per_token": 300}}})", "experts_per_token <= routed_experts"},
  };
  for (const auto& b : bad) {
    auto r = LoadCalibration(WriteTemp("r3.json", b.text));
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_NE(std::string(r.status().message()).find(b.message), std::string::npos) << r.status();
  }
}

}  // namespace
}  // namespace dspark::sim
