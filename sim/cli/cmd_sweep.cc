// `dspark-sim sweep`: option parsing and the subcommand; the sweep itself is sim/studies/sweep*.cc.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

#include <boost/program_options.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/workload/generators.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "sim/model/time_model.h"
#include "sim/options/option_errors.h"
#include "sim/options/option_text.h"
#include "sim/workload/input_file.h"

namespace dspark::sim {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

constexpr char kEpilogue[] = R"(
Every other option is given as is to each point's `dspark-sim run` (see dspark-sim run --help),
e.g. --no-check, --spec-k 4, --max-num-batched-tokens 32768, --acceptance-preset, --calibration.
Not allowed there: --max-num-seqs (use --batch-size),
--step-log and --dump-workload (per-run files: run one point alone with the command line that
sweep_meta.json lists for it). In a --config file, a switch of run means what it means in run's
own --config: `no-check = true` (yes, on, 1) passes --no-check, `check = false` passes it too.

Points. The grid is workload x batch size x request count x concurrency x mode x time-impl
(time-impl innermost). A combination that `run` rejects (e.g. adaptive mode with --batch-size above the
top-B block limit) is recorded as "skipped" with the reason, and the sweep goes on. A point's id
is a slug of its axes plus a hash of its whole run config; OUT/points/<id>/ holds its run.

Results. OUT/sweep.jsonl gets one row per finished point, written and fsync'ed when the point
ends; OUT/sweep.csv is rewritten from it at the end, and OUT/vllm/summary.json (the ok rows as
one JSON list, for vLLM's sweep plotter: vllm bench sweep plot OUT/vllm); OUT/sweep_meta.json has meta (argv, git SHA,
schema version), the axes and every planned point with its `run` command line. sweep_meta.json
holds the fingerprint of what the results are made from (the options of every point's run, the
SHA-1 of each trace and of the calibration, the git SHA and whether the tree had uncommitted
changes); every row carries its digest. One process writes an OUT at a time (a lock file,
OUT/.dspark-sim.lock, released when the process ends); a second one fails at once.

Resume. A killed sweep loses only the point it was running: rerun the same command with
--resume; points whose row says ok or skipped are not run again (failed ones are), and a last
line cut short by the kill is dropped. A resume whose inputs differ from the fingerprint is
refused, naming what differs: start fresh with another --out.

Shards. --shard i/n runs the comparison groups g with g % n == i; a group is the points that
differ only in --time-impl, so one shard (one GPU) measures every implementation of its groups side
by side. Give each shard its own --out, then merge:
  one node, one process per GPU:
    for i in 0 1 2 3; do CUDA_VISIBLE_DEVICES=$i dspark-sim sweep ... --executor gpu \
        --shard $i/4 --out results/sweep.$i > sweep.$i.log 2>&1 & done; wait
  Slurm array (sbatch --array=0-7 --gpus=1):
    dspark-sim sweep ... --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT \
        --out results/sweep.$SLURM_ARRAY_TASK_ID --resume
  merge (rows deduplicated by point id, point folders copied, missing points listed):
    dspark-sim sweep --merge results/sweep.* --out results/sweep
The merge writes into a new or empty --out, refuses shards of different fingerprints, and takes
point ids from the rows only as single safe folder names.
)";

