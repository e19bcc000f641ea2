// Building blocks shared by the registered implementations (kernels/impls/*.cu): the step an
// implementation receives (SuiteStep), op helpers that issue nothing for an empty op (so a
// captured graph's node count equals the counted launches), the argument adapters of the
// builder kernels, and #57207's segmentation (host-planned, or the device kernel). The vLLM
// states' builders, op for op, are kernels/suite/vllm_ops.h; the fused suite's kernel is
// kernels/suite/fused_suite.cuh. Scratch comes from the backend's arena; the caller resets it
// per suite run so that a captured graph keeps its addresses.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/batch.h"
#include "kernels/common/backend.h"
#include "kernels/common/status_macros.h"
#include "kernels/compressed_slots.cuh"
#include "kernels/indexer_impls.h"
#include "kernels/ops.cuh"
#include "kernels/prefill_segments.cuh"
#include "kernels/ring_slots.cuh"
#include "kernels/suite/builder_memo.h"
#include "kernels/suite/fused_suite_launch.cuh"
#include "kernels/suite/suite.h"
#include "kernels/swa.cuh"
#include "kernels/token_map.cuh"
#include "kernels/token_map_impls.h"

namespace dspark {

// Everything one implementation needs for one step.
struct SuiteStep {
  const BatchInputs* in = nullptr;
  SuiteLayout layout;
  ModelConsts consts;
  SuiteOutputs out;                // this implementation's persistent buffers
  const int32_t* arange = nullptr;  // [layout.arange_len] persistent 0, 1, ... (vLLM's arange buffer)
  BuilderMemoSession memo;          // CPU check only: builder-level deduplication, off when memo.memo is null
};

// Host-side checks (no device access).
absl::Status ValidateSuiteStep(Impl impl, const SuiteStep& s);

namespace suite_internal {

// A shareable builder's body (kernels/suite/builder_memo.h): run once per step for every
// implementation that calls it on the canonical inputs; directly on a GPU or with dedup off.
template <class Backend, class Body>
absl::Status Memoized(Backend& be, const SuiteStep& s, BuilderGroup g, int32_t variant, const int32_t* token_map,
                      Body&& body) {
  if constexpr (Backend::kIsGpu) {
    return body(s);
  } else {
    if (s.memo.memo == nullptr) return body(s);
    return s.memo.memo->Run(be, s, g, variant, token_map, body, s.memo.effective);
  }
}

// One op, issued only when it has elements (see the file comment).
template <class Backend, class K>
void Issue(Backend& be, const K& k) {
  const LaunchShape shape = k.Shape();
  if (shape.grid > 0) be.Launch(k, shape);
}
template <class Backend>
void FillI32(Backend& be, int32_t* dst, int32_t value, int64_t count) {
  if (count > 0) be.Fill32(dst, value, static_cast<size_t>(count));
}
// fill_ of an int64 tensor with -1: the same bytes as 2 * count int32 -1s, one fill.
template <class Backend>
void FillI64MinusOne(Backend& be, int64_t* dst, int64_t count) {
  if (count > 0) be.Fill32(reinterpret_cast<int32_t*>(dst), -1, static_cast<size_t>(2 * count));
}
// The same fill_(-1) of out[0, count) when the caller launches, right after it, a
// CompressedSlotKernel `c` writing out (when `c` is invalid the fill is stored and the caller's
// contract check fails after it, as before): that kernel stores every cell of
// out[0, c.capacity) and reads none of out (kernels/compressed_slots.cuh), so with
// c.out == dst and c.capacity == count the fill's stores are dead. The CPU emulator counts the
// fill and skips its stores, a CPU path like the kernels' (off with CpuPathsEnabled(): the
// buffers after the kernel are the same bytes, tests/kernels/test_cpu_paths.cc); a GPU issues it
// as vLLM does.
template <class Backend>
void FillI64MinusOneOverwritten(Backend& be, int64_t* dst, int64_t count, const CompressedSlotParams& c) {
  if constexpr (!Backend::kIsGpu) {
    if (CpuPathsEnabled() && count > 0 && c.out == dst && c.capacity == count && CanImplementCompressedSlots(c).ok() &&
        CompressedSlotKernel::Shape(c).grid > 0 &&
        CompressedSlotKernel::Shape(c).grid * int64_t{CompressedSlotKernel::kTokensPerBlock} >= count) {
      be.CountDeadFill();
      return;
    }
  }
  FillI64MinusOne(be, dst, count);
}
template <class Backend, class T>
void CopyD2D(Backend& be, T* dst, const T* src, int64_t count) {
  if (count > 0) be.CopyDeviceToDevice(dst, src, sizeof(T) * static_cast<size_t>(count));
}

inline ops::Binary2DKernel Vec(ops::View2D a, ops::View2D b, int32_t* out, int32_t n, ops::BinaryOp op) {
  return ops::Binary2DKernel{a, b, out, n, 1, op};
}
inline ops::View2D V(const int32_t* x) { return ops::View2D::Column(x); }
inline ops::View2D S(int32_t v) { return ops::View2D::Scalar(v); }

// index_select(0, index) as PyTorch launches it: the small-index kernel for at most 16 indices,
// else one thread per output element (indexSelectLargeIndex). 1-D: src [src_len] -> out [n].
template <class Backend>
void IndexSelect(Backend& be, const int32_t* src, int32_t src_len, const int32_t* index, int32_t* out, int32_t n) {
  if (n <= ops::IndexSelectSmallKernel::kMaxIndices)
    Issue(be, ops::IndexSelectSmallKernel{{src, src_len, 1, index, out, 1, n, 1}});
  else
    Issue(be, ops::GatherKernel{src, src_len, index, out, n});
}
// The same for the rows of a row-strided 2-D src: dst [rows, dst_stride], `cols` columns each.
template <class Backend>
void IndexSelectRows(Backend& be, const int32_t* src, int32_t src_rows, int32_t src_stride, const int32_t* index,
                     int32_t* dst, int32_t dst_stride, int32_t rows, int32_t cols) {
  if (rows <= ops::IndexSelectSmallKernel::kMaxIndices)
    Issue(be, ops::IndexSelectSmallKernel{{src, src_rows, src_stride, index, dst, dst_stride, rows, cols}});
  else
    Issue(be, ops::GatherRowsKernel{src, src_rows, src_stride, index, dst, dst_stride, rows, cols});
}

inline IndexerArgs SuiteIndexerArgs(const SuiteStep& s, const IndexerOutputs& o) {
  const BatchInputs& in = *s.in;
  IndexerArgs a;
  a.query_start_loc = in.device.query_start_loc;
  a.seq_lens = in.device.seq_lens;
  a.block_table = in.device.block_table;
  a.host_query_start_loc = in.host.query_start_loc;
  a.arange = s.arange;
  a.num_decodes = in.sizes.num_decodes;
  a.num_decode_tokens = in.sizes.num_decode_tokens;
  a.capacity = in.sizes.capacity;
  a.bt_width = in.sizes.bt_width;
  a.bt_stride = in.sizes.bt_stride;
  a.out_stride = s.layout.bt_out_stride;
  a.seq_out = o.seq_out;
  a.bt_out = o.bt_out;
  a.decode_lens = o.decode_lens;
  a.indices = o.indices;
  a.per_req = o.per_req;
  return a;
}

// #57207 as (a)-(d) run it: segments planned on the host from qsl_cpu, copied through pinned
// memory; sequence lengths refreshed from the device view (nothing with no prefills):
//   [h2d] seg_qsl[:S+1] = host starts from the first prefill token, then the prefill token
//         count;  [f] seg_qsl[S+1:] = that count
//   [h2d] plan (request, segment end) per segment
//   [k] qlen = diff(qsl);  [k] ctx = seq_lens - qlen;  [k] ctx[req];  [k] + seg_end
//   [c] seg_seq_lens[:S];  [f] seg_seq_lens[S:] = 0
//   [h2d] the two host ints of the metadata, S and prefill_segment_max_query_len (the longest
//         planned segment), staged in one copy so the check reads them
template <class Backend>
absl::Status SegmentsHostPlannedOps(Backend& be, const SuiteStep& s) {
  const BatchInputs& in = *s.in;
  const int32_t R = in.sizes.num_reqs, nd = in.sizes.num_decodes, seg_len = s.consts.prefill_segment;
  const int32_t max_seg = s.layout.max_segments;
  const int32_t* hq = in.host.query_start_loc;
  if (nd == R) return be.status();  // no prefills: #57207's segment fields are absent
  std::vector<int32_t> starts, plan_req, plan_end;
  int32_t max_query_len = 0;
  for (int32_t r = nd; r < R; ++r) {
    const int32_t qlen = hq[r + 1] - hq[r];
    const int32_t count = in.fp8_prefill ? CeilDiv(qlen, seg_len) : 1;
    for (int32_t i = 0; i < count; ++i) {
      const int32_t begin = in.fp8_prefill ? i * seg_len : 0;
      starts.push_back(hq[r] - hq[nd] + begin);
      plan_req.push_back(r);
      plan_end.push_back(in.fp8_prefill ? MinI(begin + seg_len, qlen) : qlen);
      max_query_len = MaxI(max_query_len, plan_end.back() - begin);
    }
  }
  be.NoteHostArrayOp();
  be.NoteHostArrayOp();
  const int32_t count = static_cast<int32_t>(starts.size());
  if (count > max_seg)
    return absl::OutOfRangeError(absl::StrFormat(
        "prefill segments: the host plan has %d segments, the persistent buffer holds %d", count, max_seg));
  starts.push_back(hq[R] - hq[nd]);  // cu[-1]: the prefill token count
  be.CopyToDevice(s.out.seg_qsl, starts.data(), sizeof(int32_t) * starts.size());
  FillI32(be, s.out.seg_qsl + count + 1, hq[R] - hq[nd], max_seg - count);
  if (count > 0) {
    std::vector<int32_t> plan(plan_req);
    plan.insert(plan.end(), plan_end.begin(), plan_end.end());
    int32_t* d_plan = be.template Scratch<int32_t>(plan.size());
    int32_t* ctx = be.template Scratch<int32_t>(R);
    int32_t* lens = be.template Scratch<int32_t>(count);
    DS_RETURN_IF_ERROR(be.status());
    be.CopyToDevice(d_plan, plan.data(), sizeof(int32_t) * plan.size());
    Issue(be, ops::DiffKernel{in.device.query_start_loc, ctx, R});
    Issue(be, Vec(V(in.device.seq_lens), V(ctx), ctx, R, ops::BinaryOp::kSub));
    Issue(be, ops::GatherKernel{ctx, R, d_plan, lens, count});
    Issue(be, Vec(V(lens), V(d_plan + count), lens, count, ops::BinaryOp::kAdd));
    CopyD2D(be, s.out.seg_seq_lens, lens, count);
  }
  FillI32(be, s.out.seg_seq_lens + count, 0, max_seg - count);
  const int32_t host_ints[2] = {count, max_query_len};
  be.CopyToDevice(s.out.seg_count, host_ints, sizeof(host_ints));
  return be.status();
}

template <class Backend>
absl::Status SegmentsHostPlanned(Backend& be, const SuiteStep& s) {
  return Memoized(be, s, BuilderGroup::kSegments, 0, nullptr,
                  [&be](const SuiteStep& x) { return SegmentsHostPlannedOps(be, x); });
}

// A released vLLM state's #57207: no release up to 0.34.0 has it, so nothing, unless the
// what-if asks for it (ModelConsts::what_if_57207); then the host-planned segmentation above.
template <class Backend>
absl::Status SegmentsIfWhatIf(Backend& be, const SuiteStep& s) {
  if (!s.consts.what_if_57207) return be.status();
  return SegmentsHostPlanned(be, s);
}

inline TokenMapArgs SuiteTokenMapArgs(const SuiteStep& s, int32_t* out, int32_t buffer_len) {
  const BatchInputs& in = *s.in;
  return TokenMapArgs{in.device.query_start_loc, in.host.query_start_loc, in.sizes.num_reqs, in.sizes.num_tokens,
                      out, buffer_len};
}

}  // namespace suite_internal

// The fused-suite kernel's params for one step (grid planned from host-known sizes), and its
// prefill job's.
FusedSuiteParams MakeFusedSuiteParams(const SuiteStep& s);
FusedSuitePrefillParams MakeFusedSuitePrefillParams(const SuiteStep& s);

template <class Backend>
absl::Status RunFusedSuiteKernel(Backend& be, const SuiteStep& s) {
  const FusedSuiteParams p = MakeFusedSuiteParams(s);
  const FusedSuitePrefillParams pf = MakeFusedSuitePrefillParams(s);
  DS_RETURN_IF_ERROR(CanImplementFusedSuite(p, pf));
  LaunchFusedSuiteWith(p, pf, [&be](const auto& k, LaunchShape shape) { be.Launch(k, shape); });
  return be.status();
}

}  // namespace dspark
