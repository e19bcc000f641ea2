#include "kernels/suite/graph_key.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace dspark {
namespace {

class Fnv1a {
 public:
  void Mix(int32_t v) {
    for (int b = 0; b < 4; ++b) {
      h_ ^= static_cast<uint64_t>((static_cast<uint32_t>(v) >> (8 * b)) & 0xffu);
      h_ *= 1099511628211ull;
    }
  }
  void MixQsl(const HostBatch& host, int32_t from, int32_t to) {  // qsl_cpu [from, to]
    for (int32_t r = from; r <= to; ++r) Mix(host.query_start_loc[r]);
  }
  void MixSeqLens(const HostBatch& host, int32_t from, int32_t to) {  // seq_lens_cpu [from, to)
    if (host.seq_lens != nullptr)
      for (int32_t r = from; r < to; ++r) Mix(host.seq_lens[r]);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 1469598103934665603ull;
};

}  // namespace

GraphKey MakeGraphKey(Impl impl, const BatchInputs& in) {
  GraphKey key;
  key.impl = impl;
  key.sizes = in.sizes;
  key.fp8_prefill = in.fp8_prefill;
  key.causal = in.causal;
  const ImplTraits& traits = impl.info().traits;
  const HostBatch& host = in.host;
  if (host.query_start_loc == nullptr || !(traits.reads_host_totals || traits.reads_host_boundaries)) return key;
  const int32_t R = in.sizes.num_reqs, nd = in.sizes.num_decodes;
  if (impl.info().execution == MetadataExecution::kRecordedUniformDecode) {
    // vLLM's (num_reqs, num_reqs_after_padding, num_tokens, num_tokens_after_padding).
    key.host_tokens = host.query_start_loc[R];
    key.host_reqs = 0;
    for (int32_t r = 0; r < R; ++r) key.host_reqs += host.query_start_loc[r + 1] > host.query_start_loc[r];
    return key;
  }
  key.host_tokens = host.query_start_loc[R];
  key.host_decode_tokens = host.query_start_loc[nd];
  key.host_max_decode_len = 0;
  for (int32_t r = 0; r < nd; ++r)
    key.host_max_decode_len = std::max(key.host_max_decode_len, host.query_start_loc[r + 1] - host.query_start_loc[r]);
  Fnv1a h;
  if (traits.reads_host_boundaries) h.MixQsl(host, 0, nd);  // the decode rows' split
  if (nd < R) {                                              // the prefill rows' plan
    h.MixQsl(host, nd, R);
    h.MixSeqLens(host, nd, R);
  }
  key.host_hash = traits.reads_host_boundaries || nd < R ? h.value() : 0;
  return key;
}

std::string GraphKey::ToString() const {
  std::string s = absl::StrFormat("%s R=%d N=%d nd=%d Nd=%d C=%d W=%d S=%d fp8=%d causal=%d", ImplName(impl),
                                  sizes.num_reqs, sizes.num_tokens, sizes.num_decodes, sizes.num_decode_tokens,
                                  sizes.capacity, sizes.bt_width, sizes.bt_stride, fp8_prefill ? 1 : 0, causal ? 1 : 0);
  if (host_reqs >= 0) {
    absl::StrAppendFormat(&s, " vllm_key=(%d, %d, %d, %d)", host_reqs, sizes.num_reqs, host_tokens, sizes.num_tokens);
    return s;
  }
  if (host_tokens >= 0)
    absl::StrAppendFormat(&s, " M_host=%d A_host=%d max_decode_host=%d host_hash=%016x", host_tokens,
                          host_decode_tokens, host_max_decode_len, host_hash);
  return s;
}

}  // namespace dspark
