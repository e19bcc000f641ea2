// Result files under kills: the built `dspark-sim` binary (tests/common/spawn_util.h) is started as a child
// process and SIGKILLed at pseudo-random moments (fixed seed). At every kill, each result file
// under its final name parses whole; a killed sweep resumes, loses at most the point it was
// running, and ends with the results of an uninterrupted sweep. Also: `run` leaves no
// temporary files and every output it writes parses.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/studies/run.h"
#include "sim/studies/sweep.h"
#include "tests/common/result_file_checks.h"
#include "tests/common/spawn_util.h"
#include "tests/common/temp_folders.h"


namespace dspark::sim {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using ::dspark::testing_util::CheckResultFile;
using ::dspark::testing_util::ParseCsvTable;
using ::dspark::testing_util::SlurpFile;
using ::dspark::testing_util::TemporariesUnder;
using Clock = std::chrono::steady_clock;

std::string TempDir(const std::string& name) {
  return ::dspark::testing_util::ProcessTempDir("results_on_kill", name, /*create=*/false);
}

// ---- Child processes ----

// Starts the built dspark-sim with `args`; its stdout and stderr go to `output`.
pid_t Spawn(const std::vector<std::string>& args, const fs::path& output) {
  return ::dspark::testing_util::StartSim(args, {}, output.string());
}

// True when the child has exited (its wait status in `status`), without blocking.
bool Exited(pid_t pid, int* status) { return ::waitpid(pid, status, WNOHANG) == pid; }

// Waits up to `timeout` for the child; kills it when it runs longer.
bool WaitFor(pid_t pid, std::chrono::milliseconds timeout, int* status) {
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    if (Exited(pid, status)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, status, 0);
  return false;
}

// Sleeps `us` microseconds unless the child exits first; true when it exited.
bool SleepOrExit(pid_t pid, int64_t us, int* status) {
  const auto end = Clock::now() + std::chrono::microseconds(us);
  while (Clock::now() < end) {
    if (Exited(pid, status)) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return Exited(pid, status);
}

// ---- Sweep results ----

// The tiny sweep of tests/common/sweep_test_util.h as a command line: 16 points, 4 skipped, 12 run.
std::vector<std::string> TinySweepArgs(const std::string& out) {
  return {"sweep", "--workload", "batch1-512", "--concurrency", "1,2", "--batch-size", "2,2000",
          "--num-requests", "2", "--mode", "none,adaptive", "--time-impl", "chain,fused", "--no-check",
          "--progress", "lines", "--out", out};
}
constexpr int kTinyPoints = 16, kTinyRun = 12;

// Columns that differ between two runs of the same point: host wall-clock times.
const std::set<std::string> kWallColumns = {"wall_s", "sim_wall_s"};

std::map<std::string, ojson> RowsById(const std::vector<ojson>& rows) {
  std::map<std::string, ojson> out;
  for (ojson row : rows) {
    for (const std::string& col : kWallColumns) row.erase(col);
    out[row["point_id"].get<std::string>()] = row;
  }
  return out;
}

// sweep.csv as {point_id: cells}, without the wall-time columns.
std::map<std::string, std::vector<std::string>> CsvById(const fs::path& path) {
  std::map<std::string, std::vector<std::string>> out;
  auto table = ParseCsvTable(SlurpFile(path));
  EXPECT_TRUE(table.ok()) << path << ": " << table.status();
  if (!table.ok() || table->empty()) return out;
  const std::vector<std::string>& header = (*table)[0];
  EXPECT_EQ(header[0], "point_id");
  for (size_t r = 1; r < table->size(); ++r) {
    std::vector<std::string> cells;
    for (size_t c = 0; c < header.size(); ++c)
      if (!kWallColumns.count(header[c])) cells.push_back((*table)[r][c]);
    out[(*table)[r][0]] = cells;
  }
  return out;
}

// Point ids whose row says ok or skipped: what a resume does not run again.
std::set<std::string> DoneIds(const std::vector<ojson>& rows) {
  std::set<std::string> ids;
  for (const ojson& row : rows)
    if (row["status"] == "ok" || row["status"] == "skipped") ids.insert(row["point_id"].get<std::string>());
  return ids;
}

// steps.csv or requests.csv of a point whose run was killed: its summary.json says "running", and
// the file is written as the run goes, so its last line may be cut.
bool StreamedByARunningRun(const fs::path& file) {
  const std::string name = file.filename().string();
  if (name != "steps.csv" && name != "requests.csv") return false;
  const nlohmann::json s =
      nlohmann::json::parse(SlurpFile(file.parent_path() / "summary.json"), nullptr, /*allow_exceptions=*/false);
  return s.is_object() && s.value("status", std::string()) == "running";
}

// The CSV up to its last complete line parses.
absl::Status CheckWholeLinesOf(const fs::path& file) {
  std::string text = SlurpFile(file);
  const size_t nl = text.rfind('\n');
  text.erase(nl == std::string::npos ? 0 : nl + 1);
  if (text.empty()) return absl::OkStatus();
  auto table = ParseCsvTable(text);
  if (!table.ok()) return absl::DataLossError(absl::StrCat(file.string(), ": ", table.status().message()));
  return absl::OkStatus();
}

struct Snapshot {
  SweepLog log;
  std::string valid_text;  // sweep.jsonl up to its last whole line
  int temporaries = 0;
  int unrecorded_point_folders = 0;
};

// What a kill left in `dir`; every file under a final name must parse whole (sweep.jsonl may
// end in one cut line, which its reader drops), every recorded point's files must be there.
Snapshot CheckAfterKill(const fs::path& dir, const std::string& when) {
  Snapshot snap;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tmp.") != std::string::npos) {
      ++snap.temporaries;
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || name == "sweep.jsonl") continue;
    if (StreamedByARunningRun(it->path())) {
      const absl::Status lines = CheckWholeLinesOf(it->path());
      EXPECT_TRUE(lines.ok()) << when << ": " << lines;
      continue;
    }
    const absl::Status whole = CheckResultFile(it->path());
    EXPECT_TRUE(whole.ok()) << when << ": " << whole;
  }
  auto log = ReadSweepLog((dir / "sweep.jsonl").string());
  EXPECT_TRUE(log.ok()) << when << ": " << log.status();
  if (!log.ok()) return snap;
  snap.log = *log;
  snap.valid_text = SlurpFile(dir / "sweep.jsonl").substr(0, static_cast<size_t>(log->valid_bytes));
  const std::set<std::string> done = DoneIds(log->rows);
  for (const ojson& row : log->rows) {
    if (row["status"] != "ok") continue;
    for (const char* file : {"summary.json", "steps.csv", "requests.csv", "perf.json"})
      EXPECT_TRUE(fs::exists(dir / row["out"].get<std::string>() / file))
          << when << ": recorded point " << row["point_id"] << " lacks " << file;
  }
  if (fs::is_directory(dir / "points"))
    for (const auto& e : fs::directory_iterator(dir / "points")) {
      const std::string id = e.path().filename().string();
      if (id.find(".tmp.") == std::string::npos && !done.count(id)) ++snap.unrecorded_point_folders;
    }
  return snap;
}

