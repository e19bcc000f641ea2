#include "sim/studies/one_step.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"

#include "kernels/common/status_macros.h"
#include "kernels/suite/reference_fields.h"
#include "kernels/suite/suite.h"
#include "sim/results/result_meta.h"

namespace dspark::sim {
namespace {

using ojson = nlohmann::ordered_json;

ojson FieldsJson(const std::vector<ReferenceField>& fields) {
  ojson out = ojson::object();
  for (const ReferenceField& f : fields) {
    out[f.name] = {{"dtype", f.int64_field ? "int64" : "int32"}, {"shape", f.shape}};
    if (f.int64_field) out[f.name]["values"] = f.i64;
    else out[f.name]["values"] = f.i32;
  }
  return out;
}

// An implementation's output image seen through the reference's fields: the same names,
// regions and shapes as ReferenceFields gives for `want` (one table, kernels/suite/regions.h), so
// that the two line up cell by cell (ratio 2's seq_out is compared as seq // 2 over [0, N_d)).
std::vector<ReferenceField> ImageFields(const SuiteImage& img, const SuiteReference& want, const SuiteLayout& layout,
                                        const BatchInputs& in, const ModelConsts& consts, const ImplTraits& traits) {
  SuiteImage view_of = img;  // View() hands out mutable pointers
  return OutputFields(view_of.View(), want, in, layout, consts, traits);
}

ojson DifferencesJson(const std::vector<FieldMismatch>& mismatches, std::array<int64_t, 3>* fields_by_kind) {
  ojson out = ojson::array();
  for (const FieldMismatch& m : mismatches) {
    ++(*fields_by_kind)[static_cast<int>(m.kind)];
    out.push_back({{"builder", m.builder},
                   {"field", m.field},
                   {"kind", std::string(MismatchKindName(m.kind))},
                   {"first_index", m.index},
                   {"expected", m.expected},
                   {"actual", m.actual},
                   {"cells", m.count}});
  }
  return out;
}

ojson TraitsJson(const ImplTraits& t) {
  return {{"reads_host_boundaries", t.reads_host_boundaries},
          {"reads_host_totals", t.reads_host_totals},
          {"graph_capturable", t.graph_capturable},
          {"serializes_host", t.serializes_host},
          {"old_indexer_chain", t.old_indexer_chain},
          {"writes_prefill_metadata", t.writes_prefill_metadata}};
}

void AppendText(const ojson& v, int indent, std::string* out) {
  const bool flat = !v.is_structured() || v.empty() ||
                    (v.is_array() && std::all_of(v.begin(), v.end(), [](const ojson& e) { return e.is_primitive(); }));
  if (flat) {
    out->append(v.dump());
    return;
  }
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  out->append(v.is_array() ? "[\n" : "{\n");
  size_t i = 0;
  for (auto it = v.begin(); it != v.end(); ++it, ++i) {
    out->append(pad);
    if (v.is_object()) absl::StrAppend(out, ojson(it.key()).dump(), ": ");
    AppendText(*it, indent + 2, out);
    out->append(i + 1 < v.size() ? ",\n" : "\n");
  }
  absl::StrAppend(out, std::string(static_cast<size_t>(indent), ' '), v.is_array() ? "]" : "}");
}

}  // namespace

std::string StepReportText(const ojson& report) {
  std::string out;
  AppendText(report, 0, &out);
  return out + "\n";
}

absl::StatusOr<OneStepResult> RunOneStep(const StepInput& input, const std::vector<Impl>& impls,
                                         const std::vector<std::string>& argv) {
  const BatchInputs in = input.batch.Inputs();
  CpuSuite suite(input.consts);
  DS_RETURN_IF_ERROR(suite.Prepare(in.sizes));
  const SuiteLayout layout = suite.layout();
  const SuiteReference want = ComputeSuiteReference(in, layout, input.consts);

  OneStepResult result;
  ojson& j = result.report;
  j["meta"] = ResultMeta({"dspark-sim step", "dspark-step-result", kStepResultSchemaVersion, argv, std::nullopt});
  j["step"] = StepInputJson(input);
  j["host_view_stale"] = HostViewStale(in);
  j["reference"] = FieldsJson(ReferenceFields(want, in, layout, input.consts));
  ojson& out = j["impls"] = ojson::object();
  std::array<int64_t, 3> total{};
  for (Impl impl : impls) {
    ojson& e = out[std::string(ImplName(impl))];
    e["traits"] = TraitsJson(impl.info().traits);
    auto run = suite.Run(impl, in, &want);
    if (!run.ok()) {
      ++result.failed_impls;
      e["error"] = run.status().ToString();
      continue;
    }
    DS_ASSIGN_OR_RETURN(const SuiteImage image, suite.Image(impl));
    std::array<int64_t, 3> kinds{};
    e["launches"] = run->counters.Launches();
    e["host_syncs"] = run->counters.host_syncs;
    e["differences"] = DifferencesJson(run->mismatches, &kinds);
    e["differing_fields"] = {{"stale_host", kinds[0]}, {"padding_residue", kinds[1]}, {"bug", kinds[2]}};
    e["outputs"] = FieldsJson(ImageFields(image, want, layout, in, input.consts, impl.info().traits));
    for (int k = 0; k < 3; ++k) total[k] += kinds[k];
  }
  result.bug_fields = total[2];
  j["differing_fields"] = {{"stale_host", total[0]}, {"padding_residue", total[1]}, {"bug", total[2]},
                           {"failed_impls", result.failed_impls}};
  return result;
}

}  // namespace dspark::sim
