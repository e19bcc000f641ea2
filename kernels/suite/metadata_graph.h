// vLLM 0.33.0+'s recorded metadata graphs (AttnMetadataCudaGraphs in
// models/deepseek_v41/nvidia/specialized_decode/runtime/metadata_graphs.py), as the executors
// follow them for an implementation whose ImplInfo::execution is kRecordedUniformDecode
// (docs/states.md s.8), and what a recording freezes.
//
// vLLM records, during CUDA-graph capture, the metadata build of every FULL uniform-decode batch
// shape, keyed by (num_reqs, num_reqs_after_padding, num_tokens, num_tokens_after_padding), from
// a dummy batch (InputBatch.make_dummy: the tokens spread evenly over the requests, host
// seq_lens at max_model_len), and replays it on the steps of that key. The key "fixes every host
// value the build reads" only when the step's own host view equals the dummy's on everything the
// build reads: that is what the check of a replayed step tests, and what the what-if
// `record-av-graphs` breaks on purpose (adaptive verification steps recorded too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/batch.h"
#include "kernels/suite/impl_registry.h"

namespace dspark {

struct VllmMetadataGraphKey {
  int32_t num_reqs = 0;                  // real requests
  int32_t num_reqs_after_padding = 0;    // R
  int32_t num_tokens = 0;                // real tokens (the host total)
  int32_t num_tokens_after_padding = 0;  // N

  auto Tie() const { return std::tie(num_reqs, num_reqs_after_padding, num_tokens, num_tokens_after_padding); }
  bool operator<(const VllmMetadataGraphKey& o) const { return Tie() < o.Tie(); }
  bool operator==(const VllmMetadataGraphKey& o) const { return Tie() == o.Tie(); }
  std::string ToString() const;  // "(16, 16, 16, 16)", vLLM's tuple
};

// AttnMetadataCudaGraphs.key: the key of a step whose build a recorded graph serves, or nullopt
// (the step builds eagerly). A step qualifies when it runs a FULL graph (in.full_graph), is a
// target step (in.causal: a DSpark draft step's metadata is built by the speculator, never
// recorded), has no prefill (num_decodes == num_reqs), its real requests' host query lengths are
// equal, and max_query_len is unset (!in.adaptive). `record_adaptive` (the what-if) drops the
// last condition and, since adaptive verification's host split is a placeholder, the equal
// lengths one for adaptive steps. The real requests are those with a host query length > 0.
std::optional<VllmMetadataGraphKey> VllmMetadataKey(const BatchInputs& in, bool record_adaptive = false);

// Whether `impl` runs `in` by replaying a recorded graph (its execution is kRecordedUniformDecode
// and the step has a key).
bool ReplaysRecordedGraph(Impl impl, const BatchInputs& in, bool record_adaptive = false);

// Whether an executor runs `impl` on `in` by replaying a captured graph: vLLM's recorded graphs
// for a kRecordedUniformDecode implementation (ReplaysRecordedGraph), otherwise the executors'
// own graph of every graph-padded step for a capturable implementation.
bool ExecutorReplaysGraph(Impl impl, const BatchInputs& in);

// The host view vLLM records a key's build from (padded_decode_batch over
// InputBatch.make_dummy): the key's tokens spread over its real requests, num_tokens // num_reqs
// each and one more to the first num_tokens % num_reqs; padding requests empty; host seq_lens
// (seq_lens_cpu_upper_bound) at `seq_len_bound` for every request.
struct RecordedHostView {
  std::vector<int32_t> query_start_loc;  // [R + 1]
  std::vector<int32_t> seq_lens;         // [R]
};
RecordedHostView CaptureDummyHostView(const VllmMetadataGraphKey& key, int32_t seq_len_bound);

// The indexer's two host values taken from decode_lens_cpu (DeepSeekV32IndexerDecodeMetadata's
// write_max_decode_len and decode_is_uniform; on the SM100 varlen path they choose nothing else).
struct IndexerHostFields {
  int32_t write_max_decode_len = 0;
  bool decode_is_uniform = false;
  bool operator==(const IndexerHostFields& o) const {
    return write_max_decode_len == o.write_max_decode_len && decode_is_uniform == o.decode_is_uniform;
  }
};
// What `impl`'s indexer derives from the host view of `in` (next_n = 1 + spec_k); nullopt when it
// reads neither (HostDecodeLens::kNotRead) or the step has no decode request.
std::optional<IndexerHostFields> IndexerHostFieldsOf(Impl impl, const BatchInputs& in, int32_t spec_k);
// The same from the device split (the values the host would derive if it knew the truth).
IndexerHostFields IndexerDeviceFields(const BatchInputs& in);
// Whether `f` describes the device split of `in` safely: a scatter width at least the longest
// device decode length, and "uniform" only for a uniform device split.
bool IndexerHostFieldsSafe(const IndexerHostFields& f, const BatchInputs& in);

}  // namespace dspark
