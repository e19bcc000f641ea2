// Acceptance model: the presets' mean acceptance length, custom curves, the per-request
// jitter, and the drafter confidences' correlation with the outcome.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "sim/model/acceptance.h"

namespace dspark::sim {
namespace {

// Mean acceptance length as vLLM aggregates it: total tokens per verification over many
// requests that each verify all K drafts repeatedly.
double SimulatedMeanAcceptanceLength(const AcceptanceModel& model, int requests, int rounds,
                                     bool with_confidences) {
  Rng jitter(9, RngStream::kRequestJitter), draws(9, RngStream::kAcceptance);
  const int k = model.spec_k();
  double tokens = 0, verifications = 0;
  std::vector<float> p(k), conf(k);
  for (int r = 0; r < requests; ++r) {
    model.InitRequest(RequestSpec{}, jitter, p.data());
    for (int i = 0; i < rounds; ++i) {
      const int32_t a = with_confidences ? model.DrawWithConfidences(p.data(), k, draws, conf.data())
                                         : AcceptanceModel::DrawAcceptedPrefix(p.data(), k, draws);
      tokens += 1 + a;
      verifications += 1;
    }
  }
  return tokens / verifications;
}

TEST(Acceptance, DefaultPresetMeanLengthIsAbout3p3) {
  auto params = AcceptancePreset("default", 5);
  ASSERT_TRUE(params.ok());
  const double analytic = ExpectedAcceptanceLength(params->curve.data(), 5);
  EXPECT_NEAR(analytic, 3.378, 0.001);  // the curve itself, no jitter
  const AcceptanceModel model(*params, 5);
  // Requests that decode a fixed number of tokens verify 1 / length times as often, so the
  // aggregate is the harmonic mean of the per-request lengths: 3.33 over the jitter.
  Rng jitter(1, RngStream::kRequestJitter);
  std::vector<float> p(5);
  double inv = 0;
  const int n = 20000;
  for (int r = 0; r < n; ++r) {
    model.InitRequest(RequestSpec{}, jitter, p.data());
    double s = 1, len = 1;
    for (float q : p) len += (s *= q);
    inv += 1.0 / len;
  }
  EXPECT_NEAR(n / inv, 3.33, 0.02);
  // Equal rounds per request give the arithmetic mean; both draw paths agree on it.
  const double plain = SimulatedMeanAcceptanceLength(model, 2000, 100, false);
  const double with_conf = SimulatedMeanAcceptanceLength(model, 2000, 100, true);
  EXPECT_NEAR(plain, 3.38, 0.03);
  EXPECT_NEAR(with_conf, 3.38, 0.03);
}

// p = 0.9899 is fitted (scripts/fit_forward.py): the batch-1 TPOT over the SPEED-Bench c=1 iteration.
TEST(Acceptance, RepeatedPromptPresetIsAbout5p85WithoutJitter) {
  auto params = AcceptancePreset("repeated-prompt", 5);
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(params->request_logit_sigma, 0.0);
  EXPECT_NEAR(ExpectedAcceptanceLength(params->curve.data(), 5), 5.85, 0.01);
  const AcceptanceModel model(*params, 5);
  EXPECT_NEAR(SimulatedMeanAcceptanceLength(model, 100, 2000, false), 5.85, 0.03);
}

TEST(Acceptance, CurvesFromText) {
  auto curve = ParseAcceptanceCurve("0.9, 0.8,0.7", 5);
  ASSERT_TRUE(curve.ok());
  EXPECT_EQ(*curve, (std::vector<double>{0.9, 0.8, 0.7, 0.7, 0.7}));
  EXPECT_FALSE(ParseAcceptanceCurve("0.9,1.2", 5).ok());
  EXPECT_FALSE(ParseAcceptanceCurve("0.9,0.9,0.9,0.9,0.9,0.9", 5).ok());
  EXPECT_FALSE(ParseAcceptanceCurve("", 5).ok());
  EXPECT_FALSE(AcceptancePreset("optimistic", 5).ok());
  EXPECT_EQ(AcceptancePreset("default", 9).status().code(), absl::StatusCode::kOutOfRange);
  const double all[3] = {1.0, 1.0, 1.0};
  EXPECT_EQ(ExpectedAcceptanceLength(all, 3), 4.0);
}

TEST(Acceptance, TraceProfileOverridesTheCurveWithoutJitter) {
  auto params = AcceptancePreset("default", 5);
  const AcceptanceModel model(*params, 5);
  RequestSpec spec;
  spec.acceptance = {0.25, 1.0};
  Rng jitter(4);
  std::vector<float> p(5);
  model.InitRequest(spec, jitter, p.data());
  EXPECT_EQ(p, (std::vector<float>{0.25f, 1.0f, 1.0f, 1.0f, 1.0f}));
}

// The confidence is Beta(kappa p, kappa (1 - p)) and the outcome Bernoulli(confidence): so its
// mean is p, its variance p (1 - p) / (kappa + 1), and it is calibrated: among drafts with
// confidence near q, a share q is accepted, no more (a confidence that leaked the outcome,
// as a mix of p and the outcome does, is over-confident at the top and under at the bottom).
TEST(Acceptance, ConfidencesAreBetaDistributedAndCalibrated) {
  AcceptanceParams params = *AcceptancePreset("default", 5);
  params.request_logit_sigma = 0.0;
  params.confidence_concentration = 2.0;
  const AcceptanceModel model(params, 5);
  Rng rng(17);
  const float p = 0.7f;
  const int n = 400000;
  double sum = 0, sum2 = 0;
  std::vector<double> bin_n(10), bin_acc(10), bin_q(10);
  for (int i = 0; i < n; ++i) {
    float q = 0;
    const int32_t a = model.DrawWithConfidences(&p, 1, rng, &q);
    ASSERT_GE(q, 0.0f);
    ASSERT_LE(q, 1.0f);
    sum += q;
    sum2 += static_cast<double>(q) * q;
    const int b = std::min(9, static_cast<int>(q * 10));
    bin_n[b] += 1;
    bin_acc[b] += a;
    bin_q[b] += q;
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.7, 0.003);
  EXPECT_NEAR(var, 0.7 * 0.3 / 3.0, 0.002);
  int checked = 0;
  for (int b = 0; b < 10; ++b) {
    if (bin_n[b] < 10000) continue;
    ++checked;
    EXPECT_NEAR(bin_acc[b] / bin_n[b], bin_q[b] / bin_n[b], 0.012) << "confidence bin " << b;
  }
  EXPECT_GE(checked, 6);
}

TEST(Acceptance, CertainPositionsStayCertain) {
  const AcceptanceModel model(*AcceptancePreset("default", 3), 3);
  Rng rng(3);
  const float p[3] = {1.0f, 1.0f, 0.0f};
  float q[3];
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(model.DrawWithConfidences(p, 3, rng, q), 2);
    EXPECT_EQ(q[0], 1.0f);
    EXPECT_EQ(q[2], 0.0f);
  }
}

// The four-at-a-time draw of tabled positions against the one-by-one definition: the same
// confidences (bit for bit), accepted prefixes and engine position, for K = 1..8, curves
// that are tabled throughout or have untabled positions (0, 1, or a logit past the table) at
// any place, several concentrations, and the engine's state refills crossed many times.
TEST(Acceptance, DrawWithConfidencesEqualsOneByOne) {
  Rng pick(2024);
  const float untabled[] = {0.0f, 1.0f, 1e-5f, 0.99999f};
  for (double kappa : {0.5, 2.0, 8.0}) {
    AcceptanceParams params = *AcceptancePreset("default", kMaxSpecK);
    params.confidence_concentration = kappa;
    const AcceptanceModel model(params, kMaxSpecK);
    for (int trial = 0; trial < 300; ++trial) {
      const int32_t k = 1 + static_cast<int32_t>(pick.UniformInt(kMaxSpecK));
      float p[kMaxSpecK];
      for (int32_t i = 0; i < k; ++i) p[i] = static_cast<float>(0.02 + 0.97 * pick.Uniform());
      if (trial % 3 == 0) p[pick.UniformInt(static_cast<uint64_t>(k))] = untabled[pick.UniformInt(4)];
      AcceptanceModel::ConfidenceShapes shapes;
      model.PrepareConfidences(p, &shapes, k);
      const uint64_t seed = pick.NextU64();
      Rng fast(seed), slow(seed);
      for (int round = 0; round < 200; ++round) {
        float q_fast[kMaxSpecK], q_slow[kMaxSpecK];
        const int32_t a_fast = model.DrawWithConfidences(p, shapes, k, fast, q_fast);
        const int32_t a_slow = AcceptanceModel::DrawWithConfidencesOneByOne(p, shapes, k, slow, q_slow);
        ASSERT_EQ(a_fast, a_slow) << "kappa " << kappa << " trial " << trial << " round " << round;
        for (int32_t i = 0; i < k; ++i)
          ASSERT_EQ(std::memcmp(&q_fast[i], &q_slow[i], sizeof(float)), 0)
              << "kappa " << kappa << " trial " << trial << " round " << round << " position " << i;
      }
      ASSERT_EQ(fast.NextU64(), slow.NextU64()) << "the engines drifted apart, trial " << trial;
    }
  }
}

}  // namespace
}  // namespace dspark::sim
