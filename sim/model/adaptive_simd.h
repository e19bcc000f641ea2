// The top-B allocator's one fast path (TopBAllocator::Allocate, adaptive.h): one pass over
// every request's slot buckets once the boundary bucket is known.
//
//   ScanBoundaryRowsPlain  slot by slot (the definition);
//   ScanBoundaryRows       a row of up to 8 slots in one SSE2 register where the compiler
//                          targets it, else (and for rows of more than 8) the plain form.
// ScanBoundaryRows gives ScanBoundaryRowsPlain's counts, listed slots and cleared counts bit
// for bit (tests/model/test_sim_simd.cc: random rows, the boundary at the lowest, highest and
// an absent bucket, ineligible slots).
#pragma once

#include <cstdint>

namespace dspark::sim::simd {

// Rows a bucket array holds past its last slot, readable, so that a row is read 8 at a time.
inline constexpr int kBucketRowPad = 8;

// bucket: [num_rows * max_k] each slot's bucket (-1: ineligible), followed by kBucketRowPad
// readable entries. For each row r: kept[r] = its slots whose bucket is above `boundary`; its
// slots in the boundary bucket appended to in_boundary ([num_rows * max_k], entries past the
// returned count are scratch) in slot order; count[bucket + 1] set to 0 for every slot's
// bucket. Returns the number of slots listed.
int32_t ScanBoundaryRowsPlain(const int16_t* bucket, int32_t num_rows, int32_t max_k, int32_t boundary,
                              int32_t* count, int32_t* kept, int32_t* in_boundary);
int32_t ScanBoundaryRows(const int16_t* bucket, int32_t num_rows, int32_t max_k, int32_t boundary,
                         int32_t* count, int32_t* kept, int32_t* in_boundary);

}  // namespace dspark::sim::simd
