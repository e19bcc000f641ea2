// The unit of interchange between the simulator and the metadata builders: one step's batch
// layout as plain arrays. Kernels and references see only this; they know nothing of requests,
// schedulers or traces.
//
// Pointers in `device` point to memory the metadata builders treat as device memory (real
// device memory on a GPU, host memory in CPU emulation). Pointers in `host` always point to
// host memory and hold what the host believes, which is stale under DSpark adaptive
// verification (docs/design.md section 3).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dspark {

// The model whose attention-metadata layout a suite builds (docs/states.md s.9).
//   DeepSeek-V4.1: MLA ratios 1 and 2, the compressor's ring (_ring_slot_mapping_kernel), two
//     indexers (ratios 1 and 2). Ships with vLLM's state (d), 0.30.0 on.
//   DeepSeek-V4: compressed ratios 4 (C4A, with the indexer) and 128 (C128A, with its top-k
//     metadata), the compressor's block-table clamp_ and no ring, one indexer (ratio 4). vLLM's
//     states (a)-(c) shipped only with it (0.20.0-0.29.0).
enum class ModelKind : int32_t { kV41 = 0, kV4 = 1 };

// Fixed model constants of the DeepSeek-V4 / V4.1 metadata path that this project reproduces.
struct ModelConsts {
  ModelKind model = ModelKind::kV41;  // ModelConstsFor(kV4) sets the V4 fields below
  int32_t swa_window = 128;     // [tokens] sliding-window length
  int32_t swa_block_size = 64;  // [tokens per block] SWA paged-cache block size
  int32_t mla_block_size = 64;  // [tokens per block] MLA storage block size (ratio 1)
  int32_t spec_k = 5;           // [tokens] DSpark speculative length K
  int32_t prefill_segment = 1024;  // [tokens] FP8 prefill segment cap (PR #57207)
  // A labelled what-if: the released vLLM states also build #57207's FP8 prefill segmentation,
  // which no release up to 0.34.0 has (the fork's PR; the seed's Before and the fused suite build
  // it always). Off, a release state's prefill steps launch what the release launches.
  bool what_if_57207 = false;
  // split_indexer_prefill_chunks' budgets (vLLM's indexer.py). The KV-row workspace is
  // max_prefill_buffer_size = max_model_len * 40, with max_model_len 1M (DeepSeek-V4); the logits
  // budget is VLLM_SPARSE_INDEXER_MAX_LOGITS_MB's default, 512 MB of float32.
  int64_t indexer_prefill_workspace = int64_t{1} << 20 << 5;        // [KV rows]
  int64_t indexer_max_logits = int64_t{512} * 1024 * 1024 / 4;     // [elements]
  // DeepSeek-V4 only: C128A's top-k rows are at most c128a_max_width wide,
  // cdiv(cdiv(max_model_len, 128), 128) * 128 with max_model_len 1M (sparse_mla.py's
  // c128a_max_compressed).
  int32_t c128a_max_width = 8192;  // [entries]
};

// "DeepSeek-V4.1" / "DeepSeek-V4".
std::string_view ModelName(ModelKind m);
// "v4.1" / "v4": the --model spelling.
std::string_view ModelFlag(ModelKind m);
// "v4", "v4.1", "DeepSeek-V4", "DeepSeek-V4.1" (case-insensitive); InvalidArgument otherwise.
absl::StatusOr<ModelKind> ParseModel(std::string_view name);
// The default constants with the model's own: V4's 256-token blocks (FlashMLA's sparse V4
// backend supports only kernel block size 256; a ratio-128 block then holds 2 entries). The
// suite keeps one block table for every group, so V4's SWA reads 256-token blocks too.
ModelConsts ModelConstsFor(ModelKind m);

// The compressed ratios of the model's two MLA groups: V4.1 {1, 2}, V4 {4, 128}.
int32_t MlaRatio(const ModelConsts& c, int k);
// The ratio of the model's indexer k (0 or 1), 0 when the model has none: V4.1 k + 1; V4 only
// k = 1, ratio 4 (only C4A layers have an indexer).
int32_t IndexerRatio(const ModelConsts& c, int k);
// C128A's active top-k width for a step whose longest host sequence is max_seq_len:
// min(max(next_pow2(max(max_seq_len // 128, 1)), 128), c128a_max_width).
int32_t C128aWidth(const ModelConsts& c, int64_t max_seq_len);

// Ring capacity of the ratio-2 compressor state: max(8, next_pow2(K + 2)).
int32_t CompressorRingCapacity(int32_t spec_k);

// CUDA-graph capture sizes in tokens (docs/design.md s.3), as vLLM derives them:
// [1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16) with
// max = min(max_num_seqs * (1 + spec_k) * 2, 512); with speculation (spec_k > 0) every size is
// rounded up to a multiple of 1 + spec_k; sizes above max_num_batched_tokens are dropped (no
// batch can be that large); ascending, without repeats. spec_k = 0 means no speculation.
std::vector<int32_t> GraphCaptureSizes(int32_t max_num_seqs, int32_t max_num_batched_tokens, int32_t spec_k);

struct BatchSizes {
  int32_t num_reqs = 0;           // R: requests after padding (padded ones have query length 0)
  int32_t num_tokens = 0;         // N: tokens after padding (the CUDA-graph capture size)
  int32_t num_decodes = 0;        // requests [0, num_decodes) are decodes; the rest prefills
  int32_t num_decode_tokens = 0;  // N_d: padded decode tokens for the indexer (== N if all decode)
  int32_t capacity = 0;           // [tokens] persistent buffer length, >= N
  int32_t bt_width = 0;           // [blocks] used columns of block_table
  int32_t bt_stride = 0;          // [int32] row stride of block_table, >= bt_width
};

struct DeviceBatch {
  const int32_t* query_start_loc = nullptr;  // [R + 1] non-decreasing, truth (GPU-rewritten)
  const int32_t* seq_lens = nullptr;         // [R] context incl. current query, 0 for padding
  const int32_t* block_table = nullptr;      // [R, bt_stride] block ids, block 0 = null page
  const int64_t* slot_mapping = nullptr;     // [N] KV slot per token, -1 for padding
};

struct HostBatch {
  const int32_t* query_start_loc = nullptr;  // [R + 1] host copy: right total, maybe stale split
  const int32_t* seq_lens = nullptr;         // [R] host copy: maybe an upper bound (draft step)
};

struct BatchInputs {
  BatchSizes sizes;
  DeviceBatch device;
  HostBatch host;
  bool fp8_prefill = true;  // FP8 prefill queries are segmented; BF16 keeps one per request
  // CommonAttentionMetadata.causal: false in the DSpark draft step (DSparkSpeculator sets
  // dflash_causal = False), whose SWA decode rows are then non-causal, 192 wide.
  bool causal = true;
  // What decides whether vLLM 0.33.0+ replays a recorded metadata graph for the step
  // (AttnMetadataCudaGraphs.key, kernels/suite/metadata_graph.h): the step runs a FULL CUDA graph
  // (a decode-only step padded to a capture size), and whether InputBatch.max_query_len is set
  // (an adaptive verification step, whose host query lengths are only bounds).
  bool full_graph = false;
  bool adaptive = false;
};

// Checks sizes and host-side invariants (a device-side check would need a sync).
absl::Status ValidateBatchSizes(const BatchSizes& s);

}  // namespace dspark
