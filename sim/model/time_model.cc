#include "sim/model/time_model.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"
#include "nlohmann/json.hpp"
#include "sim/workload/input_file.h"
#include "sim/workload/json_keys.h"

namespace dspark::sim {
namespace {

ImplCost& At(TimeModelParams& p, Impl impl) { return p.impls[impl.index()]; }

}  // namespace

// The simulator's spellings are the suite's (kernels/suite/suite.h); these only adapt the
// string_view type, which is its own type in this Abseil build.
absl::string_view ImplKey(Impl impl) {
  const std::string_view name = ImplName(impl);
  return absl::string_view(name.data(), name.size());
}

absl::StatusOr<Impl> ParseImplKey(absl::string_view name) {
  return ParseImpl(std::string_view(name.data(), name.size()));
}

absl::StatusOr<std::vector<Impl>> ParseImplKeyList(absl::string_view list) {
  return ParseImplList(std::string_view(list.data(), list.size()));
}

// The fitted constants of the forward (scripts/fit_forward.py; the shipped calibration file
// carries the same values with their method).
constexpr double kFitFloorUs = 5326.8;
constexpr double kFitComputeEfficiency = 0.06439;
constexpr double kFitRowLatencyUs = 0.0;  // not fitted (scripts/fit_forward.py --fit-row-latency)
constexpr double kFitDrafterFixedUs = 1592.6;

static_assert(ImplCostDefaults::kCases == kNumStepCases, "ImplCostDefaults' cases are the step cases");

namespace {

// The seed's After: the costs of an implementation that declares none.
Impl SeedAfter() {
  for (Impl impl : AllImpls())
    if (impl.info().role == ImplRole::kSeedAfter) return impl;
  return AllImpls().front();
}

// `impl`'s declared costs, resolved through derived_from (depth-limited: a cycle of
// registrations is a registration error, reported once as the base's costs).
ImplCost ResolveDefaultCost(Impl impl, int depth) {
  const ImplCostDefaults& d = impl.info().default_cost;
  if (!d.declared || depth > 8) {
    ImplCost own = impl == SeedAfter() || depth > 8 ? ImplCost{} : ResolveDefaultCost(SeedAfter(), depth + 1);
    own.estimated = true;
    own.serializes_host = impl.info().traits.serializes_host;
    return own;
  }
  ImplCost c;
  if (!d.derived_from.empty()) {
    const absl::StatusOr<Impl> base = ParseImpl(d.derived_from);
    if (base.ok()) c = ResolveDefaultCost(*base, depth + 1);
    for (double& v : c.gpu_us) v = v * d.gpu_scale + d.gpu_add_us;
  } else {
    for (int k = 0; k < kNumStepCases; ++k) c.gpu_us[k] = d.gpu_us[k];
  }
  bool own_launches = false;
  for (int32_t n : d.launches) own_launches = own_launches || n != 0;
  if (own_launches)
    for (int k = 0; k < kNumStepCases; ++k) c.launches[k] = d.launches[k];
  c.gpu_us_per_token = d.gpu_us_per_token;
  c.host_us = d.host_us;
  c.host_us_per_req = d.host_us_per_req;
  c.host_syncs = 0;
  c.serializes_host = impl.info().traits.serializes_host;
  c.estimated = d.estimated;
  return c;
}

}  // namespace

ImplCost DefaultImplCost(Impl impl) { return ResolveDefaultCost(impl, 0); }

// Defaults. Order of the per-case arrays: prefill, chunked prefill, mixed, decode, DSpark
// verification, adaptive verification, DSpark draft, adaptive draft (StepCase).
TimeModelParams DefaultTimeModelParams() {
  TimeModelParams p;
  // Target model. per_token_us: an 8192-token prefill costs ~190 ms (seed 000, SPEED-Bench
  // TTFT at concurrency 1 is 194-196 ms); per_attn_pair_us adds the causal attention of long
  // prefills; per_ctx_token_us is the KV read of decode attention; fixed_us is the weight-read
  // floor, solved so that a batch-1 decode at ~576 context tokens plus (d)'s measured builders
  // (90 us, workloads/calibration_h200.json) is the seed's 5.736 ms (no DSpark, After).
  // This linear form is kept for calibration files that give `forward.target`; the default
  // target forward is the roofline below.
  p.target = {5570.0, 20.0, 0.008, 0.0005};
  // The roofline's structure is RooflineForward's defaults (DeepSeek-V4-Flash, TP = 4, GB200);
  // its three fitted constants come from scripts/fit_forward.py on seed 000's batch-1 512/128
  // table and SPEED-Bench concurrency 1 only (docs/models.md, "Time model").
  p.target_roofline_on = true;
  p.target_roofline.floor_us = kFitFloorUs;
  p.target_roofline.compute_efficiency = kFitComputeEfficiency;
  p.target_roofline.row_latency_us_per_ctx_token = kFitRowLatencyUs;
  // DSpark drafter: one pass over K query tokens per request. The seed gives no drafter time:
  // its fixed cost is fitted to the SPEED-Bench concurrency-1 After TPOT, whose iteration
  // (2.494 ms x 3.27 = 8.2 ms) is the verification's forward plus this (scripts/fit_forward.py).
  p.drafter = {kFitDrafterFixedUs, 2.0, 0.001, 0.0};
  // Host: the engine step's Python work outside the builders (scheduling, input preparation,
  // sampling, output processing). Under async scheduling the builders' dispatch is exposed
  // only where the host's step is longer than the GPU's, so the seed's no-DSpark reduction
  // (0.355 ms of (c)'s ~1 ms of extra dispatch) says the batch-1 engine is within that of
  // host-bound: fitted to it (5.8 %).
  p.sched_us = 4740.0;
  p.sched_us_per_req = 2.0;
  // DSpark adds host work per step, target and draft (rejection bookkeeping, drafter inputs):
  // fitted to the SPEED-Bench concurrency-1 Before TPOT. That iteration exposes all of (c)'s
  // extra dispatch (10.2 - 8.2 ms = 2 suites x 64 launches x 17 us), so the After engine's
  // host step is as long as its GPU step (scripts/fit_forward.py).
  p.spec_host_us = 1153.7;
  // Adaptive verification: solved from the adaptive TPOTs (1.781 / 1.457 ms) against DSpark:
  // GPU work visible with every implementation, host work visible only when serialised.
  p.adaptive_gpu_us = 115.0;
  p.adaptive_host_us = 175.0;
  p.reference_tokens = 96;
  // The engine's host costs (sim/engine_clock.h): fitted on seed 000's batch-1 512/128 table
  // and SPEED-Bench concurrency 1 with the shipped calibration's metadata costs, which carries
  // the same values and their method (docs/models.md, "Time model").
  p.engine.dispatch_us_per_launch = 16.98;  // measured (scripts/measure_engine_costs.py)
  p.engine.gpu_gap_us_per_launch = 0.63;    // measured (the chain on a warm GPU)
  p.engine.sync_us = 1.24;                  // measured
  p.engine.graph_launch_us = 11.63;         // measured
  p.engine.inflight_steps = 2;
  p.engine.compact_launches = 10;
  p.engine.stage_launches = 4;

  // Every implementation's metadata costs come from its registration (ImplInfo::default_cost:
  // the seed's measurements, or labelled estimates derived from another implementation's);
  // one that declares none starts from the seed's After's, marked estimated. A calibration
  // file replaces all of these.
  for (Impl impl : AllImpls()) At(p, impl) = DefaultImplCost(impl);
  return p;
}

namespace {

// A cost of more than 1000 s (per step, token, launch or request) is no GPU's; larger finite
// values would carry the simulated clock past where a double resolves 1 us, or to inf.
constexpr double kMaxCalibrationUs = 1e9;
constexpr const char* kCostExpected = "expected a number of us in [0, 1e9]";

absl::Status Bad(const std::string& path, absl::string_view key, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": key '", key, "': ", what));
}

