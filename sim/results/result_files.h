// Writing result files so that a crash or a kill never leaves a truncated one.
//
//   WriteFileAtomically  whole files (JSON, CSV, summaries, step logs): the text goes to a
//                        temporary file `<path>.tmp.<pid>` in the same folder, is flushed to disk,
//                        and is renamed over the target (then the folder is flushed, so the rename
//                        itself survives a power cut); a reader sees the old file or the new one,
//                        never a part.
//   AppendLineDurably    append-only logs (JSONL): one complete line per call, fsync'd before
//                        returning; a kill during the call leaves at most one cut last line,
//                        which the log's reader must drop.
//   RemoveStaleTempFiles the `<name>.tmp.<pid>` files (and folders) a killed writer left behind.
//
// Errors name the target path and carry the errno's status code (ENOENT NotFound, EACCES
// PermissionDenied, ENOSPC ResourceExhausted, ...).
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

absl::Status WriteFileAtomically(const std::filesystem::path& path, absl::string_view text);

absl::Status AppendLineDurably(const std::filesystem::path& path, absl::string_view line);

// The temporary name WriteFileAtomically uses for `path` in process `pid`.
std::filesystem::path AtomicTempPath(const std::filesystem::path& path, long pid);

// Removes the entries directly in `dir` (files, or folders with what they hold) named
// `<name>.tmp.<pid>` whose process `pid` no longer runs: a live writer's temporary (e.g. another
// process writing into the same folder) is left alone. Returns how many entries were removed; a
// missing `dir` removes none.
absl::StatusOr<int> RemoveStaleTempFiles(const std::filesystem::path& dir);

}  // namespace dspark::sim
