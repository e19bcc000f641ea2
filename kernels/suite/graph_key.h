// The one key of a captured CUDA graph of the builder suite (GpuSuite's graphs, the GPU
// executor's graph counts and node counts): every value the captured graph freezes.
//
// Like vLLM's recorded metadata graphs (keyed by num_reqs, num_reqs after padding, num_tokens and
// num_tokens after padding: a key that "fixes every host value the build reads"), the key is the
// padded shape the kernels' arguments hold, plus every host value the implementation reads, as
// its traits declare (kernels/suite/impl_registry.h):
//   - every implementation: the padded sizes (BatchSizes) and the FP8 and causal flags;
//   - reads_host_totals: the host token total qsl_cpu[R] (the real token count: padded requests
//     have query length 0), the host decode total qsl_cpu[nd], the largest host decode length
//     (decode_lens_cpu.max()), and a hash of the host qsl and seq_lens of the prefill rows
//     [nd, R) (the indexer's prefill chunks, #57207's segments);
//   - reads_host_boundaries: the same, and the hash covers the decode rows' host split too
//     (qsl_cpu [0, nd]). No implementation reads a decode row's seq_lens_cpu.
// So no host value an implementation reads is frozen across steps: two steps share a graph only
// when everything the implementation's build reads is equal.
//
// An implementation that runs as vLLM 0.33.0+ runs its build (MetadataExecution::
// kRecordedUniformDecode, kernels/suite/metadata_graph.h) is keyed as vLLM keys it instead: the
// padded sizes and flags (vLLM's num_reqs_after_padding and num_tokens_after_padding; the rest is
// fixed per engine), the real request count and the host token total, and nothing else. If its
// build reads a host value this key does not fix, a replay freezes it, and the check of the
// replayed step shows it: that is a finding about vLLM, not hidden by a wider key.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

#include "kernels/batch.h"
#include "kernels/suite/impl_registry.h"

namespace dspark {

struct GraphKey {
  Impl impl;
  BatchSizes sizes;  // padded: num_reqs, num_tokens, ... (every kernel argument's size)
  bool fp8_prefill = true;
  bool causal = true;
  // Host values read (-1 / 0: the implementation reads none, or there is no host view).
  int32_t host_tokens = -1;         // qsl_cpu[R]
  int32_t host_decode_tokens = -1;  // qsl_cpu[nd]
  int32_t host_max_decode_len = -1; // max over decode rows of qsl_cpu[r + 1] - qsl_cpu[r]
  uint64_t host_hash = 0;           // FNV-1a of the host rows the implementation reads
  int32_t host_reqs = -1;           // vLLM's key only: the real requests (host query length > 0)

  auto Tie() const {
    return std::tie(impl, sizes.num_reqs, sizes.num_tokens, sizes.num_decodes, sizes.num_decode_tokens,
                    sizes.capacity, sizes.bt_width, sizes.bt_stride, fp8_prefill, causal, host_tokens,
                    host_decode_tokens, host_max_decode_len, host_hash, host_reqs);
  }
  bool operator<(const GraphKey& o) const { return Tie() < o.Tie(); }
  bool operator==(const GraphKey& o) const { return Tie() == o.Tie(); }
  bool operator!=(const GraphKey& o) const { return !(*this == o); }
  // "vllm-0.31 R=16 N=32 nd=16 Nd=32 C=64 W=5 S=8 fp8=1 causal=1 M_host=27 A_host=27 ..."
  std::string ToString() const;
};

// The key of `impl`'s graph for the step `in` (its sizes, flags and host view).
GraphKey MakeGraphKey(Impl impl, const BatchInputs& in);

}  // namespace dspark
