#include "sim/exec/what_if_executor.h"

#include <memory>

#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "sim/exec/executor_registry.h"

namespace dspark::sim {

RecordAvGraphsWhatIf::RecordAvGraphsWhatIf(std::vector<Impl> impls, ModelConsts consts, bool at_first_step,
                                           int32_t max_model_len, int32_t spec_k)
    : impls_(std::move(impls)), consts_(consts), at_first_step_(at_first_step), max_model_len_(max_model_len),
      spec_k_(spec_k), suite_(consts) {
  for (Impl impl : impls_) counts_[impl] = ImplCounts{};
}

namespace {
void Tally(RecordAvGraphsWhatIf::HostFieldCounts& c, bool differs, bool unsafe) {
  c.differs += differs;
  c.unsafe += unsafe;
}
}  // namespace

absl::Status RecordAvGraphsWhatIf::Execute(const StepPlan& plan, const StepArrays& arrays) {
  const BatchInputs in = ToBatchInputs(plan, arrays);
  if (!in.adaptive) return absl::OkStatus();
  ++av_steps_;
  const std::string case_name(StepCaseName(plan.step_case));
  const IndexerHostFields device = IndexerDeviceFields(in);
  // As released: the eager build's host values against the device split.
  for (Impl impl : impls_) {
    const std::optional<IndexerHostFields> f = IndexerHostFieldsOf(impl, in, spec_k_);
    if (!f.has_value()) continue;
    ImplCounts& c = counts_[impl];
    ++c.released_steps;
    Tally(c.released_max, f->write_max_decode_len != device.write_max_decode_len,
          f->write_max_decode_len < device.write_max_decode_len);
    Tally(c.released_uniform, f->decode_is_uniform != device.decode_is_uniform,
          f->decode_is_uniform && !device.decode_is_uniform);
  }
  const std::optional<VllmMetadataGraphKey> key = VllmMetadataKey(in, /*record_adaptive=*/true);
  if (!key.has_value()) return absl::OkStatus();
  ++keyed_steps_;
  auto it = recorded_.find(*key);
  if (it == recorded_.end()) {
    RecordedHostView view;
    if (at_first_step_) {  // this step records: its own host view, replayed exactly now
      view.query_start_loc = arrays.qsl_host;
      view.seq_lens = arrays.seq_lens_host;
      recorded_.emplace(*key, std::move(view));
      return absl::OkStatus();
    }
    it = recorded_.emplace(*key, CaptureDummyHostView(*key, max_model_len_)).first;
  }
  BatchInputs frozen = in;
  frozen.host = HostBatch{it->second.query_start_loc.data(), it->second.seq_lens.data()};
  DS_RETURN_IF_ERROR(suite_.Prepare(in.sizes));
  const SuiteReference want = ComputeSuiteReference(in, suite_.layout(), consts_);
  for (Impl impl : impls_) {
    ImplCounts& c = counts_[impl];
    ++c.replayed;
    absl::StatusOr<SuiteRunResult> r = suite_.Run(impl, frozen, &want);
    if (!r.ok())
      return absl::Status(r.status().code(), absl::StrFormat("what-if record-av-graphs, step %d, impl %s: %s",
                                                             plan.index, ImplName(impl), r.status().message()));
    // The old indexer chain's padding residue is no host read: left out of both tallies.
    bool broken = false;
    for (const FieldMismatch& m : r->mismatches) {
      if (m.kind == MismatchKind::kPaddingResidue) continue;
      const std::string field = m.builder + "." + m.field;
      ++c.by_field[field].steps;
      c.by_field[field].cells += m.count;
      ++c.steps_by_case[field][case_name];
      broken = true;
    }
    c.broken_steps += broken;
    // The same step built eagerly from its own host view, as released: what the freeze adds.
    absl::StatusOr<SuiteRunResult> eager = suite_.Run(impl, in, &want);
    if (!eager.ok()) return eager.status();
    bool eager_broken = false;
    for (const FieldMismatch& m : eager->mismatches) {
      if (m.kind == MismatchKind::kPaddingResidue) continue;
      const std::string field = m.builder + "." + m.field;
      ++c.eager_by_field[field].steps;
      c.eager_by_field[field].cells += m.count;
      eager_broken = true;
    }
    c.eager_broken_steps += eager_broken;
    const std::optional<IndexerHostFields> f = IndexerHostFieldsOf(impl, frozen, spec_k_);
    if (f.has_value()) {
      Tally(c.frozen_max, f->write_max_decode_len != device.write_max_decode_len,
            f->write_max_decode_len < device.write_max_decode_len);
      Tally(c.frozen_uniform, f->decode_is_uniform != device.decode_is_uniform,
            f->decode_is_uniform && !device.decode_is_uniform);
    }
  }
  return absl::OkStatus();
}

absl::Status RecordAvGraphsWhatIf::Finish(nlohmann::json* section) {
  nlohmann::json& out = *section;
  out["what_if"] = at_first_step_ ? "record-av-graphs-at-first-step" : "record-av-graphs";
  out["label"] =
      "what-if: no vLLM release records adaptive verification steps in metadata graphs (0.33.0-0.34.0 record FULL "
      "uniform-decode steps only). Each adaptive step with a key is emulated with the recording's host view and its "
      "own device view.";
  out["recording"] = at_first_step_ ? "the first adaptive step of each key (replays exactly)"
                                    : "vLLM's capture batch (InputBatch.make_dummy: tokens spread evenly over the "
                                      "requests, seq_lens_cpu_upper_bound = max_model_len)";
  out["units"] = "steps: adaptive verification steps; cells: differing elements";
  out["outputs_note"] =
      "outputs / broken_steps: the replays with the recording's host view; eager_outputs / eager_broken_steps: the "
      "same steps built eagerly from their own host view (as a release builds them). The old indexer chain's "
      "padding residue is in neither";
  out["adaptive_steps"] = av_steps_;
  out["keyed_steps"] = keyed_steps_;
  out["distinct_keys"] = static_cast<int64_t>(recorded_.size());
  for (Impl impl : impls_) {
    const ImplInfo& info = impl.info();
    const ImplCounts& c = counts_.at(impl);
    nlohmann::json j;
    j["vllm_release"] = info.vllm_release.empty() ? nlohmann::json() : nlohmann::json(info.vllm_release);
    j["replayed_steps"] = c.replayed;
    j["broken_steps"] = c.broken_steps;
    j["outputs"] = nlohmann::json::object();
    for (const auto& [field, fc] : c.by_field)
      j["outputs"][field] = {{"steps", fc.steps}, {"cells", fc.cells}, {"steps_by_case", c.steps_by_case.at(field)}};
    j["eager_broken_steps"] = c.eager_broken_steps;
    j["eager_outputs"] = nlohmann::json::object();
    for (const auto& [field, fc] : c.eager_by_field) j["eager_outputs"][field] = {{"steps", fc.steps}, {"cells", fc.cells}};
    const auto host = [](const HostFieldCounts& h) { return nlohmann::json{{"differs", h.differs}, {"unsafe", h.unsafe}}; };
    if (info.host_decode_lens != HostDecodeLens::kNotRead) {
      j["host_values_frozen"] = {{"indexer.write_max_decode_len", host(c.frozen_max)},
                                 {"indexer.decode_is_uniform", host(c.frozen_uniform)}};
      j["host_values_as_released"] = {{"steps", c.released_steps},
                                      {"indexer.write_max_decode_len", host(c.released_max)},
                                      {"indexer.decode_is_uniform", host(c.released_uniform)}};
    }
    out["impls"][std::string(info.name)] = std::move(j);
  }
  out["host_value_note"] =
      "differs: steps whose value is not the device split's; unsafe: a write_max_decode_len below the longest device "
      "decode length, or decode_is_uniform for a non-uniform device split";
  return absl::OkStatus();
}

namespace {

const RegisterExecutor kRegisterWhatIf(
    "what-if-record-av-graphs", kWhatIfExecutorOrder,
    [](const ExecutorRequest& request) -> absl::StatusOr<std::unique_ptr<StepExecutor>> {
      if (request.what_if.empty() || request.impls.empty()) return std::unique_ptr<StepExecutor>();
      return std::unique_ptr<StepExecutor>(std::make_unique<RecordAvGraphsWhatIf>(
          request.impls, request.consts, request.what_if == "record-av-graphs-at-first-step",
          request.scheduler.max_model_len, request.scheduler.spec_k));
    });

}  // namespace

}  // namespace dspark::sim
