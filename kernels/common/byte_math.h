// Saturating byte arithmetic for sizes computed from user-given capacities (tokens x columns x
// bytes): a product or sum that does not fit in 64 bits becomes kBytesOverflow instead of wrapping
// into a small number, so a huge capacity can never turn into a small allocation. Callers treat
// kBytesOverflow as "more than any memory" (it never fits).
#pragma once

#include <cstdint>
#include <limits>

namespace dspark {

inline constexpr uint64_t kBytesOverflow = std::numeric_limits<uint64_t>::max();

inline uint64_t SatAdd(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kBytesOverflow : r;
}

inline uint64_t SatMul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kBytesOverflow : r;
}

inline uint64_t SatMul(uint64_t a, uint64_t b, uint64_t c) { return SatMul(SatMul(a, b), c); }

// Rounds up to a multiple of 256 bytes (the suites' sub-allocation alignment); saturates.
inline uint64_t SatAlign256(uint64_t bytes) {
  return bytes > kBytesOverflow - 255 ? kBytesOverflow : (bytes + 255) & ~uint64_t{255};
}

}  // namespace dspark