po::options_description VisibleOptions() {
  po::options_description d("dspark-sim sweep: run `dspark-sim run` over a grid of axes");
  // clang-format off
  d.add_options()
    ("help,h", "print this help")
    ("config", po::value<std::string>(), "read options from FILE (key = value lines, same keys; the command line wins; relative trace/calibration paths are relative to FILE)")
    ("seed", po::value<uint64_t>()->default_value(0), "seed of every point's run")
    ("workload", po::value<std::string>(), "axis: comma list of presets (speed-8k, batch1-512, chat); default speed-8k when no --trace is given")
    ("trace", po::value<std::vector<std::string>>()->multitoken(), "axis: trace files (repeat the option or list several), after the presets")
    ("concurrency", po::value<std::string>()->default_value("1,8,128,1024"), "axis: client concurrency values (0 = no limit)")
    ("max-concurrency", po::value<std::string>(), "vLLM's name of --concurrency")
    ("batch-size", po::value<std::string>()->default_value("256"), "axis: max_num_seqs values")
    ("num-requests", po::value<std::string>()->default_value("auto"), "axis: request counts; auto = max(32, 2 x concurrency) as the seed ran, or run's default at concurrency 0")
    ("num-prompts", po::value<std::string>(), "vLLM's name of --num-requests")
    ("mode", po::value<std::string>()->default_value("none,dspark,adaptive"), "axis: none, dspark, adaptive")
    ("model", po::value<std::string>()->default_value("v4.1"), "model layout of every point (run --model): v4.1 or v4; all in --time-impl and --impl means its states")
    ("time-impl", po::value<std::string>()->default_value("all"), absl::StrCat("axis: implementations that time the steps (each point's run --time-impl): a comma list, or all, of\n", ImplHelpText()).c_str())
    ("impl", po::value<std::string>()->default_value("same"), "implementations each point's metadata check runs (run --impl): same (the point's --time-impl), all, or a comma list")
    ("executor", po::value<std::string>()->default_value("cpu"), "what runs a point: cpu (the simulator) or gpu (when built with the GPU executor)")
    ("out", po::value<std::string>()->default_value("results/sweep"), "output directory")
    ("resume", po::bool_switch(), "continue the sweep in --out, skipping points already recorded")
    ("shard", po::value<std::string>()->default_value("0/1"), "i/n: run only comparison groups g with g % n == i")
    ("merge", po::value<std::vector<std::string>>()->multitoken(), "merge these sweep folders into --out instead of running")
    ("progress", po::value<std::string>()->default_value("auto"), "stderr: the points, metered by their tokens (prompt + output) with ETA, and a long point's own run meter; auto (a bar on a terminal, lines otherwise), bar, lines, none");
  // clang-format on
  return d;
}

po::options_description HiddenOptions() {
  po::options_description d;
  d.add_options()("max-points", po::value<int64_t>()->default_value(-1),
                  "tests: stop after this many points were run, as if killed");
  return d;
}

std::string ResolveAgainst(const std::string& path, const std::string& config_file) {
  if (path.empty() || fs::path(path).is_absolute() || config_file.empty()) return path;
  return (fs::path(config_file).parent_path() / path).lexically_normal().string();
}

// Comma list of integers >= min_value (and "auto" when auto_value is given), no repeats.
absl::StatusOr<std::vector<int64_t>> ParseIntList(const std::string& option, const std::string& text,
                                                 int64_t min_value, const int64_t* auto_value = nullptr) {
  std::vector<int64_t> values;
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    piece = absl::StripAsciiWhitespace(piece);
    int64_t v = 0;
    if (auto_value != nullptr && piece == "auto") {
      v = *auto_value;
    } else if (!absl::SimpleAtoi(piece, &v) || v < min_value) {
      return absl::InvalidArgumentError(absl::StrCat("--", option, ": expected a comma list of integers >= ",
                                                     min_value, auto_value ? " or auto" : "", ", got '",
                                                     Abbreviate(piece), "' in '", Abbreviate(text), "'"));
    }
    if (std::find(values.begin(), values.end(), v) != values.end())
      return absl::InvalidArgumentError(absl::StrCat("--", option, ": '", Abbreviate(piece), "' is listed twice in '", Abbreviate(text), "'"));
    values.push_back(v);
  }
  return values;
}

absl::StatusOr<std::vector<int32_t>> ParseInt32List(const std::string& option, const std::string& text,
                                                   int32_t min_value) {
  auto wide = ParseIntList(option, text, min_value);
  if (!wide.ok()) return wide.status();
  std::vector<int32_t> values;
  for (int64_t v : *wide) {
    if (v > std::numeric_limits<int32_t>::max())
      return absl::OutOfRangeError(absl::StrCat("--", option, ": ", v, " is too large"));
    values.push_back(static_cast<int32_t>(v));
  }
  return values;
}

std::string OptionName(const std::string& token) {
  if (token.rfind("--", 0) != 0) return "";
  return token.substr(2, token.find('=') == std::string::npos ? std::string::npos : token.find('=') - 2);
}

