// The simulator's only source of randomness: MT19937-64 (the stream of std::mt19937_64,
// sim/workload/mt19937_64.h) with the project's own draws.
//
// The std::*_distribution classes are implementation-defined (libstdc++ and libc++ give
// different streams for the same engine state), and absl::BitGen is deliberately
// non-reproducible, so every draw here is written out: a given --seed gives the same numbers
// with any standard library, compiler or platform that has IEEE-754 doubles.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "sim/workload/mt19937_64.h"

namespace dspark::sim {

// splitmix64 (Steele, Lea, Flood 2014): a bijective mixer used to derive independent stream
// seeds from (--seed, stream id), so that adding draws to one model never shifts another's.
inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Stream ids of the simulator's models; each model draws only from its own stream.
enum class RngStream : uint64_t {
  kArrivals = 1,
  kLengths = 2,
  kAcceptance = 3,
  kRequestJitter = 4,
};

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  Rng(uint64_t seed, RngStream stream)
      : engine_(SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(stream)))) {}

  uint64_t NextU64() { return engine_(); }
  // n NextU64() calls' outputs, in order.
  void NextU64s(uint64_t* out, size_t n) { engine_.Fill(out, n); }

  // [0, 1) with all 53 mantissa bits random.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // (0, 1): safe as the argument of log().
  double UniformOpen() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }

  // Uniform integer in [0, n), unbiased (rejection of the short top interval). n > 0.
  uint64_t UniformInt(uint64_t n) {
    const uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % n);
    uint64_t x;
    do x = engine_(); while (x >= limit);
    return x % n;
  }

  // Two independent uniforms in [0, 1) with 32 random bits each, from one engine call: for
  // hot loops where 2^-32 resolution is plenty (Bernoulli outcomes, bounded noise).
  void UniformPair32(double* a, double* b) {
    const uint64_t x = engine_();
    *a = static_cast<double>(x >> 32) * 0x1.0p-32;
    *b = static_cast<double>(x & 0xFFFFFFFFu) * 0x1.0p-32;
  }

  bool Bernoulli(double p) { return Uniform() < p; }

  // Inverse CDF: -log(U) / rate. rate [1/unit] > 0.
  double Exponential(double rate) { return -std::log(UniformOpen()) / rate; }

  // Box-Muller, one value per call (the second of the pair is dropped so that the stream
  // position depends only on the number of calls, not on their parity).
  double Normal() {
    const double u1 = UniformOpen(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925 * u2);
  }
  double Normal(double mean, double stddev) { return mean + stddev * Normal(); }

  double LogNormal(double mu, double sigma) { return std::exp(mu + sigma * Normal()); }

  // Marsaglia-Tsang (2000) for shape >= 1; shape < 1 uses Gamma(shape + 1) * U^(1/shape), U
  // drawn after the Gamma(shape + 1) draw.
  double Gamma(double shape, double scale) { return Gamma(GammaShape::For(shape), scale); }
  // The same draw with the shape's constants computed once (a hot loop draws one shape many
  // times): the same values and the same stream as Gamma(shape, scale).
  struct GammaShape {
    double d = 0, c = 0;     // shape' - 1/3 and 1 / sqrt(9 d), shape' = shape (+ 1 below 1)
    double inv_shape = 0;    // 1 / shape when boosted
    bool boost = false;      // shape < 1: times U^(1/shape)
    static GammaShape For(double shape) {
      GammaShape g;
      g.boost = shape < 1.0;
      const double s = g.boost ? shape + 1.0 : shape;
      g.d = s - 1.0 / 3.0;
      g.c = 1.0 / std::sqrt(9.0 * g.d);
      if (g.boost) g.inv_shape = 1.0 / shape;
      return g;
    }
  };
  double Gamma(const GammaShape& g, double scale) {
    const double d = g.d, c = g.c;
    double value;
    for (;;) {
      double x, v;
      do {
        x = Normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = UniformOpen();
      if (u < 1.0 - 0.0331 * x * x * x * x) {
        value = d * v * scale;
        break;
      }
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) {
        value = d * v * scale;
        break;
      }
    }
    if (!g.boost) return value;
    const double boost = std::pow(UniformOpen(), g.inv_shape);
    return value * boost;
  }

 private:
  Mt19937_64 engine_;
};

}  // namespace dspark::sim
