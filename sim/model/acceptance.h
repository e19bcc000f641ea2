// DSpark acceptance model (K draft positions per request).
//
// Model (docs/models.md, "Acceptance model"):
//  - A curve gives the conditional acceptance p_k = P(draft k accepted | drafts < k accepted),
//    k = 1..K. The mean acceptance length (vLLM's definition: 1 + accepted drafts per
//    verification) of a curve with all K drafts verified is 1 + sum_k prod_{i<=k} p_i.
//  - Each request gets its own curve: p_{r,k} = sigmoid(logit(p_k) + delta_r) with
//    delta_r ~ N(0, request_logit_sigma), drawn once at admission, or the trace's per-request
//    profile when it carries one (then no jitter).
//  - Each draft step draws, for every drafted position k of request r, an independent outcome
//    acc_k ~ Bernoulli(p_{r,k}). The verification of k_r drafts then accepts
//    a_r = min(L_r, k_r), where L_r is the number of leading positions with acc = 1.
//  - Each drafted position k of request r gets a drafter confidence q_{r,k}, drawn fresh at every
//    draft step from Beta(kappa p_{r,k}, kappa (1 - p_{r,k})) by inverse CDF from a table
//    (sim/model/beta_quantile.h gives its error; p outside the table's range is drawn exactly
//    as X / (X + Y) of two Gamma draws) (mean p_{r,k}, variance
//    p (1 - p) / (kappa + 1); kappa = confidence_concentration), and its outcome is
//    acc_k ~ Bernoulli(q_{r,k}). So the confidence is calibrated (P(acc | q) = q) and predicts
//    the outcome exactly as well as a calibrated drafter with that spread does: the share of the
//    outcome's variance it explains is 1 / (kappa + 1). It never sees the outcome. Marginally
//    P(acc_k) = p_{r,k}, so modes that do not rank drafts (DrawAcceptedPrefix) see the same
//    acceptance. Confidences are only drawn when the run needs them (adaptive mode).
//  - Acceptance does not depend on concurrency by itself: under load it falls only through
//    what adaptive verification prunes (sim/adaptive.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "sim/model/beta_quantile.h"
#include "sim/workload/rng.h"
#include "sim/workload/trace.h"

namespace dspark::sim {

inline constexpr int kMaxSpecK = 8;

struct AcceptanceParams {
  std::vector<double> curve;        // [K] conditional acceptance p_1..p_K, each in [0, 1]
  double request_logit_sigma = 0;   // [logit] per-request jitter of the whole curve
  double confidence_concentration = 2.0;  // kappa of the Beta confidence (docs/models.md)
  std::string name;                 // preset name or "custom"
};

// Presets: "default" (SPEED-Bench-like, mean acceptance length ~3.3 at K=5) and
// "repeated-prompt" (one greedy prompt, ~5.7; see docs/models.md for why batch1-512
// uses it).
absl::StatusOr<AcceptanceParams> AcceptancePreset(absl::string_view name, int spec_k);
// Parses "p1,p2,...,pK" (fewer values: the last repeats up to K).
absl::StatusOr<std::vector<double>> ParseAcceptanceCurve(absl::string_view text, int spec_k);

// 1 + sum_k prod_{i<=k} p_i: the mean acceptance length with all K drafts verified.
double ExpectedAcceptanceLength(const double* p, int k);

class AcceptanceModel {
 public:
  AcceptanceModel(const AcceptanceParams& params, int spec_k);

  int spec_k() const { return k_; }
  const AcceptanceParams& params() const { return params_; }

  // Writes the request's [K] conditional acceptance curve.
  void InitRequest(const RequestSpec& spec, Rng& jitter_rng, float* p_out) const;

  // Leading accepted positions among `num_drafts` drafts, drawing only until the first
  // rejection. Each engine call yields two 32-bit uniforms (positions 2i and 2i + 1).
  static int32_t DrawAcceptedPrefix(const float* p, int32_t num_drafts, Rng& rng) {
    int32_t accepted = 0;
    while (accepted < num_drafts) {
      const uint64_t x = rng.NextU64();
      if (static_cast<double>(x >> 32) >= static_cast<double>(p[accepted]) * 0x1.0p32) break;
      if (++accepted == num_drafts) break;
      if (static_cast<double>(x & 0xFFFFFFFFu) >= static_cast<double>(p[accepted]) * 0x1.0p32) break;
      ++accepted;
    }
    return accepted;
  }

  // Draws every position's confidence q_k ~ Beta(kappa p_k, kappa (1 - p_k)) into
  // conf[0, num_drafts) and its outcome ~ Bernoulli(q_k); returns the accepted prefix. Positions
  // with p_k of 0 or 1 are certain (q_k = p_k). A tabled position takes one engine call: its
  // high 32 bits are the quantile's uniform, its low 32 bits the outcome's.
  int32_t DrawWithConfidences(const float* p, int32_t num_drafts, Rng& rng, float* conf) const;

  // Where a request's K positions draw: its curve is fixed from admission on, so a run
  // computes this once per request, not at every draft step.
  struct ConfidenceShapes {
    static constexpr int32_t kExact = -1;    // row: drawn as two Gamma draws (x, y)
    std::array<int32_t, kMaxSpecK> row{};    // the quantile table's row, or kExact
    std::array<float, kMaxSpecK> weight{};   // the second row's weight
    std::array<const float*, kMaxSpecK> nodes{};  // the row pair's nodes (pair_nodes(row))
    std::array<Rng::GammaShape, kMaxSpecK> x, y;  // Gamma(kappa p_k), Gamma(kappa (1 - p_k))
    int32_t leading_tabled = 0;  // positions [0, leading_tabled) all have a row
  };
  // Positions [0, count) of p (count < 0: all K); the others are left alone (leading_tabled
  // counts within [0, count)).
  void PrepareConfidences(const float* p, ConfidenceShapes* shapes, int32_t count = -1) const;
  // DrawWithConfidences with the shapes PrepareConfidences wrote for `p`: the same values and
  // the same stream.
  int32_t DrawWithConfidences(const float* p, const ConfidenceShapes& shapes, int32_t num_drafts,
                              Rng& rng, float* conf) const;
  // The same draws one position at a time (the definition DrawWithConfidences, which takes
  // tabled positions four at a time, is tested against).
  static int32_t DrawWithConfidencesOneByOne(const float* p, const ConfidenceShapes& shapes,
                                             int32_t num_drafts, Rng& rng, float* conf);

 private:
  // Position k's confidence into conf[k]; returns its outcome.
  static uint32_t DrawPosition(const float* p, const ConfidenceShapes& shapes, int32_t k, Rng& rng,
                               float* conf);

  AcceptanceParams params_;
  int k_;
  std::shared_ptr<BetaQuantileTable> table_;  // rows built on first use (thread-safe)

};

}  // namespace dspark::sim
