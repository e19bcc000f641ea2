// The builder suite of one step, in every implementation of the `impl` axis (docs/design.md s.4),
// and the exact check of its outputs against the CPU reference built from device truth.
//
// This is the interface the simulator and the executors program against. Each implementation is
// one registered file, kernels/impls/<name>.cu, written once as a template over a Backend from
// the building blocks of kernels/suite/suite_impls.h and instantiated for the CPU emulator and,
// under nvcc, for the GPU (kernels/impls/register.h).
//
// ---- What one suite run writes (every buffer persistent, allocated once at capacity) ----
//
// With R = num_reqs, N = num_tokens, C = capacity (of this step), nd = num_decodes,
// N_d = num_decode_tokens, W = bt_width, M = qsl[R] and A = qsl[nd] (both read from the DEVICE
// view), the "defined region" of each field, which is compared exactly with the reference:
//
//   builder "token_map"
//     token_to_req     int32 [0, N)             request per token, 0 for graph padding
//   builder "swa"
//     swa_lens         int32 [0, N)             window length per token, 0 for padding
//     swa_indices      int32 rows [0, N) x [0, window)   slot per cell, -1 past the length
//                      (BatchInputs::causal false, the DSpark draft step: rows [N_d, N) only)
//     swa_indices_noncausal int32 rows [0, N_d) x [0, noncausal_width), only with causal false:
//                      the draft rows, non-causal (kernels/swa.cuh); swa_lens [0, N_d) are theirs
//     prefill_gather_lens int32 [0, R - nd)    ComputePrefillMetadataKernel's KV gather length per
//                      prefill request, q + min(prefix, W - 1) (absent with no prefill request)
//   builder "mla_r2" (MLA ratio 1 hands out slot_mapping itself in vLLM: not compared)
//     compressed_slots int64 [0, C)             compressed slot, -1 where none (and past M)
//   builder "mla_r2"
//     ring_slots       int64 [0, C)             compressor ring slot, -1 where none
//   builder "indexer_r1" / "indexer_r2" (same inputs, separate buffers; absent, so not compared,
//   when the step has no decode request)
//     seq_out          int32 [0, C)             causal length per decode token, 0 from A on;
//                                               ratio 2: [0, N_d) only, each length // 2
//     bt_out           int32 rows [0, N_d) x cols [0, W), except the cells of bt_out_padding
//     bt_out_padding   int32 rows [A, N_d) x cols [1, W)   must be 0 (the old chain zeroes only
//                                               column 0 of padding rows: "padding residue")
//     decode_lens      int32 [0, N_d)           all 1
//     indices          int32 [0, N_d)           request id; padding rows nd + t - A
//     per_req          int32 [0, nd)            query length per decode request
//   builder "indexer_r1" / "indexer_r2", the prefill chunks (absent with no prefill request): every
//   chunk of split_indexer_prefill_chunks that build_prefill_chunk_metadata keeps (total > 0), in
//   order, its device tensors concatenated (vLLM allocates them per chunk)
//     prefill_cu_seq_lens  int32 [0, sum (n_c + 1))   each chunk's cu_seq_lens
//     prefill_ks / prefill_ke int32 [0, sum q_c)       each chunk's cu_seqlen_ks / ke (chunk-relative
//                                               rows), q_c its query slice's length
//     prefill_token_to_seq int32 [0, min(sum total_c, prefill_rows))  each chunk's token_to_seq;
//                                               rows past prefill_rows are not kept
//   builder "indexer_r2", in every step (vLLM builds them before the decode / prefill split):
//     compressed_slots int64 [0, C)             get_compressed_slot_mapping's older signature:
//                                               slot_mapping not read, -1 where none and past M
//     compressed_seq_lens int32 [0, R)          seq_lens // 2
//   builder "prefill_segments" (FP8 or BF16 per BatchInputs::fp8_prefill; absent, so not
//   compared, when the step has no prefill request)
//     seg_qsl          int32 [0, max_segments]  segment starts, then M
//     seg_seq_lens     int32 [0, max_segments)  segment sequence lengths, then 0
//     seg_count        int32 [0, 1)             number of segments
//     seg_max_query_len int32 [1, 2) of seg_count's buffer  #57207's prefill_segment_max_query_len:
//                                               the longest segment (a host int in vLLM, planned
//                                               from qsl_cpu by (a)-(d); fused-suite on the device)
//
// On DeepSeek-V4 (ModelConsts::model, docs/states.md s.9) the builders and fields are V4's:
//   token_map, swa as above;
//   builder "mla_c4" (ratio 4, C4A): compressed_slots int64 [0, C) in the mla_r2_slots buffer
//   builder "mla_c128" (ratio 128, C128A): compressed_slots int64 [0, C) in the mla_r1_slots
//     buffer; c128a_decode_indices int32 rows [0, N_d) x [0, w) (w = C128aWidth of the host's
//     longest sequence), c128a_decode_lens int32 [0, N_d), c128a_prefill_indices int32 rows
//     [0, N - N_d) x [0, w) (the last two absent without decode / prefill tokens)
//   builder "indexer_c4" (ratio 4; absent fields as for indexer_r2), in the indexer[1] buffers:
//     seq_out [0, N_d) (each length // 4), bt_out, bt_out_padding, decode_lens, indices (no
//     per_req: the releases (a)-(c) hand none out), the prefill chunks, compressed_slots
//     (indexer_r2_slots) and compressed_seq_lens (indexer_r2_csl, seq_lens // 4)
//   the compressor has no output of its own (it clamps the block table and hands out the token
//   map); no ring.
//
// Cells outside these regions are not compared (implementations differ there, as vLLM's states
// do: e.g. (c) leaves columns >= 1 of padding bt_out rows alone).
//
// FieldMismatch::index is the flat index into the buffer (row * row_stride + column for 2-D
// fields: window for swa_indices, SuiteLayout::bt_out_stride for bt_out).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/batch.h"
#include "kernels/common/backend.h"
#include "kernels/reference/c128a.h"
#include "kernels/reference/indexer_native.h"
#include "kernels/reference/indexer_decode.h"
#include "kernels/reference/indexer_prefill_step.h"
#include "kernels/reference/prefill_segments.h"
#include "kernels/reference/swa.h"
#include "kernels/suite/impl_registry.h"

