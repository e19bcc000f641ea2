// The five implementations of the builder suite of one step (DESIGN.md s.4), each written once
// as a template over a Backend (kernels/common/backend.h), so that CPU emulation and the GPU run
// the same code and count the same operations.
//
//   chain         pre-#47474. EACH of the SWA, MLA r1 and MLA r2 builders maps tokens itself
//                 (TokenMapHost: np.repeat over the HOST boundaries, a pinned copy, a zeroed
//                 tail) into its own buffer, and takes token totals from the host. Positions come
//                 from the host too: each builder copies the per-request offset
//                 seq_lens_cpu[r] - query_len_cpu[r] - qsl_cpu[r] (one pinned copy) and expands
//                 it with its own mapping (index_select + arange), so a stale host split or an
//                 upper-bound host seq_lens makes every per-token value wrong. Then each builder's
//                 math is a PyTorch-like op chain (kernels/ops.cuh, one launch per op). The
//                 indexers are IndexerChain (kernels/indexer_impls.h: host split, host total,
//                 only column 0 of padding rows cleared). MLA r1 maps into the suite's
//                 token_to_req output (its req_id_per_token); SWA and MLA r2 into scratch.
//   cached        #47474: ONE TokenMapHost per step into token_to_req, shared by the SWA / MLA
//                 builders; everything else as chain (the host positions per builder included).
//   device-chain  TokenMapDeviceChain (device repeat_interleave, host TOTAL only) shared; each
//                 builder's positions from device qsl / seq_lens by device ops; the same builder op
//                 chains; IndexerDeviceChain (below: the chain's ops with the device mapping, and
//                 whole padding rows cleared); the device segmentation kernel. Correct under stale
//                 host boundaries; graph-capturable, but the op sizes are the host totals, so a
//                 graph is valid only for the host totals it was captured with.
//   fused         #56562 in CUDA C++: TokenMapKernel, then SwaKernel, CompressedSlotKernel x2 and
//                 RingSlotKernel reading that shared mapping, IndexerDecodeKernel x2 and
//                 PrefillSegmentKernel: 8 launches.
//   fused-suite   FusedSuiteKernel (kernels/suite/fused_suite.cuh): 1 launch.
//
// The FP8 prefill segmentation (#57207) in chain / cached is planned on the host from qsl_cpu
// (segment starts and a (request, segment end) plan, pinned copies), with the segment sequence
// lengths refreshed from device seq_lens / qsl by ops, as the PR describes. #57207 has no
// PyTorch device-op version, so device-chain uses the device kernel.
//
// Launches (kernels + copies + fills) per suite at batch-16 decode (N = R = 16, no prefills,
// capacity > N; asserted in tests/test_suite.cc): chain 102 (11 pinned host copies), cached 100
// (9), device-chain 104 (none), fused 8, fused-suite 1.
//
// An op with nothing to do (zero elements) is not issued, so a captured graph's node count
// equals the counted launches. Scratch comes from the backend's arena; the caller resets it per
// suite run so that a captured graph keeps its addresses.
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
#include "kernels/suite/fused_suite.cuh"
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
};

// Host-side checks (no device access).
absl::Status ValidateSuiteStep(Impl impl, const SuiteStep& s);

