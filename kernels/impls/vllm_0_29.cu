// vllm-0.29: vLLM 0.29.0's DeepSeek-V4 metadata builders, state (c) as released (0.28.0-0.29.0).
// See kernels/impls/README.md for the op-by-op table and docs/states.md s.9 for the model.
//
// Every KV-cache group has its own CommonAttentionMetadata (the runner's `copy(cm_base)`), so each
// group that reads token_to_req_indices builds the device chain again (8 launches, 9 padded): SWA,
// the two MLA groups and the three compressors. The indexer is 0.29.0's varlen chain (SM100),
// with no per_req_decode_lens copy.
#include "kernels/impls/register.h"
#include "kernels/suite/vllm_ops_v4.h"

namespace dspark {
namespace {

template <class Backend>
absl::Status RunVllm029(Backend& be, const SuiteStep& s) {
  using namespace vllm_ops;
  DS_RETURN_IF_ERROR(RequireV4(s, "vllm-0.29"));
  const int32_t own = MaxI(s.in->sizes.num_tokens, s.in->host.query_start_loc[s.in->sizes.num_reqs]);
  // CommonAttentionMetadata.token_to_req_indices (0.29.0, vllm/v1/attention/backend.py) into a
  // group's own buffer; the SWA group's is the compared token_to_req.
  const auto map = [&](int32_t* out) {
    return TokenMapPre56562(be, suite_internal::SuiteTokenMapArgs(s, out, MaxI(own, 1)));
  };
  DS_ASSIGN_OR_RETURN(const int32_t* swa_t2r, map(s.out.token_to_req));
  DS_RETURN_IF_ERROR(SwaBuildOps(be, s, swa_t2r));
  const size_t own_len = static_cast<size_t>(MaxI(own, 1));
  DS_RETURN_IF_ERROR(MlaV4OwnMapOps(be, s, own_len, map));
  DS_RETURN_IF_ERROR(CompressorsV4OwnMapOps(be, s, own_len, map));
  return IndexerV4VarlenOps(be, s);
}

}  // namespace
}  // namespace dspark

DSPARK_REGISTER_IMPL(vllm_0_29, ::dspark::RunVllm029, [] {
  ::dspark::ImplInfo i;
  i.name = "vllm-0.29";
  i.description = "(c) vLLM 0.29.0 on DeepSeek-V4: device mapping chain per KV-cache group, varlen indexer chain";
  i.rank = 25;
  i.role = ::dspark::ImplRole::kVllmState;
  i.vllm_state = "(c) before #56562";
  i.vllm_release = "0.29.0";
  i.models = {::dspark::ModelKind::kV4};
  i.style = {"#882255", "..", "P"};
  i.traits.reads_host_totals = true;
  i.traits.old_indexer_chain = true;
  // Estimated costs (EstimatedV4Costs); per-token and host terms as vllm-pre56562's.
  ::dspark::vllm_ops::EstimatedV4Costs(i, {143.0, 137.3, 143.2, 128.6, 111.6, 118.1, 119.5, 121.1},
                                        {70, 85, 106, 93, 93, 102, 102, 102}, 0.006, 30.0, 0.05);
  return i;
})
