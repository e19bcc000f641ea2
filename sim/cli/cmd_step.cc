// `dspark-sim step`: one batch by hand (a STEP.json file, a seed case, or the fields as options)
// through every implementation in CPU emulation and the reference; writes every builder's
// outputs and every difference as JSON to a file (--out, default results/step/report.json; "-"
// prints it to stdout) and one line per implementation to the console (workloads/STEP.md).
// Exit 0 when no implementation has a bug, 1 when one has (or fails to run), 2 on bad options,
// a malformed step, or a step larger than the memory it may take.
#include <sys/resource.h>

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "kernels/common/byte_math.h"
#include "kernels/common/status_macros.h"
#include "kernels/prefill_segments.cuh"
#include "kernels/suite/cases.h"
#include "kernels/suite/impl_registry.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/exec/check_memory.h"
#include "sim/results/result_files.h"
#include "sim/studies/one_step.h"
#include "sim/studies/step_input.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {
namespace {

namespace po = boost::program_options;
using json = nlohmann::json;

// The fields that options can set, in STEP.json's names; the option is StepFieldOption(field).
const char* const kListFields[] = {"query_start_loc", "seq_lens", "slot_mapping", "host.query_start_loc",
                                   "host.seq_lens"};
const char* const kIntFields[] = {"num_decodes", "num_tokens", "num_decode_tokens", "capacity",
                                  "bt_width",    "bt_stride",  "spec_k"};

// Where the report goes without --out.
constexpr const char* kDefaultStepReport = "results/step/report.json";

std::string HumanBytes(uint64_t bytes) {
  if (bytes < 10000) return absl::StrCat(bytes, " bytes");
  if (bytes < 10000000) return absl::StrFormat("%.1f KB", static_cast<double>(bytes) / 1e3);
  return absl::StrFormat("%.1f MB", static_cast<double>(bytes) / 1e6);
}

struct StepConfig {
  std::vector<std::string> argv;
  StepInput input;
  std::vector<Impl> impls;
  std::string out;        // the report's file ("-": stdout; empty: kDefaultStepReport)
  std::string emit_step;  // write the step as STEP.json here
};

absl::StatusOr<json> ParseIntList(const std::string& option, const std::string& text) {
  json out = json::array();
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v))
      return absl::InvalidArgumentError(absl::StrCat(option, ": expected comma-separated integers, got '",
                                                     Abbreviate(part), "' in '", Abbreviate(text), "'"));
    out.push_back(v);
  }
  return out;
}

po::options_description StepOptions() {
  po::options_description d(
      "dspark-sim step: one batch through every implementation (CPU emulation) and the reference, as JSON\n"
      "The batch: --json STEP.json (workloads/STEP.md), or --case NAME, or the fields below;\n"
      "fields given as options replace the file's or the case's");
  // clang-format off
  d.add_options()
    ("help,h", "show this help")
    ("json", po::value<std::string>(), "the step as a STEP.json file (workloads/STEP.md)")
    ("case", po::value<std::string>(), "a seed case as the step: prefill, chunked_prefill, mixed, decode, verify, adaptive_verify, draft, adaptive_draft")
    ("batch", po::value<int32_t>()->default_value(4), "with --case: real requests")
    ("seed", po::value<uint64_t>()->default_value(1), "with --case: the case's draws")
    ("qsl", po::value<std::string>(), "query_start_loc [R+1], the device truth, e.g. 0,1,2,8")
    ("seq-lens", po::value<std::string>(), "seq_lens [R]: context including the query")
    ("block-table", po::value<std::string>(), "block ids, rows separated by ';', e.g. '1,2;3;4,5'")
    ("num-decodes", po::value<int64_t>(), "requests [0, n) are decodes")
    ("num-tokens", po::value<int64_t>(), "padded token count N (default qsl[R])")
    ("num-decode-tokens", po::value<int64_t>(), "padded decode tokens N_d (default: N when all decode, else qsl[num_decodes])")
    ("capacity", po::value<int64_t>(), "persistent buffer length (default max(N, R, 1))")
    ("bt-width", po::value<int64_t>(), "used block-table columns (default the longest row)")
    ("bt-stride", po::value<int64_t>(), "block-table row stride (default the width)")
    ("slot-mapping", po::value<std::string>(), "slot_mapping [N] (default from the block table, -1 for padding)")
    ("host-qsl", po::value<std::string>(), "the host's query_start_loc [R+1] (default the device's)")
    ("host-seq-lens", po::value<std::string>(), "the host's seq_lens [R] (default the device's)")
    ("prefill-dtype", po::value<std::string>(), "fp8 (segmented prefill, default) or bf16")
    ("spec-k", po::value<int64_t>(), "DSpark K (compressor ring capacity), default 5")
    ("model", po::value<std::string>(), "model layout: v4.1 (DeepSeek-V4.1, default) or v4 (DeepSeek-V4); sets the step's \"model\"")
    ("impl", po::value<std::string>()->default_value("all"),
     absl::StrCat("implementations: all or a list of\n", ImplHelpText()).c_str())
    ("out", po::value<std::string>(), absl::StrCat("write the JSON report to this file (default ", kDefaultStepReport, "; - prints it to stdout); the console gets one line per implementation").c_str())
    ("emit-step", po::value<std::string>(), "also write the step as a STEP.json file (e.g. to edit a --case)");
  // clang-format on
  return d;
}

