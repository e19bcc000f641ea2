#include "sim/workload/input_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dspark::sim {
namespace {

constexpr int64_t kKiB = int64_t{1} << 10;
constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// "64 MiB" for a limit that is a whole number of MiB or GiB, else "N bytes".
std::string Size(int64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return absl::StrCat(bytes / kGiB, " GiB");
  if (bytes >= kMiB && bytes % kMiB == 0) return absl::StrCat(bytes / kMiB, " MiB");
  if (bytes >= kKiB && bytes % kKiB == 0) return absl::StrCat(bytes / kKiB, " KiB");
  return absl::StrCat(bytes, " bytes");
}

const char* KindOf(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO or pipe";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

ReadLimits TraceReadLimits() { return {2 * kGiB, 64 * kMiB, 1 * kMiB}; }
ReadLimits ConfigReadLimits() { return {1 * kMiB, 1 * kMiB, 64 * kKiB}; }
ReadLimits CalibrationReadLimits() { return {16 * kMiB, 16 * kMiB, 16 * kMiB}; }
ReadLimits ResultReadLimits() { return {4 * kGiB, 64 * kMiB, 64 * kMiB}; }

std::string Abbreviate(absl::string_view value, size_t max_bytes) {
  if (value.size() <= max_bytes) return std::string(value);
  return absl::StrCat(value.substr(0, max_bytes), "... (", value.size(), " bytes)");
}

absl::StatusOr<std::string> ReadInputFile(const std::string& path, absl::string_view option,
                                          const ReadLimits& limits) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno == EISDIR)
      return absl::InvalidArgumentError(
          absl::StrCat(option, ": '", path, "' is a directory; expected a file"));
    const int error = errno;
    const std::string why = absl::StrCat(option, ": cannot open '", path, "': ", std::strerror(error));
    if (error == ENOENT || error == ENOTDIR) return absl::NotFoundError(why);
    if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(why);
    return absl::InvalidArgumentError(why);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    return absl::DataLossError(
        absl::StrCat(option, ": cannot stat '", path, "': ", std::strerror(errno)));
  if (S_ISDIR(st.st_mode))
    return absl::InvalidArgumentError(
        absl::StrCat(option, ": '", path, "' is a directory; expected a file"));
  const bool regular = S_ISREG(st.st_mode);
  if (regular && st.st_size > limits.max_file_bytes)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: '%s' is %d bytes, more than the %s an input of this kind may have", option, path,
        static_cast<int64_t>(st.st_size), Size(limits.max_file_bytes)));
  const int64_t max_bytes = regular ? limits.max_file_bytes : limits.max_stream_bytes;

  std::string text;
  if (regular) text.reserve(static_cast<size_t>(st.st_size));
  int64_t line = 1, line_bytes = 0;
  char buf[1 << 16];
  for (;;) {
    if (!regular) {
      // A FIFO that no writer has opened yet polls as not ready (Linux keeps POLLHUP for a
      // writer that came and went), so this waits for a writer or the timeout.
      pollfd p{f.fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(limits.idle_timeout_ms));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0)
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: '%s' (%s) gave no data for %g s; expected a file, or a writer on the other end",
            option, path, KindOf(st.st_mode), static_cast<double>(limits.idle_timeout_ms) / 1000));
    }
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0)
      return absl::DataLossError(
          absl::StrCat(option, ": error reading '", path, "': ", std::strerror(errno)));
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        ++line;
        line_bytes = 0;
      } else if (++line_bytes > limits.max_line_bytes) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: '%s' line %d is longer than %s; expected a text file of shorter lines", option,
            path, line, Size(limits.max_line_bytes)));
      }
    }
    if (static_cast<int64_t>(text.size()) + n > max_bytes)
      return absl::InvalidArgumentError(
          regular ? absl::StrFormat("%s: '%s' grew beyond %s while being read", option, path,
                                    Size(max_bytes))
                  : absl::StrFormat("%s: '%s' (%s) gave more than %s; write it to a regular "
                                    "file, which may hold up to %s",
                                    option, path, KindOf(st.st_mode), Size(max_bytes),
                                    Size(limits.max_file_bytes)));
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace dspark::sim
