#include "kernels/suite/metadata_graph.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace dspark {

std::string VllmMetadataGraphKey::ToString() const {
  return absl::StrFormat("(%d, %d, %d, %d)", num_reqs, num_reqs_after_padding, num_tokens, num_tokens_after_padding);
}

std::optional<VllmMetadataGraphKey> VllmMetadataKey(const BatchInputs& in, bool record_adaptive) {
  const BatchSizes& z = in.sizes;
  const int32_t* hq = in.host.query_start_loc;
  if (!in.full_graph || !in.causal || hq == nullptr || z.num_reqs <= 0 || z.num_decodes != z.num_reqs) return std::nullopt;
  if (in.adaptive && !record_adaptive) return std::nullopt;
  VllmMetadataGraphKey key;
  int32_t first_len = -1;
  bool uniform = true;
  for (int32_t r = 0; r < z.num_reqs; ++r) {
    const int32_t len = hq[r + 1] - hq[r];
    if (len <= 0) continue;
    ++key.num_reqs;
    if (first_len < 0) first_len = len;
    uniform = uniform && len == first_len;
  }
  if (key.num_reqs == 0 || (!uniform && !in.adaptive)) return std::nullopt;
  key.num_reqs_after_padding = z.num_reqs;
  key.num_tokens = hq[z.num_reqs];
  key.num_tokens_after_padding = z.num_tokens;
  return key;
}

bool ReplaysRecordedGraph(Impl impl, const BatchInputs& in, bool record_adaptive) {
  return impl.info().execution == MetadataExecution::kRecordedUniformDecode &&
         VllmMetadataKey(in, record_adaptive).has_value();
}

bool ExecutorReplaysGraph(Impl impl, const BatchInputs& in) {
  if (impl.info().execution == MetadataExecution::kRecordedUniformDecode) return ReplaysRecordedGraph(impl, in);
  return GraphCapturable(impl) && in.full_graph;
}

RecordedHostView CaptureDummyHostView(const VllmMetadataGraphKey& key, int32_t seq_len_bound) {
  RecordedHostView v;
  const int32_t n = std::max(key.num_reqs, 1);
  const int32_t base = key.num_tokens / n, extra = key.num_tokens % n;
  v.query_start_loc.assign(static_cast<size_t>(key.num_reqs_after_padding) + 1, key.num_tokens);
  v.query_start_loc[0] = 0;
  for (int32_t r = 0; r < key.num_reqs && r < key.num_reqs_after_padding; ++r)
    v.query_start_loc[r + 1] = v.query_start_loc[r] + base + (r < extra ? 1 : 0);
  v.seq_lens.assign(static_cast<size_t>(key.num_reqs_after_padding), seq_len_bound);
  return v;
}

namespace {
IndexerHostFields FieldsOf(const int32_t* qsl, int32_t nd) {
  int32_t max_len = 0, min_len = 0;
  for (int32_t r = 0; r < nd; ++r) {
    const int32_t len = qsl[r + 1] - qsl[r];
    max_len = r == 0 ? len : std::max(max_len, len);
    min_len = r == 0 ? len : std::min(min_len, len);
  }
  return IndexerHostFields{max_len, min_len == max_len};
}
}  // namespace

std::optional<IndexerHostFields> IndexerHostFieldsOf(Impl impl, const BatchInputs& in, int32_t spec_k) {
  const HostDecodeLens how = impl.info().host_decode_lens;
  const int32_t nd = in.sizes.num_decodes;
  if (how == HostDecodeLens::kNotRead || nd <= 0 || in.host.query_start_loc == nullptr) return std::nullopt;
  // DeepseekV32IndexerMetadataBuilder.build: decode_lens_cpu = diff(qsl_cpu[:nd + 1]); 0.34.0
  // under adaptive verification: max_decode_len = next_n, write_is_uniform = False.
  if (how == HostDecodeLens::kNextNUnderAv && in.adaptive) return IndexerHostFields{1 + spec_k, false};
  return FieldsOf(in.host.query_start_loc, nd);
}

IndexerHostFields IndexerDeviceFields(const BatchInputs& in) {
  return FieldsOf(in.device.query_start_loc, in.sizes.num_decodes);
}

bool IndexerHostFieldsSafe(const IndexerHostFields& f, const BatchInputs& in) {
  const IndexerHostFields d = IndexerDeviceFields(in);
  return f.write_max_decode_len >= d.write_max_decode_len && (!f.decode_is_uniform || d.decode_is_uniform);
}

}  // namespace dspark