// "sweep: resuming: X of this shard's N points are already in ..." -> X, or -1 when absent.
int64_t ResumedCount(const std::string& output) {
  const std::string key = "sweep: resuming: ";
  const size_t at = output.find(key);
  if (at == std::string::npos) return -1;
  const size_t end = output.find(' ', at + key.size());
  int64_t n = -1;
  if (!absl::SimpleAtoi(output.substr(at + key.size(), end - at - key.size()), &n)) return -1;
  return n;
}

TEST(ResultsOnKill, RunLeavesNoTemporariesAndEveryOutputParses) {
  const fs::path dir = TempDir("run");
  std::vector<std::string> args = {"run", "--workload", "batch1-512", "--num-requests", "3", "--no-check",
                                   "--out", (dir / "out").string(), "--step-log", (dir / "out" / "steps.log").string(),
                                   "--dump-workload", (dir / "workload.jsonl").string()};
  fs::create_directories(dir);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::string help;
  auto config = ParseRunArgs(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(config.ok()) << config.status();
  // Twice: the second run replaces every file of the first.
  for (int pass = 0; pass < 2; ++pass) {
    auto result = ExecuteRun(*config);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(TemporariesUnder(dir), std::vector<fs::path>{});
    std::set<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      names.insert(fs::relative(e.path(), dir).string());
      const absl::Status whole = CheckResultFile(e.path());
      EXPECT_TRUE(whole.ok()) << whole;
    }
    EXPECT_EQ(names, (std::set<std::string>{"out/summary.json", "out/steps.csv", "out/requests.csv",
                                            "out/perf.json", "out/steps.log", "workload.jsonl"}));
    auto steps = ParseCsvTable(SlurpFile(dir / "out" / "steps.csv"));
    ASSERT_TRUE(steps.ok()) << steps.status();
    EXPECT_EQ(static_cast<int64_t>(steps->size()), result->steps + 1) << "a header and one line per step";
    auto requests = ParseCsvTable(SlurpFile(dir / "out" / "requests.csv"));
    ASSERT_TRUE(requests.ok()) << requests.status();
    EXPECT_EQ(requests->size(), 4u);
    const std::string jsonl = SlurpFile(dir / "workload.jsonl");
    EXPECT_EQ(std::count(jsonl.begin(), jsonl.end(), '\n'), 3);
    const std::string log = SlurpFile(dir / "out" / "steps.log");
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log.back(), '\n');
  }
}

