// `dspark-sim verify`: the exactness check on its own, without a workload. Every selected seed
// case (docs/design.md s.3, "the seed's eight cases") is drawn at several batch sizes and seeds, run
// through every implementation's builder suite (CPU emulation of the same kernel bodies), and
// compared exactly with the reference built from the device view. Prints, per implementation
// and case, how many batches showed stale-host divergence, padding residue and bugs. Exits 1 if
// any implementation has a bug, 2 on bad options.
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/cases.h"
#include "kernels/suite/suite.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/observe/progress.h"
#include "sim/results/result_files.h"
#include "sim/results/result_meta.h"

namespace dspark {
namespace {

namespace po = boost::program_options;

struct VerifyConfig {
  std::vector<SeedCase> cases;
  std::vector<Impl> impls;
  std::vector<int32_t> batches;
  int32_t seeds = 0;
  uint64_t seed = 0;
  sim::ProgressStyle progress = sim::ProgressStyle::kAuto;
  std::string json_path;
  std::vector<std::string> argv;  // the command line, for the --json file's meta
  ModelKind model = ModelKind::kV41;  // the suite's model layout; its states only
  bool what_if_57207 = false;  // --what-if-57207 (ModelConsts::what_if_57207)

  absl::Status Validate() const {
    if (seeds < 1) return absl::InvalidArgumentError(absl::StrFormat("--seeds must be >= 1, got %d", seeds));
    return absl::OkStatus();
  }
};

absl::StatusOr<std::vector<int32_t>> ParseBatches(const std::string& list) {
  std::vector<int32_t> out;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    int32_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1 || v > 4096)
      return absl::InvalidArgumentError(absl::StrFormat("--batch: expected integers in [1, 4096], got '%s'", part));
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError("--batch: expected at least one batch size");
  return out;
}

absl::StatusOr<std::vector<SeedCase>> ParseCases(const std::string& list) {
  if (list == "all") return std::vector<SeedCase>(std::begin(kAllSeedCases), std::end(kAllSeedCases));
  std::vector<SeedCase> out;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    auto c = ParseSeedCase(std::string_view(part.data(), part.size()));
    if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat("--cases: ", c.status().message()));
    out.push_back(*c);
  }
  if (out.empty()) return absl::InvalidArgumentError("--cases: expected at least one case");
  return out;
}

// A state whose release never shipped adaptive verification (before 0.28.0) on an adaptive case:
// a what-if, labelled so in the console and the --json file.
bool AdaptiveWhatIf(Impl impl, SeedCase c) {
  return !AdaptiveVerificationWhatIf(impl).empty() && SeedCaseName(c).rfind("adaptive", 0) == 0;
}

po::options_description VerifyOptions() {
  po::options_description d("dspark-sim verify: every implementation on every seed case, compared exactly");
  d.add_options()("help", "show this help")
      ("cases", po::value<std::string>()->default_value("all"), "seed cases: all or a list of prefill, chunked_prefill, mixed, decode, verify, adaptive_verify, draft, adaptive_draft")
      ("impl", po::value<std::string>()->default_value("all"),
       absl::StrCat("implementations: all or a list of\n", ImplHelpText()).c_str())
      ("batch", po::value<std::string>()->default_value("1,3,16,65"), "batch sizes (real requests)")
      ("seeds", po::value<int32_t>()->default_value(8), "random batches per (case, batch size)")
      ("seed", po::value<uint64_t>()->default_value(0), "first seed")
      ("model", po::value<std::string>()->default_value("v4.1"),
       "model layout: v4.1 (DeepSeek-V4.1) or v4 (DeepSeek-V4); only the states whose release shipped with it run")
      ("what-if-57207", po::bool_switch(), "a labelled what-if: the released vLLM states also build #57207's FP8 prefill segmentation, which no release up to 0.34.0 has (10 more launches per prefill step)")
      ("progress", po::value<std::string>()->default_value("auto"), "stderr: batches checked, rate and ETA; auto (a bar on a terminal, a line every 10 s otherwise), bar, lines, none")
      ("json", po::value<std::string>(), "also write the counts to this JSON file, with each implementation's "
                                         "launches and differing cells per kind on every seed case (batch 16)");
  return d;
}

