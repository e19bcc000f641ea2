#include "sim/model/beta_quantile.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dspark::sim {
namespace {

constexpr int kFine = 2048;  // Simpson intervals per half of [0, 1]

// One half of [0, 1] in a variable s in [0, top] that removes the endpoint's singularity:
// the left half is x = s^(1/alpha) (alpha = a below 2, else 1), the right half 1 - x = s^(1/beta)
// with the shapes swapped. The density in s, up to the constant 1 / B(a, b), is
// (1/alpha) s^(a/alpha - 1) (1 - s^(1/alpha))^(b - 1): bounded on the half.
struct Half {
  double near = 0, far = 0;  // the shape at this end (a on the left) and at the other end
  double alpha = 1, top = 0;
  double LogDensity(double s) const {
    const double e = near / alpha - 1.0;
    const double lead = e == 0.0 ? 0.0 : e * std::log(s);  // s = 0: -inf when e > 0
    const double x = alpha == 1.0 ? s : std::pow(s, 1.0 / alpha);
    return lead + (far - 1.0) * std::log1p(-x) - std::log(alpha);
  }
  double ToX(double s) const { return alpha == 1.0 ? s : std::pow(s, 1.0 / alpha); }
};

Half MakeHalf(double near, double far) {
  Half h;
  h.near = near;
  h.far = far;
  // x = s^(1/a) makes the density in s smooth at the end; for a >= 2 the plain x^(a - 1) has a
  // continuous derivative already (and s^(1/a) would lose the half's range for large a).
  h.alpha = near < 2.0 ? near : 1.0;
  h.top = std::pow(0.5, h.alpha);
  return h;
}

// Simpson's cumulative integrals of the half's density exp(LogDensity - shift) and of its
// distance from the half's end times the density, at the kFine + 1 grid points; `logs` holds
// the log density at the 2 kFine + 1 points (grid and midpoints).
struct Cumulative {
  double step = 0;
  std::vector<double> mass, moment;  // [kFine + 1]
  double total() const { return mass.back(); }
  // At variable s in [0, top], linear inside a grid interval (as Invert is).
  double At(const std::vector<double>& c, double s) const {
    const int i = std::min(static_cast<int>(s / step), kFine - 1);
    const double frac = std::clamp(s / step - i, 0.0, 1.0);
    return c[static_cast<size_t>(i)] + frac * (c[static_cast<size_t>(i) + 1] - c[static_cast<size_t>(i)]);
  }
};

Cumulative Cumulate(const Half& half, const std::vector<double>& logs, double shift) {
  Cumulative c;
  c.step = half.top / kFine;
  c.mass.assign(kFine + 1, 0.0);
  c.moment.assign(kFine + 1, 0.0);
  const auto g = [&](int i) { return std::exp(logs[static_cast<size_t>(i)] - shift); };
  const auto d = [&](int i) { return half.ToX(i * 0.5 * c.step); };
  double mass = 0.0, moment = 0.0, left = g(0), left_d = 0.0;
  for (int i = 0; i < kFine; ++i) {
    const double mid = g(2 * i + 1), right = g(2 * i + 2), right_d = d(2 * i + 2);
    mass += c.step / 6.0 * (left + 4.0 * mid + right);
    moment += c.step / 6.0 * (left * left_d + 4.0 * mid * d(2 * i + 1) + right * right_d);
    c.mass[static_cast<size_t>(i) + 1] = mass;
    c.moment[static_cast<size_t>(i) + 1] = moment;
    left = right;
    left_d = right_d;
  }
  return c;
}

// The variable s where the half's cumulative mass reaches `target` (<= total()), searching
// forward from *at (targets come in ascending order).
double Invert(const Cumulative& c, double target, int* at) {
  while (*at < kFine - 1 && c.mass[static_cast<size_t>(*at) + 1] < target) ++*at;
  const double lo = c.mass[static_cast<size_t>(*at)], hi = c.mass[static_cast<size_t>(*at) + 1];
  const double frac = hi > lo ? std::clamp((target - lo) / (hi - lo), 0.0, 1.0) : 0.0;
  return (*at + frac) * c.step;
}

// The integral of (distance from the near end) x density over the near end's tail of mass
// `tail`: in the near half alone, or the whole near half and part of the far one.
double TailMoment(const Cumulative& near, const Cumulative& far, double tail) {
  if (tail <= near.total()) {
    int at = 0;
    return near.At(near.moment, Invert(near, tail, &at));
  }
  int at = 0;
  const double s = Invert(far, std::max(0.0, far.total() - (tail - near.total())), &at);
  // Distance from the near end is 1 - (distance from the far end).
  return near.moment.back() + (far.total() - far.At(far.mass, s)) -
         (far.moment.back() - far.At(far.moment, s));
}

}  // namespace

BetaQuantileTable::BetaQuantileTable(double kappa)
    : kappa_(kappa),
      nodes_(new float[static_cast<size_t>(kRows) * kRowStride]),
      pairs_(new float[static_cast<size_t>(kRows - 1) * 2 * kRowStride]) {}