namespace dspark {

// The implementations are registered handles (kernels/suite/impl_registry.h).

// What a difference against the reference is (docs/design.md s.6); never folded into each other.
enum class MismatchKind {
  kStaleHost,       // an implementation that reads the host split read it stale
  kPaddingResidue,  // the old indexer chain: padding block-table rows keep data past column 0
  kBug,             // anything else, and any mismatch of an impl that reads no host split
};
std::string_view MismatchKindName(MismatchKind kind);

struct FieldMismatch {
  std::string builder;   // e.g. "swa", "indexer_r1"
  std::string field;     // e.g. "swa_indices"
  int64_t index = 0;     // first differing flat index in the field's buffer
  int64_t expected = 0;
  int64_t actual = 0;
  int64_t count = 0;     // differing elements in the field's defined region
  MismatchKind kind = MismatchKind::kBug;
};

struct SuiteRunResult {
  OpCounters counters;                    // launches, copies, syncs this suite issued
  std::vector<FieldMismatch> mismatches;  // one entry per differing field
};

// One line per mismatch, for logs and test failure messages.
std::string DescribeMismatches(const std::vector<FieldMismatch>& mismatches);

// ---- Persistent buffers ----

// Geometry of the persistent buffers, fixed when they are allocated. A step fits when
// capacity <= token_capacity, num_reqs <= max_reqs, bt_width <= bt_out_stride.
struct SuiteLayout {
  int32_t token_capacity = 0;  // [tokens] length of every per-token buffer
  int32_t max_reqs = 0;        // [requests] most requests of a step (padding requests included)
  int32_t bt_out_stride = 0;   // [int32] row stride of the indexer bt_out buffers
  int32_t window = 0;          // [tokens] SWA window, the row stride of swa_indices
  int32_t noncausal_width = 0;  // [tokens] SwaNoncausalWidth(window, K), the row stride of
                                //   swa_indices_noncausal
  int32_t max_segments = 0;    // [segments] PrefillSegmentBound(max_reqs, token_capacity, S)
  int32_t arange_len = 0;      // [elements] the persistent 0, 1, ... buffer the chains read
  int32_t prefill_cu_len = 0;  // [entries] PrefillChunkCuBound(max_reqs, token_capacity): the
                               //   indexer's concatenated prefill cu_seq_lens
  int32_t prefill_rows = 0;    // [rows] of the concatenated prefill token_to_seq kept, 4 x token_capacity
  int32_t c128a_stride = 0;    // [int32] DeepSeek-V4: row stride of the C128A index buffers, the
                               //   widest C128aWidth a block table of bt_out_stride columns allows; 0 on V4.1

