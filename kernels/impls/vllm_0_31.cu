// vllm-0.31: state (d) of docs/design.md s.3, vLLM with PR #56562 as released in 0.31.0-0.33.0
// and run eagerly, the seed's "After" (aliases "vllm-56562", "after", "fused"). 17 launches at
// batch-16 decode; scripts/oracle/ runs 0.31.0's own builders against it. (0.33.0 also records
// the build of FULL uniform-decode steps in CUDA graphs, and 0.34.0 changes the indexer under
// adaptive verification: that is vllm-0.34, kernels/impls/vllm_0_34.cu.)
// See kernels/impls/README.md for the op-by-op table and the vLLM function of every op.
#include "kernels/impls/register.h"
#include "kernels/suite/vllm_ops.h"

namespace dspark {
namespace {

template <class Backend>
absl::Status RunVllm031(Backend& be, const SuiteStep& s) {
  using namespace vllm_ops;
  // CommonAttentionMetadata.token_to_req_indices (0.30.0+): _token_request_mapping_kernel, one
  // launch, device boundaries, the host total as num_mapped.
  DS_ASSIGN_OR_RETURN(const int32_t* t2r,
                      TokenMapReleased56562(be, suite_internal::SuiteTokenMapArgs(s, s.out.token_to_req,
                                                                                  s.layout.token_capacity)));
  // 0.31.0+: the SWA validity mask in one launch (torch.ge(..., out=is_valid_token)).
  DS_RETURN_IF_ERROR(SwaBuild(be, s, t2r, /*one_launch_mask=*/true));
  DS_RETURN_IF_ERROR(MlaRatio2Build(be, s));
  DS_RETURN_IF_ERROR(RingBuild(be, s, t2r));
  for (int k = 0; k < 2; ++k) DS_RETURN_IF_ERROR(IndexerBuild(be, s, k, /*fused=*/true));
  return suite_internal::SegmentsIfWhatIf(be, s);
}

}  // namespace
}  // namespace dspark

DSPARK_REGISTER_IMPL(vllm_0_31, ::dspark::RunVllm031, [] {
  ::dspark::ImplInfo i;
  i.name = "vllm-0.31";
  i.aliases = {"vllm-56562", "after", "fused"};
  i.description = "(d) vLLM 0.31.0-0.33.0 (#56562), the seed's After: the mapping kernel and the fused indexer "
                  "kernel, built eagerly";
  i.rank = 40;
  i.role = ::dspark::ImplRole::kSeedAfter;
  i.vllm_state = "(d) #56562";
  i.vllm_release = "0.31.0-0.33.0";
  i.style = {"#0072B2", "", "o"};
  // The host reads of (c) that #56562 kept: decode_lens_cpu max / min (stale under adaptive
  // verification through 0.33.0) and the prefill chunk plan from qsl_cpu.
  ::dspark::vllm_ops::Kernels56562State(i);
  i.host_decode_lens = ::dspark::HostDecodeLens::kFromHostSplit;
  // Seed 000, CUPTI GPU time of the five builders, CUDA-graph replay, cold L2, batch 16; eager
  // launches + copies counted by `dspark-sim calibrate` at batch 16 on the H200.
  i.default_cost.declared = true;
  i.default_cost.estimated = false;
  i.default_cost.gpu_us = {118.21, 153.74, 72.48, 46.27, 56.86, 50.37, 55.14, 58.18};
  i.default_cost.gpu_us_per_token = 0.0025;
  i.default_cost.launches = {8, 8, 8, 8, 8, 8, 8, 8};
  return i;
})
