#include "tests/fuzz/layout_check.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/suite/impl_registry.h"
#include "nlohmann/json.hpp"
#include "sim/studies/step_input.h"
#include "tests/fuzz/fuzz_targets.h"
#include "tests/fuzz/layout_gen.h"

namespace dspark::fuzz {

namespace {

// What vLLM builds from the host mapping of (a) and (b) (docs/design.md s.3): token_to_req_indices,
// SWA's indices and lengths, the compressor ring's slots. Compressed slots, the indexer and the
// #57207 segments read device state (or exact prefill rows) in every state.
bool HostMappingField(const FieldMismatch& m) {
  return m.builder == "token_map" || m.builder == "swa" || m.field == "ring_slots";
}

// Writes `b` as a STEP.json file (workloads/STEP.md), so that `dspark-sim step` shows every
// builder's outputs for it; the report line saying where, or why it cannot (STEP.json asks for
// capacity >= R, which a layout need not have).
std::string SaveAsStepFile(const CaseBatch& b) {
  const nlohmann::ordered_json j = sim::StepInputJson(sim::StepInput{b, ModelConsts{}});
  const absl::StatusOr<sim::StepInput> back =
      sim::ParseStepInput(nlohmann::json::parse(j.dump()), sim::StepInputSource{"fuzz layout", {}});
  if (!back.ok()) return absl::StrCat("(not expressible as STEP.json: ", back.status().message(), ")\n");
  static std::atomic<int> files{0};
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  const std::string path =
      (dir / absl::StrFormat("dspark-fuzz-layout-%d-%d.step.json", static_cast<int>(getpid()), files++)).string();
  std::ofstream out(path);
  out << j.dump(1) << "\n";  // indented: ReadStepFile takes lines of at most 64 KiB
  if (!out) return "(could not write " + path + ")\n";
  return "this step alone on fresh buffers: dspark-sim step --json " + path + "\n";
}

}  // namespace

void LayoutRunStats::Add(const LayoutRunStats& o) {
  steps += o.steps;
  runs += o.runs;
  launches += o.launches;
  host_syncs += o.host_syncs;
  for (size_t k = 0; k < cells.size(); ++k) cells[k] += o.cells[k];
  stale_split_steps += o.stale_split_steps;
  multi_segment_steps += o.multi_segment_steps;
}

void CountStep(const CaseBatch& b, const ModelConsts& consts, LayoutRunStats& stats) {
  ++stats.steps;
  if (b.host_qsl != b.qsl) ++stats.stale_split_steps;
  if (!b.fp8_prefill) return;
  for (int32_t r = b.sizes.num_decodes; r < b.sizes.num_reqs; ++r)
    if (b.qsl[r + 1] - b.qsl[r] > consts.prefill_segment) {
      ++stats.multi_segment_steps;
      return;
    }
}

std::vector<std::string> ClassificationViolations(Impl impl, const CaseBatch& b, const std::vector<FieldMismatch>& ms) {
  const ImplTraits& traits = impl.info().traits;
  const bool split_stale = b.host_qsl != b.qsl;
  std::vector<std::string> out;
  for (const FieldMismatch& m : ms) {
    const std::string where = absl::StrCat(m.builder, "/", m.field, " (", m.count, " cells, first at ", m.index,
                                           ": expected ", m.expected, ", got ", m.actual, ")");
    switch (m.kind) {
      case MismatchKind::kBug:
        out.push_back("bug: " + where);
        break;
      case MismatchKind::kStaleHost:
        if (!traits.reads_host_boundaries)
          out.push_back("stale-host from an implementation that reads no host split: " + where);
        else if (!split_stale)
          out.push_back("stale-host although the host split is right (only a host seq_lens bound differs): " + where);
        else if (!HostMappingField(m))
          out.push_back("stale-host in a field vLLM does not build from the host mapping: " + where);
        break;
      case MismatchKind::kPaddingResidue:
        if (!traits.old_indexer_chain || m.field != "bt_out_padding")
          out.push_back("padding residue outside the old indexer chain's bt_out_padding: " + where);
        break;
    }
  }
  return out;
}

std::string ViolationReport(Impl impl, size_t step, const CaseBatch& b, const std::vector<std::string>& violations,
                            const std::vector<FieldMismatch>& ms) {
  return absl::StrCat("implementation ", std::string(ImplName(impl)), ", step ", step, ":\n  ",
                      absl::StrJoin(violations, "\n  "), "\n", DescribeLayout(b), "differences:\n",
                      DescribeMismatches(ms), SaveAsStepFile(b));
}

std::string CheckStepsOnCpu(const std::vector<CaseBatch>& steps, const ModelConsts& consts, LayoutRunStats* stats) {
  CpuSuite suite(consts);
  LayoutRunStats local;
  std::string report;
  for (size_t i = 0; i < steps.size() && report.empty(); ++i) {
    const CaseBatch& b = steps[i];
    const BatchInputs in = b.Inputs();
    CountStep(b, consts, local);
    const absl::Status prepared = suite.Prepare(in.sizes);
    if (!prepared.ok()) {
      report = absl::StrCat("step ", i, ": CpuSuite::Prepare: ", prepared.ToString(), "\n", DescribeLayout(b));
      break;
    }
    const SuiteReference want = ComputeSuiteReference(in, suite.layout(), consts);
    for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
      ++local.runs;
      const absl::StatusOr<SuiteRunResult> r = suite.Run(impl, in, &want);
      if (!r.ok()) {
        report = ViolationReport(impl, i, b, {"failed on a valid layout: " + r.status().ToString()}, {});
        break;
      }
      local.launches += r->counters.Launches();
      local.host_syncs += r->counters.host_syncs;
      for (const FieldMismatch& m : r->mismatches) local.cells[static_cast<int>(m.kind)] += m.count;
      const std::vector<std::string> violations = ClassificationViolations(impl, b, r->mismatches);
      if (!violations.empty()) {
        report = ViolationReport(impl, i, b, violations, r->mismatches);
        break;
      }
    }
  }
  if (stats != nullptr) stats->Add(local);
  return report;
}

int FuzzBatchLayout(const uint8_t* data, size_t size) {
  ByteChoices choices(data, size);
  const ModelConsts consts;
  const std::vector<CaseBatch> steps = DrawSteps(choices, LayoutProfile{}, consts);
  const std::string report = CheckStepsOnCpu(steps, consts);
  if (report.empty()) return 0;
  std::fprintf(stderr, "fuzz invariant violated: batch layout differential check\n%s", report.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace dspark::fuzz
