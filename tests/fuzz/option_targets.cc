// The option targets (tests/fuzz/fuzz_targets.h): `run` and `sweep` command lines and --config
// files, parsed, validated and (for a sweep) planned, with what the result writers do with them.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sim/model/acceptance.h"
#include "sim/studies/config.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "tests/fuzz/fuzz_require.h"
#include "tests/fuzz/fuzz_targets.h"

namespace dspark::fuzz {
namespace {

// Argv tokens taken from one input; more are ignored, which keeps each run short.
constexpr size_t kMaxArgTokens = 32;
// Sweeps with more points than this are not planned (each point parses a run command line).
constexpr int64_t kMaxPlannedPoints = 16;

// One config file per process (ctest and libFuzzer -jobs run several at once), removed at exit.
class TempConfigFile {
 public:
  TempConfigFile()
      : path_((std::filesystem::temp_directory_path() /
               absl::StrCat("dspark_fuzz_", getpid(), ".cfg"))
                  .string()) {}
  ~TempConfigFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& Write(absl::string_view text) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    FUZZ_REQUIRE(static_cast<bool>(out), "cannot write ", path_);
    return path_;
  }

 private:
  std::string path_;
};

TempConfigFile& ConfigFile() {
  static TempConfigFile* file = new TempConfigFile();
  return *file;
}

struct OptionInput {
  std::vector<std::string> args;  // argv after the subcommand and --config FILE
  std::string config_text;
};

OptionInput SplitOptionInput(absl::string_view text) {
  OptionInput in;
  size_t pos = 0;
  std::vector<std::string> lines;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    absl::string_view line = text.substr(pos, end - pos);
    absl::ConsumeSuffix(&line, "\r");
    if (line == "%%") {
      in.args = std::move(lines);
      if (in.args.size() > kMaxArgTokens) in.args.resize(kMaxArgTokens);
      in.config_text = std::string(text.substr(std::min(end + 1, text.size())));
      return in;
    }
    lines.emplace_back(line);
    pos = end + 1;
  }
  in.config_text = std::string(text);
  return in;
}

// argv for ParseRunArgs / ParseSweepArgs. The harness's --config comes first, so a second one
// among the fuzzed tokens (which could name any file) is rejected as given twice.
struct Argv {
  std::vector<std::string> storage;
  std::vector<char*> pointers;
  Argv(const char* command, const std::string& config_path, const std::vector<std::string>& args) {
    storage = {command, "--config", config_path};
    for (const std::string& a : args) storage.push_back(std::string(a.c_str()));  // up to a NUL
    for (std::string& s : storage) pointers.push_back(s.data());
    pointers.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(storage.size()); }
  char** argv() { return pointers.data(); }
};

// What the result writers do with a config: summary.json and sweep_meta.json dump it.
void CheckDumps(const sim::RunConfig& c) {
  RequireJsonWritable(c.ToJson(), "the run config (summary.json)");
  RequireJsonWritable(c.argv, "argv (summary.json meta)");
}

// A rejected option input: InvalidArgument (or, where a limit is passed, OutOfRange), with a
// message.
void RequireInputError(const absl::Status& s, bool out_of_range_too) {
  FUZZ_REQUIRE(s.code() == absl::StatusCode::kInvalidArgument ||
                   (out_of_range_too && s.code() == absl::StatusCode::kOutOfRange),
               s.ToString());
  FUZZ_REQUIRE(!s.message().empty(), "empty message");
}

// The scheduler and the step plans size and index their arrays with int32 arithmetic on the
// validated limits (sim/model/scheduler.cc, kernels/batch.h); a config Validate accepts must keep it
// in range.
void CheckDerivedSizes(const sim::RunConfig& c) {
  const sim::SchedulerConfig& s = c.scheduler;
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  const int64_t rounded_len = int64_t{s.max_model_len} + s.block_size - 1;
  const int64_t bt_stride = rounded_len / s.block_size + s.bt_stride_pad;
  const int64_t bt_cells = bt_stride * s.max_num_seqs;
  const int64_t draft_slots = int64_t{s.max_num_seqs} * std::max(1, s.spec_k);
  FUZZ_REQUIRE(rounded_len <= kInt32Max && bt_stride <= kInt32Max && bt_cells <= kInt32Max &&
                   draft_slots <= kInt32Max && int64_t{s.max_num_seqs} + 1 <= kInt32Max,
               "max_model_len ", s.max_model_len, ", max_num_seqs ", s.max_num_seqs,
               ", bt_stride_pad ", s.bt_stride_pad, ", spec_k ", s.spec_k, ": block-table row ",
               bt_stride, ", cells ", bt_cells, ", draft slots ", draft_slots);
}

}  // namespace

