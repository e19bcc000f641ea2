// Progress of a long command on stderr (never in result files): one meter for `sweep` (points),
// `run` (requests finished, steps and steps/s), `verify` (cases) and `soak` (steps).
//   bar:   one line redrawn in place (\r), at most every 0.1 s, with rate and ETA;
//   lines: one line at most every 10 s (and one at the end), for logs and CI;
//   auto:  bar on a terminal, lines otherwise; none: nothing.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/engine/step_observer.h"

namespace dspark::sim {

enum class ProgressStyle { kAuto, kBar, kLines, kNone };

// "auto", "bar", "lines" or "none"; anything else is InvalidArgument naming `option`.
absl::StatusOr<ProgressStyle> ParseProgressStyle(absl::string_view text,
                                                 absl::string_view option = "--progress");
std::string FormatDuration(double seconds);  // 12.3s, 4m05s, 1h02m03s

class ProgressMeter {
 public:
  using Clock = std::function<double()>;  // [s], monotonic; tests inject their own
  static constexpr double kLinesIntervalS = 10.0;
  static constexpr double kBarIntervalS = 0.1;

  // `label` starts every line ("run"); `unit` names what `total` counts ("requests").
  // total <= 0: unknown (no percentage, no ETA). out == nullptr: none.
  ProgressMeter(ProgressStyle style, std::FILE* out, std::string label, std::string unit,
                int64_t total, Clock clock = {});

  ProgressStyle style() const { return style_; }
  // `done` of `total` so far; `detail` follows the counts (e.g. "12345 steps, 4567 steps/s").
  // Rate limited by the style's interval; force: draw regardless (a sweep point finished).
  void Update(int64_t done, const std::string& detail = "", bool force = false);
  // A line of its own (a warning, a finished point); the bar is redrawn under it.
  void Note(const std::string& line);
  // The final state, drawn once, then the bar's line is ended.
  void End(int64_t done, const std::string& detail = "");

  double Elapsed() const;                 // [s] since construction
  std::string Eta(int64_t done) const;    // remaining time at the mean rate so far, or "?"

 private:
  void Draw(int64_t done, const std::string& detail);

  std::FILE* out_;
  ProgressStyle style_;
  std::string label_, unit_;
  int64_t total_;
  Clock clock_;
  double t0_, last_draw_ = -1e300;
  bool bar_shown_ = false;
  int64_t last_done_ = 0;
  std::string last_detail_;
};

// `run`'s meter as an observer: requests finished of the workload's, steps and steps/s. It
// never steers the run and has no summary.json section (run.cc lists the sections it writes).
// With total_output_tokens > 0 the meter counts output tokens emitted, which every step of a
// decode advances, so its percentage and ETA follow the steps (a request-count ETA stands still
// while long requests run), and the detail adds the requests finished and the simulated time.
class ProgressObserver final : public StepObserver {
 public:
  ProgressObserver(ProgressStyle style, std::FILE* out, int64_t total_requests,
                   ProgressMeter::Clock clock = {});
  ProgressObserver(ProgressStyle style, std::FILE* out, int64_t total_requests, int64_t total_output_tokens,
                   ProgressMeter::Clock clock = {});
  absl::string_view name() const override { return "progress"; }
  absl::Status OnStep(const StepPlan& plan) override;
  void OnFinished(int32_t req, double time_s) override;
  void OnOutcomes(double time_s, const RequestOutcome* outcomes, size_t n) override;
  void End();  // after Engine::Run: the final line (none when no step ran)

 private:
  std::string Detail() const;

  int64_t Done() const { return by_tokens_ ? tokens_ : finished_; }

  bool by_tokens_ = false;
  int64_t total_requests_ = 0;
  ProgressMeter meter_;
  int64_t steps_ = 0, finished_ = 0, tokens_ = 0;
  double sim_time_s_ = 0;
};

}  // namespace dspark::sim