absl::Status ReadNumber(const std::string& path, const nlohmann::json& obj, absl::string_view key,
                        const std::string& where, double* out) {
  const auto it = obj.find(std::string(key));
  if (it == obj.end()) return absl::OkStatus();
  if (!it->is_number() || !(it->get<double>() >= 0 && it->get<double>() <= kMaxCalibrationUs))
    return Bad(path, absl::StrCat(where, key), kCostExpected);
  *out = it->get<double>();
  return absl::OkStatus();
}

absl::Status CheckKeys(const std::string& path, const nlohmann::json& obj,
                       std::initializer_list<absl::string_view> allowed, const std::string& where) {
  if (!obj.is_object()) {
    if (where.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": expected a JSON object, got ", Abbreviate(obj.dump())));
    return Bad(path, absl::StripSuffix(where, "."), "expected an object");
  }
  for (const auto& [key, value] : obj.items())
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      return Bad(path, absl::StrCat(where, key), "unknown key");
  return absl::OkStatus();
}

absl::Status ReadForward(const std::string& path, const nlohmann::json& obj, const std::string& where,
                         ForwardCoeffs* c) {
  if (auto s = CheckKeys(path, obj, {"fixed_us", "per_token_us", "per_ctx_token_us", "per_attn_pair_us"}, where); !s.ok()) return s;
  for (auto [key, field] : {std::pair{"fixed_us", &c->fixed_us}, std::pair{"per_token_us", &c->per_token_us},
                            std::pair{"per_ctx_token_us", &c->per_ctx_token_us},
                            std::pair{"per_attn_pair_us", &c->per_attn_pair_us}})
    if (auto s = ReadNumber(path, obj, key, where, field); !s.ok()) return s;
  return absl::OkStatus();
}

