#include "sim/results/content_hash.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/uuid/detail/sha1.hpp>
#include <boost/version.hpp>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dspark::sim {
namespace {

std::string Hex(boost::uuids::detail::sha1& h) {
  boost::uuids::detail::sha1::digest_type digest;
  h.get_digest(digest);
  std::string out;
#if BOOST_VERSION >= 108600
  for (unsigned char byte : digest) absl::StrAppendFormat(&out, "%02x", byte);  // 20 bytes
#else
  for (unsigned int word : digest) absl::StrAppendFormat(&out, "%08x", word);   // 5 big-endian words
#endif
  return out;
}

}  // namespace

absl::StatusOr<std::string> FileSha1(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error),
                        absl::StrCat("cannot read '", path.string(), "' to hash it: ", std::strerror(error)));
  }
  boost::uuids::detail::sha1 h;
  std::vector<char> buf(size_t{1} << 20);
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(fd);
      return absl::Status(absl::ErrnoToStatusCode(error),
                          absl::StrCat("cannot read '", path.string(), "' to hash it: ", std::strerror(error)));
    }
    h.process_bytes(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return Hex(h);
}

std::string TextSha1(absl::string_view text) {
  boost::uuids::detail::sha1 h;
  h.process_bytes(text.data(), text.size());
  return Hex(h);
}

}  // namespace dspark::sim