int FuzzRunConfig(const uint8_t* data, size_t size) {
  const OptionInput in = SplitOptionInput(AsText(data, size));
  const std::string& path = ConfigFile().Write(in.config_text);
  Argv first("run", path, in.args);
  std::string help;
  const absl::StatusOr<sim::RunConfig> c = sim::ParseRunArgs(first.argc(), first.argv(), &help);
  if (!c.ok()) {
    RequireInputError(c.status(), /*out_of_range_too=*/false);
    return 0;
  }
  if (!help.empty()) {
    FUZZ_REQUIRE(absl::StrContains(help, "--trace"), help);
    return 0;
  }
  FUZZ_REQUIRE(c->config_file == path && static_cast<int>(c->argv.size()) == first.argc(),
               c->config_file);
  CheckDumps(*c);
  // Parsing is a function of argv and the file.
  Argv second("run", path, in.args);
  std::string help2;
  const absl::StatusOr<sim::RunConfig> c2 = sim::ParseRunArgs(second.argc(), second.argv(), &help2);
  FUZZ_REQUIRE(c2.ok() && c2->ToJson() == c->ToJson(), "a second parse differs");

  const absl::Status valid = c->Validate();
  if (!valid.ok()) {
    RequireInputError(valid, /*out_of_range_too=*/true);
    return 0;
  }
  // What ExecuteRun relies on after Validate.
  const int k = c->scheduler.spec_k;
  FUZZ_REQUIRE(k >= 1 && k <= sim::kMaxSpecK, "spec_k ", k);
  FUZZ_REQUIRE(!c->impls.empty(), "no implementation");
  FUZZ_REQUIRE(c->trace_path.empty() != c->workload.empty(), "trace and workload");
  CheckDerivedSizes(*c);
  if (!c->acceptance_curve.empty()) {
    const auto curve = sim::ParseAcceptanceCurve(c->acceptance_curve, k);
    FUZZ_REQUIRE(curve.ok() ? curve->size() == static_cast<size_t>(k)
                            : absl::StartsWith(curve.status().message(), "--acceptance-curve: "),
                 "acceptance curve '", c->acceptance_curve, "'");
  }
  if (!c->acceptance_preset.empty()) {
    const auto preset = sim::AcceptancePreset(c->acceptance_preset, k);
    FUZZ_REQUIRE(preset.ok() ? preset->curve.size() == static_cast<size_t>(k)
                             : !preset.status().message().empty(),
                 "acceptance preset '", c->acceptance_preset, "'");
  }
  return 0;
}

int FuzzSweepConfig(const uint8_t* data, size_t size) {
  const OptionInput in = SplitOptionInput(AsText(data, size));
  const std::string& path = ConfigFile().Write(in.config_text);
  Argv args("sweep", path, in.args);
  std::string help;
  const absl::StatusOr<sim::SweepConfig> c = sim::ParseSweepArgs(args.argc(), args.argv(), &help);
  if (!c.ok()) {
    RequireInputError(c.status(), /*out_of_range_too=*/true);
    return 0;
  }
  if (!help.empty()) return 0;
  FUZZ_REQUIRE(c->config_file == path, c->config_file);
  const absl::Status valid = c->Validate();
  FUZZ_REQUIRE(valid.ok(), "ParseSweepArgs returned a config that Validate rejects: ",
               valid.ToString());
  RequireJsonWritable(c->argv, "argv (sweep_meta.json)");
  if (!c->merge_inputs.empty()) return 0;

  const int64_t planned = static_cast<int64_t>(c->workloads.size() + c->traces.size()) *
                          static_cast<int64_t>(c->batch_sizes.size()) *
                          static_cast<int64_t>(c->num_requests.size()) *
                          static_cast<int64_t>(c->concurrency.size()) *
                          static_cast<int64_t>(c->modes.size()) *
                          static_cast<int64_t>(c->impls.size());
  if (planned > kMaxPlannedPoints) return 0;
  const absl::StatusOr<std::vector<sim::SweepPoint>> points = sim::PlanSweep(*c);
  if (!points.ok()) {
    FUZZ_REQUIRE(points.status().code() == absl::StatusCode::kInvalidArgument &&
                     !points.status().message().empty(),
                 points.status().ToString());
    return 0;
  }
  FUZZ_REQUIRE(static_cast<int64_t>(points->size()) == planned, points->size(), " of ", planned);
  absl::flat_hash_set<std::string> ids;
  for (const sim::SweepPoint& p : *points) {
    FUZZ_REQUIRE(!p.id.empty() && ids.insert(p.id).second, "id '", p.id, "'");
    FUZZ_REQUIRE(p.config.argv == p.run_argv, p.id);
    CheckDumps(p.config);
    if (p.skip_reason.empty()) CheckDerivedSizes(p.config);
    else RequireJsonWritable(sim::MakeSkippedRow(p, *c), "a skipped row (sweep.jsonl)");
  }
  return 0;
}

}  // namespace dspark::fuzz
