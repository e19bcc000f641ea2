// The drafter confidences' Beta(kappa p, kappa (1 - p)) draws by inverse CDF from a table
// (docs/models.md, "Acceptance model"; two Gamma draws per confidence were two thirds of an
// unchecked adaptive run).
//
// Rows: the Beta quantile function Q(u; p) at u = j / kCells, j = 0..kCells, for p on a grid
// uniform in logit(p), kRowsPerLogit rows per unit over [-kMaxLogit, kMaxLogit]. A draw takes
// one 32-bit uniform u, interpolates linearly in u inside each of the two rows around p, and
// blends the rows with the weight that makes the table's mean exactly p (each row's own mean,
// the trapezoid sum of its nodes, is computed when it is built). So a draw is four loads and
// three interpolations. The error, measured by tests/model/test_sim_beta_quantile.cc against
// boost::math::ibeta: at a row's own p the nodes are exact quantiles (to ~1e-6), so the table's
// CDF is within 1/kCells of the exact Beta CDF there (both are monotone between nodes); between
// rows, for kappa 1-8 and p in [0.05, 0.99], within 2.5e-3 (measured up to 2.2e-3, at p 0.93
// and 0.9866). Its mean is p to 2e-6 and its variance within 1 % of p (1 - p) / (kappa + 1). The
// end cells' outer nodes are set so that each end cell has the exact mean of its tail.
//
// A row is built on first use (Locate), from a numerical integral of the density in a
// variable that removes the endpoint singularities (x = v^(1/a) near 0 when a < 2, 1 - x =
// w^(1/b) near 1 when b < 2), about 0.3 ms; a run builds only the rows its requests' curves
// touch (~50 for the default preset). p outside the logit range, or where a row misses the
// bounds below, is not tabled (the caller draws it exactly).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace dspark::sim {

class BetaQuantileTable {
 public:
  static constexpr int kCellsLog2 = 10;
  static constexpr int kCells = 1 << kCellsLog2;  // u cells per row
  static constexpr int kRowsPerLogit = 16;
  static constexpr int kMaxLogit = 8;
  static constexpr int kRows = 2 * kMaxLogit * kRowsPerLogit + 1;
  // A row is used only when its mean is within kMaxMeanError of its p and its variance within
  // kMaxVarianceError (relative) of p (1 - p) / (kappa + 1); otherwise Locate() says no and
  // the caller draws exactly. The end cells interpolate to 0 and 1, which is what fails for
  // concentrated shapes (kappa of hundreds) and p near 0 or 1.
  static constexpr double kMaxMeanError = 1e-5, kMaxVarianceError = 0.01;

  explicit BetaQuantileTable(double kappa);

  // Where p's draws read: rows `*row` and `*row + 1` with weight `*weight` on the second.
  // Builds the two rows if they are not built yet (thread-safe). False when p is not in
  // (0, 1) or its logit is outside [-kMaxLogit, kMaxLogit].
  // Also false when either row misses the error bounds below.
  bool Locate(double p, int32_t* row, float* weight);
  bool row_good(int32_t row) const { return good_[static_cast<size_t>(row)]; }

  // The confidence of uniform `u` (32 bits) at a Locate()d position: in [0, 1].
  float Sample(int32_t row, float weight, uint32_t u) const {
    return SampleNodes(row_nodes(row), row_nodes(row + 1), weight, u);
  }
  // The same from the interleaved nodes of rows `row` and `row + 1` (pair_nodes(row)).
  static float SamplePair(const float* pair, float weight, uint32_t u) {
    constexpr int kFracBits = 32 - kCellsLog2;
    const uint32_t cell = u >> kFracBits;
    const float t = static_cast<float>(u & ((1u << kFracBits) - 1)) * (1.0f / (1u << kFracBits));
    const float* n = pair + 2 * static_cast<size_t>(cell);  // r0[cell], r1[cell], r0[cell + 1], r1[cell + 1]
    const float q0 = n[0] + t * (n[2] - n[0]);
    const float q1 = n[1] + t * (n[3] - n[1]);
    const float q = q0 + weight * (q1 - q0);
    return q < 0.0f ? 0.0f : (q > 1.0f ? 1.0f : q);
  }
  // The same from the two rows' own nodes.
  static float SampleNodes(const float* r0_nodes, const float* r1_nodes, float weight, uint32_t u) {
    constexpr int kFracBits = 32 - kCellsLog2;
    const uint32_t cell = u >> kFracBits;
    const float t = static_cast<float>(u & ((1u << kFracBits) - 1)) * (1.0f / (1u << kFracBits));
    const float* r0 = r0_nodes + cell;
    const float* r1 = r1_nodes + cell;
    const float q0 = r0[0] + t * (r0[1] - r0[0]);
    const float q1 = r1[0] + t * (r1[1] - r1[0]);
    const float q = q0 + weight * (q1 - q0);
    return q < 0.0f ? 0.0f : (q > 1.0f ? 1.0f : q);
  }

  double kappa() const { return kappa_; }
  static double RowP(int32_t row);  // the p of a row
  // A built row's kCells + 1 nodes (Locate built it), and its mean (the trapezoid sum). Rows
  // are kRowStride floats apart in one allocation (pages of rows never built are never touched).
  static constexpr int kRowStride = kCells + 1;
  const float* row_nodes(int32_t row) const { return nodes_.get() + static_cast<size_t>(row) * kRowStride; }
  // Rows `row` and `row + 1` interleaved node by node (2 kRowStride floats), so that a draw
  // reads its four nodes from one cache line, mostly. Built by Locate() with the rows.
  const float* pair_nodes(int32_t row) const { return pairs_.get() + static_cast<size_t>(row) * 2 * kRowStride; }
  double row_mean(int32_t row) const { return means_[static_cast<size_t>(row)]; }

  // The quantile nodes of Beta(a, b) at u = j / kCells into out[kCells + 1] (out[0] = 0,
  // out[kCells] = 1). a, b > 0.
  static void BuildRow(double a, double b, float* out);

 private:
  void EnsureRow(int32_t row);  // under mu_

  double kappa_;
  std::mutex mu_;
  std::unique_ptr<float[]> nodes_;  // [kRows, kRowStride], rows written when built
  std::array<bool, kRows> built_{};
  std::unique_ptr<float[]> pairs_;  // [kRows - 1, 2 kRowStride], pairs written when located
  std::array<bool, kRows> pair_built_{};
  std::array<double, kRows> means_{};
  std::array<bool, kRows> good_{};  // the row's mean and variance are within the bounds
};

}  // namespace dspark::sim