// The step's fields as one STEP.json object: the file's or the case's, then the options'.
absl::StatusOr<json> StepObject(const po::variables_map& vm, StepInputSource* source) {
  if (vm.count("json") && vm.count("case"))
    return absl::InvalidArgumentError("--json and --case: give one of them (options may change either's fields)");
  json j = json::object();
  source->origin = "options";
  if (vm.count("json")) {
    source->origin = vm["json"].as<std::string>();
    DS_ASSIGN_OR_RETURN(j, ReadStepFile(source->origin, &source->lines));
  } else if (vm.count("case")) {
    DS_ASSIGN_OR_RETURN(const SeedCase c, ParseSeedCase(vm["case"].as<std::string>()));
    CaseOptions o;
    if (vm.count("model")) {
      DS_ASSIGN_OR_RETURN(const ModelKind m, ParseModel(vm["model"].as<std::string>()));
      o.consts = ModelConstsFor(m);
    }
    o.batch = vm["batch"].as<int32_t>();
    o.seed = vm["seed"].as<uint64_t>();
    if (o.batch < 1 || o.batch > 4096)
      return absl::InvalidArgumentError(absl::StrCat("--batch: expected an integer in [1, 4096], got ", o.batch));
    DS_ASSIGN_OR_RETURN(CaseBatch batch, MakeSeedCase(c, o));
    source->origin = absl::StrCat("--case ", batch.name);
    j = json(StepInputJson(StepInput{std::move(batch), o.consts}));  // the case as a STEP.json document, not re-parsed
  }
  for (const char* field : kListFields) {
    const std::string option = StepFieldOption(field);
    if (!vm.count(option.substr(2))) continue;
    DS_ASSIGN_OR_RETURN(json list, ParseIntList(option, vm[option.substr(2)].as<std::string>()));
    if (std::string(field).rfind("host.", 0) == 0) j["host"][std::string(field).substr(5)] = std::move(list);
    else j[field] = std::move(list);
    source->from_options.insert(field);
  }
  for (const char* field : kIntFields) {
    const std::string option = StepFieldOption(field);
    if (!vm.count(option.substr(2))) continue;
    j[field] = vm[option.substr(2)].as<int64_t>();
    source->from_options.insert(field);
  }
  if (vm.count("block-table")) {
    json rows = json::array();
    const std::string text = vm["block-table"].as<std::string>();
    for (absl::string_view row : absl::StrSplit(text, ';')) {
      DS_ASSIGN_OR_RETURN(json ids, ParseIntList("--block-table", std::string(row)));
      rows.push_back(std::move(ids));
    }
    j["block_table"] = std::move(rows);
    source->from_options.insert("block_table");
  }
  if (vm.count("prefill-dtype")) {
    const std::string dtype = vm["prefill-dtype"].as<std::string>();
    if (dtype != "fp8" && dtype != "bf16")
      return absl::InvalidArgumentError(absl::StrCat("--prefill-dtype: expected fp8 or bf16, got '", Abbreviate(dtype), "'"));
    j["fp8_prefill"] = dtype == "fp8";
    source->from_options.insert("fp8_prefill");
  }
  if (vm.count("model")) {
    DS_ASSIGN_OR_RETURN(const ModelKind m, ParseModel(vm["model"].as<std::string>()));
    j["model"] = std::string(ModelFlag(m));
  }
  if (!vm.count("json") && !vm.count("case") && !j.contains("query_start_loc") && !j.contains("seq_lens"))
    return absl::InvalidArgumentError("no step given: pass --json STEP.json, --case NAME, or --qsl, --seq-lens, "
                                      "--block-table and --num-decodes (see dspark-sim step --help)");
  return j;
}

