// Prefill query segmentation (PR #57207), built on the device in one single-block launch.
//
// Prefill requests are r in [num_decodes, R). FP8 splits each one's query into consecutive
// segments of at most `segment_len` (1024) tokens, so that the FlashInfer TRTLLM-GEN launcher
// picks its faster query tile; BF16 keeps exactly one segment per prefill request. Segment k,
// covering query offsets [seg_start, seg_end) of request r, gets
//   seg_qsl[k]      = qsl[r] - qsl[nd] + seg_start     (from the first prefill token, as
//                                                       #57207's prefill_segment_query_start)
//   seg_seq_lens[k] = seq_lens[r] - qlen_r + seg_end   (keeps every token's absolute position)
// so for any token at offset o inside segment k, seg_seq_lens[k] - seg_len + o equals its
// position seq_lens[r] - qlen_r + (offset in request).
//
// Zero-length prefill requests (e.g. CUDA-graph padding requests): FP8 gives them no segment;
// BF16 gives them one empty segment (seg_qsl[k] == seg_qsl[k + 1], seg_seq_lens[k] =
// seq_lens[r]), so BF16 grouping stays exactly "one per request", as before the PR.
//
// Buffers are persistent and fully rewritten by every launch:
//   seg_qsl[seg_count .. max_segments] = qsl[R] - qsl[nd] (the prefill token count: cu[-1]),
//   seg_seq_lens[seg_count .. max_segments) = 0,  seg_count[0] = number of segments,
//   seg_max_query_len[0] = the longest segment's query length (0 without segments).
// Everything comes from device qsl / seq_lens, so a captured graph replayed after seq_lens or
// qsl changed in place builds the new segmentation. seg_count stays on the device.
//
// One block of 256 threads: thread i owns a contiguous run of prefill requests, counts their
// segments, a Hillis-Steele scan over the 256 partial counts (8 barrier phases) gives each
// thread its first segment index, then each thread writes its requests' segments and all
// threads write the tail. R of a few thousand costs a few dozen loads per thread.
//
// If the device data needed more than max_segments segments (impossible when CanImplement
// passed and qsl[R] <= token_capacity), entries past max_segments are dropped,
// seg_qsl[max_segments] still gets qsl[R], and seg_count holds the full count, so a caller can
// detect it.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/batch.h"
#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dspark {

struct PrefillSegmentParams {
  const int32_t* query_start_loc;  // [num_reqs + 1] device boundaries, non-decreasing
  const int32_t* seq_lens;         // [num_reqs] context incl. current query
  int32_t* seg_qsl;                // [max_segments + 1] absolute start token of each segment,
                                   //   qsl[num_reqs] from index seg_count on
  int32_t* seg_seq_lens;           // [max_segments] sequence length per segment, 0 when unused
  int32_t* seg_count;              // [1] segments written
  int32_t num_reqs;                // R: requests incl. zero-length padding requests
  int32_t num_decodes;             // requests [0, num_decodes) are decodes and get no segment
  int32_t max_segments;            // [segments] capacity of seg_seq_lens
  int32_t segment_len;             // [tokens] FP8 segment cap (ModelConsts::prefill_segment)
  bool fp8;                        // true: FP8 segmentation; false: BF16, one per request
  int32_t* seg_max_query_len = nullptr;  // [1] longest segment (#57207's prefill_segment_max_query_len),
                                         //   or nullptr: not written
};

// Segments a step with `num_prefill_reqs` prefill requests and at most `token_capacity` tokens can
// need in either mode: ceil(q / S) <= 1 + floor(q / S) for q >= 1, summed over requests.
// Formed in 64 bits and saturated at INT32_MAX, so a huge capacity cannot overflow into a small
// bound (callers size buffers from it and refuse what does not fit).
inline int32_t PrefillSegmentBound(int32_t num_prefill_reqs, int32_t token_capacity, int32_t segment_len) {
  const int64_t bound = int64_t{num_prefill_reqs} + CeilDiv64(token_capacity, segment_len);
  return bound > INT32_MAX ? INT32_MAX : static_cast<int32_t>(bound);
}

inline PrefillSegmentParams MakePrefillSegmentParams(const BatchSizes& s, const DeviceBatch& d,
                                                     const ModelConsts& m, bool fp8, int32_t* seg_qsl,
                                                     int32_t* seg_seq_lens, int32_t* seg_count,
                                                     int32_t max_segments) {
  return PrefillSegmentParams{d.query_start_loc, d.seq_lens, seg_qsl,      seg_seq_lens,      seg_count,
                              s.num_reqs,        s.num_decodes, max_segments, m.prefill_segment, fp8};
}