  bool operator==(const SuiteLayout& o) const {
    return token_capacity == o.token_capacity && max_reqs == o.max_reqs && bt_out_stride == o.bt_out_stride &&
           window == o.window && noncausal_width == o.noncausal_width && max_segments == o.max_segments &&
           arange_len == o.arange_len && prefill_cu_len == o.prefill_cu_len && prefill_rows == o.prefill_rows &&
           c128a_stride == o.c128a_stride;
  }
};

// [entries] the concatenated prefill cu_seq_lens of a step with at most `reqs` requests and
// `tokens` tokens need: a chunk of n requests adds n + 1; a chunk of several requests is one query
// slice (their logits fit the budget, so max(1, budget // N) >= M), so there are at most
// prefills + prefill tokens chunks and as many request entries: 2 x (reqs + tokens) in all.
int32_t PrefillChunkCuBound(int32_t reqs, int32_t tokens);

// The smallest layout holding `max_tokens`, `max_reqs` and block tables `max_bt_width` wide.
SuiteLayout MakeSuiteLayout(int32_t max_tokens, int32_t max_reqs, int32_t max_bt_width, const ModelConsts& consts);
// Whether the step fits the layout; OutOfRange naming the field otherwise.
absl::Status CheckFits(const SuiteLayout& layout, const BatchSizes& sizes, const ModelConsts& consts);
// [bytes] of backend scratch the worst implementation needs for a step that fits `layout`.
size_t SuiteScratchBytes(const SuiteLayout& layout);
// [bytes] of scratch the most demanding registered implementation needs (ImplInfo::workspace_bytes).
size_t MaxWorkspaceBytes(const SuiteLayout& layout);
// [bytes] of pinned staging the host-boundary implementations copy through per step.
size_t SuiteStagingBytes(const SuiteLayout& layout);

struct IndexerOutputs {
  int32_t* seq_out = nullptr;      // [token_capacity]
  int32_t* bt_out = nullptr;       // [token_capacity, bt_out_stride]
  int32_t* decode_lens = nullptr;  // [token_capacity]
  int32_t* indices = nullptr;      // [token_capacity]
  int32_t* per_req = nullptr;      // [token_capacity] (num_decodes <= capacity is required)
  // The prefill chunks (the field list above): build_prefill_chunk_metadata's device tensors.
  int32_t* prefill_cu_seq_lens = nullptr;   // [prefill_cu_len]
  int32_t* prefill_token_to_seq = nullptr;  // [prefill_rows]
  int32_t* prefill_ks = nullptr;            // [token_capacity]
  int32_t* prefill_ke = nullptr;            // [token_capacity]
};

// Pointers to one implementation's persistent outputs: device memory on a GPU, host memory in
// CPU emulation (and for the comparison, which reads downloaded host images through this view).
struct SuiteOutputs {
  int32_t* token_to_req = nullptr;  // [token_capacity]
  int32_t* swa_lens = nullptr;      // [token_capacity]
  int32_t* swa_indices = nullptr;   // [token_capacity, window]
  int32_t* swa_indices_noncausal = nullptr;  // [token_capacity, noncausal_width] DSpark draft rows
  int32_t* swa_gather_lens = nullptr;        // [max(max_reqs, 1)] SWA prefill_gather_lens
  int64_t* mla_r1_slots = nullptr;  // [token_capacity]
  int64_t* mla_r2_slots = nullptr;  // [token_capacity]
  int64_t* ring_slots = nullptr;    // [token_capacity]
  IndexerOutputs indexer[2];        // ratio 1, ratio 2
  int64_t* indexer_r2_slots = nullptr;  // [token_capacity] the indexer's ratio-2 compressed slots
  int32_t* indexer_r2_csl = nullptr;    // [max(max_reqs, 1)] its compressed_seq_lens, seq_lens // 2
  int32_t* seg_qsl = nullptr;       // [max_segments + 1]
  int32_t* seg_seq_lens = nullptr;  // [max_segments]
  int32_t* seg_count = nullptr;     // [2] the segment count, then prefill_segment_max_query_len
  // DeepSeek-V4's C128A top-k metadata (null on V4.1, where the layout's c128a_stride is 0).
  int32_t* c128a_decode = nullptr;       // [token_capacity, c128a_stride]
  int32_t* c128a_decode_lens = nullptr;  // [token_capacity]
  int32_t* c128a_prefill = nullptr;      // [token_capacity, c128a_stride]
};

// Host images of every output buffer of one implementation (whole buffers, not only the
// defined regions).
struct SuiteImage {
  std::vector<int32_t> token_to_req, swa_lens, swa_indices, swa_indices_noncausal, swa_gather_lens;
  std::vector<int64_t> mla_r1_slots, mla_r2_slots, ring_slots;
  struct Indexer {
    std::vector<int32_t> seq_out, bt_out, decode_lens, indices, per_req;
    std::vector<int32_t> prefill_cu_seq_lens, prefill_token_to_seq, prefill_ks, prefill_ke;
    // Buffers of `layout`, every cell `poison`; bt_out holds `bt_cells` cells.
    void Fill(const SuiteLayout& layout, size_t bt_cells, int32_t poison);
    bool operator==(const Indexer& o) const {
      return seq_out == o.seq_out && bt_out == o.bt_out && decode_lens == o.decode_lens && indices == o.indices &&
             per_req == o.per_req && prefill_cu_seq_lens == o.prefill_cu_seq_lens &&
             prefill_token_to_seq == o.prefill_token_to_seq && prefill_ks == o.prefill_ks && prefill_ke == o.prefill_ke;
    }
  } indexer[2];
  std::vector<int64_t> indexer_r2_slots;
  std::vector<int32_t> indexer_r2_csl;
  std::vector<int32_t> seg_qsl, seg_seq_lens, seg_count;
  std::vector<int32_t> c128a_decode, c128a_decode_lens, c128a_prefill;  // empty on V4.1

