// vllm-pre56562: vLLM just before PR #56562, state (c) of docs/design.md s.3, the seed's "Before"
// (aliases "before", "device-chain").
// See kernels/impls/README.md for the op-by-op table and the vLLM function of every op.
#include "kernels/impls/register.h"
#include "kernels/suite/vllm_ops.h"

namespace dspark {
namespace {

template <class Backend>
absl::Status RunVllmPre56562(Backend& be, const SuiteStep& s) {
  using namespace vllm_ops;
  DS_ASSIGN_OR_RETURN(const int32_t* t2r, TokenMapPre56562(be, s));
  DS_RETURN_IF_ERROR(SwaBuild(be, s, t2r));
  DS_RETURN_IF_ERROR(MlaRatio2Build(be, s));
  DS_RETURN_IF_ERROR(RingBuild(be, s, t2r));
  for (int k = 0; k < 2; ++k) DS_RETURN_IF_ERROR(IndexerBuild(be, s, k, /*fused=*/false));
  return suite_internal::SegmentsHostPlanned(be, s);
}

}  // namespace
}  // namespace dspark

DSPARK_REGISTER_IMPL(vllm_pre56562, ::dspark::RunVllmPre56562, [] {
  ::dspark::ImplInfo i;
  i.name = "vllm-pre56562";
  i.aliases = {"before", "device-chain"};
  i.description = "(c) vLLM before #56562, the seed's Before: device mapping chain, old indexer chain";
  i.rank = 30;
  i.role = ::dspark::ImplRole::kSeedBefore;
  i.vllm_state = "(c) before #56562";
  i.vllm_release = "0.28.0-0.29.0";
  i.style = {"#CC79A7", "xx", "v"};
  i.rows_via_builder_memo = true;  // its SWA and indexer rows: SwaBuild / IndexerBuild only
  i.traits.reads_host_totals = true;
  i.traits.old_indexer_chain = true;
  i.host_decode_lens = ::dspark::HostDecodeLens::kFromHostSplit;
  // An estimate: (d) plus the ~58 us docs/design.md section 8 measured between a 34-launch
  // device chain and the fused kernels.
  i.default_cost.declared = true;
  i.default_cost.derived_from = "vllm-0.31";
  i.default_cost.gpu_add_us = 58.0;
  i.default_cost.gpu_us_per_token = 0.006;
  i.default_cost.host_us = 30.0;
  i.default_cost.host_us_per_req = 0.05;
  i.default_cost.launches = {80, 80, 104, 104, 104, 113, 113, 113};
  return i;
})
