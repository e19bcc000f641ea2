// MT19937-64 (Matsumoto, Nishimura 2000; the engine std::mt19937_64 names), the simulator's
// only engine, producing exactly std::mt19937_64's output for the same seed
// (tests/workload/test_sim_rng.cc compares them over many state refills and seeds).
//
// Why not std::mt19937_64 itself: libstdc++ regenerates the state one word at a time and
// tempers on every call, which was 18 % of an unchecked adaptive run (perf, issue 14). Here the
// regeneration is three loops the compiler vectorizes, and the 312 outputs of a state are
// tempered in one pass into a buffer, so a draw is a load.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace dspark::sim {

class Mt19937_64 {
 public:
  static constexpr size_t kN = 312, kM = 156;  // [words] state size, twist offset

  explicit Mt19937_64(uint64_t seed) {
    // The seeding of the standard (std::mersenne_twister_engine::seed, f = 6364136223846793005).
    state_[0] = seed;
    for (size_t i = 1; i < kN; ++i)
      state_[i] = 6364136223846793005ULL * (state_[i - 1] ^ (state_[i - 1] >> 62)) + i;
    next_ = kN;
  }

  uint64_t operator()() {
    if (next_ == kN) Refill();
    return out_[next_++];
  }

  // The next n outputs into out[0, n): n calls' worth, copied in runs.
  void Fill(uint64_t* out, size_t n) {
    while (n > 0) {
      if (next_ == kN) Refill();
      const size_t run = n < kN - next_ ? n : kN - next_;
      for (size_t i = 0; i < run; ++i) out[i] = out_[next_ + i];
      next_ += run;
      out += run;
      n -= run;
    }
  }

 private:
  static constexpr uint64_t kUpper = ~uint64_t{0} << 31, kLower = ~kUpper;
  static constexpr uint64_t kMatrixA = 0xB5026F5AA96619E9ULL;

  static uint64_t Twist(uint64_t cur, uint64_t nxt, uint64_t far) {
    const uint64_t y = (cur & kUpper) | (nxt & kLower);
    return far ^ (y >> 1) ^ ((0 - (y & 1)) & kMatrixA);
  }

  void Refill() {
    uint64_t* s = state_.data();
    // Words [0, N - M) read the old [M, N); words [N - M, N - 1) read the new [0, M - 1): the
    // standard's order, in loops without a carried dependence.
    for (size_t i = 0; i < kN - kM; ++i) s[i] = Twist(s[i], s[i + 1], s[i + kM]);
    for (size_t i = kN - kM; i < kN - 1; ++i) s[i] = Twist(s[i], s[i + 1], s[i + kM - kN]);
    s[kN - 1] = Twist(s[kN - 1], s[0], s[kM - 1]);
    for (size_t i = 0; i < kN; ++i) {
      uint64_t z = s[i];
      z ^= (z >> 29) & 0x5555555555555555ULL;
      z ^= (z << 17) & 0x71D67FFFEDA60000ULL;
      z ^= (z << 37) & 0xFFF7EEE000000000ULL;
      z ^= z >> 43;
      out_[i] = z;
    }
    next_ = 0;
  }

  std::array<uint64_t, kN> state_;
  std::array<uint64_t, kN> out_;  // tempered outputs of the current state
  size_t next_;
};

}  // namespace dspark::sim
