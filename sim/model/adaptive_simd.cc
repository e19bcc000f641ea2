#include "sim/model/adaptive_simd.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dspark::sim::simd {

int32_t ScanBoundaryRowsPlain(const int16_t* bucket, int32_t num_rows, int32_t max_k, int32_t boundary,
                              int32_t* count, int32_t* kept, int32_t* in_boundary) {
  int32_t m = 0;
  for (int32_t r = 0; r < num_rows; ++r) {
    const int32_t base = r * max_k;
    int32_t n = 0;
    for (int32_t k = 0; k < max_k; ++k) {
      const int32_t b = bucket[base + k];
      count[b + 1] = 0;
      n += b > boundary;
      in_boundary[m] = base + k;  // written for every slot, kept for the boundary's
      m += b == boundary;
    }
    kept[r] = n;
  }
  return m;
}

int32_t ScanBoundaryRows(const int16_t* bucket, int32_t num_rows, int32_t max_k, int32_t boundary,
                         int32_t* count, int32_t* kept, int32_t* in_boundary) {
#if defined(__SSE2__)
  if (max_k <= 8) {
    // A row's (up to) 8 buckets in one register, lanes past max_k masked off (the padding
    // after the last row makes the load safe); its count above the boundary by a byte sum, its
    // boundary slots (few) from a mask.
    int32_t m = 0;
    const __m128i bnd = _mm_set1_epi16(static_cast<int16_t>(boundary));
    const __m128i lanes = _mm_cmplt_epi16(_mm_setr_epi16(0, 1, 2, 3, 4, 5, 6, 7),
                                          _mm_set1_epi16(static_cast<int16_t>(max_k)));
    const __m128i ones = _mm_set1_epi16(1);
    for (int32_t r = 0; r < num_rows; ++r) {
      const int32_t base = r * max_k;
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bucket + base));
      const __m128i gt = _mm_and_si128(_mm_cmpgt_epi16(v, bnd), lanes);
      const __m128i sums = _mm_sad_epu8(_mm_and_si128(gt, ones), _mm_setzero_si128());
      kept[r] = _mm_cvtsi128_si32(sums) + _mm_extract_epi16(sums, 4);
      const __m128i eq = _mm_and_si128(_mm_cmpeq_epi16(v, bnd), lanes);
      uint32_t at = static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(eq, eq))) & 0xFFu;
      for (; at != 0; at &= at - 1) in_boundary[m++] = base + __builtin_ctz(at);
      for (int32_t k = 0; k < max_k; ++k) count[bucket[base + k] + 1] = 0;
    }
    return m;
  }
#endif
  return ScanBoundaryRowsPlain(bucket, num_rows, max_k, boundary, count, kept, in_boundary);
}

}  // namespace dspark::sim::simd
