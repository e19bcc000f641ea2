#include "sim/results/out_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace dspark::sim {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxNameBytes = 255;
constexpr size_t kShownBytes = 80;

std::string Shown(absl::string_view name) {
  const bool cut = name.size() > kShownBytes;
  return absl::StrCat(absl::CHexEscape(name.substr(0, kShownBytes)), cut ? "..." : "");
}

// The holder's own line in the lock file ("pid 123, dspark-sim run, since ..."), or a general
// phrase when it cannot be read.
std::string HolderOf(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "another process";
  return std::string(absl::StripAsciiWhitespace(absl::string_view(buf, static_cast<size_t>(n))));
}

absl::Status Busy(const fs::path& dir, absl::string_view what, int fd, absl::string_view advice) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, " '", dir.string(), "' is in use by another dspark-sim (", HolderOf(fd), "): ", advice));
}

// `p` made absolute, its existing part's symlinks resolved and `.`/`..` folded; `p` itself
// (lexically normal) when the file system cannot tell.
fs::path Resolved(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) return p.lexically_normal();
  fs::path canon = fs::weakly_canonical(abs, ec);
  return ec ? abs.lexically_normal() : canon;
}

bool SameFile(const fs::path& a, const fs::path& b) {
  if (Resolved(a) == Resolved(b)) return true;
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

absl::Status CheckOutputsApart(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& out = outputs[i];
    if (out.path.empty()) continue;
    const auto refuse = [&](absl::string_view is) {
      return absl::InvalidArgumentError(absl::StrCat(out.what, ": '", out.path.string(), "' is ", is,
                                                     "; expected a file that is none of the run's inputs or other outputs"));
    };
    for (const NamedPath& in : inputs)
      if (!in.path.empty() && SameFile(out.path, in.path)) return refuse(absl::StrCat("the ", in.what, " input"));
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].path.empty() && SameFile(out.path, outputs[j].path))
        return refuse(absl::StrCat("also ", outputs[j].what));
  }
  return absl::OkStatus();
}

absl::Status CheckSafeName(absl::string_view name, absl::string_view what) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": '", Shown(name), "' is not a safe file name (", why,
        "; expected 1-255 characters of A-Z a-z 0-9 . _ -, not starting with '-', not '.' or '..')"));
  };
  if (name.empty()) return bad("empty");
  if (name.size() > kMaxNameBytes) return bad(absl::StrCat(name.size(), " bytes"));
  if (name == "." || name == "..") return bad("a relative folder reference");
  if (name.front() == '-') return bad("starts with '-'");
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '.' || c == '_' || c == '-') continue;
    if (c == '/') return bad("holds '/'");
    if (c == '\0') return bad("holds NUL");
    return bad(absl::StrCat("holds '", absl::CHexEscape(absl::string_view(&c, 1)), "'"));
  }
  return absl::OkStatus();
}

absl::Status CheckRealFolder(const fs::path& dir, absl::string_view what, bool absent_ok) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(st)) {
    if (absent_ok && (!ec || ec == std::errc::no_such_file_or_directory)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(what, ": '", dir.string(), "' is not there",
                                                      ec ? absl::StrCat(" (", ec.message(), ")") : ""));
  }
  if (fs::is_symlink(st))
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": '", dir.string(), "' is a symlink; dspark-sim writes and removes only real folders it made"));
  if (!fs::is_directory(st))
    return absl::FailedPreconditionError(absl::StrCat(what, ": '", dir.string(), "' is not a folder"));
  return absl::OkStatus();
}

absl::Status RemoveOwnFolder(const fs::path& root, absl::string_view name) {
  if (absl::Status s = CheckSafeName(name, "folder to remove"); !s.ok()) return s;
  if (absl::Status s = CheckRealFolder(root, "folder to remove from", /*absent_ok=*/false); !s.ok()) return s;
  const fs::path target = root / std::string(name);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(target, ec);
  if (!fs::exists(st)) return absl::OkStatus();
  if (absl::Status s = CheckRealFolder(target, "folder to remove", /*absent_ok=*/true); !s.ok()) return s;
  // remove_all removes a symlink inside as a link: it never follows one.
  fs::remove_all(target, ec);
  if (ec)
    return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                        absl::StrCat("cannot remove '", target.string(), "': ", ec.message()));
  return absl::OkStatus();
}

OutFolderLock& OutFolderLock::operator=(OutFolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

OutFolderLock::~OutFolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

absl::StatusOr<OutFolderLock> OutFolderLock::Acquire(const fs::path& dir, absl::string_view command) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                        absl::StrCat("--out: cannot create '", dir.string(), "': ", ec.message()));
  const fs::path path = dir / kOutLockName;
  // O_NOFOLLOW: a symlink planted under the lock's name is refused, never truncated through.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error),
                        absl::StrCat("--out: cannot open the lock file '", path.string(), "': ", std::strerror(error)));
  }
  OutFolderLock lock(fd);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK)
      return Busy(dir, "--out", fd,
                  "two processes must not write one output folder; wait for it to end, or choose another --out");
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error),
                        absl::StrCat("--out: cannot lock '", path.string(), "': ", std::strerror(error)));
  }
  const std::string holder =
      absl::StrCat("pid ", ::getpid(), ", dspark-sim ", command, ", since ",
                   absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone()), "\n");
  // Who holds it, for the message of a process that finds it taken; best effort.
  if (::ftruncate(fd, 0) == 0) {
    const ssize_t ignored = ::pwrite(fd, holder.data(), holder.size(), 0);
    (void)ignored;
  }
  return lock;
}

absl::Status OutFolderLock::CheckNotHeld(const fs::path& dir, absl::string_view what) {
  const fs::path path = dir / kOutLockName;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return absl::OkStatus();  // never locked (or not a lock file we made)
  int rc;
  while ((rc = ::flock(fd, LOCK_SH | LOCK_NB)) != 0 && errno == EINTR) {
  }
  absl::Status status = absl::OkStatus();
  if (rc != 0 && errno == EWOULDBLOCK) status = Busy(dir, what, fd, "it is still being written; wait for it to end");
  ::close(fd);
  return status;
}

}  // namespace dspark::sim
