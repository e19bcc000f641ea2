// Content hashes of input files (a trace, a calibration) for the fingerprint results carry:
// SHA-1 in lowercase hex, the digest `sha1sum FILE` prints, so a user can check it by hand.
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dspark::sim {

// Reads the file in chunks (any size); an error names the file and the errno reason.
absl::StatusOr<std::string> FileSha1(const std::filesystem::path& path);
std::string TextSha1(absl::string_view text);

}  // namespace dspark::sim