absl::Status ReadInt(const std::string& path, const nlohmann::json& obj, absl::string_view key,
                     const std::string& where, int32_t* out) {
  const auto it = obj.find(std::string(key));
  if (it == obj.end()) return absl::OkStatus();
  if (!it->is_number_unsigned() || it->get<uint64_t>() > 1000000)
    return Bad(path, absl::StrCat(where, key), "expected an integer in [0, 1000000]");
  *out = it->get<int32_t>();
  return absl::OkStatus();
}

absl::Status ReadEngine(const std::string& path, const nlohmann::json& obj, EngineCostParams* e) {
  if (auto s = CheckKeys(path, obj, {"method", "dispatch_us_per_launch", "gpu_gap_us_per_launch", "sync_us", "graph_launch_us",
                                     "inflight_steps", "compact_launches", "stage_launches"}, "engine."); !s.ok()) return s;
  for (auto [key, field] : {std::pair{"dispatch_us_per_launch", &e->dispatch_us_per_launch},
                            std::pair{"gpu_gap_us_per_launch", &e->gpu_gap_us_per_launch},
                            std::pair{"sync_us", &e->sync_us}, std::pair{"graph_launch_us", &e->graph_launch_us}})
    if (auto s = ReadNumber(path, obj, key, "engine.", field); !s.ok()) return s;
  for (auto [key, field] : {std::pair{"inflight_steps", &e->inflight_steps},
                            std::pair{"compact_launches", &e->compact_launches},
                            std::pair{"stage_launches", &e->stage_launches}})
    if (auto s = ReadInt(path, obj, key, "engine.", field); !s.ok()) return s;
  if (e->inflight_steps < 1) return Bad(path, "engine.inflight_steps", "expected an integer >= 1");
  return absl::OkStatus();
}

// [[size, ms], ...] with sizes ascending strictly.
absl::Status ReadCurve(const std::string& path, const nlohmann::json& v, const std::string& key, CostCurve* out) {
  if (!v.is_array()) return Bad(path, key, "expected an array of [size, ms] pairs");
  CostCurve curve;
  for (const auto& pt : v) {
    if (!pt.is_array() || pt.size() != 2 || !pt[0].is_number() || !pt[1].is_number())
      return Bad(path, key, absl::StrCat("expected [size, ms] pairs, got ", pt.dump()));
    if (!(pt[1].get<double>() <= kMaxCalibrationUs * 1e-3))
      return Bad(path, key, absl::StrCat("expected costs of at most 1e6 ms, got ", pt.dump()));
    curve.push_back({pt[0].get<double>(), pt[1].get<double>()});
  }
  if (auto s = CheckCostCurve(curve, key); !s.ok()) return Bad(path, key, s.message());
  *out = std::move(curve);
  return absl::OkStatus();
}

