// Writing result files so that a crash or a kill never leaves a truncated one.
//
//   WriteFileAtomically  whole files (JSON, CSV, summaries): the text goes to a temporary file
//                        in the same folder, is flushed to disk, and is renamed over the target,
//                        so a reader sees the old file or the new one, never a part.
//   AppendLineDurably    append-only logs (JSONL): one complete line per call, fsync'd before
//                        returning; a kill during the call leaves at most one cut last line,
//                        which the log's reader must drop.
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

absl::Status WriteFileAtomically(const std::filesystem::path& path, absl::string_view text);

absl::Status AppendLineDurably(const std::filesystem::path& path, absl::string_view line);

}  // namespace dspark::sim
