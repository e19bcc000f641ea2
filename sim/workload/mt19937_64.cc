#include "sim/workload/mt19937_64.h"

namespace dspark::sim {
namespace {

constexpr size_t kN = Mt19937_64::kN, kM = Mt19937_64::kM;
constexpr uint64_t kUpper = ~uint64_t{0} << 31, kLower = ~kUpper;
constexpr uint64_t kMatrixA = 0xB5026F5AA96619E9ULL;

inline uint64_t Twist(uint64_t cur, uint64_t nxt, uint64_t far) {
  const uint64_t y = (cur & kUpper) | (nxt & kLower);
  return far ^ (y >> 1) ^ ((0 - (y & 1)) & kMatrixA);
}

// Words [0, N - M) read the old [M, N); words [N - M, N - 1) read the new [0, M - 1): the
// standard's order, in loops without a carried dependence, which the compiler vectorizes.
// Inlined into the two builds below.
__attribute__((always_inline)) inline void RefillBody(uint64_t* s, uint64_t* out) {
  for (size_t i = 0; i < kN - kM; ++i) s[i] = Twist(s[i], s[i + 1], s[i + kM]);
  for (size_t i = kN - kM; i < kN - 1; ++i) s[i] = Twist(s[i], s[i + 1], s[i + kM - kN]);
  s[kN - 1] = Twist(s[kN - 1], s[0], s[kM - 1]);
  for (size_t i = 0; i < kN; ++i) {
    uint64_t z = s[i];
    z ^= (z >> 29) & 0x5555555555555555ULL;
    z ^= (z << 17) & 0x71D67FFFEDA60000ULL;
    z ^= (z << 37) & 0xFFF7EEE000000000ULL;
    z ^= z >> 43;
    out[i] = z;
  }
}

void RefillBaseline(uint64_t* s, uint64_t* out) { RefillBody(s, out); }

#if defined(__x86_64__) && defined(__GNUC__)
// The same loops four words at a time where the CPU has AVX2 (integer operations only, so
// the same words; the refill was a quarter of the confidence draws at SSE2's two words).
__attribute__((target("avx2"))) void RefillAvx2(uint64_t* s, uint64_t* out) { RefillBody(s, out); }
#endif

}  // namespace

void Mt19937_64::Refill() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    RefillAvx2(state_.data(), out_.data());
    next_ = 0;
    return;
  }
#endif
  RefillBaseline(state_.data(), out_.data());
  next_ = 0;
}

}  // namespace dspark::sim