absl::Status ReadLaunches(const std::string& path, const nlohmann::json& v, const std::string& key,
                          std::array<int32_t, kNumStepCases>* out) {
  if (!v.is_object()) return Bad(path, key, "expected an object keyed by case");
  for (const auto& [case_name, n] : v.items()) {
    int found = -1;
    for (int c = 0; c < kNumStepCases; ++c)
      if (case_name == StepCaseName(static_cast<StepCase>(c))) found = c;
    if (found < 0) return Bad(path, absl::StrCat(key, ".", case_name), "unknown case");
    if (!n.is_number_unsigned() || n.get<uint64_t>() > 100000)
      return Bad(path, absl::StrCat(key, ".", case_name), "expected an integer in [0, 100000]");
    (*out)[found] = n.get<int32_t>();
  }
  return absl::OkStatus();
}

}  // namespace

namespace {

// The value at a key path of Bad's ("metadata.vllm-0.31.gpu_us.decode", "a.b[2]"); keys may hold
// dots, so each step takes the longest key of the object that the path continues with.
const nlohmann::json* ValueAt(const nlohmann::json& doc, absl::string_view key_path) {
  const nlohmann::json* node = &doc;
  while (!key_path.empty()) {
    if (key_path[0] == '.') key_path.remove_prefix(1);
    if (!key_path.empty() && key_path[0] == '[') {
      const size_t close = key_path.find(']');
      size_t i = 0;
      if (close == absl::string_view::npos || !node->is_array() ||
          !absl::SimpleAtoi(key_path.substr(1, close - 1), &i) || i >= node->size())
        return nullptr;
      node = &(*node)[i];
      key_path.remove_prefix(close + 1);
      continue;
    }
    if (!node->is_object()) return nullptr;
    const nlohmann::json* next = nullptr;
    size_t taken = 0;
    for (const auto& [key, value] : node->items()) {
      if (key.size() <= taken || !absl::StartsWith(key_path, key)) continue;
      if (key.size() < key_path.size() && key_path[key.size()] != '.' && key_path[key.size()] != '[') continue;
      next = &value;
      taken = key.size();
    }
    if (next == nullptr) return nullptr;
    node = next;
    key_path.remove_prefix(taken);
  }
  return node;
}

absl::StatusOr<TimeModelParams> ReadCalibration(const std::string& path, const nlohmann::json& doc);

}  // namespace

absl::StatusOr<TimeModelParams> LoadCalibration(const std::string& path) {
  absl::StatusOr<std::string> text = ReadInputFile(path, "--calibration", CalibrationReadLimits());
  if (!text.ok()) return text.status();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based and points just past the bad character.
    const size_t at = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text->size());
    const int64_t line = 1 + std::count(text->begin(), text->begin() + static_cast<std::ptrdiff_t>(at), '\n');
    const size_t line_start = text->rfind('\n', at == 0 ? 0 : at - 1);
    const int64_t column = static_cast<int64_t>(at - (line_start == std::string::npos ? 0 : line_start + 1)) + 1;
    return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ":", column, ": not valid JSON: ", e.what()));
  }
  if (absl::Status once = CheckJsonKeysOnce(*text, path); !once.ok()) return once;
  absl::StatusOr<TimeModelParams> p = ReadCalibration(path, doc);
  if (p.ok()) return p;
  // Bad's "<path>: key '<key path>': <what>" gets the key's line and the value it found.
  const std::string message(p.status().message());
  const std::string lead = absl::StrCat(path, ": key '");
  const size_t key_end = message.find("': ", lead.size());
  if (!absl::StartsWith(message, lead) || key_end == std::string::npos) return p;
  const std::string key = message.substr(lead.size(), key_end - lead.size());
  std::string what = message.substr(key_end + 3);
  const nlohmann::json* got = ValueAt(doc, key);
  if (got != nullptr && absl::StartsWith(what, "expected") && !absl::StrContains(what, ", got "))
    absl::StrAppend(&what, ", got ", Abbreviate(got->dump()));
  return absl::Status(p.status().code(),
                      absl::StrCat(JsonLines::Of(*text).Where(path, key), ": key '", key, "': ", what));
}

