#include "sim/observe/progress.h"

#include <unistd.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dspark::sim {

absl::StatusOr<ProgressStyle> ParseProgressStyle(absl::string_view text, absl::string_view option) {
  if (text == "auto") return ProgressStyle::kAuto;
  if (text == "bar") return ProgressStyle::kBar;
  if (text == "lines") return ProgressStyle::kLines;
  if (text == "none") return ProgressStyle::kNone;
  return absl::InvalidArgumentError(
      absl::StrCat(option, ": expected auto, bar, lines or none, got '", text.substr(0, 40), "'"));
}

std::string FormatDuration(double seconds) {
  if (seconds < 60) return absl::StrFormat("%.1fs", seconds);
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm%02ds", s / 3600, (s / 60) % 60, s % 60);
}

namespace {
double SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

ProgressMeter::ProgressMeter(ProgressStyle style, std::FILE* out, std::string label, std::string unit,
                             int64_t total, Clock clock)
    : out_(out), style_(style), label_(std::move(label)), unit_(std::move(unit)), total_(total),
      clock_(clock ? std::move(clock) : Clock(SteadyNow)), t0_(clock_()) {
  if (style_ == ProgressStyle::kAuto)
    style_ = (out_ != nullptr && isatty(fileno(out_))) ? ProgressStyle::kBar : ProgressStyle::kLines;
  if (out_ == nullptr) style_ = ProgressStyle::kNone;
}

double ProgressMeter::Elapsed() const { return clock_() - t0_; }

std::string ProgressMeter::Eta(int64_t done) const {
  if (done <= 0 || total_ <= 0) return "?";
  const double remaining = static_cast<double>(total_ - std::min(done, total_));
  return FormatDuration(Elapsed() / static_cast<double>(done) * remaining);
}

void ProgressMeter::Update(int64_t done, const std::string& detail, bool force) {
  last_done_ = done;
  last_detail_ = detail;
  if (style_ == ProgressStyle::kNone) return;
  const double now = clock_();
  const double interval = style_ == ProgressStyle::kBar ? kBarIntervalS : kLinesIntervalS;
  if (!force && now - last_draw_ < interval) return;
  last_draw_ = now;
  Draw(done, detail);
}

void ProgressMeter::Note(const std::string& line) {
  if (style_ == ProgressStyle::kNone) return;
  if (style_ == ProgressStyle::kBar && bar_shown_) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "%s\n", line.c_str());
  if (style_ == ProgressStyle::kBar && bar_shown_) Draw(last_done_, last_detail_);
  std::fflush(out_);
}

void ProgressMeter::End(int64_t done, const std::string& detail) {
  if (style_ == ProgressStyle::kNone) return;
  Draw(done, detail);
  if (style_ == ProgressStyle::kBar) std::fprintf(out_, "\n");
  std::fflush(out_);
  bar_shown_ = false;
}

void ProgressMeter::Draw(int64_t done, const std::string& detail) {
  const double elapsed = Elapsed();
  std::string counts = total_ > 0 ? absl::StrFormat("%d/%d %s %3.0f%%", done, total_, unit_,
                                                    100.0 * static_cast<double>(done) / total_)
                                  : absl::StrFormat("%d %s", done, unit_);
  const std::string times = absl::StrCat("elapsed ", FormatDuration(elapsed), " ETA ", Eta(done));
  const std::string tail = detail.empty() ? "" : absl::StrCat(" | ", detail);
  if (style_ == ProgressStyle::kLines) {
    std::fprintf(out_, "%s: %s | %s%s\n", label_.c_str(), counts.c_str(), times.c_str(), tail.c_str());
  } else {
    constexpr int kWidth = 28;
    const int filled = total_ > 0 ? static_cast<int>(kWidth * std::min(done, total_) / total_) : 0;
    const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '-');
    std::fprintf(out_, "\r\033[K%s [%s] %s %s%s", label_.c_str(), bar.c_str(), counts.c_str(),
                 times.c_str(), tail.c_str());
    bar_shown_ = true;
  }
  std::fflush(out_);
}

ProgressObserver::ProgressObserver(ProgressStyle style, std::FILE* out, int64_t total_requests,
                                   ProgressMeter::Clock clock)
    : total_requests_(total_requests), meter_(style, out, "run", "requests", total_requests, std::move(clock)) {}

ProgressObserver::ProgressObserver(ProgressStyle style, std::FILE* out, int64_t total_requests,
                                   int64_t total_output_tokens, ProgressMeter::Clock clock)
    : by_tokens_(total_output_tokens > 0), total_requests_(total_requests),
      meter_(style, out, "run", total_output_tokens > 0 ? "output tokens" : "requests",
             total_output_tokens > 0 ? total_output_tokens : total_requests, std::move(clock)) {}

std::string ProgressObserver::Detail() const {
  const double elapsed = meter_.Elapsed();
  const std::string steps = absl::StrFormat("%d steps, %.0f steps/s", steps_,
                                            elapsed > 0 ? static_cast<double>(steps_) / elapsed : 0.0);
  if (!by_tokens_) return steps;
  return absl::StrFormat("%d/%d requests, %s, simulated %s", finished_, total_requests_, steps,
                         FormatDuration(sim_time_s_));
}

absl::Status ProgressObserver::OnStep(const StepPlan& /*plan*/) {
  ++steps_;
  // The clock is read every 256 steps: unchecked runs reach millions of steps/s.
  if (meter_.style() != ProgressStyle::kNone && (steps_ & 255) == 0) meter_.Update(Done(), Detail());
  return absl::OkStatus();
}

void ProgressObserver::OnFinished(int32_t /*req*/, double /*time_s*/) { ++finished_; }

void ProgressObserver::OnOutcomes(double time_s, const RequestOutcome* outcomes, size_t n) {
  sim_time_s_ = time_s;
  for (size_t i = 0; i < n; ++i) tokens_ += outcomes[i].tokens;
  DeliverOutcomes(*this, time_s, outcomes, n);  // final: only the finishes do anything
}

// A run that stopped before its first step says so in its error alone.
void ProgressObserver::End() {
  if (steps_ > 0) meter_.End(Done(), Detail());
}

}  // namespace dspark::sim
