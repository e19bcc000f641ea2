#include "sim/model/time_model_forward.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dspark::sim {

ForwardTerms RooflineTerms(const RooflineForward& r, int32_t num_tokens, int64_t sum_seq_lens,
                           double attn_pairs, int32_t routed_tokens) {
  ForwardTerms t;
  t.floor_us = r.floor_us;
  const double n = std::max(0, num_tokens);
  const double tp = std::max(1, r.tensor_parallel);
  const double bw = r.hbm_tb_per_s * 1e6;                          // [bytes/us]
  const double flops = r.compute_efficiency * r.peak_tflops * 1e6;  // [FLOP/us]
  const double e = std::max(1, r.routed_experts);
  const double k = std::min<double>(r.experts_per_token, e);
  // Expected distinct experts hit by n tokens routed independently, k of E each.
  const double routed = routed_tokens < 0 ? n : std::min<double>(n, routed_tokens);
  t.experts_touched = e * (1.0 - std::pow(1.0 - k / e, routed)) + r.shared_experts;
  const double expert_read = t.experts_touched * r.expert_params * r.expert_bytes_per_param / (tp * bw);
  const double expert_math = 2.0 * n * (k + r.shared_experts) * r.expert_params / (tp * flops);
  t.moe_us = r.moe_layers * std::max(expert_read, expert_math);
  const double dense_read = r.dense_params * r.dense_bytes_per_param / (tp * bw);
  const double dense_math =
      (2.0 * n * r.dense_params + n * r.attn_flops_per_token + attn_pairs * r.attn_flops_per_pair) / (tp * flops);
  t.dense_us = std::max(dense_read, dense_math);
  t.kv_us = static_cast<double>(sum_seq_lens) * r.kv_bytes_per_ctx_token / bw;
  if (n > 0) {
    const double waves = std::ceil(n / std::max(1, r.sm_count));
    t.rows_us = r.row_latency_us_per_ctx_token * (attn_pairs / n) * waves;
  }
  return t;
}

namespace {

absl::Status Bad(const std::string& path, const std::string& key, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": key 'forward.target_roofline.", key, "': ", what));
}

}  // namespace

absl::Status ReadRoofline(const std::string& path, const nlohmann::json& obj, RooflineForward* r) {
  if (!obj.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": key 'forward.target_roofline': expected an object"));
  const std::pair<const char*, double*> reals[] = {
      {"expert_params", &r->expert_params}, {"expert_bytes_per_param", &r->expert_bytes_per_param},
      {"dense_params", &r->dense_params}, {"dense_bytes_per_param", &r->dense_bytes_per_param},
      {"attn_flops_per_token", &r->attn_flops_per_token}, {"attn_flops_per_pair", &r->attn_flops_per_pair},
      {"kv_bytes_per_ctx_token", &r->kv_bytes_per_ctx_token}, {"hbm_tb_per_s", &r->hbm_tb_per_s},
      {"peak_tflops", &r->peak_tflops}, {"floor_us", &r->floor_us},
      {"compute_efficiency", &r->compute_efficiency},
      {"row_latency_us_per_ctx_token", &r->row_latency_us_per_ctx_token}};
  const std::pair<const char*, int32_t*> ints[] = {
      {"moe_layers", &r->moe_layers}, {"routed_experts", &r->routed_experts},
      {"experts_per_token", &r->experts_per_token}, {"shared_experts", &r->shared_experts},
      {"tensor_parallel", &r->tensor_parallel}, {"sm_count", &r->sm_count}};
  for (const auto& [key, value] : obj.items()) {
    if (key == "method") continue;
    bool known = false;
    for (const auto& [name, field] : reals) {
      if (key != name) continue;
      if (!value.is_number() || value.get<double>() < 0) return Bad(path, key, "expected a number >= 0");
      *field = value.get<double>();
      known = true;
    }
    for (const auto& [name, field] : ints) {
      if (key != name) continue;
      if (!value.is_number_unsigned() || value.get<uint64_t>() > 100000)
        return Bad(path, key, "expected an integer in [0, 100000]");
      *field = value.get<int32_t>();
      known = true;
    }
    if (!known) return Bad(path, key, "unknown key");
  }
  if (r->compute_efficiency <= 0 || r->compute_efficiency > 1) return Bad(path, "compute_efficiency", "expected a number in (0, 1]");
  if (r->hbm_tb_per_s <= 0 || r->peak_tflops <= 0) return Bad(path, "hbm_tb_per_s", "bandwidth and peak_tflops must be > 0");
  if (r->routed_experts < 1 || r->experts_per_token > r->routed_experts)
    return Bad(path, "experts_per_token", "expected 1 <= experts_per_token <= routed_experts");
  return absl::OkStatus();
}

}  // namespace dspark::sim