absl::StatusOr<VerifyConfig> ParseVerifyArgs(int argc, char** argv, std::string* help) {
  const po::options_description d = VerifyOptions();
  DS_ASSIGN_OR_RETURN(const po::variables_map vm, cli::ParseCommandLine(d, argc, argv, "verify", help));
  VerifyConfig cfg;
  if (!help->empty()) return cfg;
  cfg.argv.assign(argv, argv + argc);
  DS_ASSIGN_OR_RETURN(cfg.cases, ParseCases(vm["cases"].as<std::string>()));
  DS_ASSIGN_OR_RETURN(cfg.model, ParseModel(vm["model"].as<std::string>()));
  {
    auto impls = ParseImplListForModel(vm["impl"].as<std::string>(), cfg.model);
    if (!impls.ok()) return absl::InvalidArgumentError(absl::StrCat("--impl: ", impls.status().message()));
    cfg.impls = *std::move(impls);
  }
  DS_ASSIGN_OR_RETURN(cfg.batches, ParseBatches(vm["batch"].as<std::string>()));
  cfg.seeds = vm["seeds"].as<int32_t>();
  cfg.seed = vm["seed"].as<uint64_t>();
  cfg.what_if_57207 = vm["what-if-57207"].as<bool>();
  DS_ASSIGN_OR_RETURN(cfg.progress, sim::ParseProgressStyle(vm["progress"].as<std::string>()));
  if (vm.count("json")) cfg.json_path = vm["json"].as<std::string>();
  return cfg;
}

