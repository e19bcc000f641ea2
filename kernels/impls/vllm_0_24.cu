// vllm-0.24: vLLM 0.24.0's DeepSeek-V4 metadata builders, state (a) as released (0.20.0-0.24.0).
// See kernels/impls/README.md for the op-by-op table and docs/states.md s.3 and s.9 for the model.
//
// Every builder that needs the token map builds it itself on the host from query_start_loc_cpu
// (torch.repeat_interleave(arange(R), diff(qsl_cpu)).pin_memory(), int64, copied with non_blocking
// into an int32 buffer: one asynchronous H2D and the device's narrowing copy, no sync): SWA and the three compressors into their own buffers, up to the host
// total; sparse MLA (DeepseekV4FlashMLAMetadataBuilder.build) fills its whole req_id_per_token
// buffer with 0 first. MLA's block-table clamp is the out-of-place `clamp(min=0)` of 0.24.0 and its
// C128A kernel writes the buffer's whole width (c128a_max_compressed). The indexer takes the native
// decode path on its own uniform split (no varlen chain before 0.28.0).
#include "kernels/impls/register.h"
#include "kernels/suite/vllm_ops_v4.h"

namespace dspark {
namespace {

template <class Backend>
absl::Status RunVllm024(Backend& be, const SuiteStep& s) {
  using namespace vllm_ops;
  DS_RETURN_IF_ERROR(RequireV4(s, "vllm-0.24"));
  const BatchInputs& in = *s.in;
  const size_t own =
      static_cast<size_t>(MaxI(MaxI(in.sizes.num_tokens, in.host.query_start_loc[in.sizes.num_reqs]), 1));
  // DeepseekSparseSWAMetadataBuilder.build: its own token_to_req_indices[:M] from an int64
  // torch.repeat_interleave [h2d] narrowed on the device [k], no tail zeroing.
  int32_t* swa_map = be.template Scratch<int32_t>(own);
  DS_RETURN_IF_ERROR(be.status());
  DS_ASSIGN_OR_RETURN(const int32_t* swa_t2r,
                      TokenMapFromHost(be, s, swa_map, /*zero_tail=*/false, HostMapType::kInt64));
  DS_RETURN_IF_ERROR(SwaBuildOps(be, s, swa_t2r));
  // DeepseekV4FlashMLAMetadataBuilder.build, C4A then C128A: req_id_per_token_buffer.fill_(0) [f]
  // over the whole buffer, [:M].copy_(np_to_pinned_tensor(...), non_blocking=True) [h2d]. C4A's
  // req_id_per_token is the compared token_to_req.
  for (int k = 0; k < 2; ++k) {
    int32_t* buf = k == 0 ? s.out.token_to_req
                          : be.template Scratch<int32_t>(static_cast<size_t>(MaxI(s.layout.token_capacity, 1)));
    DS_RETURN_IF_ERROR(be.status());
    FillI32(be, buf, 0, s.layout.token_capacity);
    DS_ASSIGN_OR_RETURN(const int32_t* t2r, TokenMapFromHost(be, s, buf, /*zero_tail=*/false));
    DS_RETURN_IF_ERROR(MlaV4BuildOps(be, s, k, t2r, /*clamp_in_place=*/false, /*c128a_width=*/s.layout.c128a_stride));
  }
  // CompressorMetadataBuilder.build (x3): its own int64 mapping [h2d] narrowed into its buffer [k],
  // block_table_tensor.clamp_(min=0) [k].
  DS_RETURN_IF_ERROR(CompressorsV4OwnMapOps(be, s, own, [&](int32_t* out) {
    return TokenMapFromHost(be, s, out, /*zero_tail=*/false, HostMapType::kInt64);
  }));
  return IndexerV4NativeOps(be, s);
}

}  // namespace
}  // namespace dspark

DSPARK_REGISTER_IMPL(vllm_0_24, ::dspark::RunVllm024, [] {
  ::dspark::ImplInfo i;
  i.name = "vllm-0.24";
  i.description =
      "(a) vLLM 0.24.0 on DeepSeek-V4: every builder maps tokens on the host (pinned async copies), native indexer";
  i.rank = 11;
  i.vllm_state = "(a) before #47474";
  i.vllm_release = "0.24.0 (0.20.0-0.24.0)";
  ::dspark::vllm_ops::HostMappedV4State(i);
  // Estimated costs (EstimatedV4Costs); per-token and host terms as vllm-pre47474's.
  ::dspark::vllm_ops::EstimatedV4Costs(i, {125.1, 145.9, 125.8, 67.9, 68.7, 73.9, 69.2, 69.0},
                                        {34, 49, 44, 37, 37, 42, 37, 37}, 0.009, 0.0, 0.0);
  return i;
})
