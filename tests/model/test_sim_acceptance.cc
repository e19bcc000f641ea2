// Acceptance model: the presets' mean acceptance length, custom curves, the per-request
// jitter, and the drafter confidences' correlation with the outcome.
#include <gtest/gtest.h>

#include <cmath>
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
  EXPECT_NEAR(analytic, 3.34, 0.01);  // the curve itself, no jitter
  const AcceptanceModel model(*params, 5);
  // Requests that decode a fixed number of tokens verify 1 / length times as often, so the
  // aggregate is the harmonic mean of the per-request lengths: 3.30 over the jitter.
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
  EXPECT_NEAR(n / inv, 3.30, 0.02);
  // Equal rounds per request give the arithmetic mean; both draw paths agree on it.
  const double plain = SimulatedMeanAcceptanceLength(model, 2000, 100, false);
  const double with_conf = SimulatedMeanAcceptanceLength(model, 2000, 100, true);
  EXPECT_NEAR(plain, 3.34, 0.03);
  EXPECT_NEAR(with_conf, 3.34, 0.03);
}

TEST(Acceptance, RepeatedPromptPresetIsAbout4p6WithoutJitter) {
  auto params = AcceptancePreset("repeated-prompt", 5);
  ASSERT_TRUE(params.ok());
  EXPECT_EQ(params->request_logit_sigma, 0.0);
  EXPECT_NEAR(ExpectedAcceptanceLength(params->curve.data(), 5), 4.67, 0.01);
  const AcceptanceModel model(*params, 5);
  EXPECT_NEAR(SimulatedMeanAcceptanceLength(model, 100, 2000, false), 4.67, 0.03);
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

TEST(Acceptance, ConfidencesAreCalibratedAndCorrelatedWithTheOutcome) {
  AcceptanceParams params = *AcceptancePreset("default", 5);
  params.request_logit_sigma = 0.0;
  const AcceptanceModel model(params, 5);
  Rng rng(17);
  const std::vector<float> p = {0.7f, 0.7f, 0.7f, 0.7f, 0.7f};
  std::vector<float> conf(5);
  // Position 1's outcome is independent of the others, so its confidence can be compared with
  // whether the verification accepted at least one draft.
  double sc = 0, sa = 0, sca = 0, scc = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const int32_t a = model.DrawWithConfidences(p.data(), 5, rng, conf.data());
    const double acc = a >= 1 ? 1.0 : 0.0;
    for (float c : conf) {
      ASSERT_GE(c, 0.001f);
      ASSERT_LE(c, 0.999f);
    }
    sc += conf[0];
    sa += acc;
    sca += conf[0] * acc;
    scc += conf[0] * conf[0];
  }
  const double mc = sc / n, ma = sa / n;
  EXPECT_NEAR(mc, 0.7, 0.005);  // E[c] = p
  EXPECT_NEAR(ma, 0.7, 0.005);
  const double cov = sca / n - mc * ma;
  const double corr = cov / std::sqrt((scc / n - mc * mc) * ma * (1 - ma));
  EXPECT_GT(corr, 0.5);
  EXPECT_LT(corr, 0.95);
}

}  // namespace
}  // namespace dspark::sim
