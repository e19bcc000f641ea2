// MT19937-64 (Matsumoto, Nishimura 2000; the engine std::mt19937_64 names), the simulator's
// only engine, producing exactly std::mt19937_64's output for the same seed
// (tests/workload/test_sim_rng.cc compares them over many state refills and seeds).
//
// Why not std::mt19937_64 itself: libstdc++ regenerates the state one word at a time and
// tempers on every call, which was 18 % of an unchecked adaptive run (perf). Here the
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
  // The next kN outputs: the state regenerated, its words tempered into out_
  // (sim/workload/mt19937_64.cc).
  void Refill();

  std::array<uint64_t, kN> state_;
  std::array<uint64_t, kN> out_;  // tempered outputs of the current state
  size_t next_;
};

}  // namespace dspark::sim