// `token_capacity` bounds qsl[num_reqs] (the persistent token-buffer length).
inline absl::Status CanImplementPrefillSegments(const PrefillSegmentParams& p, int32_t token_capacity) {
  if (p.query_start_loc == nullptr || p.seq_lens == nullptr || p.seg_qsl == nullptr ||
      p.seg_seq_lens == nullptr || p.seg_count == nullptr)
    return absl::InvalidArgumentError(
        "PrefillSegmentParams: query_start_loc, seq_lens, seg_qsl, seg_seq_lens and seg_count must be non-null");
  if (p.num_reqs < 0 || p.num_decodes < 0 || p.num_decodes > p.num_reqs)
    return absl::OutOfRangeError(absl::StrFormat(
        "PrefillSegmentParams: num_decodes=%d must be in [0, num_reqs=%d]", p.num_decodes, p.num_reqs));
  if (p.segment_len < 1)
    return absl::InvalidArgumentError(
        absl::StrFormat("PrefillSegmentParams: segment_len=%d must be >= 1", p.segment_len));
  if (token_capacity < 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("PrefillSegmentParams: token_capacity=%d must be >= 0", token_capacity));
  const int32_t bound = PrefillSegmentBound(p.num_reqs - p.num_decodes, token_capacity, p.segment_len);
  if (p.max_segments < bound)
    return absl::OutOfRangeError(absl::StrFormat(
        "PrefillSegmentParams: max_segments=%d is below the bound %d for %d prefill requests and "
        "token_capacity=%d",
        p.max_segments, bound, p.num_reqs - p.num_decodes, token_capacity));
  return absl::OkStatus();
}

// The longest segment of a prefill request with `qlen` query tokens (the first: segments are cut
// from the start of the query).
DS_HD_INLINE int32_t PrefillSegmentMaxLen(int32_t qlen, bool fp8, int32_t segment_len) {
  return MaxI(fp8 ? MinI(qlen, segment_len) : qlen, 0);
}

// Segments of a prefill request with `qlen` query tokens.
DS_HD_INLINE int32_t PrefillSegmentCount(int32_t qlen, bool fp8, int32_t segment_len) {
  return fp8 ? CeilDiv(qlen, segment_len) : 1;
}

// Writes the segments of prefill request r, the first at index `first_seg`; returns how many
// the request has (also those dropped past max_segments).
// `base` is qsl[num_decodes], the first prefill token.
DS_HD_INLINE int32_t WritePrefillRequestSegments(const PrefillSegmentParams& p, int32_t r, int32_t first_seg,
                                                 int32_t base) {
  const int32_t qstart = p.query_start_loc[r];
  const int32_t qlen = p.query_start_loc[r + 1] - qstart;
  const int32_t context = p.seq_lens[r] - qlen;
  const int32_t count = PrefillSegmentCount(qlen, p.fp8, p.segment_len);
  const int32_t step = p.fp8 ? p.segment_len : qlen;
  DS_NO_UNROLL
  for (int32_t i = 0; i < count; ++i) {
    const int32_t k = first_seg + i;
    if (k >= p.max_segments) break;
    const int32_t seg_start = i * step;
    p.seg_qsl[k] = qstart - base + seg_start;
    p.seg_seq_lens[k] = context + MinI(seg_start + step, qlen);
  }
  return count;
}

// Writes the unused tail from index `count` on; `lane` of `num_lanes` takes every num_lanes-th
// entry. `end` is the prefill token count, qsl[R] - qsl[num_decodes].
DS_HD_INLINE void WritePrefillSegmentTail(const PrefillSegmentParams& p, int32_t count, int32_t end, int32_t lane,
                                          int32_t num_lanes) {
  DS_NO_UNROLL
  for (int32_t k = MinI(MaxI(count, 0), p.max_segments) + lane; k <= p.max_segments; k += num_lanes) {
    p.seg_qsl[k] = end;
    if (k < p.max_segments) p.seg_seq_lens[k] = 0;
  }
}

// The segmentation of a step without prefill requests (num_reqs == num_decodes), in one pass
// without loads: no segments, so every entry is the tail's, relative to qsl[R] - qsl[nd] = 0.
// It writes what PrefillSegmentsPhase's phases write for such a step.
DS_HD_INLINE void PrefillSegmentsWithoutPrefills(const PrefillSegmentParams& p, int32_t lane, int32_t num_lanes) {
  WritePrefillSegmentTail(p, 0, 0, lane, num_lanes);
  if (lane == 0) {
    p.seg_count[0] = 0;
    if (p.seg_max_query_len != nullptr) p.seg_max_query_len[0] = 0;
  }
}

