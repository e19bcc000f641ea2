// `run`'s steps.csv and requests.csv, written as the run goes: each finished step's row (every
// --steps-csv-stride-th) and each finished request's row, in workload order (a request's row is
// written once it and every request before it have finished; the rest at the end). Rows are
// buffered and written in whole lines at least every kFlushIntervalS or kFlushBytes, so a
// run that is stopped (SIGINT, SIGTERM) or killed leaves the rows of the steps it did. The files
// hold the same bytes as MetricsObserver::StepsCsv / RequestsCsv at the end.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/engine/step_observer.h"
#include "sim/observe/metrics.h"

namespace dspark::sim {

// A file written in appended chunks of whole lines: the old file of that name is replaced
// (unlinked, never written through: a symlink there is not followed), fsync'ed on Close.
class StreamedFile {
 public:
  StreamedFile() = default;
  StreamedFile(const StreamedFile&) = delete;
  StreamedFile& operator=(const StreamedFile&) = delete;
  ~StreamedFile();

  absl::Status Open(const std::filesystem::path& path);
  absl::Status Write(const std::string& text);  // all of it, or an error naming the file
  absl::Status Close();                        // fsync + close
  bool is_open() const { return fd_ >= 0; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

class RunFilesObserver final : public StepObserver {
 public:
  static constexpr double kFlushIntervalS = 1.0;
  static constexpr size_t kFlushBytes = size_t{1} << 20;

  // `metrics` must be added to the engine before this observer (its records are read here).
  RunFilesObserver(const MetricsObserver& metrics, int64_t steps_csv_stride)
      : metrics_(metrics), stride_(std::max<int64_t>(steps_csv_stride, 1)) {}

  // Creates OUT/steps.csv and OUT/requests.csv with their headers.
  absl::Status Open(const std::filesystem::path& out);
  absl::string_view name() const override { return "run_files"; }
  absl::Status OnStep(const StepPlan& plan) override;
  // Writes every remaining row (unfinished requests too, as RequestsCsv does) and closes both.
  absl::Status Close();

 private:
  void TakeNewRows();
  absl::Status Flush();

  const MetricsObserver& metrics_;
  int64_t stride_;
  StreamedFile steps_file_, requests_file_;
  std::string steps_buf_, requests_buf_;
  size_t steps_taken_ = 0;     // metrics_.steps() already formatted
  size_t requests_taken_ = 0;  // requests already formatted, in workload order
  int64_t since_check_ = 0;
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
};

}  // namespace dspark::sim
