// Reads a whole input file (a trace, a --config file, a calibration, a result file read back)
// with bounds, so that no path the user gives can hang the tool or take memory without limit:
//  - a directory is an error, not an empty file;
//  - a regular file larger than the limit is refused before reading (fstat);
//  - a FIFO, pipe, tty or character device (/dev/zero, /dev/urandom) is read without blocking,
//    polled with an idle timeout, and cut off at a total size and a line length, each a clear
//    error. /dev/stdin and process substitution (<(cmd)) are pipes and keep working.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

struct ReadLimits {
  int64_t max_file_bytes = 0;    // [bytes] a regular file larger than this is refused
  int64_t max_stream_bytes = 0;  // [bytes] the most read from a FIFO, pipe or device
  int64_t max_line_bytes = 0;    // [bytes] the longest line, terminator excluded
  int64_t idle_timeout_ms = 5000;  // non-regular files: the longest wait for more data
};

// Limits of each kind of input, in one place so docs/bad-input.md can quote them.
ReadLimits TraceReadLimits();        // traces: 2 GiB file, 64 MiB stream, 1 MiB line
ReadLimits ConfigReadLimits();       // --config files: 1 MiB, 64 KiB lines
ReadLimits CalibrationReadLimits();  // calibration JSON: 16 MiB, 16 MiB lines (one-line JSON)
ReadLimits ResultReadLimits();       // result files read back (sweep.jsonl, summary.json)

// The bytes of `path`. `option` names the input in messages ("--trace"). Errors:
// "OPTION: cannot open 'PATH': <strerror>" (NotFound for a missing file, PermissionDenied, else
// InvalidArgument), InvalidArgument for a directory, a size or a line
// beyond the limits, or no data within the idle timeout; DataLoss for a read error.
absl::StatusOr<std::string> ReadInputFile(const std::string& path, absl::string_view option,
                                          const ReadLimits& limits);

// `value` for an error message: at most `max_bytes` of it, with "..." and the full length
// when cut, so that a 50-million-digit field is not echoed whole.
std::string Abbreviate(absl::string_view value, size_t max_bytes = 40);

}  // namespace dspark::sim