absl::StatusOr<StepConfig> ParseStepArgs(int argc, char** argv, std::string* help) {
  const po::options_description desc = StepOptions();
  DS_ASSIGN_OR_RETURN(const po::variables_map vm, cli::ParseCommandLine(desc, argc, argv, "step", help));
  StepConfig c;
  if (!help->empty()) return c;
  c.argv.assign(argv, argv + argc);
  StepInputSource source;
  DS_ASSIGN_OR_RETURN(const json j, StepObject(vm, &source));
  DS_ASSIGN_OR_RETURN(c.input, ParseStepInput(j, source));
  auto impls = ParseImplListForModel(vm["impl"].as<std::string>(), c.input.consts.model);
  if (!impls.ok()) return absl::InvalidArgumentError(absl::StrCat("--impl: ", impls.status().message()));
  c.impls = *impls;
  if (vm.count("out")) c.out = vm["out"].as<std::string>();
  if (vm.count("emit-step")) c.emit_step = vm["emit-step"].as<std::string>();
  return c;
}

// [bytes] a bound of what one step takes: every implementation's buffers and the reference's at
// the step's capacity and block-table stride (int32 per-token fields, swa_indices, two indexers'
// expanded rows, the prefill segments, three int64 slot fields), each implementation's scratch
// at the step's tokens (the chain's SWA tensors and per-token vectors, expanded rows), the
// step's block tables, and the JSON report of the outputs over the step's tokens (nlohmann holds
// 16 bytes per number, its text up to 12 more); a quarter more and 64 MiB for what the formula
// leaves out (the binary, allocator slack). Measured: capacity 100000 peaks at 434 MB of
// 0.57 GB allowed; capacity 10000 at 50 of 114 MB.
uint64_t StepBytes(const StepInput& input, size_t impls) {
  const BatchSizes& z = input.batch.sizes;
  const uint64_t cap = static_cast<uint64_t>(std::max(z.capacity, 1));
  const uint64_t n = static_cast<uint64_t>(std::max(z.num_tokens, 1));
  const uint64_t stride = static_cast<uint64_t>(std::max(z.bt_stride, 1));
  const uint64_t reqs = static_cast<uint64_t>(std::max(z.num_reqs, 1));
  const uint64_t rows = static_cast<uint64_t>(std::max(z.num_decode_tokens, 1));
  const uint64_t w = static_cast<uint64_t>(input.consts.swa_window);
  const uint64_t segments = static_cast<uint64_t>(
      PrefillSegmentBound(z.num_reqs, static_cast<int32_t>(cap), input.consts.prefill_segment));
  const uint64_t image_int32s =
      SatAdd(SatMul(cap, 2 + w), SatAdd(SatMul(2, SatAdd(SatMul(rows, stride), SatMul(4, cap))), SatAdd(SatMul(2, segments), 2)));
  const uint64_t image = SatAdd(SatMul(4, image_int32s), SatMul(24, cap));
  const uint64_t scratch = SatMul(4, SatAdd(SatMul(6 * w, n), SatAdd(SatMul(3, rows, stride), SatMul(64, n))));
  const uint64_t step = SatMul(4, SatAdd(SatMul(3, reqs, stride), SatMul(rows, stride)));
  const uint64_t report = SatMul(impls + 1, SatMul(28, SatAdd(SatMul(n, 2 + w + 6), SatMul(2, rows, stride))));
  const uint64_t formula = SatAdd(SatAdd(SatMul(impls + 1, image), SatMul(impls, scratch)), SatAdd(step, report));
  return SatAdd(SatAdd(formula, formula / 4), uint64_t{64} << 20);
}

