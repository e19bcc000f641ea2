// vllm-0.34: state (e) of docs/states.md s.8, vLLM 0.34.0 as it runs DeepSeek-V4.1's metadata
// path on the latency-specialized decode (models/deepseek_v41/nvidia/specialized_decode).
//
// The ops are (d)'s, op for op as 0.34.0 issues them (kernels/impls/README.md), with 0.34.0's
// differences from 0.31.0 on this suite's outputs:
//   - DeepseekV32IndexerMetadataBuilder.build returns right after the ratio-2 compressed slots
//     when num_tokens == 0 (0.32.0+), before split_decodes_and_prefills;
//   - under adaptive verification its indexer takes max_decode_len = next_n and
//     write_is_uniform = False instead of the stale host decode_lens_cpu max / min
//     (ImplInfo::host_decode_lens; host values, no device op changes);
//   - the top-B allocation is the Triton _assign_draft_token_budget_kernel: a scheduler matter
//     (run --av-release 0.34.0, the default), not a builder op.
// What 0.34.0 changes beyond this suite's inputs (PCP / DCP / ShardQ paths, the ROCm and XPU
// backends, the GLM-5 kpool indexer) is not modelled. Not followed yet: the prefill chunk
// planner's fused_mqa_topk eligibility and the ratio-2 workspace counted in compressed rows
// (docs/states.md s.8): both leave the chunks unchanged unless a chunk passes 16,384 query rows or
// the 32M-row workspace.
//
// And it runs as 0.34.0 runs it (ImplInfo::execution, kernels/suite/metadata_graph.h): the
// build of every FULL uniform-decode step is a recorded CUDA graph replayed under vLLM's key, the
// KV-cache groups as concurrent branches; every other step, adaptive verification included,
// builds eagerly.
#include "kernels/impls/register.h"
#include "kernels/suite/metadata_graph.h"
#include "kernels/suite/vllm_ops.h"

namespace dspark {
namespace {

// The build of a recorded step (AttnMetadataCudaGraphs._forked_build): the KV-cache groups as
// concurrent branches. Each KV-cache group has its own block table in vLLM; the suite's
// builders map onto them as SWA's group (branch 1) and the MLA and compressor groups, which
// clamp their block table in place (branch 2), their serial order kept; the indexers only read
// that table, so each builds on a branch of its own started after branch 2 (3 and 4). "Each
// branch builds its own map": branch 1 into the buffer the forward reads (token_to_req, the
// serial build's producer), branch 2 into its own, one launch more than the eager build.
template <class Backend>
absl::Status RecordedBuild(Backend& be, const SuiteStep& s) {
  using namespace vllm_ops;
  const TokenMapArgs map = suite_internal::SuiteTokenMapArgs(s, s.out.token_to_req, s.layout.token_capacity);
  int32_t* own_map = be.template Scratch<int32_t>(static_cast<size_t>(MaxI(s.layout.token_capacity, 1)));
  DS_RETURN_IF_ERROR(be.status());
  be.Branch(1);
  DS_ASSIGN_OR_RETURN(const int32_t* t2r, TokenMapReleased56562(be, map));
  DS_RETURN_IF_ERROR(SwaBuild(be, s, t2r, /*one_launch_mask=*/true));
  be.Branch(2);
  TokenMapArgs own = map;
  own.out = own_map;
  DS_ASSIGN_OR_RETURN(const int32_t* t2r_mla, TokenMapReleased56562(be, own));
  DS_RETURN_IF_ERROR(MlaRatio2Build(be, s));
  DS_RETURN_IF_ERROR(RingBuild(be, s, t2r_mla));
  for (int k = 0; k < 2; ++k) {
    be.BranchAfter(3 + k, 2);
    DS_RETURN_IF_ERROR(IndexerBuild(be, s, k, /*fused=*/true));
  }
  be.Join();
  return suite_internal::SegmentsIfWhatIf(be, s);  // nothing: a recorded step has no prefill
}

template <class Backend>
absl::Status RunVllm034(Backend& be, const SuiteStep& s) {
  using namespace vllm_ops;
  if (VllmMetadataKey(*s.in).has_value()) return RecordedBuild(be, s);
  const BatchSizes& z = s.in->sizes;
  DS_ASSIGN_OR_RETURN(const int32_t* t2r,
                      TokenMapReleased56562(be, suite_internal::SuiteTokenMapArgs(s, s.out.token_to_req,
                                                                                  s.layout.token_capacity)));
  DS_RETURN_IF_ERROR(SwaBuild(be, s, t2r, /*one_launch_mask=*/true));
  DS_RETURN_IF_ERROR(MlaRatio2Build(be, s));
  DS_RETURN_IF_ERROR(RingBuild(be, s, t2r));
  if (z.num_tokens == 0) {
    // 0.32.0+: `if num_tokens == 0: return` after get_compressed_slot_mapping (ratio 2's
    // out.fill_(-1); its kernel has no token to map).
    FillI64MinusOne(be, s.out.indexer_r2_slots, z.capacity);
    return suite_internal::SegmentsIfWhatIf(be, s);
  }
  for (int k = 0; k < 2; ++k) DS_RETURN_IF_ERROR(IndexerBuild(be, s, k, /*fused=*/true));
  return suite_internal::SegmentsIfWhatIf(be, s);
}

}  // namespace
}  // namespace dspark

DSPARK_REGISTER_IMPL(vllm_0_34, ::dspark::RunVllm034, [] {
  ::dspark::ImplInfo i;
  i.name = "vllm-0.34";
  i.description = "(e) vLLM 0.34.0: (d)'s kernels, the build of FULL uniform-decode steps replayed from recorded "
                  "CUDA graphs (KV-cache groups as concurrent branches), eager otherwise";
  i.rank = 45;
  i.role = ::dspark::ImplRole::kVllmState;
  i.vllm_state = "(e) recorded metadata graphs";
  i.vllm_release = "0.34.0";
  i.style = {"#332288", "oo", "X"};
  ::dspark::vllm_ops::Kernels56562State(i);
  i.execution = ::dspark::MetadataExecution::kRecordedUniformDecode;
  i.host_decode_lens = ::dspark::HostDecodeLens::kNextNUnderAv;
  return i;
})
