// The greedy chunk plan of fused-suite's prefill job (kernels/suite/fused_suite_prefill.cuh),
// formed by a block's 256 threads together: where prefill request `own`'s cells go, per ratio,
// equal field for field to the sequential walk (PlacePrefillRequest) in O(n log n) work over the
// block and O(log n) barrier phases, n = R - nd prefill requests (the walk: O(own) dependent
// steps on one lane, O(n^2) over the job's n blocks).
//
// The steps, one barrier phase each (a block's phases: PrefillJobPhases):
//   scan    (3 phases) exclusive prefix sums of the requests' seq_lens, packed with the count of
//           odd ones (seq << 11 | 1 if odd): both ratios' KV-row prefix sums in one int64
//           (ratio 2's rows are (sum - odd count) / 2). Chunks of ceil(n / 256) per thread, the
//           256 chunk sums scanned in 16 groups of 16 by 16 threads, the 16 group sums read by
//           every thread. Query prefix sums are qsl itself.
//   next    next[i], the end of the greedy group that starts at request i, for every i, by a
//           binary search over the prefix sums: NextPrefillGroup's test (summed rows <= workspace,
//           then m x rows <= max_logits) is monotone in the group's end when no request has a
//           negative size (both sums grow), so its last passing end is the walk's; a request that
//           passes alone nowhere ends at i + 1 either way.
//   rounds  (ceil(log2(n + 1)) phases) the chain of group starts from request 0, chain[k] =
//           next^k(0), by doubling: round r knows chain[0, 2^r) and jump = next^(2^r), writes
//           chain[2^r, 2^(r+1)) = jump(chain[0, 2^r)) and jump = jump o jump (double-buffered: no
//           phase reads a cell another thread writes in it). Entries past the last group hold n.
//   reduce  (2 phases) own's group k_s (the last chain entry <= own, a binary search) and the
//           sums over the kept groups before it (cu entries, token_to_seq rows, query entries),
//           as the walk advances them: 128 threads per ratio, then 16 per ratio.
// The write phase forms the place on every thread (PlaceFromPlan) and writes the cells.
//
// When the sizes break the monotone test (a negative seq_len, decreasing qsl: device data off the
// preconditions), the block falls back to the walk, so the places are the walk's for every input.
// The kernel uses the plan when the boundaries are in shared memory (R <= kSharedQslCap) and the
// workspace is at most INT32_MAX (then m x rows never overflows, m < 2^32, and no test
// evaluated here but not by the walk can be wrong), past kPrefillWalkMax prefill requests;
// otherwise the job runs the walk (PrefillPlannedInBlock, kernels/suite/fused_suite_prefill.cuh).
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"
#include "kernels/indexer_prefill.cuh"
#include "kernels/token_map.cuh"