double BetaQuantileTable::RowP(int32_t row) {
  const double logit = -kMaxLogit + static_cast<double>(row) / kRowsPerLogit;
  return 1.0 / (1.0 + std::exp(-logit));
}

void BetaQuantileTable::BuildRow(double a, double b, float* out) {
  const Half left = MakeHalf(a, b), right = MakeHalf(b, a);
  std::vector<double> llog(2 * kFine + 1), rlog(2 * kFine + 1);
  double shift = -std::numeric_limits<double>::infinity();
  for (int i = 0; i <= 2 * kFine; ++i) {
    llog[static_cast<size_t>(i)] = left.LogDensity(i * 0.5 * left.top / kFine);
    rlog[static_cast<size_t>(i)] = right.LogDensity(i * 0.5 * right.top / kFine);
    shift = std::max({shift, llog[static_cast<size_t>(i)], rlog[static_cast<size_t>(i)]});
  }
  const Cumulative lc = Cumulate(left, llog, shift), rc = Cumulate(right, rlog, shift);
  const double total = lc.total() + rc.total();
  // Interior nodes: the exact quantiles. Left-half nodes ascend in u; right-half nodes are
  // found from the right end, descending.
  int j = 1, at = 0;
  for (; j < kCells; ++j) {
    const double target = total * j / kCells;
    if (target > lc.total()) break;
    out[j] = static_cast<float>(left.ToX(Invert(lc, target, &at)));
  }
  at = 0;
  for (int jr = kCells - 1; jr >= j; --jr) {
    const double target = std::min(total * (kCells - jr) / kCells, rc.total());
    out[jr] = static_cast<float>(1.0 - right.ToX(Invert(rc, target, &at)));
  }
  // End nodes: the end cell interpolates linearly from them to its inner node, so they are set
  // to give the cell the exact mean of its tail (the tail's 1/kCells of the mass), or to the
  // end itself where that would pass it.
  const double tail = total / kCells;
  const double near0 = TailMoment(lc, rc, tail) / tail, near1 = TailMoment(rc, lc, tail) / tail;
  out[0] = static_cast<float>(std::max(0.0, 2.0 * near0 - out[1]));
  out[kCells] = static_cast<float>(1.0 - std::max(0.0, 2.0 * near1 - (1.0 - out[kCells - 1])));
  for (int i = 1; i <= kCells; ++i) out[i] = std::max(out[i], out[i - 1]);  // monotone in float
}

void BetaQuantileTable::EnsureRow(int32_t row) {
  if (built_[static_cast<size_t>(row)]) return;
  const double p = RowP(row);
  float* nodes = nodes_.get() + static_cast<size_t>(row) * kRowStride;
  BuildRow(kappa_ * p, kappa_ * (1.0 - p), nodes);
  // The piecewise-linear quantile's moments: mean (a + b) / 2 and E[q^2] (a^2 + ab + b^2) / 3
  // per cell.
  double mean = 0.0, second = 0.0;
  for (int j = 0; j < kCells; ++j) {
    const double lo = nodes[j], hi = nodes[j + 1];
    mean += 0.5 * (lo + hi);
    second += (lo * lo + lo * hi + hi * hi) / 3.0;
  }
  mean /= kCells;
  second /= kCells;
  const double var = second - mean * mean, exact_var = p * (1.0 - p) / (kappa_ + 1.0);
  means_[static_cast<size_t>(row)] = mean;
  good_[static_cast<size_t>(row)] =
      std::fabs(mean - p) <= kMaxMeanError && std::fabs(var / exact_var - 1.0) <= kMaxVarianceError;
  built_[static_cast<size_t>(row)] = true;
}

bool BetaQuantileTable::Locate(double p, int32_t* row, float* weight) {
  if (!(p > 0.0 && p < 1.0)) return false;
  const double pos = (std::log(p / (1.0 - p)) + kMaxLogit) * kRowsPerLogit;
  if (!(pos >= 0.0 && pos <= kRows - 1)) return false;
  const int32_t i = std::min<int32_t>(static_cast<int32_t>(pos), kRows - 2);
  {
    std::lock_guard<std::mutex> lock(mu_);
    EnsureRow(i);
    EnsureRow(i + 1);
    if (!pair_built_[static_cast<size_t>(i)]) {
      const float* r0 = row_nodes(i);
      const float* r1 = row_nodes(i + 1);
      float* pair = pairs_.get() + static_cast<size_t>(i) * 2 * kRowStride;
      for (int j = 0; j < kRowStride; ++j) {
        pair[2 * j] = r0[j];
        pair[2 * j + 1] = r1[j];
      }
      pair_built_[static_cast<size_t>(i)] = true;
    }
  }
  if (!good_[static_cast<size_t>(i)] || !good_[static_cast<size_t>(i) + 1]) return false;
  // The weight that makes the blend's mean p: each row's mean is its trapezoid sum.
  const double m0 = means_[static_cast<size_t>(i)], m1 = means_[static_cast<size_t>(i) + 1];
  *row = i;
  *weight = static_cast<float>(m1 > m0 ? std::clamp((p - m0) / (m1 - m0), 0.0, 1.0) : 0.0);
  return true;
}

}  // namespace dspark::sim
