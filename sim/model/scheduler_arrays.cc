// Scheduler::Materialize: the planned step's device and host arrays, and the check that the
// emulated allocation kernel writes the device boundaries the plan holds.
#include "sim/model/scheduler.h"

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/topb_alloc.cuh"

namespace dspark::sim {

absl::Status Scheduler::Materialize(const StepPlan& plan, StepArrays* out) const {
  const int32_t r_total = plan.num_reqs, r_real = plan.num_reqs_real, n = plan.num_tokens;
  const int32_t stride = plan.bt_stride, width = plan.bt_width, bs = config_.block_size;
  out->qsl_device.assign(static_cast<size_t>(r_total) + 1, 0);
  out->qsl_host.assign(static_cast<size_t>(r_total) + 1, 0);
  out->seq_lens_device.assign(static_cast<size_t>(r_total), 0);
  out->seq_lens_host.assign(static_cast<size_t>(r_total), 0);
  out->block_table.assign(static_cast<size_t>(r_total) * stride, 0);
  out->slot_mapping.assign(static_cast<size_t>(n), -1);
  out->request_ids.assign(static_cast<size_t>(r_real), 0);
  out->topb.present = false;
  for (int32_t row = 0; row < r_total; ++row)
    for (int32_t c = width; c < stride; ++c) out->block_table[static_cast<size_t>(row) * stride + c] = -1;

  int32_t row = 0;
  auto emit = [&](const Entry& e) -> absl::Status {
    const Req& r = reqs_[e.req];
    out->request_ids[row] = r.id;
    out->qsl_device[row + 1] = out->qsl_device[row] + e.q_dev;
    out->qsl_host[row + 1] = out->qsl_host[row] + e.q_host;
    out->seq_lens_device[row] = e.seq_dev;
    out->seq_lens_host[row] = e.seq_host;
    const int32_t nblocks = static_cast<int32_t>(r.blocks.size());
    if (nblocks > width)
      return absl::InternalError(absl::StrFormat("step %d: request id %d holds %d blocks > width %d",
                                                 plan.index, r.id, nblocks, width));
    int32_t* bt_row = &out->block_table[static_cast<size_t>(row) * stride];
    for (int32_t b = 0; b < nblocks; ++b) bt_row[b] = r.blocks[b];
    const int32_t first_pos = e.seq_dev - e.q_dev;
    for (int32_t j = 0; j < e.q_dev; ++j) {
      const int32_t pos = first_pos + j;
      if (pos / bs >= nblocks)
        return absl::InternalError(absl::StrFormat(
            "step %d: request id %d position %d has no KV block (holds %d)", plan.index, r.id, pos, nblocks));
      out->slot_mapping[out->qsl_device[row] + j] =
          static_cast<int64_t>(r.blocks[pos / bs]) * bs + pos % bs;
    }
    ++row;
    return absl::OkStatus();
  };
  for (const Entry& e : decodes_)
    if (auto s = emit(e); !s.ok()) return s;
  for (const Entry& e : prefills_)
    if (auto s = emit(e); !s.ok()) return s;
  for (int32_t pad = r_real; pad < r_total; ++pad) {
    out->qsl_device[pad + 1] = out->qsl_device[pad];
    out->qsl_host[pad + 1] = out->qsl_host[pad];
  }

  // The device boundaries of an adaptive verification are what the allocation kernel writes:
  // run its body (CPU emulation) and require the fast planning path to agree exactly.
  // Skipped, as compact_batch is, when B covers every draft; masked mode never rewrites them.
  const bool compacts = !draft_step_ && config_.mode == SpecMode::kAdaptive &&
                        config_.adaptive_mode == AdaptiveMode::kVarlen && !decodes_.empty() &&
                        draft_budget_ < plan.eligible_drafts;
  if (compacts) {
    const int32_t nd = static_cast<int32_t>(decodes_.size());
    std::vector<int32_t> tail(static_cast<size_t>(r_total - nd), 0);
    int32_t offset = 0;
    for (int32_t j = 0; j < r_total - nd; ++j) {
      if (j < static_cast<int32_t>(prefills_.size())) offset += prefills_[j].q_dev;
      tail[j] = offset;
    }
    std::vector<int32_t> qsl(static_cast<size_t>(r_total) + 1, -99), kept(nd, -99),
        cu(static_cast<size_t>(r_real) + 1, -99);
    TopBAllocParams p{scores_dev_.data(), max_drafts_.data(), tail.empty() ? nullptr : tail.data(),
                      qsl.data(), kept.data(), nd, r_total, k_, draft_budget_, 1};
    p.cu_num_logits = cu.data();
    p.num_logit_reqs = r_real;
    if (auto s = CanImplementTopBAlloc(p); !s.ok()) return s;
    EmulateTopBAlloc(p);
    if (qsl != out->qsl_device)
      return absl::InternalError(absl::StrFormat(
          "step %d: emulated topb_alloc kernel wrote qsl [%s], the planned device view is [%s]",
          plan.index, absl::StrJoin(qsl, ","), absl::StrJoin(out->qsl_device, ",")));
    // compact_batch's cu_num_logits: the planned kept drafts plus one bonus token per request.
    std::vector<int32_t> planned_cu(1, 0);
    for (const Entry& e : decodes_) planned_cu.push_back(planned_cu.back() + e.kept + 1);
    for (size_t j = 0; j < prefills_.size(); ++j) planned_cu.push_back(planned_cu.back() + 1);
    if (cu != planned_cu)
      return absl::InternalError(absl::StrFormat(
          "step %d: emulated topb_alloc kernel wrote cu_num_logits [%s], the plan has [%s]", plan.index,
          absl::StrJoin(cu, ","), absl::StrJoin(planned_cu, ",")));
    TopBInputs& topb = out->topb;
    topb.present = true;
    topb.scores.assign(scores_dev_.begin(), scores_dev_.begin() + static_cast<size_t>(nd) * k_);
    topb.max_drafts.assign(max_drafts_.begin(), max_drafts_.begin() + nd);
    topb.tail_offsets = std::move(tail);
    topb.num_decodes = nd;
    topb.max_k = k_;
    topb.budget = draft_budget_;
    topb.base_tokens = 1;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> Scheduler::RecordAdaptiveStep(const StepPlan& plan, AvStepRecord* out) const {
  if (draft_step_ || config_.mode != SpecMode::kAdaptive || plan.eligible_drafts <= 0) return false;
  auto arrays = plan.Arrays();
  if (!arrays.ok()) return arrays.status();
  AvStepRecord& rec = *out;
  rec = AvStepRecord{};
  rec.num_reqs = static_cast<int32_t>(decodes_.size() + prefills_.size());
  rec.num_reqs_padded = plan.num_reqs;
  rec.budget = draft_budget_;
  rec.cu_num_logits.push_back(0);
  const auto add = [&](const Entry& e, bool decode) {
    const Req& r = reqs_[e.req];
    rec.scheduled_tokens.push_back(decode ? 1 + e.max_drafts : e.q_dev);
    rec.drafts.push_back(decode ? e.max_drafts : 0);
    rec.num_computed.push_back(decode ? r.computed : e.seq_dev - e.q_dev);
    rec.prefill_len.push_back(r.prefill_len);
    rec.stale_conf.insert(rec.stale_conf.end(), r.conf_host.begin(), r.conf_host.begin() + k_);
    rec.fresh_conf.insert(rec.fresh_conf.end(), r.conf.begin(), r.conf.begin() + k_);
    rec.host_tokens.push_back(e.q_host);
    rec.device_drafts.push_back(decode ? e.kept : 0);
    rec.cu_num_logits.push_back(rec.cu_num_logits.back() + rec.device_drafts.back() + 1);
  };
  for (const Entry& e : decodes_) add(e, true);
  for (const Entry& e : prefills_) add(e, false);
  rec.qsl_device = (*arrays)->qsl_device;
  return true;
}

}  // namespace dspark::sim