namespace dspark {

inline constexpr int32_t kPrefillPlanThreads = 256;
inline constexpr int32_t kPrefillPlanCap = kSharedQslCap;  // [prefill requests] the plan's arrays
inline constexpr int kPrefillPlanOddBits = 11;
static_assert((1 << kPrefillPlanOddBits) > kPrefillPlanCap, "the odd count of every prefix fits its bits");
inline constexpr int32_t kPrefillScanGroups = 16;               // x 16 chunk sums = 256 threads
inline constexpr int32_t kPrefillReduceThreads = kPrefillPlanThreads / 2;  // per ratio
inline constexpr int32_t kPrefillReduceGroups = 16;             // x 8 partial sums
static_assert(kPrefillScanGroups * kPrefillScanGroups == kPrefillPlanThreads &&
                  kPrefillReduceThreads % kPrefillReduceGroups == 0,
              "the two-level scan and reduction cover every thread");

// Where prefill request `own`'s cells of one ratio go.
struct PrefillChunkPlace {
  int32_t first, last;     // [prefill requests] its group
  int32_t row_in_group;    // KV rows of the group's requests before it: its ks and cu entry
  int32_t query_in_group;  // query tokens of the group's requests before it
  int64_t chunks;          // chunks of the group kept (0: no KV rows, dropped as vLLM drops them; or no query)
  int64_t group_rows;      // the group's KV rows, each chunk's cu_seq_lens[n]
  int64_t cu_at;           // [entries] where the group's first chunk's cu_seq_lens start
  int64_t rows_at;         // [rows] its token_to_seq (past prefill_rows: not kept)
  int64_t query_at;        // [entries] the group's first ks / ke
};

// A prefill block's shared memory: the plan's arrays (over requests [0, n] of the job) and the
// walk's places.
struct PrefillJobShared {
  int64_t seq[kPrefillPlanCap + 1];      // packed prefix sums of requests [0, i): seq << 11 | odd count
  int16_t chain[2][kPrefillPlanCap + 1];  // per ratio: group starts, chain[k] = next^k(0)
  union {
    int64_t part[kPrefillPlanThreads];                 // scan: chunk sums
    int16_t jump[2][2][kPrefillPlanCap + 1];           // rounds: [ratio][buffer] next^(2^r)
    int64_t red[2][kPrefillReduceThreads][3];          // reduce: [ratio][thread] cu, rows, query
  } u;
  int64_t group_sum[kPrefillScanGroups];               // scan: -1 when a chunk had a negative size
  int64_t red2[2][kPrefillReduceGroups][3];
  int32_t chain_at[2];  // per ratio: k_s, own's group in the chain
  int32_t planned;      // 1: the plan holds; 0: the sizes break the monotone test, the walk places
  PrefillChunkPlace place[2];  // the walk's places
};

// The walk variant's prefill block (kernels/suite/fused_suite.cuh, FusedSuiteMode::kPrefillWalk):
// the walk's places alone.
struct PrefillWalkShared {
  PrefillChunkPlace place[2];
};

// The device view of the step's prefill requests [nd, R) as the plan reads them at `ratio`.
struct PrefillDeviceSizes {
  const int32_t* qsl;       // [R + 1] (shared or global)
  const int32_t* seq_lens;  // [R]
  int32_t nd;
  int32_t ratio;
  DS_HD int64_t Rows(int32_t i) const { return seq_lens[nd + i] / ratio; }  // the csl
  DS_HD int64_t Query(int32_t i) const { return int64_t{qsl[nd + i + 1]} - qsl[nd + i]; }
};

// Kept chunks of a group: vLLM drops a chunk with no KV rows; one with no query has no slice.
DS_HD_INLINE int64_t PrefillGroupChunks(const PrefillGroup& g, int64_t max_logits) {
  return g.rows != 0 && g.m > 0 ? CeilDiv64(g.m, PrefillSliceLen(g, max_logits)) : 0;
}

// What the kept chunks of group g (requests [first, g.end)) add to the three concatenated
// tensors: each chunk's cu_seq_lens (one more than its requests) and token_to_seq (the group's
// KV rows), and the group's query tokens once in ks / ke when any chunk is kept.
struct PrefillGroupExtent {
  int64_t cu, rows, query;  // [entries]
};
DS_HD_INLINE PrefillGroupExtent PrefillGroupExtentOf(const PrefillGroup& g, int32_t first, int64_t chunks) {
  return {chunks * (g.end - first + 1), chunks * g.rows, chunks > 0 ? g.m : 0};
}

// Barrier rounds of the doubling: the least r with 2^r >= n + 1 (the chain has at most n + 1 entries).
DS_HD_INLINE int PrefillPlanRounds(int32_t n) {
  int r = 0;
  DS_NO_UNROLL
  while ((int32_t{1} << r) < n + 1) ++r;
  return r;
}
inline constexpr int kPrefillPlanSteps = 6;       // the plan's phases besides the rounds: scan 3, next 1, reduce 2
inline constexpr int kPrefillPlanMaxRounds = 11;  // PrefillPlanRounds(kPrefillPlanCap)
static_assert((1 << kPrefillPlanMaxRounds) >= kPrefillPlanCap + 1 &&
                  (1 << (kPrefillPlanMaxRounds - 1)) < kPrefillPlanCap + 1,
              "kPrefillPlanMaxRounds is the cap's round count");

// The block's plan over the prefill requests of a step. Phases are the plan's own, from 0.
struct PrefillPlanBlock {
  const int32_t* qsl;       // [R + 1]
  const int32_t* seq_lens;  // [R]
  int32_t nd, n;            // [requests] decodes, prefill requests (n <= kPrefillPlanCap)
  int64_t workspace, max_logits;

