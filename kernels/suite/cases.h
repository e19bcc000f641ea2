// Deterministic batches for the seed's eight cases (docs/design.md s.3, "The seed's eight cases"),
// used by the suite tests and by `bench`. Plain host arrays, no simulator types: a CaseBatch
// views itself as BatchInputs whose device pointers are host memory (CPU emulation, or the source
// of a GPU upload).
//
//   prefill          every request prefills a fresh prompt (no context), nd = 0
//   chunked_prefill  every request prefills its next chunk after a long context (up to ~99000)
//   mixed            all but the last request decode one token, the last prefills a chunk
//   decode           every request decodes one token (no speculation)
//   verify           DSpark verification: every request carries 1 + K tokens
//   adaptive_verify  DSpark adaptive verification: request r carries 1 + k_r tokens, k_r from a
//                    global top-B allocation by survival score S(r, k) = prod_{i<=k} p_{r,i}
//                    (float32, fixed order, ties by (score desc, r, k)) with B = budget_per_req * R;
//                    the HOST split is the allocation of the previous step (other scores), same
//                    total; host seq_lens follow the host split
//   draft            DSpark draft: K query tokens per request; the device seq_lens hold what
//                    verification accepted, the host's are the upper bound (all K accepted)
//   adaptive_draft   draft after adaptive verification: the device split (draft tokens per
//                    request) also comes from a device-side allocation; the host keeps K each
//                    (same total) and the upper-bound seq_lens
// The token count N is the real count M padded to the next CUDA-graph capture size
// (docs/design.md s.3; sizes rounded to multiples of 1 + K for the DSpark cases), or M when M is past
// the largest size (an empty step stays empty). Decode-only batches count their padding requests as decodes (N_d = N);
// mixed batches have N_d = the decode tokens. Positions are kept >= 0 under any re-split of the
// decode tokens among decode requests (contexts are at least 2K + 2).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/batch.h"

namespace dspark {

enum class SeedCase {
  kPrefill,
  kChunkedPrefill,
  kMixed,
  kDecode,
  kVerify,
  kAdaptiveVerify,
  kDraft,
  kAdaptiveDraft,
};
inline constexpr SeedCase kAllSeedCases[] = {SeedCase::kPrefill, SeedCase::kChunkedPrefill, SeedCase::kMixed,
                                             SeedCase::kDecode,  SeedCase::kVerify,         SeedCase::kAdaptiveVerify,
                                             SeedCase::kDraft,   SeedCase::kAdaptiveDraft};

std::string_view SeedCaseName(SeedCase c);  // "prefill", "chunked_prefill", ..., "adaptive_draft"
absl::StatusOr<SeedCase> ParseSeedCase(std::string_view name);
// Whether the case's host view is stale by construction (adaptive_verify, draft, adaptive_draft).
bool SeedCaseHostStale(SeedCase c);
// Whether the case is a DSpark step (capture sizes rounded to multiples of 1 + K).
bool SeedCaseSpeculative(SeedCase c);

struct CaseOptions {
  int32_t batch = 16;                      // [requests] real requests
  uint64_t seed = 1;                       // all draws
  int32_t max_num_seqs = 256;              // [requests] engine limit, sets the capture sizes
  int32_t max_num_batched_tokens = 8192;   // [tokens] prefill budget per step, caps capture sizes
  int32_t capacity = 0;                    // [tokens] persistent buffer length; 0: max(N, R, budget)
  int32_t min_bt_width = 0;                // [blocks] at least this many block-table columns
  int32_t extra_bt_cols = 0;               // [blocks] columns past what the longest sequence needs
  int32_t bt_stride_slack = 0;             // [int32] bt_stride - bt_width
  int32_t padding_reqs = 0;                // [requests] zero-length requests appended
  bool pad_to_capture_size = true;         // N = next capture size (else N = M)
  int32_t max_context = 99000;             // [tokens] largest context before the query
  int32_t adaptive_budget_per_req = 3;     // [tokens] mean verified drafts per request (adaptive)
  int32_t unstored_token_every = 0;        // every k-th real token gets slot_mapping -1; 0: never
  int32_t null_first_block_every = 0;      // real requests r % k == 0 get block_table[r, 0] = 0
  bool fp8_prefill = true;
  ModelConsts consts;
};

// One step's arrays. Device arrays hold the truth; host arrays what the host believes.
struct CaseBatch {
  std::string name;
  SeedCase seed_case = SeedCase::kDecode;
  BatchSizes sizes;
  bool fp8_prefill = true;
  bool causal = true;                 // false for the draft cases (vLLM's DSpark draft step)
  bool full_graph = false;            // a decode-only step padded to a CUDA-graph capture size
  bool adaptive = false;              // adaptive verification (vLLM's InputBatch.max_query_len set)
  std::vector<int32_t> qsl;           // [R + 1]
  std::vector<int32_t> seq_lens;      // [R]
  std::vector<int32_t> block_table;   // [R, bt_stride]
  std::vector<int64_t> slot_mapping;  // [N]
  std::vector<int32_t> host_qsl;      // [R + 1] same total, maybe a stale split
  std::vector<int32_t> host_seq_lens; // [R] maybe an upper bound

  // Views the arrays (pointers stay valid while the batch is alive and unmodified in size).
  BatchInputs Inputs() const;
  // Host qsl or seq_lens differ from the device's.
  bool HostStale() const;
};

absl::StatusOr<CaseBatch> MakeSeedCase(SeedCase c, const CaseOptions& options);

// CUDA-graph capture sizes: GraphCaptureSizes in kernels/batch.h.
// The smallest capture size >= tokens, or `tokens` when none is (an eager step).
int32_t PaddedTokenCount(int32_t tokens, const std::vector<int32_t>& capture_sizes);

// A different split of the same decode tokens among the real decode requests, as adaptive
// verification's device rewrite makes it: the decode requests' query lengths reversed (or, when
// that changes nothing, one token moved between two requests), every request keeping
// qlen <= seq_len. Returns the new qsl [R + 1]: same qsl[nd] and qsl[R]; FailedPrecondition when
// no different split exists (fewer than two decode requests with tokens to move).
absl::StatusOr<std::vector<int32_t>> ResplitDecodeTokens(const CaseBatch& batch);

}  // namespace dspark