// `run` killed at random moments while it replaces an earlier run's files: summary.json is
// always whole. Until the new run starts it is the earlier run's ("ok"), beside that run's whole
// files; from then on it says "running" until the new run replaces it, and the files it streams
// (steps.csv, requests.csv) are whole up to their last complete line.
TEST(ResultsOnKill, KilledRunLeavesOnlyWholeFiles) {
  const fs::path dir = TempDir("run_killed");
  fs::create_directories(dir);
  const std::vector<std::string> args = {"run", "--workload", "batch1-512", "--num-requests", "3", "--no-check",
                                         "--out", (dir / "out").string(),
                                         "--step-log", (dir / "out" / "steps.log").string()};
  int status = 0;
  const pid_t first = Spawn(args, dir / "first.txt");
  ASSERT_GT(first, 0);
  const auto t0 = Clock::now();
  ASSERT_TRUE(WaitFor(first, std::chrono::seconds(60), &status)) << SlurpFile(dir / "first.txt");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << SlurpFile(dir / "first.txt");
  const int64_t run_us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
  std::mt19937_64 rng(0x5eed0001);
  int landed = 0;
  for (int k = 0; k < 6; ++k) {
    const pid_t pid = Spawn(args, dir / "killed.txt");
    ASSERT_GT(pid, 0);
    if (SleepOrExit(pid, static_cast<int64_t>(rng() % static_cast<uint64_t>(run_us * 3 / 4 + 1)), &status)) continue;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ++landed;
    const absl::Status summary_whole = CheckResultFile(dir / "out" / "summary.json");
    ASSERT_TRUE(summary_whole.ok()) << "kill " << k << ": " << summary_whole;
    const std::string state =
        nlohmann::json::parse(SlurpFile(dir / "out" / "summary.json")).value("status", std::string());
    ASSERT_TRUE(state == "ok" || state == "running") << "kill " << k << ": status " << state;
    const std::set<std::string> streamed = {"steps.csv", "requests.csv"};
    for (const auto& e : fs::recursive_directory_iterator(dir / "out")) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || name.find(".tmp.") != std::string::npos || name == ".dspark-sim.lock") continue;
      if (state == "running" && streamed.count(name)) {
        const absl::Status lines = CheckWholeLinesOf(e.path());
        EXPECT_TRUE(lines.ok()) << "kill " << k << ": " << lines;
        continue;
      }
      const absl::Status whole = CheckResultFile(e.path());
      EXPECT_TRUE(whole.ok()) << "kill " << k << ": " << whole;
    }
    if (state == "ok")
      for (const char* file : {"steps.csv", "requests.csv", "perf.json", "steps.log"})
        EXPECT_TRUE(fs::exists(dir / "out" / file)) << "kill " << k << ": the earlier run's " << file << " is gone";
  }
  std::printf("[ killed run ] %d of 6 kills landed while it ran (one run: %.1f ms)\n", landed, run_us / 1000.0);
  EXPECT_GE(landed, 1) << "no kill landed while the run was writing";
  // A run that completes clears what the killed ones left.
  const pid_t last = Spawn(args, dir / "last.txt");
  ASSERT_GT(last, 0);
  ASSERT_TRUE(WaitFor(last, std::chrono::seconds(60), &status)) << SlurpFile(dir / "last.txt");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << SlurpFile(dir / "last.txt");
  EXPECT_EQ(TemporariesUnder(dir / "out"), std::vector<fs::path>{});
  EXPECT_EQ(nlohmann::json::parse(SlurpFile(dir / "out" / "summary.json"))["status"], "ok");
}

