#include "sim/studies/run_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/common/status_macros.h"

namespace dspark::sim {
namespace fs = std::filesystem;

namespace {

absl::Status Errno(int error, const fs::path& path, absl::string_view step) {
  return absl::Status(absl::ErrnoToStatusCode(error),
                      absl::StrCat("cannot write '", path.string(), "': ", step, ": ", std::strerror(error)));
}

}  // namespace

StreamedFile::~StreamedFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status StreamedFile::Open(const fs::path& path) {
  path_ = path;
  // The earlier run's file is replaced, as a rename over it would: a symlink of that name is
  // removed as a link, and nothing is written through it.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno(errno, path, "removing the earlier file");
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) return Errno(errno, path, "creating it");
  return absl::OkStatus();
}

absl::Status StreamedFile::Write(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(errno, path_, "writing");
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status StreamedFile::Close() {
  if (fd_ < 0) return absl::OkStatus();
  const bool synced = ::fsync(fd_) == 0;
  const int sync_error = errno;
  const bool closed = ::close(fd_) == 0;
  const int close_error = errno;
  fd_ = -1;
  if (!synced) return Errno(sync_error, path_, "flushing it to disk");
  if (!closed) return Errno(close_error, path_, "closing it");
  return absl::OkStatus();
}

absl::Status RunFilesObserver::Open(const fs::path& out) {
  DS_RETURN_IF_ERROR(steps_file_.Open(out / "steps.csv"));
  DS_RETURN_IF_ERROR(requests_file_.Open(out / "requests.csv"));
  DS_RETURN_IF_ERROR(steps_file_.Write(MetricsObserver::StepsCsvHeader()));
  DS_RETURN_IF_ERROR(requests_file_.Write(MetricsObserver::RequestsCsvHeader()));
  last_flush_ = std::chrono::steady_clock::now();
  return absl::OkStatus();
}

void RunFilesObserver::TakeNewRows() {
  const std::vector<StepRecord>& steps = metrics_.steps();
  for (; steps_taken_ < steps.size(); ++steps_taken_) {
    const StepRecord& s = steps[steps_taken_];
    if (stride_ > 1 && s.index % stride_ != 0) continue;
    MetricsObserver::AppendStepsCsvRow(s, &steps_buf_);
  }
  // A request's row is final once it has finished (no event follows its finish).
  const std::vector<RequestRecord>& requests = metrics_.requests();
  for (; requests_taken_ < requests.size() && requests[requests_taken_].finish_s >= 0; ++requests_taken_)
    metrics_.AppendRequestsCsvRow(requests_taken_, &requests_buf_);
}

absl::Status RunFilesObserver::Flush() {
  if (!steps_buf_.empty()) DS_RETURN_IF_ERROR(steps_file_.Write(steps_buf_));
  if (!requests_buf_.empty()) DS_RETURN_IF_ERROR(requests_file_.Write(requests_buf_));
  steps_buf_.clear();
  requests_buf_.clear();
  last_flush_ = std::chrono::steady_clock::now();
  return absl::OkStatus();
}

absl::Status RunFilesObserver::OnStep(const StepPlan& /*plan*/) {
  if (!steps_file_.is_open()) return absl::OkStatus();
  TakeNewRows();
  if (steps_buf_.size() + requests_buf_.size() >= kFlushBytes) return Flush();
  // The clock is read every 64 steps: a step takes microseconds.
  if (++since_check_ < 64) return absl::OkStatus();
  since_check_ = 0;
  const double since_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_flush_).count();
  return since_s >= kFlushIntervalS ? Flush() : absl::OkStatus();
}

absl::Status RunFilesObserver::Close() {
  if (!steps_file_.is_open()) return absl::OkStatus();
  TakeNewRows();
  const std::vector<RequestRecord>& requests = metrics_.requests();
  for (; requests_taken_ < requests.size(); ++requests_taken_)
    metrics_.AppendRequestsCsvRow(requests_taken_, &requests_buf_);
  DS_RETURN_IF_ERROR(Flush());
  DS_RETURN_IF_ERROR(steps_file_.Close());
  return requests_file_.Close();
}

}  // namespace dspark::sim