int StepMain(StepConfig& c) {
  // Refused before anything is allocated for the implementations.
  const uint64_t need = StepBytes(c.input, c.impls.size());
  uint64_t limit = AvailableHostMemory();
  const char* limit_name = "available";
  if (rlimit as{}; getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && as.rlim_cur < limit) {
    limit = as.rlim_cur;
    limit_name = "allowed by the address-space limit (ulimit -v)";
  }
  if (need > limit)
    return cli::CommandError(
        "step",
        absl::ResourceExhaustedError(absl::StrFormat(
            "this step needs up to %.2f GB of host memory (capacity %d tokens, block-table stride %d, %d rows, %d "
            "implementations), more than the %.2f GB %s; lower capacity or bt_stride, or pass fewer --impl",
            static_cast<double>(need) / 1e9, c.input.batch.sizes.capacity, c.input.batch.sizes.bt_stride,
            c.input.batch.sizes.num_reqs, static_cast<int64_t>(c.impls.size()), static_cast<double>(limit) / 1e9,
            limit_name)),
        2);
  if (!c.emit_step.empty())
    if (absl::Status s = WriteFileAtomically(c.emit_step, StepInputJson(c.input).dump(1) + "\n"); !s.ok())
      return cli::CommandError("step", "--emit-step: ", s, 2);
  auto result = RunOneStep(c.input, c.impls, c.argv);
  if (!result.ok()) return cli::CommandError("step", result.status(), 2);
  const std::string text = StepReportText(result->report);
  if (c.out == "-") {
    std::fputs(text.c_str(), stdout);
  } else {
    // The full report (every builder's outputs: MBs at large steps) goes to a file; the
    // console gets one line per implementation and where the report is.
    const std::string out = c.out.empty() ? kDefaultStepReport : c.out;
    if (c.out.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(out).parent_path(), ec);
    }
    if (absl::Status s = WriteFileAtomically(out, text); !s.ok()) return cli::CommandError("step", "--out: ", s, 2);
    for (const auto& [name, e] : result->report["impls"].items()) {
      if (e.contains("error")) {
        std::printf("%-16s error: %s\n", name.c_str(), e["error"].get<std::string>().c_str());
        continue;
      }
      const auto& k = e["differing_fields"];
      std::printf("%-16s %3lld launches  differing fields: stale-host %lld, padding residue %lld, bug %lld\n",
                  name.c_str(), static_cast<long long>(e["launches"].get<int64_t>()),
                  static_cast<long long>(k["stale_host"].get<int64_t>()),
                  static_cast<long long>(k["padding_residue"].get<int64_t>()),
                  static_cast<long long>(k["bug"].get<int64_t>()));
    }
    std::printf("wrote the full report (%s) to %s%s\n", HumanBytes(text.size()).c_str(), out.c_str(),
                c.out.empty() ? " (--out FILE to choose, --out - for stdout)" : "");
  }
  return result->bug_fields > 0 || result->failed_impls > 0 ? 1 : 0;
}

int StepCommand(int argc, char** argv) {
  return cli::RunParsedCommand<StepConfig>("step", argc, argv, ParseStepArgs, StepMain);
}

const cli::RegisterCommand kRegisterStep(
    "step", "one batch by hand (STEP.json or options) through every implementation and the reference, as JSON",
    StepCommand);

}  // namespace
}  // namespace dspark::sim