namespace {

absl::StatusOr<TimeModelParams> ReadCalibration(const std::string& path, const nlohmann::json& doc) {
  TimeModelParams p = DefaultTimeModelParams();
  p.source = path;
  if (auto s = CheckKeys(path, doc, {"meta", "forward", "host", "metadata", "engine", "adaptive_costs"}, ""); !s.ok()) return s;
  if (doc.contains("engine"))
    if (auto s = ReadEngine(path, doc["engine"], &p.engine); !s.ok()) return s;
  if (doc.contains("adaptive_costs")) {
    const auto& ac = doc["adaptive_costs"];
    if (auto s = CheckKeys(path, ac, {"method", "draft_curve_ms", "verify_curve_ms"}, "adaptive_costs."); !s.ok()) return s;
    for (auto [key, curve] : {std::pair{"draft_curve_ms", &p.draft_curve_ms}, std::pair{"verify_curve_ms", &p.verify_curve_ms}})
      if (ac.contains(key))
        if (auto s = ReadCurve(path, ac[key], absl::StrCat("adaptive_costs.", key), curve); !s.ok()) return s;
  }
  if (doc.contains("meta")) {
    const auto& meta = doc["meta"];
    if (!meta.is_object()) return Bad(path, "meta", "expected an object");
    std::string device;
    for (const char* key : {"gpu", "driver", "date"})
      if (meta.contains(key)) absl::StrAppend(&device, device.empty() ? "" : ", ", key, "=",
                                              meta[key].is_string() ? meta[key].get<std::string>()
                                                                    : meta[key].dump());
    p.source_device = device;
  }
  if (doc.contains("forward")) {
    const auto& fwd = doc["forward"];
    if (auto s = CheckKeys(path, fwd, {"method", "target", "target_roofline", "drafter"}, "forward."); !s.ok()) return s;
    if (fwd.contains("target") && fwd.contains("target_roofline"))
      return Bad(path, "forward.target", "give either the linear target or target_roofline, not both");
    if (fwd.contains("target")) {
      if (auto s = ReadForward(path, fwd["target"], "forward.target.", &p.target); !s.ok()) return s;
      p.target_roofline_on = false;
    }
    if (fwd.contains("target_roofline"))
      if (auto s = ReadRoofline(path, fwd["target_roofline"], &p.target_roofline); !s.ok()) return s;
    if (fwd.contains("drafter"))
      if (auto s = ReadForward(path, fwd["drafter"], "forward.drafter.", &p.drafter); !s.ok()) return s;
  }
  if (doc.contains("host")) {
    const auto& host = doc["host"];
    if (auto s = CheckKeys(path, host, {"method", "sched_us", "sched_us_per_req", "spec_host_us", "adaptive_host_us", "adaptive_gpu_us"}, "host."); !s.ok()) return s;
    for (auto [key, field] : {std::pair{"sched_us", &p.sched_us}, std::pair{"sched_us_per_req", &p.sched_us_per_req},
                              std::pair{"spec_host_us", &p.spec_host_us},
                              std::pair{"adaptive_host_us", &p.adaptive_host_us},
                              std::pair{"adaptive_gpu_us", &p.adaptive_gpu_us}})
      if (auto s = ReadNumber(path, host, key, "host.", field); !s.ok()) return s;
  }
  if (doc.contains("metadata")) {
    const auto& meta = doc["metadata"];
    if (!meta.is_object()) return Bad(path, "metadata", "expected an object keyed by implementation");
    for (const auto& [name, entry] : meta.items()) {
      auto impl = ParseImplKey(name);
      if (!impl.ok()) return Bad(path, absl::StrCat("metadata.", name), impl.status().message());
      const std::string where = absl::StrCat("metadata.", name, ".");
      if (auto s = CheckKeys(path, entry, {"gpu_us", "gpu_us_per_token", "host_us", "host_us_per_req", "serializes_host", "reference_tokens", "launches", "host_syncs"}, where); !s.ok()) return s;
      ImplCost& cost = At(p, *impl);
      if (entry.contains("launches"))
        if (auto s = ReadLaunches(path, entry["launches"], absl::StrCat(where, "launches"), &cost.launches); !s.ok()) return s;
      if (entry.contains("host_syncs")) {
        if (!entry["host_syncs"].is_number_unsigned() || entry["host_syncs"].get<uint64_t>() > 100000)
          return Bad(path, absl::StrCat(where, "host_syncs"), "expected an integer in [0, 100000]");
        cost.host_syncs = entry["host_syncs"].get<int32_t>();
      }
      if (entry.contains("gpu_us")) {
        const auto& cases = entry["gpu_us"];
        if (!cases.is_object()) return Bad(path, absl::StrCat(where, "gpu_us"), "expected an object keyed by case");
        for (const auto& [case_name, v] : cases.items()) {
          int found = -1;
          for (int c = 0; c < kNumStepCases; ++c)
            if (case_name == StepCaseName(static_cast<StepCase>(c))) found = c;
          if (found < 0) return Bad(path, absl::StrCat(where, "gpu_us.", case_name), "unknown case");
          if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= kMaxCalibrationUs))
            return Bad(path, absl::StrCat(where, "gpu_us.", case_name), kCostExpected);
          cost.gpu_us[found] = v.get<double>();
        }
        cost.estimated = false;
      }
      for (auto [key, field] : {std::pair{"gpu_us_per_token", &cost.gpu_us_per_token},
                                std::pair{"host_us", &cost.host_us},
                                std::pair{"host_us_per_req", &cost.host_us_per_req}})
        if (auto s = ReadNumber(path, entry, key, where, field); !s.ok()) return s;
      if (entry.contains("serializes_host")) {
        if (!entry["serializes_host"].is_boolean())
          return Bad(path, absl::StrCat(where, "serializes_host"), "expected true or false");
        cost.serializes_host = entry["serializes_host"].get<bool>();
      }
    }
  }
  return p;
}

}  // namespace