  // Buffers of `layout`, every cell `poison`.
  static SuiteImage Filled(const SuiteLayout& layout, int32_t poison);
  SuiteOutputs View();  // pointers into this image's vectors
  bool operator==(const SuiteImage& o) const {
    return token_to_req == o.token_to_req && swa_lens == o.swa_lens && swa_indices == o.swa_indices &&
           swa_indices_noncausal == o.swa_indices_noncausal && swa_gather_lens == o.swa_gather_lens &&
           mla_r1_slots == o.mla_r1_slots && mla_r2_slots == o.mla_r2_slots && ring_slots == o.ring_slots &&
           indexer[0] == o.indexer[0] && indexer[1] == o.indexer[1] && indexer_r2_slots == o.indexer_r2_slots &&
           indexer_r2_csl == o.indexer_r2_csl && seg_qsl == o.seg_qsl &&
           seg_seq_lens == o.seg_seq_lens && seg_count == o.seg_count && c128a_decode == o.c128a_decode &&
           c128a_decode_lens == o.c128a_decode_lens && c128a_prefill == o.c128a_prefill;
  }
};

// ---- Reference and comparison ----

// Every field's reference, composed from the independent references in kernels/reference/ on
// the DEVICE view of `in` (device pointers must be readable host memory here).
struct SuiteReference {
  std::vector<int32_t> token_to_req;  // [N]
  ref::SwaMetadata swa;  // causal rows; with in.causal false, lens [0, N_d) are the non-causal ones
  std::vector<int32_t> swa_noncausal_indices;  // [N_d, noncausal_width] with in.causal false, else empty
  std::vector<int32_t> swa_gather_lens;        // [R - nd] the SWA prefill gather lengths
  // The per-capacity fields hold [0, M) (M = qsl[R]); the rest up to C is -1 (SuiteRegion::tail).
  // (MLA ratio 1 has no reference: vLLM hands out slot_mapping itself, nothing compares it.)
  std::vector<int64_t> mla_r2_slots, ring_slots;  // [M]
  ref::IndexerDecodeOut indexer;  // both ratios: same inputs; seq_out [N_d], 0 from there to C
  ref::IndexerPrefillChunks prefill[2];  // ratio 1, ratio 2: the step's prefill chunks
  std::vector<int32_t> indexer_r2_seq_out;  // [N_d] ratio 2's handed-out lengths, seq_out // 2
  std::vector<int64_t> indexer_r2_slots;    // [M] ratio-2 compressed slots, slot_mapping not read
  std::vector<int32_t> indexer_r2_csl;      // [R] seq_lens // 2
  ref::PrefillSegments segments;
  std::vector<int32_t> seg_count;          // [1] segments.count
  std::vector<int32_t> seg_max_query_len;  // [1] segments.max_query_len
  // DeepSeek-V4 only (empty on V4.1): the ratio-4 / ratio-128 compressed slots [M] and C128A.
  std::vector<int64_t> mla_c4_slots, mla_c128_slots;
  ref::C128aTopk c128a;
  // DeepSeek-V4 only: the indexer's native decode path of states (a) and (b) (its own uniform
  // split, per-request lengths, [nd, L] compressed lengths) and its prefill chunks on that split
  // (filled only when the split differs from the step's; prefill[1] otherwise).
  ref::IndexerNativeDecode indexer_native;
  ref::IndexerPrefillChunks prefill_native;
  bool prefill_native_own = false;
};
SuiteReference ComputeSuiteReference(const BatchInputs& in, const SuiteLayout& layout, const ModelConsts& consts);

// Whether the host view disagrees with the device view: host qsl[0..R] or host seq_lens[0..R).
bool HostViewStale(const BatchInputs& in);

// Compares `got` (host-readable) with the reference over every defined region and classifies
// each differing field (docs/design.md s.6):
//   - field bt_out_padding: kPaddingResidue for an impl that runs the old indexer chain
//     (ImplTraits::old_indexer_chain), kBug otherwise;
//   - impls that read no host boundaries (ImplTraits::reads_host_boundaries false): kBug;
//   - impls that read the host split, host view stale: kStaleHost; fresh: kBug.
std::vector<FieldMismatch> CompareSuite(Impl impl, const BatchInputs& in, const SuiteLayout& layout,
                                        const ModelConsts& consts, const SuiteOutputs& got);
// The same against a reference already computed for `in` and `layout` (one per step, shared by
// every implementation checked on it). With `memo` (the step's: the same `in` and `want` for
// every call until it is cleared), a region of the same two buffers already found equal in
// this step (a builder's output shared by several implementations, kernels/suite/builder_memo.h)
// is not compared again, and the region table is made once.
class CompareMemo;
std::vector<FieldMismatch> CompareSuite(Impl impl, const BatchInputs& in, const SuiteReference& want,
                                        const SuiteLayout& layout, const ModelConsts& consts,
                                        const SuiteOutputs& got, CompareMemo* memo = nullptr);

// ---- CPU emulation ----

// Runs `impl`'s registered CPU entry on `be` after ValidateSuiteStep. The caller resets the
// backend's scratch first.
absl::Status RunSuite(CpuBackend& be, Impl impl, const SuiteStep& s);

// Runs one implementation's suite on the CPU emulator and compares every output field exactly
// with the reference computed from the device view. Each implementation owns its own persistent
// output buffers, like an engine's, poisoned (-99) when allocated so unwritten cells show up and
// reused across steps (so padding residue from an earlier step is visible). The layout is taken
// from the first step (token_capacity = its capacity, max_reqs = max(its R, 256), bt_out_stride =
// its bt_stride); a later step that does not fit re-allocates every implementation's buffers at
// the larger layout (poisoned again), as an engine restarted with larger limits would.
class CpuSuite {
 public:
  explicit CpuSuite(const ModelConsts& consts = {});
  ~CpuSuite();
  CpuSuite(const CpuSuite&) = delete;
  CpuSuite& operator=(const CpuSuite&) = delete;