absl::Status CheckPassThrough(const std::vector<std::string>& tokens) {
  for (const std::string& token : tokens) {
    const std::string name = OptionName(token);
    if (name == "max-num-seqs")
      return absl::InvalidArgumentError("--max-num-seqs: sweep sets it per point; use the --batch-size axis");
    if (name == "check-impl")
      return absl::InvalidArgumentError(
          "--check-impl: no such option; the implementations each point's metadata check runs are --impl "
          "(as in run), and the axis of implementations that time the steps is --time-impl");
    if (name == "step-log" || name == "dump-workload")
      return absl::InvalidArgumentError(absl::StrCat(
          "--", name, " writes one file per run; run a single point with dspark-sim run instead "
          "(sweep_meta.json lists each point's run command line)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SweepConfig> ParseSweepArgs(int argc, char** argv, std::string* help) {
  SweepConfig c;
  for (int i = 0; i < argc; ++i) c.argv.emplace_back(argv[i]);
  const po::options_description visible = VisibleOptions();
  po::options_description all;
  all.add(visible).add(HiddenOptions());
  po::variables_map vm;
  std::vector<std::string> cli_pass, file_pass;
  bool cli_trace = false;
  // UTF-8 only (options end up in sweep_meta.json), nothing that hangs Boost (sim/options/option_text.h).
  if (auto s = CheckOptionArgs(argc, argv); !s.ok()) return s;
  try {
    const po::parsed_options parsed = po::command_line_parser(argc, argv).options(all).style(kCommandLineStyle).allow_unregistered().run();
    // A word that is not an option is kept only as the value of a pass-through option before it
    // (--spec-k 4); `run` checks those. Any other stray word is refused, never dropped.
    for (size_t i = 0; i < parsed.options.size(); ++i) {
      const po::option& o = parsed.options[i];
      if (o.position_key < 0 && !o.string_key.empty()) continue;
      const po::option* before = i > 0 ? &parsed.options[i - 1] : nullptr;
      const bool a_value = before != nullptr && before->unregistered && before->original_tokens.size() == 1 &&
                           before->original_tokens[0].find('=') == std::string::npos;
      if (!a_value) {
        po::parsed_options alone(parsed.description);
        alone.options.push_back(o);
        return RefusePositional(alone, "sweep");
      }
    }
    if (auto s = CheckUnsignedValues(all, parsed); !s.ok()) return s;
    cli_pass = po::collect_unrecognized(parsed.options, po::include_positional);
    po::store(parsed, vm);
    cli_trace = vm.count("trace") > 0;
    if (vm.count("config")) {
      c.config_file = vm["config"].as<std::string>();
      absl::StatusOr<std::string> text = ReadConfigFile(c.config_file);
      if (!text.ok()) return text.status();
      if (auto s = CheckOptionFile(*text, c.config_file); !s.ok()) return s;
      std::istringstream in(*text);
      // Boost's messages do not say that they are about the file.
      try {
        const po::parsed_options from_file = po::parse_config_file(in, all, /*allow_unregistered=*/true);
        if (auto s = CheckUnsignedValues(all, from_file, c.config_file + ": "); !s.ok()) return s;
        std::set<std::string> cli_names;
        for (const std::string& t : cli_pass) cli_names.insert(OptionName(t));
        for (const po::option& o : from_file.options) {
          if (!o.unregistered || cli_names.count(o.string_key)) continue;
          const std::string value = o.value.empty() ? "" : o.value.front();
          if (IsRunSwitch(o.string_key)) {
            // `run` reads the same line as this switch on or off (true, yes, on, 1 / false, no,
            // off, 0); off passes the opposite switch where there is one (check = false is
            // --no-check, no-check = false is --check).
            const std::string word = absl::AsciiStrToLower(absl::StripAsciiWhitespace(value));
            const bool on = word.empty() || word == "true" || word == "yes" || word == "on" || word == "1";
            if (!on && word != "false" && word != "no" && word != "off" && word != "0")
              return absl::InvalidArgumentError(absl::StrCat(c.config_file, ": key '", o.string_key,
                                                             "': expected true, false, yes, no, on, off, 1 or 0, got '",
                                                             Abbreviate(value), "'"));
            const bool negated = absl::StartsWith(o.string_key, "no-");
            const std::string opposite = negated ? o.string_key.substr(3) : "no-" + o.string_key;
            const std::string pass = on ? "--" + o.string_key : IsRunSwitch(opposite) ? "--" + opposite : "";
            // `check = false` and `no-check = true` together are one --no-check.
            if (!pass.empty() && std::find(file_pass.begin(), file_pass.end(), pass) == file_pass.end())
              file_pass.push_back(pass);
            continue;
          }
          file_pass.push_back("--" + o.string_key);
          if (value != "true" && !value.empty())
            file_pass.push_back(o.string_key == "calibration" ? ResolveAgainst(value, c.config_file) : value);
        }
        po::store(from_file, vm);
      } catch (const po::error& e) {
        return absl::InvalidArgumentError(
            absl::StrCat(c.config_file, ": ", e.what(), " (see dspark-sim sweep --help)"));
      }
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return absl::InvalidArgumentError(absl::StrCat(e.what(), " (see dspark-sim sweep --help)"));
  }
  if (vm.count("help")) {
    std::ostringstream text;
    text << visible << kEpilogue;
    *help = text.str();
    return c;
  }
  c.run_args = file_pass;
  c.run_args.insert(c.run_args.end(), cli_pass.begin(), cli_pass.end());
  if (auto s = CheckPassThrough(c.run_args); !s.ok()) return s;
  c.out_dir = vm["out"].as<std::string>();

  if (vm.count("merge")) {
    c.merge_inputs = vm["merge"].as<std::vector<std::string>>();
    for (const char* name : {"workload", "trace", "concurrency", "max-concurrency", "batch-size",
                             "num-requests", "num-prompts", "mode", "model", "time-impl", "impl", "shard",
                             "max-points"})
      if (vm.count(name) && !vm[name].defaulted())
        return absl::InvalidArgumentError(absl::StrCat("--merge takes only the folders and --out; got --", name));
    if (vm["resume"].as<bool>()) return absl::InvalidArgumentError("--merge takes only the folders and --out; got --resume");
    if (!c.run_args.empty())
      return absl::InvalidArgumentError(absl::StrCat("--merge takes only the folders and --out; got ",
                                                     absl::StrJoin(c.run_args, " ")));
    if (auto s = c.Validate(); !s.ok()) return s;
    return c;
  }

  c.seed = vm["seed"].as<uint64_t>();
  c.workloads.clear();
  if (vm.count("workload"))
    for (absl::string_view w : absl::StrSplit(vm["workload"].as<std::string>(), ',', absl::SkipWhitespace()))
      c.workloads.emplace_back(absl::StripAsciiWhitespace(w));
  if (vm.count("trace"))
    for (const std::string& t : vm["trace"].as<std::vector<std::string>>()) {
      // --trace takes several words, so a stray '-' after it would become a trace named '-' (and
      // the command's meaning would depend on where the word stands): '-' is no file here.
      if (t == "-")
        return absl::InvalidArgumentError(
            "--trace: '-' is no trace file (standard input is not read); give the path of a trace");
      c.traces.push_back(cli_trace ? t : ResolveAgainst(t, c.config_file));
    }
  if (c.workloads.empty() && c.traces.empty()) c.workloads = {"speed-8k"};
  for (const std::string& w : c.workloads)
    if (auto preset = FindWorkloadPreset(w); !preset.ok())
      return absl::InvalidArgumentError(absl::StrCat("--workload: ", preset.status().message()));

  // vLLM's names are aliases of the axes: either spelling, not both.
  std::string conc_text = vm["concurrency"].as<std::string>();
  std::string requests_text = vm["num-requests"].as<std::string>();
  for (const auto& [alias, name, text] : {std::tuple{"max-concurrency", "concurrency", &conc_text},
                                          std::tuple{"num-prompts", "num-requests", &requests_text}}) {
    if (!vm.count(alias)) continue;
    if (!vm[name].defaulted())
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " and --", alias, " are the same option: give one"));
    *text = vm[alias].as<std::string>();
  }
  auto conc = ParseInt32List("concurrency", conc_text, 0);
  if (!conc.ok()) return conc.status();
  c.concurrency = *conc;
  auto batch = ParseInt32List("batch-size", vm["batch-size"].as<std::string>(), 1);
  if (!batch.ok()) return batch.status();
  c.batch_sizes = *batch;
  const int64_t auto_requests = SweepConfig::kAutoRequests;
  auto requests = ParseIntList("num-requests", requests_text, 1, &auto_requests);
  if (!requests.ok()) return requests.status();
  c.num_requests = *requests;
  c.modes.clear();
  for (absl::string_view m : absl::StrSplit(vm["mode"].as<std::string>(), ',')) {
    auto mode = ParseSpecMode(absl::StripAsciiWhitespace(m));
    if (!mode.ok()) return mode.status();
    if (std::find(c.modes.begin(), c.modes.end(), *mode) != c.modes.end())
      return absl::InvalidArgumentError(absl::StrCat("--mode: '", m, "' is listed twice"));
    c.modes.push_back(*mode);
  }
  {
    absl::StatusOr<ModelKind> model = ParseModel(vm["model"].as<std::string>());
    if (!model.ok()) return absl::InvalidArgumentError(absl::StrCat("--model: ", model.status().message()));
    c.model = *model;
  }
  auto impls = ParseImplListForModel(vm["time-impl"].as<std::string>(), c.model);
  if (!impls.ok()) return absl::InvalidArgumentError(absl::StrCat("--time-impl: ", impls.status().message()));
  c.impls = *impls;
  c.check_impls = vm["impl"].as<std::string>();
  if (c.check_impls != "same") {
    auto checked = ParseImplListForModel(c.check_impls, c.model);
    if (!checked.ok()) return absl::InvalidArgumentError(absl::StrCat("--impl: ", checked.status().message()));
  }
  c.executor = vm["executor"].as<std::string>();
  c.resume = vm["resume"].as<bool>();
  const std::string shard = vm["shard"].as<std::string>();
  const std::vector<std::string> parts = absl::StrSplit(shard, '/');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &c.shard_index) || !absl::SimpleAtoi(parts[1], &c.shard_count))
    return absl::InvalidArgumentError(absl::StrCat("--shard: expected i/n (e.g. 0/4), got '", Abbreviate(shard), "'"));
  c.max_points = vm["max-points"].as<int64_t>();
  auto progress = ParseProgressStyle(vm["progress"].as<std::string>());
  if (!progress.ok()) return progress.status();
  c.progress = *progress;
  if (auto s = c.Validate(); !s.ok()) return s;
  return c;
}