namespace {

bool AdaptivePlan(const StepPlan& plan) {
  return plan.step_case == StepCase::kAdaptiveVerify || plan.step_case == StepCase::kAdaptiveDraft ||
         plan.draft_budget >= 0;
}

}  // namespace

StepWork TimeModel::Work(const StepPlan& plan, Impl impl, bool spec_mode) const {
  const ImplCost& cost = p_.impls[impl.index()];
  const bool adaptive = AdaptivePlan(plan);
  StepWork w;
  // sched_us is the engine step's host work outside the builders (scheduling, input
  // preparation, sampling, output processing); a DSpark draft step is inside its target's
  // engine step (vLLM's sample_tokens -> propose_draft) and pays only the drafter's inputs.
  const bool in_target_engine_step = spec_mode && plan.draft_step;
  w.host_pre_us = (in_target_engine_step ? 0.0 : p_.sched_us + p_.sched_us_per_req * plan.num_reqs_real) +
                  (spec_mode ? p_.spec_host_us : 0.0) + cost.host_us +
                  cost.host_us_per_req * plan.num_reqs_real +
                  (adaptive && !plan.draft_step ? p_.adaptive_host_us : 0.0);
  w.launches = cost.launches[static_cast<int>(plan.step_case)];
  w.meta_gpu_us = MetadataGpuUs(impl, plan.step_case, plan.num_tokens);
  w.syncs = cost.host_syncs;
  if (adaptive && !plan.draft_step && plan.draft_budget < plan.eligible_drafts)
    w.extra_launches = p_.engine.compact_launches;  // compact_batch runs (not skipped)
  w.forward_us = ForwardUs(plan.draft_step, plan.num_tokens, plan.sum_seq_lens, plan.attn_pairs) +
                 (adaptive ? p_.adaptive_gpu_us : 0.0);
  w.stage_sync = adaptive && plan.draft_step;
  // vLLM's V2 runner drafts inside the target's engine step (sample_tokens -> propose_draft).
  w.joins_engine_step = in_target_engine_step;
  return w;
}

StepCost TimeModel::Cost(const StepPlan& plan, Impl impl, bool spec_mode) const {
  const StepWork w = Work(plan, impl, spec_mode);
  EngineClock clock(p_.engine);
  const StepTimes t = clock.Step(w, 0.0);
  StepCost out;
  out.gpu_us = w.meta_gpu_us + w.extra_gpu_us + w.forward_us;
  out.host_us = t.host_us;
  out.wall_us = t.end_us - t.start_us;
  return out;
}

}  // namespace dspark::sim
