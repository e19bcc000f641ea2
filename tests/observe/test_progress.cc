// The progress meter of long commands (sim/observe/progress.h): its styles, its rate limits
// (a bar at most every 0.1 s, a line at most every 10 s), and that `run` writes it to stderr
// only: summary.json, steps.csv and requests.csv are byte-identical with and without it.
#include "sim/observe/progress.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "sim/studies/run.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

// Collects what the meter writes; the clock is the test's.
class Captured {
 public:
  Captured() : file_(std::tmpfile()) {}
  ~Captured() { std::fclose(file_); }
  std::FILE* file() { return file_; }
  std::string Text() {
    std::fflush(file_);
    std::string text;
    std::rewind(file_);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) text.append(buf, n);
    return text;
  }

 private:
  std::FILE* file_;
};

int Count(const std::string& text, char ch) { return static_cast<int>(std::count(text.begin(), text.end(), ch)); }

TEST(ProgressStyle, ParsesTheFourAndNamesTheOption) {
  EXPECT_EQ(*ParseProgressStyle("auto"), ProgressStyle::kAuto);
  EXPECT_EQ(*ParseProgressStyle("bar"), ProgressStyle::kBar);
  EXPECT_EQ(*ParseProgressStyle("lines"), ProgressStyle::kLines);
  EXPECT_EQ(*ParseProgressStyle("none"), ProgressStyle::kNone);
  const auto bad = ParseProgressStyle("fancy");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "--progress: expected auto, bar, lines or none, got 'fancy'"))
      << bad.status();
}

TEST(ProgressMeter, AutoOnAFileIsLines) {
  Captured out;
  ProgressMeter meter(ProgressStyle::kAuto, out.file(), "run", "requests", 10, [] { return 0.0; });
  EXPECT_EQ(meter.style(), ProgressStyle::kLines);
  ProgressMeter none(ProgressStyle::kBar, nullptr, "run", "requests", 10);
  EXPECT_EQ(none.style(), ProgressStyle::kNone);
}

TEST(ProgressMeter, LinesAtMostEveryTenSeconds) {
  Captured out;
  double now = 0;
  ProgressMeter meter(ProgressStyle::kLines, out.file(), "run", "requests", 100, [&] { return now; });
  for (int i = 0; i <= 100; ++i) {  // 100 updates over 50 s: lines at 0, 10, 20, 30, 40, 50 s
    now = 0.5 * i;
    meter.Update(i, "detail");
  }
  meter.End(100, "last");
  const std::string text = out.Text();
  EXPECT_EQ(Count(text, '\n'), 7) << text;
  EXPECT_EQ(Count(text, '\r'), 0) << text;
  EXPECT_TRUE(absl::StrContains(text, "run: 20/100 requests  20% | elapsed 10.0s ETA 40.0s | detail\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "run: 100/100 requests 100% | elapsed 50.0s ETA 0.0s | last\n")) << text;
}

TEST(ProgressMeter, BarRedrawsInPlaceAtMostEveryTenthOfASecond) {
  Captured out;
  double now = 0;
  ProgressMeter meter(ProgressStyle::kBar, out.file(), "run", "requests", 10, [&] { return now; });
  for (int i = 0; i < 64; ++i) {  // every 1/64 s for 1 s: draws at i = 0, 7, ..., 63
    now = i / 64.0;
    meter.Update(i / 7);
  }
  meter.Note("a warning");
  meter.End(10);
  const std::string text = out.Text();
  // 10 draws, the redraw after the note, the final one.
  EXPECT_EQ(Count(text, '\r'), 10 + 2 + 1) << text;
  EXPECT_EQ(Count(text, '\n'), 2) << text;  // the note and the end
  EXPECT_TRUE(absl::StrContains(text, "a warning\n")) << text;
  EXPECT_TRUE(absl::StrContains(text, "[############################] 10/10 requests 100%")) << text;
}

TEST(ProgressMeter, NoneWritesNothing) {
  Captured out;
  ProgressMeter meter(ProgressStyle::kNone, out.file(), "run", "requests", 10);
  meter.Update(3, "x", /*force=*/true);
  meter.Note("note");
  meter.End(10);
  EXPECT_EQ(out.Text(), "");
}

TEST(ProgressObserver, CountsStepsAndFinishedRequests) {
  Captured out;
  double now = 0;
  ProgressObserver progress(ProgressStyle::kLines, out.file(), 4, [&] { return now; });
  StepPlan plan;
  for (int i = 1; i <= 2560; ++i) {
    now = 0.01 * i;  // 100 steps/s
    ASSERT_TRUE(progress.OnStep(plan).ok());
    if (i % 1000 == 0) progress.OnFinished(0, now);
  }
  progress.End();
  const std::vector<std::string> lines = absl::StrSplit(out.Text(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u) << out.Text();  // steps 256, 1280, 2304 (10 s apart) and the end
  EXPECT_EQ(lines.back(), "run: 2/4 requests  50% | elapsed 25.6s ETA 25.6s | 2560 steps, 100 steps/s");
}

// By output tokens: the percentage and the ETA follow the tokens emitted, step after step, while
// no request has finished yet (a request-count meter would show 0 % and no ETA).
TEST(ProgressObserver, ByOutputTokensFollowsTheSteps) {
  Captured out;
  double now = 0;
  ProgressObserver progress(ProgressStyle::kLines, out.file(), 2, 1000, [&] { return now; });
  StepPlan plan;
  for (int i = 1; i <= 1280; ++i) {
    now = 0.01 * i;  // 100 steps/s, 2 requests x 1 token per step of 0.5 simulated seconds
    ASSERT_TRUE(progress.OnStep(plan).ok());
    RequestOutcome o[2];
    o[0].req = 0;
    o[1].req = 1;
    o[0].tokens = o[1].tokens = i <= 250 ? 1 : 0;
    progress.OnOutcomes(0.5 * i, o, 2);
  }
  const std::vector<std::string> lines = absl::StrSplit(out.Text(), '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 1u) << out.Text();
  // Step 256: 500 of 1000 tokens in 2.56 s, none finished.
  EXPECT_EQ(lines[0],
            "run: 500/1000 output tokens  50% | elapsed 2.6s ETA 2.6s | 0/2 requests, 256 steps, 100 steps/s, "
            "simulated 2m08s");
}

// --progress lines changes nothing but stderr: the result files are byte-identical.
TEST(ProgressObserver, RunResultFilesDoNotDependOnIt) {
  std::string files[2];
  for (int k = 0; k < 2; ++k) {
    RunConfig config;
    config.seed = 3;
    config.workload = "chat";
    config.num_requests = 12;
    config.scheduler.max_num_seqs = 8;
    config.impls = {Impl::kFused};
    config.check = true;
    config.progress = k == 0 ? ProgressStyle::kNone : ProgressStyle::kLines;
    config.out_dir = testing_util::ProcessTempDir("progress_run", std::to_string(k), /*create=*/true);
    ASSERT_TRUE(config.Validate().ok()) << config.Validate();
    auto result = ExecuteRun(config);
    ASSERT_TRUE(result.ok()) << result.status();
    for (const char* name : {"summary.json", "steps.csv", "requests.csv"})
      files[k] += testing_util::SlurpFile(std::string(config.out_dir) + "/" + name);
  }
  EXPECT_FALSE(files[0].empty());
  EXPECT_EQ(files[0], files[1]);
}

}  // namespace
}  // namespace dspark::sim
