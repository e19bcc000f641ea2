// vllm-pre47474: vLLM before PR #47474, state (a) of docs/design.md s.3 (alias "chain").
// See kernels/impls/README.md for the op-by-op table and the vLLM function of every op.
#include "kernels/impls/register.h"
#include "kernels/suite/vllm_ops.h"

#include <algorithm>

namespace dspark {
namespace {

template <class Backend>
absl::Status RunVllmPre47474(Backend& be, const SuiteStep& s) {
  using namespace vllm_ops;
  const BatchInputs& in = *s.in;
  // Each builder's own mapping buffer: max(N, host total) entries.
  const size_t own = static_cast<size_t>(MaxI(in.sizes.num_tokens, in.host.query_start_loc[in.sizes.num_reqs]));
  int32_t* swa_map = be.template Scratch<int32_t>(std::max(own, size_t{1}));
  int32_t* mla2_map = be.template Scratch<int32_t>(std::max(own, size_t{1}));
  int32_t* ring_map = be.template Scratch<int32_t>(std::max(own, size_t{1}));
  DS_RETURN_IF_ERROR(be.status());
  // SWA's torch.repeat_interleave(torch.arange(R), ...) is int64 (as in 0.24.0's SWA builder):
  // [h2d] and the device's narrowing copy_ [k].
  DS_ASSIGN_OR_RETURN(const int32_t* swa_t2r,
                      TokenMapFromHost(be, s, swa_map, /*zero_tail=*/false, HostMapType::kInt64));
  DS_RETURN_IF_ERROR(SwaBuild(be, s, swa_t2r));
  // MLA ratio 1's req_id_per_token is the compared token_to_req (tail zeroed: see README.md).
  DS_RETURN_IF_ERROR(TokenMapFromHost(be, s, s.out.token_to_req, /*zero_tail=*/true).status());
  DS_RETURN_IF_ERROR(TokenMapFromHost(be, s, mla2_map, /*zero_tail=*/false).status());
  DS_RETURN_IF_ERROR(MlaRatio2Build(be, s));
  DS_ASSIGN_OR_RETURN(const int32_t* ring_t2r, TokenMapFromHost(be, s, ring_map, /*zero_tail=*/false));
  DS_RETURN_IF_ERROR(RingBuild(be, s, ring_t2r));
  for (int k = 0; k < 2; ++k) DS_RETURN_IF_ERROR(IndexerBuild(be, s, k, /*fused=*/false));
  return suite_internal::SegmentsIfWhatIf(be, s);
}

}  // namespace
}  // namespace dspark

DSPARK_REGISTER_IMPL(vllm_pre47474, ::dspark::RunVllmPre47474, [] {
  ::dspark::ImplInfo i;
  i.name = "vllm-pre47474";
  i.aliases = {"chain"};
  i.description = "(a) vLLM before #47474: every builder maps tokens itself from the host split";
  i.rank = 10;
  i.role = ::dspark::ImplRole::kBaseline;
  i.vllm_state = "(a) before #47474";
  i.vllm_release = "0.20.0-0.24.0";
  i.style = {"#D55E00", "//", "s"};
  ::dspark::vllm_ops::HostMappedV41State(i);
  // Seed 000, CUPTI GPU time of the five builders, CUDA-graph replay, cold L2, batch 16; eager
  // launches + copies counted by `dspark-sim calibrate` at batch 16 on the H200. Host work
  // besides the eager dispatch (charged per launch) is none.
  i.default_cost.declared = true;
  i.default_cost.estimated = false;
  i.default_cost.gpu_us = {168.29, 203.23, 220.42, 191.10, 172.96, 167.73, 173.42, 174.75};
  i.default_cost.gpu_us_per_token = 0.009;
  i.default_cost.launches = {80, 80, 108, 102, 102, 113, 113, 113};
  return i;
})
