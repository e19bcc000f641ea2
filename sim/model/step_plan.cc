#include "sim/model/step_plan.h"

namespace dspark::sim {

absl::string_view StepCaseName(StepCase c) {
  switch (c) {
    case StepCase::kPrefill: return "prefill";
    case StepCase::kChunkedPrefill: return "chunked_prefill";
    case StepCase::kMixed: return "mixed";
    case StepCase::kDecode: return "decode";
    case StepCase::kSpecVerify: return "dspark_verify";
    case StepCase::kAdaptiveVerify: return "dspark_adaptive_verify";
    case StepCase::kSpecDraft: return "dspark_draft";
    case StepCase::kAdaptiveDraft: return "dspark_adaptive_draft";
  }
  return "?";
}

BatchSizes StepPlan::sizes() const {
  BatchSizes s;
  s.num_reqs = num_reqs;
  s.num_tokens = num_tokens;
  s.num_decodes = num_decodes;
  s.num_decode_tokens = num_decode_tokens;
  s.capacity = capacity;
  s.bt_width = bt_width;
  s.bt_stride = bt_stride;
  return s;
}

absl::StatusOr<const StepArrays*> StepPlan::Arrays() const {
  if (materializer_ == nullptr || storage_ == nullptr)
    return absl::FailedPreconditionError("step plan has no materializer bound");
  if (!materialized_) {
    status_ = materializer_->Materialize(*this, storage_);
    materialized_ = true;
  }
  if (!status_.ok()) return status_;
  return storage_;
}

BatchInputs ToBatchInputs(const StepPlan& plan, const StepArrays& arrays) {
  BatchInputs in;
  in.sizes = plan.sizes();
  in.device.query_start_loc = arrays.qsl_device.data();
  in.device.seq_lens = arrays.seq_lens_device.data();
  in.device.block_table = arrays.block_table.data();
  in.device.slot_mapping = arrays.slot_mapping.data();
  in.host.query_start_loc = arrays.qsl_host.data();
  in.host.seq_lens = arrays.seq_lens_host.data();
  in.causal = !plan.draft_step;  // the DSpark draft step is non-causal (DSparkSpeculator)
  in.full_graph = plan.graph_padded;
  in.adaptive = plan.step_case == StepCase::kAdaptiveVerify;
  return in;
}

absl::StatusOr<BatchInputs> ToBatchInputs(const StepPlan& plan) {
  auto arrays = plan.Arrays();
  if (!arrays.ok()) return arrays.status();
  return ToBatchInputs(plan, **arrays);
}

}  // namespace dspark::sim