// The kill test: a sweep is SIGKILLed again and again and resumed each time.
TEST(ResultsOnKill, SweepKilledAtRandomMomentsResumesToTheUninterruptedResults) {
  const fs::path reference = TempDir("sweep_reference");
  const fs::path dir = TempDir("sweep_killed");
  const fs::path outputs = TempDir("sweep_outputs");
  fs::create_directories(outputs);

  int status = 0;
  const auto t0 = Clock::now();
  const pid_t ref = Spawn(TinySweepArgs(reference.string()), outputs / "reference.txt");
  ASSERT_GT(ref, 0) << "cannot start '" << ::dspark::testing_util::SimBinary() << "'";
  ASSERT_TRUE(WaitFor(ref, std::chrono::seconds(120), &status)) << SlurpFile(outputs / "reference.txt");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << SlurpFile(outputs / "reference.txt");
  const int64_t point_us =
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count() / kTinyRun;
  auto ref_log = ReadSweepLog((reference / "sweep.jsonl").string());
  ASSERT_TRUE(ref_log.ok()) << ref_log.status();
  ASSERT_EQ(ref_log->rows.size(), static_cast<size_t>(kTinyPoints));

  // Kill moments: a random wait after the start (catches the startup: sweep_meta.json, the
  // skipped rows, a resume's truncation), or once the log has grown by 0-2 rows plus a random
  // part of one point's time (catches a point's own writes and the row append).
  std::mt19937_64 rng(0x6b696c6c);
  constexpr int kKills = 10;
  Snapshot previous;
  std::string previous_when = "the start";
  int landed = 0, cut_tails = 0, temporaries_seen = 0, invocation = 0, injected_at = -1,
      resumes_checked = 0;
  bool finished = false;
  for (; invocation < 40 && !finished; ++invocation) {
    std::vector<std::string> args = TinySweepArgs(dir.string());
    if (invocation > 0) args.push_back("--resume");
    const fs::path output = outputs / absl::StrCat("invocation", invocation, ".txt");
    const std::string when = absl::StrCat("kill ", landed + 1, " (invocation ", invocation, ")");
    const pid_t pid = Spawn(args, output);
    ASSERT_GT(pid, 0);
    if (landed >= kKills) {
      ASSERT_TRUE(WaitFor(pid, std::chrono::seconds(120), &status)) << SlurpFile(output);
      finished = true;
    } else if (rng() % 3 == 0) {
      finished = SleepOrExit(pid, static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * point_us + 1)), &status);
    } else {
      const size_t target = previous.log.rows.size() + rng() % 3;
      const int64_t extra_us = static_cast<int64_t>(rng() % static_cast<uint64_t>(point_us + 1));
      while (!(finished = Exited(pid, &status))) {
        auto now = ReadSweepLog((dir / "sweep.jsonl").string());
        if (now.ok() && now->rows.size() >= target) break;
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
      if (!finished) finished = SleepOrExit(pid, extra_us, &status);
    }
    const std::string out_text = SlurpFile(output);
    if (finished) {
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << when << ": " << out_text;
    } else {
      // Rows seen just before the kill; the kill must not take any of them away.
      auto before = ReadSweepLog((dir / "sweep.jsonl").string());
      ASSERT_TRUE(before.ok()) << before.status();
      ASSERT_EQ(::kill(pid, SIGKILL), 0);
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFSIGNALED(status)) << when << ": " << out_text;
      ++landed;
    }

    const Snapshot snap = CheckAfterKill(dir, when);
    cut_tails += snap.log.partial_tail ? 1 : 0;
    temporaries_seen += snap.temporaries;
    // What the previous invocations recorded is still there, byte for byte, and the resume
    // knew all of it: of the work done, only the point in flight when a kill came is lost.
    EXPECT_EQ(snap.valid_text.substr(0, previous.valid_text.size()), previous.valid_text)
        << when << ": rows recorded before " << previous_when << " were changed or lost";
    EXPECT_GE(snap.log.rows.size(), previous.log.rows.size()) << when;
    const int64_t resumed = ResumedCount(out_text);
    if (resumed >= 0) {
      EXPECT_EQ(resumed, static_cast<int64_t>(DoneIds(previous.log.rows).size()))
          << when << ": the resume did not take every recorded point as done";
      ++resumes_checked;
    }
    EXPECT_LE(snap.unrecorded_point_folders, 1) << when << ": more than the point in flight has no row";
    std::map<std::string, int> times;
    for (const ojson& row : snap.log.rows) ++times[row["point_id"].get<std::string>()];
    for (const auto& [id, n] : times) EXPECT_EQ(n, 1) << when << ": " << id << " was run again after its row";
    previous = snap;
    previous_when = when;
    // SIGKILL does not stop a local file system's write() midway, so a real cut last line
    // needs a power cut or a network file system; leave one once, as such a crash would.
    if (landed == 3 && !finished && injected_at < 0) {
      const std::string row = ref_log->rows.back().dump();
      std::ofstream(dir / "sweep.jsonl", std::ios::binary | std::ios::app) << row.substr(0, row.size() / 2);
      injected_at = invocation;
    }
  }
  ASSERT_TRUE(finished) << "the sweep never finished";
  std::printf("[ kill test ] %d kills landed, %d invocations (%d reported what they resumed), %d cut last lines "
              "from kills (1 more left by the test), %d temporaries seen at kills\n",
              landed, invocation, resumes_checked, cut_tails, temporaries_seen);
  EXPECT_GE(landed, kKills / 2) << "too few kills landed while the sweep ran to test anything";
  EXPECT_GE(resumes_checked, 1) << "no resume printed how many points it found done";
  ASSERT_GE(injected_at, 0);
  bool dropped = false;
  for (int i = injected_at + 1; i < invocation; ++i)
    dropped |= SlurpFile(outputs / absl::StrCat("invocation", i, ".txt")).find("dropped a cut-short last line") !=
               std::string::npos;
  EXPECT_TRUE(dropped) << "no resume reported the cut line left after invocation " << injected_at;

  // The end: the uninterrupted sweep's results, nothing left over.
  EXPECT_EQ(TemporariesUnder(dir), std::vector<fs::path>{});
  auto log = ReadSweepLog((dir / "sweep.jsonl").string());
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_FALSE(log->partial_tail);
  EXPECT_EQ(log->rows.size(), static_cast<size_t>(kTinyPoints)) << "every point exactly once";
  EXPECT_EQ(RowsById(log->rows), RowsById(ref_log->rows));
  const auto csv = CsvById(dir / "sweep.csv");
  EXPECT_EQ(csv.size(), static_cast<size_t>(kTinyPoints));
  EXPECT_EQ(csv, CsvById(reference / "sweep.csv"));
  for (const ojson& row : ref_log->rows) {
    if (row["status"] != "ok") continue;
    const std::string out = row["out"];
    for (const char* file : {"steps.csv", "requests.csv"})
      EXPECT_EQ(SlurpFile(dir / out / file), SlurpFile(reference / out / file)) << out << "/" << file;
    nlohmann::json a = nlohmann::json::parse(SlurpFile(reference / out / "summary.json"));
    nlohmann::json b = nlohmann::json::parse(SlurpFile(dir / out / "summary.json"));
    a.erase("meta");  // its argv names the output folder
    b.erase("meta");
    EXPECT_EQ(a, b) << out;
  }
}

}  // namespace
}  // namespace dspark::sim
