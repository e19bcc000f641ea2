#include "sim/observe/step_log.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace dspark::sim {

absl::Status StepLogObserver::OnStep(const StepPlan& p) {
  auto arrays = p.Arrays();
  if (!arrays.ok()) return arrays.status();
  const StepArrays& a = **arrays;
  absl::StrAppendFormat(&text_,
                        "step %d t=%.9f dt=%.9f case=%s R=%d/%d M=%d N=%d num_decodes=%d Nd=%d "
                        "prefill_tokens=%d B=%d eligible=%d stale=%d padded=%d\n",
                        p.index, p.start_s, p.end_s - p.start_s, StepCaseName(p.step_case),
                        p.num_reqs_real, p.num_reqs, p.num_tokens_real, p.num_tokens, p.num_decodes,
                        p.num_decode_tokens, p.num_prefill_tokens, p.draft_budget,
                        p.eligible_drafts, p.host_view_stale, p.graph_padded);
  absl::StrAppend(&text_, "  ids      ", absl::StrJoin(a.request_ids, " "), "\n");
  absl::StrAppend(&text_, "  qsl_dev  ", absl::StrJoin(a.qsl_device, " "), "\n");
  absl::StrAppend(&text_, "  qsl_host ", absl::StrJoin(a.qsl_host, " "), "\n");
  absl::StrAppend(&text_, "  seq_dev  ", absl::StrJoin(a.seq_lens_device, " "), "\n");
  absl::StrAppend(&text_, "  seq_host ", absl::StrJoin(a.seq_lens_host, " "), "\n");
  for (int32_t r = 0; r < p.num_reqs; ++r) {
    const auto begin = a.block_table.begin() + static_cast<std::ptrdiff_t>(r) * p.bt_stride;
    absl::StrAppend(&text_, "  bt[", r, "]    ",
                    absl::StrJoin(begin, begin + p.bt_stride, " "), "\n");
  }
  absl::StrAppend(&text_, "  slots    ", absl::StrJoin(a.slot_mapping, " "), "\n");
  return absl::OkStatus();
}

void StepLogObserver::OnPreempted(int32_t req, double time_s) {
  absl::StrAppendFormat(&text_, "preempt request #%d t=%.9f\n", req, time_s);
}

void StepLogObserver::OnFinished(int32_t req, double time_s) {
  absl::StrAppendFormat(&text_, "  finish request #%d t=%.9f\n", req, time_s);
}

}  // namespace dspark::sim