  // seq << 11 | odd, as a product: a negative seq_len (caught by Monotone) must not be shifted.
  DS_HD int64_t Packed(int32_t i) const {
    const int32_t s = seq_lens[nd + i];
    return int64_t{s} * (int64_t{1} << kPrefillPlanOddBits) + (s & 1);
  }
  DS_HD bool Monotone(int32_t i) const { return seq_lens[nd + i] >= 0 && qsl[nd + i + 1] >= qsl[nd + i]; }
  // KV rows of requests [0, i) at ratio k + 1, from the packed prefix sum.
  static DS_HD int64_t RowsBefore(const PrefillJobShared& s, int k, int32_t i) {
    const int64_t sum = s.seq[i] >> kPrefillPlanOddBits, odd = s.seq[i] & ((1 << kPrefillPlanOddBits) - 1);
    return k == 0 ? sum : (sum - odd) / 2;
  }
  DS_HD PrefillGroup Group(const PrefillJobShared& s, int k, int32_t first, int32_t end) const {
    return PrefillGroup{end, int64_t{qsl[nd + end]} - qsl[nd + first], RowsBefore(s, k, end) - RowsBefore(s, k, first)};
  }
  DS_HD bool Fits(const PrefillJobShared& s, int k, int32_t first, int32_t end) const {
    const PrefillGroup g = Group(s, k, first, end);
    return !(g.rows > workspace || g.m * g.rows > max_logits);
  }
  DS_HD int32_t NextOf(const PrefillJobShared& s, int k, int32_t first) const {
    int32_t lo = first + 1, hi = n;
    DS_NO_UNROLL
    while (lo < hi) {
      const int32_t mid = (lo + hi + 1) / 2;
      if (Fits(s, k, first, mid))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }
  // The last chain entry <= own (chain[0] = 0 <= own < n = the chain's last entries).
  static DS_HD int32_t ChainAt(const PrefillJobShared& s, int k, int32_t n, int32_t own) {
    int32_t lo = 0, hi = n;
    DS_NO_UNROLL
    while (lo < hi) {
      const int32_t mid = (lo + hi + 1) / 2;
      if (s.chain[k][mid] <= own)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }

  // Plan phase `step`, 0 .. kPrefillPlanSteps + rounds - 1 (the write phase after them is the job's).
  DS_HD void Phase(int step, int32_t own, int32_t thread, PrefillJobShared& s) const {
    const int rounds = PrefillPlanRounds(n);
    const int32_t chunk = CeilDiv(n, kPrefillPlanThreads);
    const int32_t begin = MinI(thread * chunk, n), end = MinI(begin + chunk, n);
    if (step == 0) {  // chunk sums; -1 marks a size the monotone test cannot take
      int64_t sum = 0;
      bool monotone = true;
      DS_NO_UNROLL
      for (int32_t i = begin; i < end; ++i) {
        monotone = monotone && Monotone(i);
        sum += Packed(i);
      }
      s.u.part[thread] = monotone ? sum : -1;
    } else if (step == 1) {  // exclusive scan of each group's 16 chunk sums, by its own thread
      if (thread >= kPrefillScanGroups) return;
      int64_t running = 0;
      bool monotone = true;
      DS_NO_UNROLL
      for (int32_t j = 0; j < kPrefillScanGroups; ++j) {
        const int64_t v = s.u.part[thread * kPrefillScanGroups + j];
        monotone = monotone && v >= 0;
        s.u.part[thread * kPrefillScanGroups + j] = running;
        running += v;
      }
      s.group_sum[thread] = monotone ? running : -1;
    } else if (step == 2) {  // the prefix sums
      int64_t offset = 0, total = 0;
      bool monotone = true;
      DS_NO_UNROLL
      for (int32_t g = 0; g < kPrefillScanGroups; ++g) {
        const int64_t v = s.group_sum[g];
        monotone = monotone && v >= 0;
        if (g < thread / kPrefillScanGroups) offset += v;
        total += v;
      }
      if (thread == 0) {
        s.planned = monotone ? 1 : 0;
        s.seq[n] = total;
      }
      if (!monotone) return;
      offset += s.u.part[thread];
      DS_NO_UNROLL
      for (int32_t i = begin; i < end; ++i) {
        s.seq[i] = offset;
        offset += Packed(i);
      }
    } else if (step == 3) {  // next, chain[0]
      if (s.planned == 0) return;
      DS_NO_UNROLL
      for (int k = 0; k < 2; ++k) {
        DS_NO_UNROLL
        for (int32_t i = begin; i < end; ++i) s.u.jump[k][0][i] = static_cast<int16_t>(NextOf(s, k, i));
        if (thread == 0) {
          s.u.jump[k][0][n] = static_cast<int16_t>(n);
          s.chain[k][0] = 0;
        }
      }
    } else if (step < 4 + rounds) {  // doubling round r
      if (s.planned == 0) return;
      const int r = step - 4, cur = r & 1;
      const int32_t known = int32_t{1} << r;
      DS_NO_UNROLL
      for (int k = 0; k < 2; ++k) {
        const int16_t* jump = s.u.jump[k][cur];
        DS_NO_UNROLL
        for (int32_t x = thread; x < known && x + known <= n; x += kPrefillPlanThreads)
          s.chain[k][x + known] = jump[s.chain[k][x]];
        if (r + 1 < rounds) {
          DS_NO_UNROLL
          for (int32_t i = thread; i <= n; i += kPrefillPlanThreads) s.u.jump[k][cur ^ 1][i] = jump[jump[i]];
        }
      }
    } else if (step == 4 + rounds) {  // own's group; the kept groups' sums before it, per thread
      if (s.planned == 0) return;
      const int k = thread / kPrefillReduceThreads, lane = thread % kPrefillReduceThreads;
      const int32_t at = ChainAt(s, k, n, own);
      if (lane == 0) s.chain_at[k] = at;
      const int32_t per = CeilDiv(at, kPrefillReduceThreads);
      const int32_t g0 = MinI(lane * per, at), g1 = MinI(g0 + per, at);
      int64_t cu = 0, rows = 0, query = 0;
      DS_NO_UNROLL
      for (int32_t g = g0; g < g1; ++g) {
        const int32_t first = s.chain[k][g];
        const PrefillGroup grp = Group(s, k, first, s.chain[k][g + 1]);
        const PrefillGroupExtent e = PrefillGroupExtentOf(grp, first, PrefillGroupChunks(grp, max_logits));
        cu += e.cu;
        rows += e.rows;
        query += e.query;
      }
      s.u.red[k][lane][0] = cu;
      s.u.red[k][lane][1] = rows;
      s.u.red[k][lane][2] = query;
    } else if (step == 5 + rounds) {  // 16 sums per ratio
      if (s.planned == 0) return;
      const int k = thread / kPrefillReduceThreads, lane = thread % kPrefillReduceThreads;
      if (lane >= kPrefillReduceGroups) return;
      constexpr int32_t kPer = kPrefillReduceThreads / kPrefillReduceGroups;
      DS_NO_UNROLL
      for (int f = 0; f < 3; ++f) {
        int64_t sum = 0;
        DS_NO_UNROLL
        for (int32_t j = 0; j < kPer; ++j) sum += s.u.red[k][lane * kPer + j][f];
        s.red2[k][lane][f] = sum;
      }
    }
  }

  // After the plan's phases (planned == 1): own's place at ratio k + 1, on any thread.
  DS_HD PrefillChunkPlace Place(const PrefillJobShared& s, int k, int32_t own) const {
    const int32_t at = s.chain_at[k], first = s.chain[k][at];
    const PrefillGroup g = Group(s, k, first, s.chain[k][at + 1]);
    PrefillChunkPlace place{};
    place.first = first;
    place.last = g.end - 1;
    place.row_in_group = static_cast<int32_t>(RowsBefore(s, k, own) - RowsBefore(s, k, first));
    place.query_in_group = static_cast<int32_t>(int64_t{qsl[nd + own]} - qsl[nd + first]);
    place.chunks = PrefillGroupChunks(g, max_logits);
    place.group_rows = g.rows;
    DS_NO_UNROLL
    for (int32_t j = 0; j < kPrefillReduceGroups; ++j) {
      place.cu_at += s.red2[k][j][0];
      place.rows_at += s.red2[k][j][1];
      place.query_at += s.red2[k][j][2];
    }
    return place;
  }
};

}  // namespace dspark