int VerifyMain(VerifyConfig& cfg) {
  // counts[impl][case] = {batches, stale_host, padding_residue, bug}
  std::map<Impl, std::map<SeedCase, std::array<int64_t, 4>>> counts;
  std::map<Impl, std::unique_ptr<CpuSuite>> suites;
  ModelConsts consts = ModelConstsFor(cfg.model);
  consts.what_if_57207 = cfg.what_if_57207;
  for (Impl impl : cfg.impls) suites[impl] = std::make_unique<CpuSuite>(consts);
  std::vector<std::string> bugs;
  sim::ProgressMeter progress(cfg.progress, stderr, "verify", "batches",
                         static_cast<int64_t>(cfg.cases.size() * cfg.batches.size()) * cfg.seeds);
  int64_t checked = 0;
  for (SeedCase c : cfg.cases) {
    for (int32_t batch : cfg.batches) {
      for (int32_t s = 0; s < cfg.seeds; ++s) {
        CaseOptions opt;
        opt.batch = batch;
        opt.seed = cfg.seed + static_cast<uint64_t>(s) * 7919 + static_cast<uint64_t>(batch);
        opt.padding_reqs = s % 3;
        opt.bt_stride_slack = 1 + s % 5;
        opt.unstored_token_every = s % 4 == 1 ? 7 : 0;
        opt.null_first_block_every = s % 4 == 2 ? 3 : 0;
        opt.fp8_prefill = s % 2 == 0;
        opt.consts = consts;
        auto made = MakeSeedCase(c, opt);
        if (!made.ok()) {
          std::fprintf(stderr, "dspark-sim verify: case %s batch %d seed %d: %s\n", std::string(SeedCaseName(c)).c_str(),
                       batch, s, std::string(made.status().message()).c_str());
          return 1;
        }
        const BatchInputs in = made->Inputs();
        for (Impl impl : cfg.impls) {
          auto r = suites[impl]->Run(impl, in);
          if (!r.ok()) {
            std::fprintf(stderr, "dspark-sim verify: %s on %s: %s\n", std::string(ImplName(impl)).c_str(),
                         made->name.c_str(), std::string(r.status().message()).c_str());
            return 1;
          }
          auto& row = counts[impl][c];
          ++row[0];
          std::array<bool, 3> has{};
          for (const FieldMismatch& m : r->mismatches) {
            has[static_cast<int>(m.kind)] = true;
            if (m.kind == MismatchKind::kBug && bugs.size() < 20)
              bugs.push_back(absl::StrFormat("%s on %s: builder %s field %s index %d expected %d got %d (%d cells)",
                                             ImplName(impl), made->name, m.builder, m.field, m.index, m.expected,
                                             m.actual, m.count));
          }
          for (int k = 0; k < 3; ++k) row[1 + k] += has[k];
        }
        progress.Update(++checked, made->name);
      }
    }
  }
  progress.End(checked, "done");

  std::printf("| impl | case | batches | stale-host | padding residue | bug |\n|---|---|---:|---:|---:|---:|\n");
  // The --json file: the meta block first, as in every result file, then the counts in the
  // registry's and the cases' order.
  nlohmann::ordered_json j;
  if (!cfg.json_path.empty()) {
    j["meta"] = sim::ResultMeta({"dspark-sim verify", "dspark-sim/verify", 1, cfg.argv, cfg.seed});
    j["meta"]["seeds"] = cfg.seeds;
    j["meta"]["first_seed"] = cfg.seed;
    if (cfg.model != ModelKind::kV41) j["meta"]["model"] = std::string(ModelName(cfg.model));
    if (cfg.what_if_57207)
      j["meta"]["what_if_57207"] =
          "what-if: the released vLLM states also build #57207's FP8 prefill segmentation, which no release has";
  }
  int64_t total_bugs = 0;
  for (Impl impl : cfg.impls) {
    for (SeedCase c : cfg.cases) {
      const auto& row = counts[impl][c];
      std::printf("| %s | %s | %lld | %lld | %lld | %lld |\n", std::string(ImplName(impl)).c_str(),
                  std::string(SeedCaseName(c)).c_str(), static_cast<long long>(row[0]),
                  static_cast<long long>(row[1]), static_cast<long long>(row[2]), static_cast<long long>(row[3]));
      j["counts"][std::string(ImplName(impl))][std::string(SeedCaseName(c))] = {
          {"batches", row[0]}, {"stale_host", row[1]}, {"padding_residue", row[2]}, {"bug", row[3]}};
      total_bugs += row[3];
    }
  }
  for (Impl impl : cfg.impls)
    for (SeedCase c : cfg.cases)
      if (AdaptiveWhatIf(impl, c)) {
        std::printf("\nwhat-if: %s on %s: %s\n", std::string(ImplName(impl)).c_str(),
                    std::string(SeedCaseName(c)).c_str(), AdaptiveVerificationWhatIf(impl).c_str());
        break;
      }
  std::printf("\nstale-host counts are expected findings for the host mappings of vllm-pre47474 / vllm-47474 on"
              "\ncases with a stale split, padding residue for the old indexer chain of (a)-(c); any bug count is"
              "\na defect in the implementation named.\n");
  // The seed cases as `bench` draws them (batch 16, default options): launches and cells.
  for (Impl impl : cfg.impls) {
    CpuSuite suite(consts);
    for (SeedCase c : cfg.cases) {
      CaseOptions opt;
      opt.seed = 4;
      opt.consts = consts;
      auto made = MakeSeedCase(c, opt);
      if (!made.ok()) continue;
      auto r = suite.Run(impl, made->Inputs());
      if (!r.ok()) continue;
      std::array<int64_t, 3> cells{};
      for (const FieldMismatch& m : r->mismatches) cells[static_cast<int>(m.kind)] += m.count;
      auto& row = j["seed_cases"][std::string(ImplName(impl))][std::string(SeedCaseName(c))];
      row = {{"launches", r->counters.Launches()}, {"kernels", r->counters.kernels},
             {"stale_host_cells", cells[0]}, {"padding_residue_cells", cells[1]}, {"bug_cells", cells[2]}};
      if (AdaptiveWhatIf(impl, c)) row["what_if"] = AdaptiveVerificationWhatIf(impl);
      if (impl.info().execution != MetadataExecution::kEager)  // vllm-0.34: how vLLM runs the step
        row["graph_launches"] = r->counters.graph_launches;
    }
  }
  for (const std::string& b : bugs) std::fprintf(stderr, "BUG: %s\n", b.c_str());
  if (!cfg.json_path.empty()) {
    if (absl::Status s = sim::WriteFileAtomically(cfg.json_path, j.dump(2) + "\n"); !s.ok())
      return cli::CommandError("verify", "--json: ", s, 2);
  }
  return total_bugs > 0 ? 1 : 0;
}

int VerifyCommand(int argc, char** argv) {
  return cli::RunParsedCommand<VerifyConfig>("verify", argc, argv, ParseVerifyArgs, VerifyMain);
}

const cli::RegisterCommand kRegisterVerify("verify", "check every implementation exactly on the seed cases",
                                           VerifyCommand);

}  // namespace
}  // namespace dspark
