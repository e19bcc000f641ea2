// NumPy .npy files (format version 1.0), which numpy.load and torch.from_numpy read directly:
// the magic string, a little-endian header dict ('descr', 'fortran_order', 'shape') padded to a
// multiple of 64 bytes, then the C-order data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace dspark::sim {

// The whole file's bytes for `count` elements of `element_bytes` each at `data`, typed `descr`
// ("<i4", "<i8") with `shape` (its product must be `count`).
std::string NpyBytes(const std::string& descr, const std::vector<int64_t>& shape, const void* data,
                     size_t element_bytes, size_t count);

absl::Status WriteNpy(const std::filesystem::path& path, const std::vector<int64_t>& shape,
                      const std::vector<int32_t>& data);
absl::Status WriteNpy(const std::filesystem::path& path, const std::vector<int64_t>& shape,
                      const std::vector<int64_t>& data);

}  // namespace dspark::sim
