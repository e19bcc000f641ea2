// vllm-0.27: vLLM 0.27.1's DeepSeek-V4 metadata builders, state (b) as released (0.25.0-0.27.1,
// #47474). See kernels/impls/README.md for the op-by-op table and docs/states.md s.3 and s.9.
//
// CommonAttentionMetadata.token_to_req_indices (#47474): np.repeat(arange(R), diff(qsl_cpu)) on the
// host, copied into the builder's buffer with np_to_pinned_tensor + non_blocking [h2d], the tail
// [M, N) zeroed [f] when padded, cached on that CommonAttentionMetadata. Up to 0.30.0 the runner
// gives each KV-cache group its own shallow copy (`copy(cm_base)`), so each of the six groups that
// reads it maps again. MLA clamps the block table in place (`clamp_`, 0.26.0 on) and C128A writes
// the active width. The indexer takes the native decode path on its own uniform split.
#include "kernels/impls/register.h"
#include "kernels/suite/vllm_ops_v4.h"

namespace dspark {
namespace {

template <class Backend>
absl::Status RunVllm027(Backend& be, const SuiteStep& s) {
  using namespace vllm_ops;
  DS_RETURN_IF_ERROR(RequireV4(s, "vllm-0.27"));
  const BatchInputs& in = *s.in;
  const size_t own =
      static_cast<size_t>(MaxI(MaxI(in.sizes.num_tokens, in.host.query_start_loc[in.sizes.num_reqs]), 1));
  const auto map = [&](int32_t* out) { return TokenMapFromHost(be, s, out, /*zero_tail=*/true); };
  // The SWA group's mapping is the compared token_to_req.
  DS_ASSIGN_OR_RETURN(const int32_t* swa_t2r, map(s.out.token_to_req));
  DS_RETURN_IF_ERROR(SwaBuildOps(be, s, swa_t2r));
  DS_RETURN_IF_ERROR(MlaV4OwnMapOps(be, s, own, map));
  DS_RETURN_IF_ERROR(CompressorsV4OwnMapOps(be, s, own, map));
  return IndexerV4NativeOps(be, s);
}

}  // namespace
}  // namespace dspark

DSPARK_REGISTER_IMPL(vllm_0_27, ::dspark::RunVllm027, [] {
  ::dspark::ImplInfo i;
  i.name = "vllm-0.27";
  i.description =
      "(b) vLLM 0.27.1 on DeepSeek-V4: #47474's cached host mapping per KV-cache group (pinned async copy), native indexer";
  i.rank = 21;
  i.vllm_state = "(b) #47474";
  i.vllm_release = "0.27.1 (0.25.0-0.27.1)";
  ::dspark::vllm_ops::HostMappedV4State(i);
  // Estimated costs (EstimatedV4Costs); per-token and host terms as vllm-47474's.
  ::dspark::vllm_ops::EstimatedV4Costs(i, {116.4, 136.5, 125.9, 61.2, 62.5, 72.7, 67.6, 67.6},
                                        {28, 43, 44, 31, 31, 42, 37, 37}, 0.008, 60.0, 0.3);
  return i;
})