// The whole segmentation as block phases, so that a single-launch suite kernel can give one of
// its blocks to it: call PrefillSegmentsPhase(p, phase, thread, shared) for phase = 0 ..
// kPrefillSegmentPhases - 1 with a block barrier between phases, from threads 0 ..
// kPrefillSegmentThreads - 1 (other threads of a wider block must not call it).
inline constexpr int32_t kPrefillSegmentThreads = 256;
inline constexpr int kPrefillSegmentScanSteps = 8;  // log2(kPrefillSegmentThreads)
inline constexpr int kPrefillSegmentPhases = 2 + kPrefillSegmentScanSteps;
static_assert((1 << kPrefillSegmentScanSteps) == kPrefillSegmentThreads,
              "the scan covers exactly one partial count per thread");

struct PrefillSegmentShared {
  int32_t own[kPrefillSegmentThreads];         // segments of each thread's run of requests
  int32_t scan[2][kPrefillSegmentThreads];     // ping-pong inclusive scan of `own`
  int32_t longest[2][kPrefillSegmentThreads];  // ping-pong inclusive max-scan of each run's longest segment
  int32_t bounds[2];                           // qsl[num_decodes], qsl[R]
};

// Phase 0 issues every load the later phases need (the runs' boundaries, and the two totals that
// the segment starts and the tail are relative to), so the block waits one global round trip.
DS_HD_INLINE void PrefillSegmentsPhase(const PrefillSegmentParams& p, int phase, int32_t thread,
                                       PrefillSegmentShared& s) {
  constexpr int32_t kThreads = kPrefillSegmentThreads;
  const int32_t num_prefills = p.num_reqs - p.num_decodes;
  const int32_t per_thread = CeilDiv(num_prefills, kThreads);
  const int32_t lo = p.num_decodes + MinI(thread * per_thread, num_prefills);
  const int32_t hi = p.num_decodes + MinI((thread + 1) * per_thread, num_prefills);
  if (phase == 0) {
    if (thread < 2) s.bounds[thread] = p.query_start_loc[thread == 0 ? p.num_decodes : p.num_reqs];
    int32_t own = 0, longest = 0;
    DS_NO_UNROLL
    for (int32_t r = lo; r < hi; ++r) {
      const int32_t qlen = p.query_start_loc[r + 1] - p.query_start_loc[r];
      own += PrefillSegmentCount(qlen, p.fp8, p.segment_len);
      longest = MaxI(longest, PrefillSegmentMaxLen(qlen, p.fp8, p.segment_len));
    }
    s.own[thread] = own;
    s.scan[0][thread] = own;
    s.longest[0][thread] = longest;
  } else if (phase <= kPrefillSegmentScanSteps) {
    const int32_t in = (phase - 1) & 1, out = phase & 1;
    const int32_t offset = 1 << (phase - 1);
    const bool has_left = thread >= offset;
    s.scan[out][thread] = s.scan[in][thread] + (has_left ? s.scan[in][thread - offset] : 0);
    s.longest[out][thread] = MaxI(s.longest[in][thread], has_left ? s.longest[in][thread - offset] : 0);
  } else {
    constexpr int32_t kLast = kPrefillSegmentScanSteps & 1;
    const int32_t base = s.bounds[0];
    int32_t next = s.scan[kLast][thread] - s.own[thread];
    DS_NO_UNROLL
    for (int32_t r = lo; r < hi; ++r) next += WritePrefillRequestSegments(p, r, next, base);
    const int32_t total = s.scan[kLast][kThreads - 1];
    WritePrefillSegmentTail(p, total, s.bounds[1] - base, thread, kThreads);
    if (thread == 0) {
      p.seg_count[0] = total;
      if (p.seg_max_query_len != nullptr) p.seg_max_query_len[0] = s.longest[kLast][kThreads - 1];
    }
  }
}

struct PrefillSegmentKernel {
  static constexpr int kPhases = kPrefillSegmentPhases;
  using Shared = PrefillSegmentShared;
  PrefillSegmentParams p;

  static LaunchShape Shape(const PrefillSegmentParams&) { return {1, kPrefillSegmentThreads}; }

  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const { PrefillSegmentsPhase(p, phase, c.thread, s); }
};

#if defined(__CUDACC__)
inline cudaError_t LaunchPrefillSegments(const PrefillSegmentParams& p, cudaStream_t stream) {
  return LaunchFunctor(PrefillSegmentKernel{p}, PrefillSegmentKernel::Shape(p), stream);
}
#endif

inline void EmulatePrefillSegments(const PrefillSegmentParams& p) {
  EmulateGrid(PrefillSegmentKernel{p}, PrefillSegmentKernel::Shape(p));
}

}  // namespace dspark
