// What every implementation runs through: the checks of one SuiteStep, the fused kernels'
// parameters made from it, and the CPU entry behind them (kernels/suite/suite_impls.h).
#include "kernels/suite/suite.h"
#include "kernels/suite/metadata_graph.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/suite_impls.h"

namespace dspark {

absl::Status ValidateSuiteStep(Impl impl, const SuiteStep& s) {
  if (s.in == nullptr) return absl::InvalidArgumentError("suite: no batch inputs");
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  DS_RETURN_IF_ERROR(ValidateBatchSizes(z));
  DS_RETURN_IF_ERROR(CheckFits(s.layout, z, s.consts));
  if (!ImplRunsOn(impl, s.consts.model))
    return absl::FailedPreconditionError(absl::StrFormat(
        "suite: %s (vLLM %s) builds %s; this suite builds %s, a pairing no release shipped", ImplName(impl),
        impl.info().vllm_release.empty() ? "-" : impl.info().vllm_release, ImplModels(impl), ModelName(s.consts.model)));
  if (s.consts.model == ModelKind::kV4 &&
      (s.out.c128a_decode == nullptr || s.out.c128a_decode_lens == nullptr || s.out.c128a_prefill == nullptr))
    return absl::InvalidArgumentError("suite: DeepSeek-V4's C128A output buffers are null");
  if (in.device.query_start_loc == nullptr || in.device.seq_lens == nullptr || in.device.block_table == nullptr ||
      in.device.slot_mapping == nullptr)
    return absl::InvalidArgumentError(
        "suite: device query_start_loc, seq_lens, block_table and slot_mapping must be non-null");
  const SuiteOutputs& o = s.out;
  if (o.token_to_req == nullptr || o.swa_lens == nullptr || o.swa_indices == nullptr ||
      o.swa_indices_noncausal == nullptr || o.swa_gather_lens == nullptr || o.mla_r1_slots == nullptr ||
      o.mla_r2_slots == nullptr || o.ring_slots == nullptr || o.seg_qsl == nullptr || o.seg_seq_lens == nullptr ||
      o.seg_count == nullptr || o.indexer_r2_slots == nullptr || o.indexer_r2_csl == nullptr)
    return absl::InvalidArgumentError("suite: an output buffer is null");
  for (const IndexerOutputs& x : o.indexer)
    if (x.seq_out == nullptr || x.bt_out == nullptr || x.decode_lens == nullptr || x.indices == nullptr ||
        x.per_req == nullptr || x.prefill_cu_seq_lens == nullptr || x.prefill_token_to_seq == nullptr ||
        x.prefill_ks == nullptr || x.prefill_ke == nullptr)
      return absl::InvalidArgumentError("suite: an indexer output buffer is null");
  if (s.arange == nullptr || s.layout.arange_len < std::max(z.capacity, s.consts.swa_window))
    return absl::InvalidArgumentError(absl::StrFormat(
        "suite: the persistent arange must hold max(capacity=%d, window=%d) entries (arange_len=%d)", z.capacity,
        s.consts.swa_window, s.layout.arange_len));
  const ImplTraits& traits = impl.info().traits;
  if (!traits.reads_host_boundaries && !traits.reads_host_totals) return absl::OkStatus();
  // Host-split readers read the host split and host seq_lens; host-total readers the totals.
  const int32_t* hq = in.host.query_start_loc;
  if (hq == nullptr) return absl::InvalidArgumentError("suite: host query_start_loc is null");
  if ((traits.reads_host_boundaries || z.num_reqs > z.num_decodes) && in.host.seq_lens == nullptr)
    return absl::InvalidArgumentError("suite: host seq_lens is null");
  if (hq[0] != 0)
    return absl::InvalidArgumentError(absl::StrFormat("suite: host query_start_loc[0]=%d, expected 0", hq[0]));
  for (int32_t r = 0; r < z.num_reqs; ++r)
    if (hq[r + 1] < hq[r])
      return absl::InvalidArgumentError(
          absl::StrFormat("suite: host query_start_loc decreases at %d (%d -> %d)", r + 1, hq[r], hq[r + 1]));
  if (hq[z.num_reqs] > z.num_tokens)
    return absl::OutOfRangeError(absl::StrFormat("suite: host token total %d exceeds num_tokens=%d",
                                                 hq[z.num_reqs], z.num_tokens));
  if (hq[z.num_decodes] > z.num_decode_tokens)
    return absl::OutOfRangeError(absl::StrFormat("suite: host decode token total %d exceeds num_decode_tokens=%d",
                                                 hq[z.num_decodes], z.num_decode_tokens));
  return absl::OkStatus();
}

FusedSuiteParams MakeFusedSuiteParams(const SuiteStep& s) {
  const BatchInputs& in = *s.in;
  const BatchSizes& z = in.sizes;
  const SuiteOutputs& o = s.out;
  FusedSuiteParams p{};
  p.query_start_loc = in.device.query_start_loc;
  p.seq_lens = in.device.seq_lens;
  p.slot_mapping = in.device.slot_mapping;
  p.block_table = in.device.block_table;
  p.num_reqs = z.num_reqs;
  p.num_tokens = z.num_tokens;
  p.num_decodes = z.num_decodes;
  p.num_decode_tokens = z.num_decode_tokens;
  p.capacity = z.capacity;
  p.bt_width = z.bt_width;
  p.bt_stride = z.bt_stride;
  p.out_stride = s.layout.bt_out_stride;
  p.max_segments = s.layout.max_segments;
  p.window = s.consts.swa_window;
  p.swa_block_size = s.consts.swa_block_size;
  p.mla_block_size = s.consts.mla_block_size;
  p.ring_capacity = CompressorRingCapacity(s.consts.spec_k);
  p.segment_len = s.consts.prefill_segment;
  p.fp8 = in.fp8_prefill ? 1 : 0;
  p.swa_noncausal_width = in.causal ? 0 : s.layout.noncausal_width;
  p.swa_indices_nc = o.swa_indices_noncausal;
  p.token_to_req = o.token_to_req;
  p.swa_lens = o.swa_lens;
  p.swa_indices = o.swa_indices;
  p.mla_out[0] = o.mla_r1_slots;
  p.mla_out[1] = o.mla_r2_slots;
  p.ring_out = o.ring_slots;
  p.seg_qsl = o.seg_qsl;
  p.seg_seq_lens = o.seg_seq_lens;
  p.seg_count = o.seg_count;
  p.r2_slots = o.indexer_r2_slots;
  p.r2_csl = o.indexer_r2_csl;
  for (int k = 0; k < 2; ++k) {
    p.seq_out[k] = o.indexer[k].seq_out;
    p.bt_out[k] = o.indexer[k].bt_out;
    p.decode_lens[k] = o.indexer[k].decode_lens;
    p.indices[k] = o.indexer[k].indices;
    p.per_req[k] = o.indexer[k].per_req;
  }
  PlanFusedSuiteGrid(p);
  return p;
}

FusedSuitePrefillParams MakeFusedSuitePrefillParams(const SuiteStep& s) {
  const SuiteOutputs& o = s.out;
  FusedSuitePrefillParams pf{};
  pf.swa_gather_lens = o.swa_gather_lens;
  for (int k = 0; k < 2; ++k) {
    pf.cu[k] = o.indexer[k].prefill_cu_seq_lens;
    pf.token_to_seq[k] = o.indexer[k].prefill_token_to_seq;
    pf.ks[k] = o.indexer[k].prefill_ks;
    pf.ke[k] = o.indexer[k].prefill_ke;
  }
  pf.workspace = s.consts.indexer_prefill_workspace;
  pf.max_logits = s.consts.indexer_max_logits;
  pf.cu_len = s.layout.prefill_cu_len;
  pf.rows = s.layout.prefill_rows;
  return pf;
}

absl::Status RunSuite(CpuBackend& be, Impl impl, const SuiteStep& s) {
  DS_RETURN_IF_ERROR(ValidateSuiteStep(impl, s));
  DS_RETURN_IF_ERROR(impl.info().cpu(be, s));
  // vLLM 0.33.0+ replays the recorded build of a FULL uniform-decode step: one graph launch
  // holding the launches counted above (kernels/suite/metadata_graph.h).
  if (ReplaysRecordedGraph(impl, *s.in)) be.counters().graph_launches = 1;
  return absl::OkStatus();
}

}  // namespace dspark