namespace {

int SweepMain(SweepConfig& config) {
  if (!config.merge_inputs.empty()) {
    auto merged = MergeSweeps(config.merge_inputs, config.out_dir, config.argv);
    if (!merged.ok()) return cli::CommandError("sweep --merge", merged.status(), 1);
    std::printf("dspark-sim sweep --merge: %lld points from %zu folders (%lld duplicate rows dropped) into %s\n",
                static_cast<long long>(merged->rows), config.merge_inputs.size(),
                static_cast<long long>(merged->duplicates), config.out_dir.c_str());
    if (!merged->missing.empty())
      std::fprintf(stderr, "dspark-sim sweep --merge: warning: %zu planned points have no row: %s\n",
                   merged->missing.size(), absl::StrJoin(merged->missing, " ").c_str());
    return 0;
  }
  // A pass-through option that every point's run refuses (--spec-k 0) leaves a sweep of skipped
  // rows only: that is the command line's error, not a result, refused before anything is written.
  bool any_checks = false;  // whether a point's run checks (its parsed config, not the words)
  if (auto plan = PlanSweep(config); plan.ok()) {
    int64_t in_shard = 0, skipped = 0;
    std::string reason;
    for (const SweepPoint& p : *plan) {
      if (!InShard(p, config)) continue;
      ++in_shard;
      any_checks = any_checks || p.config.check;
      if (p.skip_reason.empty()) continue;
      ++skipped;
      if (reason.empty()) reason = p.skip_reason;
    }
    if (in_shard > 0 && skipped == in_shard)
      return cli::CommandError(
          "sweep", absl::InvalidArgumentError(absl::StrCat("every point is an invalid combination, none ran: ", reason)),
          2);
  }
  auto outcome = RunSweep(config, stderr);
  if (!outcome.ok())
    return cli::CommandError("sweep", outcome.status(), absl::IsInvalidArgument(outcome.status()) ? 2 : 1);
  std::printf("dspark-sim sweep: %lld points planned, %lld in shard %d/%d: %lld already done, %lld run "
              "(%lld failed), %lld invalid combinations skipped%s\n",
              static_cast<long long>(outcome->planned), static_cast<long long>(outcome->in_shard),
              config.shard_index, config.shard_count, static_cast<long long>(outcome->already_done),
              static_cast<long long>(outcome->ran), static_cast<long long>(outcome->failed),
              static_cast<long long>(outcome->skipped_invalid),
              outcome->stopped_early ? "; stopped early (--max-points)" : "");
  std::vector<std::string> timed;
  for (Impl impl : config.impls) timed.emplace_back(ImplKey(impl));
  std::printf("  timed by (--time-impl): %s; each point's check (--impl): %s\n", absl::StrJoin(timed, ",").c_str(),
              !any_checks ? "none (--no-check)"
              : config.check_impls == "same" ? "same (the point's own)"
                                             : config.check_impls.c_str());
  std::printf("  wrote %s/{sweep.jsonl,sweep.csv,sweep_meta.json,points/}\n", config.out_dir.c_str());
  return outcome->failed > 0 ? 1 : 0;
}

}  // namespace

int SweepCommand(int argc, char** argv) {
  return cli::RunParsedCommand<SweepConfig>("sweep", argc, argv, ParseSweepArgs, SweepMain);
}

namespace {
const cli::RegisterCommand kRegisterSweep("sweep", "run a grid of points (concurrency, batch, impl, mode, workload)",
                                          SweepCommand);
}  // namespace

}  // namespace dspark::sim
