// vllm-47474: vLLM with PR #47474, state (b) of docs/design.md s.3 (alias "cached").
// See kernels/impls/README.md for the op-by-op table and the vLLM function of every op.
#include "kernels/impls/register.h"
#include "kernels/suite/vllm_ops.h"

namespace dspark {
namespace {

template <class Backend>
absl::Status RunVllm47474(Backend& be, const SuiteStep& s) {
  using namespace vllm_ops;
  DS_ASSIGN_OR_RETURN(const int32_t* t2r, TokenMapFromHost(be, s, s.out.token_to_req, /*zero_tail=*/true));
  DS_RETURN_IF_ERROR(SwaBuild(be, s, t2r));
  DS_RETURN_IF_ERROR(MlaRatio2Build(be, s));
  DS_RETURN_IF_ERROR(RingBuild(be, s, t2r));
  for (int k = 0; k < 2; ++k) DS_RETURN_IF_ERROR(IndexerBuild(be, s, k, /*fused=*/false));
  return suite_internal::SegmentsIfWhatIf(be, s);
}

}  // namespace
}  // namespace dspark

DSPARK_REGISTER_IMPL(vllm_47474, ::dspark::RunVllm47474, [] {
  ::dspark::ImplInfo i;
  i.name = "vllm-47474";
  i.aliases = {"cached"};
  i.description = "(b) vLLM #47474: one host numpy mapping, pageable copy, shared by the builders";
  i.rank = 20;
  i.role = ::dspark::ImplRole::kVllmState;
  i.vllm_state = "(b) #47474";
  i.vllm_release = "0.25.0-0.27.1";
  i.style = {"#E69F00", "\\\\", "D"};
  ::dspark::vllm_ops::HostMappedV41State(i);
  // An estimate: one shared host mapping, ~10% fewer GPU ops than (a), less host work, still
  // host-boundary and serialised.
  i.default_cost.declared = true;
  i.default_cost.derived_from = "vllm-pre47474";
  i.default_cost.gpu_scale = 0.9;
  i.default_cost.gpu_us_per_token = 0.008;
  i.default_cost.host_us = 60.0;
  i.default_cost.host_us_per_req = 0.3;
  i.default_cost.launches = {78, 78, 106, 100, 100, 111, 111, 111};
  return i;
})
