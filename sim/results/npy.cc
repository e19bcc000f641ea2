#include "sim/results/npy.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include <fstream>

namespace dspark::sim {
namespace {

template <class T>
absl::Status WriteTyped(const std::filesystem::path& path, const std::vector<int64_t>& shape,
                        const std::vector<T>& data, const char* descr) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (count != static_cast<int64_t>(data.size()))
    return absl::InternalError(absl::StrCat("npy: '", path.string(), "' has ", data.size(),
                                            " elements, its shape [", absl::StrJoin(shape, ", "), "] holds ",
                                            count));
  // Not fsync'ed one by one (a dump has thousands): the dump's index.json, written atomically
  // last, is what makes the files a dump.
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string bytes = NpyBytes(descr, shape, data.data(), sizeof(T), data.size());
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat("npy: cannot write '", path.string(), "'"));
  return absl::OkStatus();
}

}  // namespace

std::string NpyBytes(const std::string& descr, const std::vector<int64_t>& shape, const void* data,
                     size_t element_bytes, size_t count) {
  // A 1-element shape needs the trailing comma to be a tuple in Python.
  std::string dims = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) dims += ",";
  std::string header = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", dims, "), }");
  // magic (6) + version (2) + header length (2) + header + '\n', padded with spaces to 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xFF));
  out.push_back(static_cast<char>((header.size() >> 8) & 0xFF));
  out += header;
  out.append(static_cast<const char*>(data), element_bytes * count);
  return out;
}

absl::Status WriteNpy(const std::filesystem::path& path, const std::vector<int64_t>& shape,
                      const std::vector<int32_t>& data) {
  return WriteTyped(path, shape, data, "<i4");
}

absl::Status WriteNpy(const std::filesystem::path& path, const std::vector<int64_t>& shape,
                      const std::vector<int64_t>& data) {
  return WriteTyped(path, shape, data, "<i8");
}

}  // namespace dspark::sim