namespace suite_internal {

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
template <class Backend, class T>
void CopyD2D(Backend& be, T* dst, const T* src, int64_t count) {
  if (count > 0) be.CopyDeviceToDevice(dst, src, sizeof(T) * static_cast<size_t>(count));
}

inline ops::Binary2DKernel Vec(ops::View2D a, ops::View2D b, int32_t* out, int32_t n, ops::BinaryOp op) {
  return ops::Binary2DKernel{a, b, out, n, 1, op};
}
inline ops::View2D V(const int32_t* x) { return ops::View2D::Column(x); }
inline ops::View2D S(int32_t v) { return ops::View2D::Scalar(v); }

// Which request owns each token and its absolute position, for the first `n` tokens.
struct TokenFrame {
  const int32_t* req = nullptr;  // [n]
  const int32_t* pos = nullptr;  // [n]
  int32_t n = 0;                 // [tokens] the host token total
};

// chain / cached: the host's per-request offset seq_lens_cpu - query_len_cpu - qsl_cpu, one pinned
// copy, expanded by `req` and added to arange (index_select, add).
template <class Backend>
absl::StatusOr<TokenFrame> HostPositions(Backend& be, const SuiteStep& s, const int32_t* req) {
  const BatchInputs& in = *s.in;
  const int32_t R = in.sizes.num_reqs;
  const int32_t* hq = in.host.query_start_loc;
  TokenFrame f{req, nullptr, hq[R]};
  if (f.n == 0) return f;
  std::vector<int32_t> offset(static_cast<size_t>(R));
  for (int32_t r = 0; r < R; ++r) offset[r] = in.host.seq_lens[r] - (hq[r + 1] - hq[r]) - hq[r];
  be.NoteHostArrayOp();
  int32_t* d_offset = be.template Scratch<int32_t>(R);
  int32_t* pos = be.template Scratch<int32_t>(f.n);
  DS_RETURN_IF_ERROR(be.status());
  be.CopyToDevice(d_offset, offset.data(), sizeof(int32_t) * static_cast<size_t>(R));
  Issue(be, ops::GatherKernel{d_offset, R, req, pos, f.n});
  Issue(be, Vec(V(pos), V(s.arange), pos, f.n, ops::BinaryOp::kAdd));
  f.pos = pos;
  return f;
}

// device-chain: the same offsets from the device view (diff, sub, sub), then the same expansion.
template <class Backend>
absl::StatusOr<TokenFrame> DevicePositions(Backend& be, const SuiteStep& s, const int32_t* req) {
  const BatchInputs& in = *s.in;
  const int32_t R = in.sizes.num_reqs;
  TokenFrame f{req, nullptr, in.host.query_start_loc[R]};
  if (f.n == 0) return f;
  int32_t* offset = be.template Scratch<int32_t>(R);
  int32_t* pos = be.template Scratch<int32_t>(f.n);
  DS_RETURN_IF_ERROR(be.status());
  const int32_t* qsl = in.device.query_start_loc;
  Issue(be, ops::DiffKernel{qsl, offset, R});
  Issue(be, Vec(V(in.device.seq_lens), V(offset), offset, R, ops::BinaryOp::kSub));
  Issue(be, Vec(V(offset), V(qsl), offset, R, ops::BinaryOp::kSub));
  Issue(be, ops::GatherKernel{offset, R, req, pos, f.n});
  Issue(be, Vec(V(pos), V(s.arange), pos, f.n, ops::BinaryOp::kAdd));
  f.pos = pos;
  return f;
}

// SWA as an op chain:
//   start = (pos - (W - 1)).clamp_(min=0); lens = pos - start + 1; swa_lens[:n] = lens
//   cells = start[:, None] + arange[None, :W]; valid = arange[None, :W] < lens[:, None]
//   cells = minimum(cells, pos[:, None])      (keeps masked-out cells inside the table)
//   blk = block_table[req[:, None], cells // bs]; slot = blk * bs + cells % bs
//   swa_indices[:n] = where(valid, slot, -1); padding rows: lens 0, indices -1
template <class Backend>
absl::Status SwaChain(Backend& be, const SuiteStep& s, const TokenFrame& f) {
  const BatchInputs& in = *s.in;
  const int32_t n = f.n, N = in.sizes.num_tokens, W = s.consts.swa_window, bs = s.consts.swa_block_size;
  using ops::BinaryOp;
  using ops::View2D;
  if (n > 0) {
    int32_t* start = be.template Scratch<int32_t>(n);
    int32_t* lens = be.template Scratch<int32_t>(n);
    int32_t* cells = be.template Scratch<int32_t>(static_cast<size_t>(n) * W);
    int32_t* valid = be.template Scratch<int32_t>(static_cast<size_t>(n) * W);
    int32_t* col = be.template Scratch<int32_t>(static_cast<size_t>(n) * W);
    int32_t* off = be.template Scratch<int32_t>(static_cast<size_t>(n) * W);
    int32_t* blk = be.template Scratch<int32_t>(static_cast<size_t>(n) * W);
    DS_RETURN_IF_ERROR(be.status());
    Issue(be, Vec(V(f.pos), S(W - 1), start, n, BinaryOp::kSub));
    Issue(be, Vec(V(start), S(0), start, n, BinaryOp::kMax));
    Issue(be, Vec(V(f.pos), V(start), lens, n, BinaryOp::kSub));
    Issue(be, Vec(V(lens), S(1), lens, n, BinaryOp::kAdd));
    CopyD2D(be, s.out.swa_lens, lens, n);
    Issue(be, ops::Binary2DKernel{View2D::Column(start), View2D::Row(s.arange), cells, n, W, BinaryOp::kAdd});
    Issue(be, ops::Binary2DKernel{View2D::Row(s.arange), View2D::Column(lens), valid, n, W, BinaryOp::kLt});
    Issue(be, ops::Binary2DKernel{View2D::Matrix(cells, W), View2D::Column(f.pos), cells, n, W, BinaryOp::kMin});
    Issue(be, ops::Binary2DKernel{View2D::Matrix(cells, W), S(bs), col, n, W, BinaryOp::kFloorDiv});
    Issue(be, ops::Binary2DKernel{View2D::Matrix(cells, W), S(bs), off, n, W, BinaryOp::kRemainder});
    Issue(be, ops::GatherIndex2DKernel{in.device.block_table, in.sizes.num_reqs, in.sizes.bt_width,
                                       in.sizes.bt_stride, f.req, View2D::Matrix(col, W), blk, n, W});
    Issue(be, ops::Binary2DKernel{View2D::Matrix(blk, W), S(bs), blk, n, W, BinaryOp::kMul});
    Issue(be, ops::Binary2DKernel{View2D::Matrix(blk, W), View2D::Matrix(off, W), blk, n, W, BinaryOp::kAdd});
    Issue(be, ops::Where2DKernel{View2D::Matrix(valid, W), View2D::Matrix(blk, W), S(-1), col, n, W});
    CopyD2D(be, s.out.swa_indices, col, static_cast<int64_t>(n) * W);
  }
  FillI32(be, s.out.swa_lens + n, 0, N - n);
  FillI32(be, s.out.swa_indices + static_cast<int64_t>(n) * W, -1, static_cast<int64_t>(N - n) * W);
  return be.status();
}

// Compressed slot mapping (ratio 1 or 2) as an op chain, into out[0, C):
//   out.fill_(-1); bt = block_table.clamp(min=0)
//   valid = ((pos + 1) % ratio == 0) & (slot_mapping[:n] != -1)
//   cp = pos // ratio; blk = bt[req, cp // S]; slot = blk * S + cp % S      (S = block / ratio)
//   out[:n] = where(valid, slot.long(), -1)
template <class Backend>
absl::Status CompressedChain(Backend& be, const SuiteStep& s, const TokenFrame& f, int32_t ratio, int64_t* out) {
  const BatchInputs& in = *s.in;
  const int32_t n = f.n, R = in.sizes.num_reqs, width = in.sizes.bt_width;
  const int32_t per_block = s.consts.mla_block_size / ratio;
  using ops::BinaryOp;
  using ops::View2D;
  FillI64MinusOne(be, out, in.sizes.capacity);
  if (n == 0) return be.status();
  int32_t* bt = be.template Scratch<int32_t>(static_cast<size_t>(R) * width);
  int32_t* valid = be.template Scratch<int32_t>(n);
  int32_t* stored = be.template Scratch<int32_t>(n);
  int32_t* cp = be.template Scratch<int32_t>(n);
  int32_t* col = be.template Scratch<int32_t>(n);
  int32_t* blk = be.template Scratch<int32_t>(n);
  int64_t* slot = be.template Scratch<int64_t>(n);
  DS_RETURN_IF_ERROR(be.status());
  Issue(be, ops::Binary2DKernel{View2D::Matrix(in.device.block_table, in.sizes.bt_stride), S(0), bt, R, width,
                                BinaryOp::kMax});
  Issue(be, Vec(V(f.pos), S(1), valid, n, BinaryOp::kAdd));
  Issue(be, Vec(V(valid), S(ratio), valid, n, BinaryOp::kRemainder));
  Issue(be, Vec(V(valid), S(0), valid, n, BinaryOp::kEq));
  Issue(be, ops::NeInt64ScalarKernel{in.device.slot_mapping, -1, stored, n});
  Issue(be, Vec(V(valid), V(stored), valid, n, BinaryOp::kAnd));
  Issue(be, Vec(V(f.pos), S(ratio), cp, n, BinaryOp::kFloorDiv));
  Issue(be, Vec(V(cp), S(per_block), col, n, BinaryOp::kFloorDiv));
  Issue(be, Vec(V(cp), S(per_block), cp, n, BinaryOp::kRemainder));
  Issue(be, ops::GatherIndex2DKernel{bt, R, width, width, f.req, View2D::Column(col), blk, n, 1});
  Issue(be, Vec(V(blk), S(per_block), blk, n, BinaryOp::kMul));
  Issue(be, Vec(V(blk), V(cp), blk, n, BinaryOp::kAdd));
  Issue(be, ops::CastToInt64Kernel{blk, slot, n});
  Issue(be, ops::WhereInt64Kernel{valid, slot, -1, slot, n});
  CopyD2D(be, out, slot, n);
  return be.status();
}

// Compressor ring slots as an op chain, into out[0, C):
//   out.fill_(-1); blk = block_table[req, 0]; valid = blk > 0
//   out[:n] = where(valid, (blk * CAP + pos % CAP).long(), -1)
template <class Backend>
absl::Status RingChain(Backend& be, const SuiteStep& s, const TokenFrame& f, int64_t* out) {
  const BatchInputs& in = *s.in;
  const int32_t n = f.n, cap = CompressorRingCapacity(s.consts.spec_k);
  using ops::BinaryOp;
  FillI64MinusOne(be, out, in.sizes.capacity);
  if (n == 0) return be.status();
  int32_t* blk = be.template Scratch<int32_t>(n);
  int32_t* valid = be.template Scratch<int32_t>(n);
  int32_t* off = be.template Scratch<int32_t>(n);
  int64_t* slot = be.template Scratch<int64_t>(n);
  DS_RETURN_IF_ERROR(be.status());
  Issue(be, ops::GatherIndex2DKernel{in.device.block_table, in.sizes.num_reqs, in.sizes.bt_width, in.sizes.bt_stride,
                                     f.req, S(0), blk, n, 1});
  Issue(be, Vec(V(blk), S(0), valid, n, BinaryOp::kGt));
  Issue(be, Vec(V(f.pos), S(cap), off, n, BinaryOp::kRemainder));
  Issue(be, Vec(V(blk), S(cap), blk, n, BinaryOp::kMul));
  Issue(be, Vec(V(blk), V(off), blk, n, BinaryOp::kAdd));
  Issue(be, ops::CastToInt64Kernel{blk, slot, n});
  Issue(be, ops::WhereInt64Kernel{valid, slot, -1, slot, n});
  CopyD2D(be, out, slot, n);
  return be.status();
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

// The indexer as a device op chain: IndexerChain's ops with the shared DEVICE mapping instead of
// the two host expansions (decode tokens come first, so token_to_req[:A] is the decode
// expansion), and whole padding rows cleared (one strided fill) instead of column 0 only. The
// decode token total A is the host's (right under DSpark: only the split goes stale).
//   [k] diff(qsl[:nd+1]) -> lens;  [c] per_req[:nd] = lens;  [k][k] off = seq_lens - lens - qsl
//   [k] off[map[:A]];  [k] + arange;  [k] + 1;  [c] seq_out[:A];  [f] seq_out[A:C] = 0
//   [k] index_select(block_table, map[:A]);  [k] bt_out[:A, :W] = rows;  [k] bt_out[A:N_d, :W] = 0
//   [c] indices[:A] = map[:A];  [k] nd + arange[:pad];  [c] indices[A:N_d];  [f] decode_lens[:N_d] = 1
template <class Backend>
absl::Status IndexerDeviceChain(Backend& be, const IndexerArgs& a, const int32_t* token_to_req) {
  DS_RETURN_IF_ERROR(ValidateIndexerArgs(a, /*reads_host=*/true));
  const int32_t nd = a.num_decodes, n_d = a.num_decode_tokens, W = a.bt_width;
  const int32_t actual = a.host_query_start_loc[nd];
  using ops::BinaryOp;
  int32_t* offsets = nullptr;
  if (nd > 0) {
    int32_t* lens = be.template Scratch<int32_t>(nd);
    offsets = be.template Scratch<int32_t>(nd);
    DS_RETURN_IF_ERROR(be.status());
    Issue(be, ops::DiffKernel{a.query_start_loc, lens, nd});
    CopyD2D(be, a.per_req, lens, nd);
    Issue(be, Vec(V(a.seq_lens), V(lens), offsets, nd, BinaryOp::kSub));
    Issue(be, Vec(V(offsets), V(a.query_start_loc), offsets, nd, BinaryOp::kSub));
  }
  if (actual > 0) {
    int32_t* expanded = be.template Scratch<int32_t>(actual);
    DS_RETURN_IF_ERROR(be.status());
    Issue(be, ops::GatherKernel{offsets, nd, token_to_req, expanded, actual});
    Issue(be, Vec(V(expanded), V(a.arange), expanded, actual, BinaryOp::kAdd));
    Issue(be, Vec(V(expanded), S(1), expanded, actual, BinaryOp::kAdd));
    CopyD2D(be, a.seq_out, expanded, actual);
  }
  FillI32(be, a.seq_out + actual, 0, a.capacity - actual);
  if (actual > 0 && W > 0) {
    int32_t* rows = be.template Scratch<int32_t>(static_cast<size_t>(actual) * W);
    DS_RETURN_IF_ERROR(be.status());
    Issue(be, ops::GatherRowsKernel{a.block_table, nd, a.bt_stride, token_to_req, rows, W, actual, W});
    Issue(be, ops::Copy2DKernel{rows, W, a.bt_out, a.out_stride, actual, W});
  }
  if (actual < n_d && W > 0)
    Issue(be, ops::Fill2DKernel{a.bt_out + static_cast<int64_t>(actual) * a.out_stride, a.out_stride, n_d - actual,
                                W, 0});
  CopyD2D(be, a.indices, token_to_req, actual);
  if (actual < n_d) {
    const int32_t pad = n_d - actual;
    int32_t* fake_ids = be.template Scratch<int32_t>(pad);
    DS_RETURN_IF_ERROR(be.status());
    Issue(be, ops::AddScalarKernel{a.arange, fake_ids, pad, nd});
    CopyD2D(be, a.indices + actual, fake_ids, pad);
  }
  FillI32(be, a.decode_lens, 1, n_d);
  return be.status();
}

// #57207 as chain / cached run it: segments planned on the host from qsl_cpu, copied through
// pinned memory; sequence lengths refreshed from the device view:
//   [h2d] seg_qsl[:S+1] = host starts + [M_cpu];  [f] seg_qsl[S+1:] = M_cpu
//   [h2d] plan (request, segment end) per segment
//   [k] qlen = diff(qsl);  [k] ctx = seq_lens - qlen;  [k] ctx[req];  [k] + seg_end
//   [c] seg_seq_lens[:S];  [f] seg_seq_lens[S:] = 0;  [f] seg_count = S
template <class Backend>
absl::Status SegmentsHostPlanned(Backend& be, const SuiteStep& s) {
  const BatchInputs& in = *s.in;
  const int32_t R = in.sizes.num_reqs, nd = in.sizes.num_decodes, seg_len = s.consts.prefill_segment;
  const int32_t max_seg = s.layout.max_segments;
  const int32_t* hq = in.host.query_start_loc;
  std::vector<int32_t> starts, plan_req, plan_end;
  for (int32_t r = nd; r < R; ++r) {
    const int32_t qlen = hq[r + 1] - hq[r];
    const int32_t count = in.fp8_prefill ? CeilDiv(qlen, seg_len) : 1;
    for (int32_t i = 0; i < count; ++i) {
      const int32_t begin = in.fp8_prefill ? i * seg_len : 0;
      starts.push_back(hq[r] + begin);
      plan_req.push_back(r);
      plan_end.push_back(in.fp8_prefill ? MinI(begin + seg_len, qlen) : qlen);
    }
  }
  be.NoteHostArrayOp();
  be.NoteHostArrayOp();
  const int32_t count = static_cast<int32_t>(starts.size());
  if (count > max_seg)
    return absl::OutOfRangeError(absl::StrFormat(
        "prefill segments: the host plan has %d segments, the persistent buffer holds %d", count, max_seg));
  starts.push_back(hq[R]);
  be.CopyToDevice(s.out.seg_qsl, starts.data(), sizeof(int32_t) * starts.size());
  FillI32(be, s.out.seg_qsl + count + 1, hq[R], max_seg - count);
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
  FillI32(be, s.out.seg_count, count, 1);
  return be.status();
}

inline PrefillSegmentParams SuiteSegmentParams(const SuiteStep& s) {
  return MakePrefillSegmentParams(s.in->sizes, s.in->device, s.consts, s.in->fp8_prefill, s.out.seg_qsl,
                                  s.out.seg_seq_lens, s.out.seg_count, s.layout.max_segments);
}

template <class Backend>
absl::Status SegmentsKernel(Backend& be, const SuiteStep& s) {
  const PrefillSegmentParams p = SuiteSegmentParams(s);
  DS_RETURN_IF_ERROR(CanImplementPrefillSegments(p, s.in->sizes.capacity));
  be.Launch(PrefillSegmentKernel{p}, PrefillSegmentKernel::Shape(p));
  return be.status();
}

inline TokenMapArgs SuiteTokenMapArgs(const SuiteStep& s, int32_t* out, int32_t buffer_len) {
  const BatchInputs& in = *s.in;
  return TokenMapArgs{in.device.query_start_loc, in.host.query_start_loc, in.sizes.num_reqs, in.sizes.num_tokens,
                      out, buffer_len};
}

// A builder-private mapping buffer (chain): scratch holding max(N, host total) entries.
template <class Backend>
absl::StatusOr<int32_t*> ChainMapping(Backend& be, const SuiteStep& s, int32_t* out, int32_t buffer_len) {
  return TokenMapHost(be, SuiteTokenMapArgs(s, out, buffer_len));
}

template <class Backend>
absl::Status RunHostBoundarySuite(Backend& be, const SuiteStep& s, bool cached) {
  const BatchInputs& in = *s.in;
  const int32_t N = in.sizes.num_tokens;
  const int32_t private_len = MaxI(N, in.host.query_start_loc[in.sizes.num_reqs]);
  const int32_t shared_len = s.layout.token_capacity;
  const int32_t* shared_map = nullptr;
  if (cached) {
    DS_ASSIGN_OR_RETURN(shared_map, TokenMapHost(be, SuiteTokenMapArgs(s, s.out.token_to_req, shared_len)));
  }
  // The mapping a builder uses: its own (chain) or the step's shared one (cached).
  auto mapping = [&](int32_t* own, int32_t own_len) -> absl::StatusOr<const int32_t*> {
    if (cached) return shared_map;
    DS_ASSIGN_OR_RETURN(int32_t* m, ChainMapping(be, s, own, own_len));
    return static_cast<const int32_t*>(m);
  };
  {  // SWA
    int32_t* own = cached ? nullptr : be.template Scratch<int32_t>(private_len);
    DS_RETURN_IF_ERROR(be.status());
    DS_ASSIGN_OR_RETURN(const int32_t* req, mapping(own, private_len));
    DS_ASSIGN_OR_RETURN(const TokenFrame f, HostPositions(be, s, req));
    DS_RETURN_IF_ERROR(SwaChain(be, s, f));
  }
  {  // MLA ratio 1: its req_id_per_token is the suite's token_to_req output
    DS_ASSIGN_OR_RETURN(const int32_t* req, mapping(s.out.token_to_req, shared_len));
    DS_ASSIGN_OR_RETURN(const TokenFrame f, HostPositions(be, s, req));
    DS_RETURN_IF_ERROR(CompressedChain(be, s, f, 1, s.out.mla_r1_slots));
  }
  {  // MLA ratio 2 and its compressor ring
    int32_t* own = cached ? nullptr : be.template Scratch<int32_t>(private_len);
    DS_RETURN_IF_ERROR(be.status());
    DS_ASSIGN_OR_RETURN(const int32_t* req, mapping(own, private_len));
    DS_ASSIGN_OR_RETURN(const TokenFrame f, HostPositions(be, s, req));
    DS_RETURN_IF_ERROR(CompressedChain(be, s, f, 2, s.out.mla_r2_slots));
    DS_RETURN_IF_ERROR(RingChain(be, s, f, s.out.ring_slots));
  }
  for (int k = 0; k < 2; ++k) DS_RETURN_IF_ERROR(IndexerChain(be, SuiteIndexerArgs(s, s.out.indexer[k])));
  return SegmentsHostPlanned(be, s);
}

template <class Backend>
absl::Status RunDeviceChainSuite(Backend& be, const SuiteStep& s) {
  DS_ASSIGN_OR_RETURN(const int32_t* req,
                      TokenMapDeviceChain(be, SuiteTokenMapArgs(s, s.out.token_to_req, s.layout.token_capacity)));
  {
    DS_ASSIGN_OR_RETURN(const TokenFrame f, DevicePositions(be, s, req));
    DS_RETURN_IF_ERROR(SwaChain(be, s, f));
  }
  {
    DS_ASSIGN_OR_RETURN(const TokenFrame f, DevicePositions(be, s, req));
    DS_RETURN_IF_ERROR(CompressedChain(be, s, f, 1, s.out.mla_r1_slots));
  }
  {
    DS_ASSIGN_OR_RETURN(const TokenFrame f, DevicePositions(be, s, req));
    DS_RETURN_IF_ERROR(CompressedChain(be, s, f, 2, s.out.mla_r2_slots));
    DS_RETURN_IF_ERROR(RingChain(be, s, f, s.out.ring_slots));
  }
  for (int k = 0; k < 2; ++k)
    DS_RETURN_IF_ERROR(IndexerDeviceChain(be, SuiteIndexerArgs(s, s.out.indexer[k]), req));
  return SegmentsKernel(be, s);
}

template <class Backend>
absl::Status RunFusedSuiteOfKernels(Backend& be, const SuiteStep& s) {
  const BatchInputs& in = *s.in;
  DS_ASSIGN_OR_RETURN(const int32_t* req,
                      TokenMapFused(be, SuiteTokenMapArgs(s, s.out.token_to_req, s.layout.token_capacity)));
  const SwaParams swa = MakeSwaParams(in.sizes, in.device, s.consts, req, s.out.swa_lens, s.out.swa_indices);
  DS_RETURN_IF_ERROR(CanImplementSwa(swa));
  if (SwaKernel::Shape(swa).grid > 0) be.Launch(SwaKernel{swa}, SwaKernel::Shape(swa));
  const int32_t ratios[2] = {1, 2};
  int64_t* const mla_out[2] = {s.out.mla_r1_slots, s.out.mla_r2_slots};
  for (int k = 0; k < 2; ++k) {
    const CompressedSlotParams c = MakeCompressedSlotParams(in.sizes, in.device, s.consts, ratios[k], req, mla_out[k]);
    DS_RETURN_IF_ERROR(CanImplementCompressedSlots(c));
    if (CompressedSlotKernel::Shape(c).grid > 0) be.Launch(CompressedSlotKernel{c}, CompressedSlotKernel::Shape(c));
  }
  const RingSlotParams ring = MakeRingSlotParams(in.sizes, in.device, s.consts, req, s.out.ring_slots);
  DS_RETURN_IF_ERROR(CanImplementRingSlots(ring));
  if (RingSlotKernel::Shape(ring).grid > 0) be.Launch(RingSlotKernel{ring}, RingSlotKernel::Shape(ring));
  for (int k = 0; k < 2; ++k) DS_RETURN_IF_ERROR(IndexerFused(be, SuiteIndexerArgs(s, s.out.indexer[k])));
  return SegmentsKernel(be, s);
}

}  // namespace suite_internal

// The fused-suite kernel's params for one step (grid planned from host-known sizes).
FusedSuiteParams MakeFusedSuiteParams(const SuiteStep& s);

template <class Backend>
absl::Status RunFusedSuiteKernel(Backend& be, const SuiteStep& s) {
  const FusedSuiteParams p = MakeFusedSuiteParams(s);
  DS_RETURN_IF_ERROR(CanImplementFusedSuite(p));
  be.Launch(FusedSuiteKernel{p}, FusedSuiteKernel::Shape(p));
  return be.status();
}

// Runs `impl`'s suite for one step on `be`. The caller resets the backend's scratch first.
template <class Backend>
absl::Status RunSuite(Backend& be, Impl impl, const SuiteStep& s) {
  DS_RETURN_IF_ERROR(ValidateSuiteStep(impl, s));
  switch (impl) {
    case Impl::kChain: return suite_internal::RunHostBoundarySuite(be, s, /*cached=*/false);
    case Impl::kCached: return suite_internal::RunHostBoundarySuite(be, s, /*cached=*/true);
    case Impl::kDeviceChain: return suite_internal::RunDeviceChainSuite(be, s);
    case Impl::kFused: return suite_internal::RunFusedSuiteOfKernels(be, s);
    case Impl::kFusedSuite: return RunFusedSuiteKernel(be, s);
  }
  return absl::InvalidArgumentError("RunSuite: unknown impl");
}

}  // namespace dspark
