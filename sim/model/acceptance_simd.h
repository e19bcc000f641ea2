// The acceptance model's one fast path: four tabled positions drawn at once.
//
//   DrawTabled          one tabled position from its engine word (the definition);
//   DrawTabledQuadPlain four of them, one after the other;
//   DrawTabledQuad      the same four with SSE2 where the compiler targets it, else the plain
//                       form.
// DrawTabledQuad gives DrawTabledQuadPlain's confidences and outcomes bit for bit
// (tests/model/test_sim_simd.cc, random and edge-case nodes, weights and words).
#pragma once

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "sim/model/beta_quantile.h"

namespace dspark::sim::simd {

// A tabled position's draw from one engine word: the high 32 bits are the quantile's uniform
// (BetaQuantileTable::SamplePair on the row pair's interleaved nodes), the low 32 bits the
// outcome's: accepted when double(low) < double(confidence) * 2^32. Writes the confidence to
// *conf and returns the outcome (0 or 1).
inline uint32_t DrawTabled(const float* nodes, float weight, uint64_t bits, float* conf) {
  const float q = BetaQuantileTable::SamplePair(nodes, weight, static_cast<uint32_t>(bits >> 32));
  *conf = q;
  return static_cast<double>(bits & 0xFFFFFFFFu) < static_cast<double>(q) * 0x1.0p32;
}

// Positions i = 0..3 drawn from bits[i] with nodes[i] and weight[i]: confidences to
// conf[0, 4), outcomes as bits 0-3 of the result.
inline uint32_t DrawTabledQuadPlain(const float* const* nodes, const float* weight, const uint64_t* bits,
                                    float* conf) {
  uint32_t outcomes = 0;
  for (int i = 0; i < 4; ++i) outcomes |= DrawTabled(nodes[i], weight[i], bits[i], &conf[i]) << i;
  return outcomes;
}

#if defined(__SSE2__)
// DrawTabledQuadPlain in SSE2 registers; `bits` 16-byte aligned.
inline uint32_t DrawTabledQuadSse2(const float* const* nodes, const float* weight, const uint64_t* bits,
                                   float* conf) {
  // SamplePair for four positions: each reads its cell's four interleaved nodes (r0[c], r1[c],
  // r0[c + 1], r1[c + 1]) in one load; a transpose gives the four positions' r0[c] in one
  // register, and so on.
  constexpr int kFracBits = 32 - BetaQuantileTable::kCellsLog2;
  __m128 n0 = _mm_loadu_ps(nodes[0] + 2 * (bits[0] >> (32 + kFracBits)));
  __m128 n1 = _mm_loadu_ps(nodes[1] + 2 * (bits[1] >> (32 + kFracBits)));
  __m128 n2 = _mm_loadu_ps(nodes[2] + 2 * (bits[2] >> (32 + kFracBits)));
  __m128 n3 = _mm_loadu_ps(nodes[3] + 2 * (bits[3] >> (32 + kFracBits)));
  _MM_TRANSPOSE4_PS(n0, n1, n2, n3);  // n0: r0[c], n1: r1[c], n2: r0[c + 1], n3: r1[c + 1]
  // The engine words' high halves (the quantiles' uniforms) and low halves (the outcomes').
  const __m128 w01 = _mm_castsi128_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(bits)));
  const __m128 w23 = _mm_castsi128_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(bits + 2)));
  const __m128i hi = _mm_castps_si128(_mm_shuffle_ps(w01, w23, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m128i lo = _mm_castps_si128(_mm_shuffle_ps(w01, w23, _MM_SHUFFLE(2, 0, 2, 0)));
  // The fraction (22 bits: exact as an int32 and as a float), scaled by a power of two.
  const __m128 t = _mm_mul_ps(_mm_cvtepi32_ps(_mm_and_si128(hi, _mm_set1_epi32((1 << kFracBits) - 1))),
                              _mm_set1_ps(1.0f / (1u << kFracBits)));
  const __m128 q0 = _mm_add_ps(n0, _mm_mul_ps(t, _mm_sub_ps(n2, n0)));
  const __m128 q1 = _mm_add_ps(n1, _mm_mul_ps(t, _mm_sub_ps(n3, n1)));
  __m128 q = _mm_add_ps(q0, _mm_mul_ps(_mm_loadu_ps(weight), _mm_sub_ps(q1, q0)));
  // max(0, q) is (0 > q ? 0 : q) and min(1, x) is (1 < x ? 1 : x): SamplePair's clamp, NaN and
  // signed zeros alike.
  q = _mm_min_ps(_mm_set1_ps(1.0f), _mm_max_ps(_mm_setzero_ps(), q));
  _mm_storeu_ps(conf, q);
  // Outcome: double(low 32 bits) < double(q) * 2^32, with the unsigned halves made exact
  // doubles as (x - 2^31) + 2^31 (both steps exact), in two halves of two.
  const __m128i lo_signed = _mm_xor_si128(lo, _mm_set1_epi32(static_cast<int32_t>(0x80000000u)));
  const __m128d two31 = _mm_set1_pd(0x1.0p31), two32 = _mm_set1_pd(0x1.0p32);
  const __m128d u01 = _mm_add_pd(_mm_cvtepi32_pd(lo_signed), two31);
  const __m128d u23 = _mm_add_pd(_mm_cvtepi32_pd(_mm_shuffle_epi32(lo_signed, _MM_SHUFFLE(3, 2, 3, 2))), two31);
  const __m128d q01 = _mm_mul_pd(_mm_cvtps_pd(q), two32);
  const __m128d q23 = _mm_mul_pd(_mm_cvtps_pd(_mm_movehl_ps(q, q)), two32);
  return static_cast<uint32_t>(_mm_movemask_pd(_mm_cmplt_pd(u01, q01)) |
                               (_mm_movemask_pd(_mm_cmplt_pd(u23, q23)) << 2));
}
#endif

// `bits` 16-byte aligned.
inline uint32_t DrawTabledQuad(const float* const* nodes, const float* weight, const uint64_t* bits,
                               float* conf) {
#if defined(__SSE2__)
  return DrawTabledQuadSse2(nodes, weight, bits, conf);
#else
  return DrawTabledQuadPlain(nodes, weight, bits, conf);
#endif
}

}  // namespace dspark::sim::simd