  absl::StatusOr<SuiteRunResult> Run(Impl impl, const BatchInputs& in);
  // With `want`, the reference of `in` computed on layout() after Prepare(in.sizes): the
  // comparison is the same, the reference is not recomputed. want == nullptr: computed here.
  absl::StatusOr<SuiteRunResult> Run(Impl impl, const BatchInputs& in, const SuiteReference* want);
  // Grows the layout to hold `sizes` (Run does it too); then layout() is the one Run uses.
  absl::Status Prepare(const BatchSizes& sizes);

  // Builder-level deduplication over `impls` (kernels/suite/builder_memo.h): a builder that
  // several of them run on the same inputs is emulated and compared once per step. Then every
  // step is Prepare(in.sizes), BeginStep(in, want) and one Run(impl, in, &want) per impl of
  // `impls`, each exactly once (BeginStep checks the previous step's); Run calls for distinct
  // implementations may then be concurrent.
  void EnableDedup(std::vector<Impl> impls);
  absl::Status BeginStep(const BatchInputs& in, const SuiteReference& want);
  // The same with only the reference's token map (ref::TokenToReq of in's device view), for a
  // caller that computes the rest of the reference while the implementations run: then each
  // implementation of a step is Emulate(impl, in), and once the reference is there,
  // Compare(impl, in, want). Run(impl, in, &want) is both (and needs the other BeginStep).
  absl::Status BeginStep(const BatchInputs& in, const std::vector<int32_t>& token_to_req);

  // Run's two halves: emulate `impl`'s suite on `in` (its counters), then compare its outputs
  // with `want` (the reference of `in` on layout()). Emulate calls of distinct implementations
  // may be concurrent, and so may Compare calls, once every Emulate of the step has returned.
  absl::StatusOr<OpCounters> Emulate(Impl impl, const BatchInputs& in);
  std::vector<FieldMismatch> Compare(Impl impl, const BatchInputs& in, const SuiteReference& want);

  // The whole output buffers of `impl` after its last run; FailedPrecondition before any run.
  // With dedup, the fields of a shared builder are the shared buffer's (equal to the impl's own
  // over every defined region; cells outside them may hold another step's values).
  absl::StatusOr<SuiteImage> Image(Impl impl) const;
  // Where `impl`'s last Emulate left its outputs (its own buffers, or a shared builder's): for
  // tests that change a cell between Emulate and Compare.
  SuiteOutputs LiveOutputs(Impl impl) const;
  // The current layout (all zero before the first run).
  SuiteLayout layout() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dspark
