#include "sim/result_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace dspark::sim {
namespace fs = std::filesystem;
namespace {

absl::Status Errno(absl::string_view what, const fs::path& path) {
  return absl::PermissionDeniedError(absl::StrCat(what, " '", path.string(), "': ", std::strerror(errno)));
}

// Writes all of `text` to `fd`, retrying short writes and EINTR.
bool WriteAll(int fd, absl::string_view text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

absl::Status WriteFileAtomically(const fs::path& path, absl::string_view text) {
  // The pid keeps two processes writing the same target (sweep shards) off each other's temp.
  const fs::path tmp = absl::StrCat(path.string(), ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", tmp);
  const bool written = WriteAll(fd, text) && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!written) {
    errno = saved;
    const absl::Status s = Errno("cannot write", tmp);
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const absl::Status s = Errno(absl::StrCat("cannot rename '", tmp.string(), "' to"), path);
    ::unlink(tmp.c_str());
    return s;
  }
  return absl::OkStatus();
}

absl::Status AppendLineDurably(const fs::path& path, absl::string_view line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot open for appending", path);
  // One write of line + newline, so a concurrent reader never sees a line without its end.
  const std::string text = absl::StrCat(line, "\n");
  const bool written = WriteAll(fd, text) && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!written) {
    errno = saved;
    return absl::DataLossError(absl::StrCat("append to '", path.string(), "' failed: ", std::strerror(saved)));
  }
  return absl::OkStatus();
}

}  // namespace dspark::sim
