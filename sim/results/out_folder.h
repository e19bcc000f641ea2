// What a command may do inside its output folder (--out), and nothing outside it.
//
//   CheckSafeName     a name read from a file (a point id, a folder name in a result log) that
//                     is to become one component of a path: 1-255 characters of A-Z a-z 0-9 . _ -,
//                     not starting with '-', not "." or "..". Anything else ('/', "..", an
//                     absolute path, NUL, control characters, an empty name) is refused, so such
//                     a name can never reach outside the folder it is joined to.
//   CheckRealFolder   a folder that must be a folder of its own, not a symlink to elsewhere.
//   RemoveOwnFolder   removes `root`/`name` only when it is a real folder (not a symlink, not a
//                     file) directly in `root`, itself a real folder; symlinks inside it are
//                     removed as links, never followed.
//   CheckOutputsApart no file a command writes is one of its inputs or another of its outputs:
//                     paths are compared resolved (absolute, symlinks followed, `..` folded)
//                     and, when both exist, as the same inode (a hard link).
//   OutFolderLock     an advisory lock (flock) on the lock file `.dspark-sim.lock` inside --out:
//                     one writer per output folder; the kernel releases it when the process
//                     ends, however it ends.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

inline constexpr char kOutLockName[] = ".dspark-sim.lock";

// OK when `name` is a safe single path component (see above); InvalidArgument otherwise,
// "<what>: '<name, escaped>' is not a safe file name (...)".
absl::Status CheckSafeName(absl::string_view name, absl::string_view what);

// OK when `dir` is absent (absent_ok) or a folder that is not a symlink; FailedPrecondition
// naming `dir` and `what` otherwise.
absl::Status CheckRealFolder(const std::filesystem::path& dir, absl::string_view what, bool absent_ok);

// Removes the folder root/name (see above). A missing folder is OK.
absl::Status RemoveOwnFolder(const std::filesystem::path& root, absl::string_view name);

// A file a command reads or writes, and the option (or role) that names it, for messages:
// {"--trace", "t.csv"}, {"--out's summary.json", "results/run/summary.json"}.
struct NamedPath {
  std::string what;
  std::filesystem::path path;
};

// InvalidArgument when an output is the same file as an input or as another output (entries
// with an empty path are ignored): "--dump-workload: 'PATH' is the --trace input; expected a
// file that is none of the run's inputs or other outputs".
absl::Status CheckOutputsApart(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);

class OutFolderLock {
 public:
  // Creates `dir` when needed and takes the lock without waiting; FailedPrecondition naming the
  // holder (its pid and command, as it wrote them into the lock file) when another process has
  // it. `command` is written into the lock file for that message (e.g. "run").
  static absl::StatusOr<OutFolderLock> Acquire(const std::filesystem::path& dir, absl::string_view command);
  // OK when no process holds the lock of `dir` (a folder without a lock file has none);
  // FailedPrecondition naming the holder otherwise. Creates nothing.
  static absl::Status CheckNotHeld(const std::filesystem::path& dir, absl::string_view what);

  OutFolderLock(OutFolderLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  OutFolderLock& operator=(OutFolderLock&& other) noexcept;
  OutFolderLock(const OutFolderLock&) = delete;
  OutFolderLock& operator=(const OutFolderLock&) = delete;
  ~OutFolderLock();

 private:
  explicit OutFolderLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace dspark::sim
