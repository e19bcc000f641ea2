#include "sim/results/result_files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dspark::sim {
namespace fs = std::filesystem;
namespace {

constexpr char kTempInfix[] = ".tmp.";
constexpr size_t kTempInfixSize = sizeof(kTempInfix) - 1;

// "cannot write '<target>': <step>: <strerror>", with the errno's status code.
absl::Status ErrnoStatus(int error, const fs::path& target, absl::string_view step) {
  return absl::Status(absl::ErrnoToStatusCode(error), absl::StrCat("cannot write '", target.string(), "': ", step,
                                                                   ": ", std::strerror(error)));
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

// Flushes the folder entry of a rename or a create; a folder that cannot be opened for reading
// (or a file system without directory fsync) only loses the power-cut guarantee, not the file.
void SyncFolder(const fs::path& file) {
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

fs::path AtomicTempPath(const fs::path& path, long pid) {
  return absl::StrCat(path.string(), kTempInfix, pid);
}

absl::Status WriteFileAtomically(const fs::path& path, absl::string_view text) {
  // The pid keeps two processes writing the same target off each other's temp file.
  const fs::path tmp = AtomicTempPath(path, static_cast<long>(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    return ErrnoStatus(error, path, absl::StrCat("creating '", tmp.string(), "'"));
  }
  const bool written = WriteAll(fd, text) && ::fsync(fd) == 0;
  const int write_error = errno;
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    const int error = written ? errno : write_error;
    const absl::Status s = ErrnoStatus(error, path, absl::StrCat("writing '", tmp.string(), "'"));
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    const absl::Status s = ErrnoStatus(error, path, absl::StrCat("renaming '", tmp.string(), "' over it"));
    ::unlink(tmp.c_str());
    return s;
  }
  SyncFolder(path);
  return absl::OkStatus();
}

absl::Status AppendLineDurably(const fs::path& path, absl::string_view line) {
  const bool existed = ::access(path.c_str(), F_OK) == 0;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    return ErrnoStatus(error, path, "opening it for appending");
  }
  struct stat before {};
  const bool sized = ::fstat(fd, &before) == 0;
  // One write of line + newline, so a concurrent reader never sees a line without its end.
  const std::string text = absl::StrCat(line, "\n");
  bool written = WriteAll(fd, text);
  int write_error = errno;
  // A short write (e.g. a full disk) would leave a cut line in the middle of the log once a
  // later append succeeds, which its reader refuses: cut the file back to its last full line.
  const bool cut_back = !written && sized && ::ftruncate(fd, before.st_size) == 0;
  if (written && ::fsync(fd) != 0) {
    written = false;
    write_error = errno;
  }
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    const int error = written ? errno : write_error;
    return absl::DataLossError(absl::StrCat("append to '", path.string(), "' failed: ", std::strerror(error),
                                            cut_back ? " (the part written was removed)" : ""));
  }
  if (!existed) SyncFolder(path);
  return absl::OkStatus();
}

absl::StatusOr<int> RemoveStaleTempFiles(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t at = name.rfind(kTempInfix);
    if (at == std::string::npos || at == 0) continue;
    long pid = 0;
    if (!absl::SimpleAtoi(absl::string_view(name).substr(at + kTempInfixSize), &pid) || pid <= 0) continue;
    // ESRCH: no such process. EPERM means it runs under another user, so it is alive.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    stale.push_back(it->path());
  }
  if (ec)
    return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                        absl::StrCat("cannot list '", dir.string(), "': ", ec.message()));
  for (const fs::path& path : stale) {
    fs::remove_all(path, ec);
    if (ec)
      return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                          absl::StrCat("cannot remove the stale temporary '", path.string(), "': ", ec.message()));
  }
  return static_cast<int>(stale.size());
}

}  // namespace dspark::sim
