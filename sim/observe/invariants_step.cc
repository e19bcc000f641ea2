// The per-step checks of the invariant checker: the plan, the KV partition and the rows of the
// step's arrays (invariants.h).
#include "sim/observe/invariants.h"

#include <algorithm>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/engine/engine.h"
#include "sim/observe/invariants_internal.h"

namespace dspark::sim {

using namespace invariants_internal;

absl::Status InvariantChecker::CheckPlan(const StepPlan& p) const {
  const int64_t s = p.index;
  const int32_t r_real = p.num_reqs_real, m = p.num_tokens_real, np = p.num_prefills;
  const int32_t nd = r_real - np;                   // real decode rows
  const int32_t dt = m - p.num_prefill_tokens;      // [tokens] real decode tokens
  const SpecMode mode = config_.mode;

  // Budgets.
  if (r_real < 1 || r_real > config_.max_num_seqs)
    return Violation(s, "num_reqs_real = %d, expected in [1, max_num_seqs = %d]", r_real,
                     config_.max_num_seqs);
  if (m > config_.max_num_batched_tokens)
    return Violation(s, "num_tokens_real = %d > max_num_batched_tokens = %d", m,
                     config_.max_num_batched_tokens);
  if (m < r_real)
    return Violation(s, "num_tokens_real = %d < num_reqs_real = %d (a scheduled request without a token)",
                     m, r_real);
  if (np < 0 || np > r_real)
    return Violation(s, "num_prefills = %d, expected in [0, num_reqs_real = %d]", np, r_real);
  if (p.num_prefill_tokens < np || p.num_prefill_tokens > m)
    return Violation(s, "num_prefill_tokens = %d, expected in [num_prefills = %d, num_tokens_real = %d]",
                     p.num_prefill_tokens, np, m);
  if (dt < nd)
    return Violation(s, "decode tokens = %d < decode requests = %d", dt, nd);
  if (p.capacity < config_.max_num_batched_tokens)
    return Violation(s, "capacity = %d < max_num_batched_tokens = %d", p.capacity,
                     config_.max_num_batched_tokens);
  if (p.num_tokens > p.capacity)
    return Violation(s, "num_tokens = %d > capacity = %d", p.num_tokens, p.capacity);
  const int32_t width = (config_.max_model_len + config_.block_size - 1) / config_.block_size;
  if (p.bt_width != width || p.bt_stride < width)
    return Violation(s, "bt_width = %d, bt_stride = %d; expected width %d = ceil(max_model_len %d / block %d), stride >= width",
                     p.bt_width, p.bt_stride, width, config_.max_model_len, config_.block_size);

  // The case against the mode, and its token bounds.
  const StepCase c = p.step_case;
  const std::string case_name(StepCaseName(c));
  if (p.draft_step != IsDraftCase(c))
    return Violation(s, "draft_step = %d in a %s step", p.draft_step, case_name);
  const bool decode_case_fits_mode =
      (c == StepCase::kDecode && mode == SpecMode::kNone) ||
      ((c == StepCase::kSpecVerify || c == StepCase::kSpecDraft) && mode == SpecMode::kDSpark) ||
      ((c == StepCase::kAdaptiveVerify || c == StepCase::kAdaptiveDraft) && mode == SpecMode::kAdaptive) ||
      c == StepCase::kMixed || c == StepCase::kPrefill || c == StepCase::kChunkedPrefill;
  if (!decode_case_fits_mode)
    return Violation(s, "step_case = %s in mode %s", case_name, SpecModeName(mode));
  const bool prefill_only = c == StepCase::kPrefill || c == StepCase::kChunkedPrefill;
  if (prefill_only && np != r_real)
    return Violation(s, "num_prefills = %d in a %s step of %d requests", np, case_name, r_real);
  if (c == StepCase::kMixed && (np == 0 || np == r_real))
    return Violation(s, "num_prefills = %d in a mixed step of %d requests, expected in [1, %d]", np,
                     r_real, r_real - 1);
  if (!prefill_only && c != StepCase::kMixed && np != 0)
    return Violation(s, "num_prefills = %d in a %s step, expected 0", np, case_name);
  // Adaptive target steps with decodes carry an allocation; every other step none.
  const bool adaptive_verify =
      mode == SpecMode::kAdaptive && (c == StepCase::kAdaptiveVerify || (c == StepCase::kMixed && nd > 0));
  const bool has_budget = adaptive_verify || c == StepCase::kAdaptiveDraft;
  if (!has_budget && p.draft_budget != -1)
    return Violation(s, "draft_budget = %d in a %s step (mode %s), expected -1", p.draft_budget,
                     case_name, SpecModeName(mode));
  if (p.eligible_drafts < 0 || p.eligible_drafts > nd * k_)
    return Violation(s, "eligible_drafts = %d, expected in [0, decode requests %d x K %d]",
                     p.eligible_drafts, nd, k_);
  int32_t per_request_max = 1;  // [tokens] of a decode row
  if (c == StepCase::kSpecDraft) per_request_max = k_;
  else if (mode != SpecMode::kNone) per_request_max = 1 + k_;
  if (mode == SpecMode::kNone && dt != nd)
    return Violation(s, "decode tokens = %d with %d decode requests; plain decodes carry 1 token each",
                     dt, nd);
  if (dt > nd * per_request_max)
    return Violation(s, "decode tokens = %d > %d decode requests x %d tokens (%s)", dt, nd,
                     per_request_max, case_name);
  if (adaptive_verify) {
    if (p.draft_budget < 0 || p.draft_budget > p.eligible_drafts)
      return Violation(s, "draft_budget = %d, expected in [0, eligible_drafts = %d]", p.draft_budget,
                       p.eligible_drafts);
    if (dt != nd + p.draft_budget)
      return Violation(s, "decode tokens = %d, expected decode requests %d + draft_budget %d", dt, nd,
                       p.draft_budget);
  }
  if (c == StepCase::kAdaptiveDraft && (p.draft_budget < 0 || nd + p.draft_budget > dt))
    return Violation(s, "draft_budget = %d in an adaptive draft of %d requests and %d tokens",
                     p.draft_budget, nd, dt);
  // Steps in which the host chose every query length and knows every context.
  const bool host_exact = c == StepCase::kDecode || c == StepCase::kSpecVerify || prefill_only ||
                          (c == StepCase::kMixed && mode != SpecMode::kAdaptive);
  if (host_exact && p.host_view_stale)
    return Violation(s, "host_view_stale = 1 in a %s step (mode %s)", case_name, SpecModeName(mode));

  // CUDA-graph padding.
  const int32_t max_capture = capture_sizes_.empty() ? 0 : capture_sizes_.back();
  const bool expect_padded = config_.cuda_graphs && np == 0 && m <= max_capture;
  if (p.graph_padded != expect_padded)
    return Violation(s, "graph_padded = %d, expected %d (%d prefills, M = %d, largest capture size %d, graphs %s)",
                     p.graph_padded, expect_padded, np, m, max_capture, config_.cuda_graphs ? "on" : "off");
  if (expect_padded) {
    const int32_t n = *std::lower_bound(capture_sizes_.begin(), capture_sizes_.end(), m);
    int32_t q_uniform = 1 + k_;
    if (c == StepCase::kSpecDraft) q_uniform = k_;
    if (c == StepCase::kDecode) q_uniform = 1;
    const int32_t r = std::max(r_real, n / q_uniform);
    if (p.num_tokens != n)
      return Violation(s, "num_tokens = %d, expected the smallest capture size >= M = %d, %d", p.num_tokens, m, n);
    if (p.num_reqs != r)
      return Violation(s, "num_reqs = %d, expected max(num_reqs_real %d, N %d / q %d) = %d", p.num_reqs,
                       r_real, n, q_uniform, r);
    if (p.num_decodes != r || p.num_decode_tokens != n)
      return Violation(s, "padded step: num_decodes = %d, num_decode_tokens = %d; expected R = %d, N = %d",
                       p.num_decodes, p.num_decode_tokens, r, n);
  } else {
    if (p.num_tokens != m)
      return Violation(s, "num_tokens = %d in an unpadded step of num_tokens_real = %d", p.num_tokens, m);
    if (p.num_reqs != r_real)
      return Violation(s, "num_reqs = %d in an unpadded step of num_reqs_real = %d", p.num_reqs, r_real);
    if (p.num_decodes != nd || p.num_decode_tokens != dt)
      return Violation(s, "num_decodes = %d, num_decode_tokens = %d; expected %d, %d (unpadded)",
                       p.num_decodes, p.num_decode_tokens, nd, dt);
  }
  return absl::OkStatus();
}

absl::Status InvariantChecker::CheckKv(int64_t step, const KvView& view) {
  const int32_t n = view.num_blocks;
  if (view.free_blocks == nullptr) return Violation(step, "kv: no free list to check");
  if (static_cast<int32_t>(view.holders.size()) > config_.max_num_seqs)
    return Violation(step, "running requests = %d > max_num_seqs = %d", view.holders.size(),
                     config_.max_num_seqs);
  if (static_cast<int32_t>(stamp_.size()) != n) {
    stamp_.assign(static_cast<size_t>(std::max(n, 0)), 0);
    owner_.assign(static_cast<size_t>(std::max(n, 0)), 0);
  }
  const int64_t stamp = ++stamp_counter_;
  int64_t accounted = 0;
  for (int32_t b : *view.free_blocks) {
    if (b <= 0 || b >= n)
      return Violation(step, "kv: free list holds block %d, outside the usable blocks 1..%d", b, n - 1);
    if (stamp_[b] == stamp) return Violation(step, "kv: block %d is twice on the free list", b);
    stamp_[b] = stamp;
    owner_[b] = -1;
    ++accounted;
  }
  for (const KvView::Holder& h : view.holders) {
    for (int32_t b : *h.blocks) {
      if (b <= 0 || b >= n)
        return Violation(step, "kv: request id %d holds block %d, outside the usable blocks 1..%d",
                         h.request_id, b, n - 1);
      if (stamp_[b] == stamp) {
        if (owner_[b] == -1)
          return Violation(step, "kv: block %d is held by request id %d and also on the free list", b,
                           h.request_id);
        return Violation(step, "kv: block %d owned by two requests (ids %d and %d)", b, owner_[b],
                         h.request_id);
      }
      stamp_[b] = stamp;
      owner_[b] = h.request_id;
      ++accounted;
    }
  }
  if (accounted != n - 1) {
    int32_t missing = -1;
    for (int32_t b = 1; b < n && missing < 0; ++b)
      if (stamp_[b] != stamp) missing = b;
    return Violation(step,
                     "kv: free %d + held by running requests %d = %d blocks, the pool has %d usable "
                     "(1..%d); block %d is neither free nor held (leaked)",
                     view.free_blocks->size(), accounted - static_cast<int64_t>(view.free_blocks->size()),
                     accounted, n - 1, n - 1, missing);
  }
  return absl::OkStatus();
}

absl::Status InvariantChecker::CheckRows(const StepPlan& p, const StepArrays& a, const KvView& view) const {
  const int64_t s = p.index;
  const int32_t r_total = p.num_reqs, r_real = p.num_reqs_real, m = p.num_tokens_real;
  const int32_t nd = r_real - p.num_prefills, bs = config_.block_size;
  if (a.qsl_device.size() != static_cast<size_t>(r_total) + 1 ||
      a.seq_lens_device.size() != static_cast<size_t>(r_total) ||
      a.slot_mapping.size() != static_cast<size_t>(p.num_tokens) ||
      a.request_ids.size() != static_cast<size_t>(r_real) ||
      a.block_table.size() != static_cast<size_t>(r_total) * p.bt_stride)
    return Violation(s, "arrays: sizes qsl %d, seq_lens %d, slot_mapping %d, request_ids %d, block_table %d; "
                        "expected %d, %d, %d, %d, %d",
                     a.qsl_device.size(), a.seq_lens_device.size(), a.slot_mapping.size(),
                     a.request_ids.size(), a.block_table.size(), r_total + 1, r_total, p.num_tokens,
                     r_real, int64_t{r_total} * p.bt_stride);
  if (a.qsl_device[0] != 0) return Violation(s, "qsl_device[0] = %d, expected 0", a.qsl_device[0]);
  if (a.qsl_device[r_total] != m || (!a.qsl_host.empty() && a.qsl_host.back() != m))
    return Violation(s, "qsl total: device %d, host %d; expected num_tokens_real = %d", a.qsl_device[r_total],
                     a.qsl_host.empty() ? -1 : a.qsl_host.back(), m);
  absl::flat_hash_map<int64_t, const std::vector<int32_t>*> held;
  for (const KvView::Holder& h : view.holders) held[h.request_id] = h.blocks;
  absl::flat_hash_map<int64_t, int32_t> row_of;
  int32_t max_q = 1;
  if (p.step_case == StepCase::kSpecDraft) max_q = k_;
  else if (config_.mode != SpecMode::kNone) max_q = 1 + k_;
  for (int32_t r = 0; r < r_total; ++r) {
    const int32_t q = a.qsl_device[r + 1] - a.qsl_device[r];
    const int32_t seq = a.seq_lens_device[r];
    if (q < 0) return Violation(s, "qsl_device decreases at row %d (%d -> %d)", r, a.qsl_device[r], a.qsl_device[r + 1]);
    if (r >= r_real) {
      if (q != 0 || seq != 0)
        return Violation(s, "padding row %d: query length %d, seq_len %d; expected 0, 0", r, q, seq);
      continue;
    }
    const int64_t id = a.request_ids[r];
    if (auto [it, fresh] = row_of.emplace(id, r); !fresh)
      return Violation(s, "request id %d scheduled twice (rows %d and %d)", id, it->second, r);
    if (q < 1) return Violation(s, "row %d (request id %d): query length 0", r, id);
    if (r < nd && q > max_q)
      return Violation(s, "row %d (request id %d): query length %d > %d (%s, K = %d)", r, id, q, max_q,
                       StepCaseName(p.step_case), k_);
    if (seq < q || seq > config_.max_model_len)
      return Violation(s, "seq_lens_device[%d] = %d (request id %d), expected in [query length %d, max_model_len %d]",
                       r, seq, id, q, config_.max_model_len);
    const auto it = held.find(id);
    if (it == held.end())
      return Violation(s, "row %d: request id %d is scheduled but not running", r, id);
    const std::vector<int32_t>& blocks = *it->second;
    const int32_t need = (seq + bs - 1) / bs;
    if (static_cast<int32_t>(blocks.size()) < need)
      return Violation(s, "row %d: request id %d holds %d KV blocks, its context of %d tokens needs %d", r, id,
                       blocks.size(), seq, need);
    const int32_t* bt_row = &a.block_table[static_cast<size_t>(r) * p.bt_stride];
    for (int32_t col = 0; col < need; ++col)
      if (bt_row[col] != blocks[col])
        return Violation(s, "block_table[%d, %d] = %d, request id %d holds block %d there", r, col, bt_row[col],
                         id, blocks[col]);
    for (int32_t j = 0; j < q; ++j) {
      const int32_t pos = seq - q + j;
      const int32_t t = a.qsl_device[r] + j;
      const int64_t expected = int64_t{blocks[pos / bs]} * bs + pos % bs;
      if (a.slot_mapping[t] != expected)
        return Violation(s, "slot_mapping[%d] = %d, expected %d (request id %d, position %d, block %d)", t,
                         a.slot_mapping[t], expected, id, pos, blocks[pos / bs]);
    }
  }
  for (int32_t t = m; t < p.num_tokens; ++t)
    if (a.slot_mapping[t] != -1)
      return Violation(s, "slot_mapping[%d] = %d for a padding token, expected -1", t, a.slot_mapping[t]);
  return absl::OkStatus();
}

}  // namespace dspark::sim
