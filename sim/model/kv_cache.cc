#include "sim/model/kv_cache.h"

#include "absl/strings/str_format.h"

namespace dspark::sim {

KvCache::KvCache(int32_t num_blocks, int32_t block_size)
    : num_blocks_(num_blocks), block_size_(block_size) {
  free_.reserve(static_cast<size_t>(num_blocks > 1 ? num_blocks - 1 : 0));
  for (int32_t b = num_blocks - 1; b >= 1; --b) free_.push_back(b);
}

absl::Status KvCache::CheckConsistency(const std::vector<const std::vector<int32_t>*>& held) const {
  std::vector<int32_t> owner(static_cast<size_t>(num_blocks_), 0);
  auto claim = [&](int32_t b, const char* who) -> absl::Status {
    if (b <= 0 || b >= num_blocks_)
      return absl::InternalError(absl::StrFormat("kv: %s holds invalid block %d (pool 1..%d)", who,
                                                 b, num_blocks_ - 1));
    if (owner[b]++ != 0)
      return absl::InternalError(absl::StrFormat("kv: block %d owned twice (%s)", b, who));
    return absl::OkStatus();
  };
  for (int32_t b : free_)
    if (auto s = claim(b, "free list"); !s.ok()) return s;
  for (const auto* blocks : held)
    for (int32_t b : *blocks)
      if (auto s = claim(b, "a request"); !s.ok()) return s;
  for (int32_t b = 1; b < num_blocks_; ++b)
    if (owner[b] == 0)
      return absl::InternalError(absl::StrFormat("kv: block %d leaked (neither free nor held)", b));
  return absl::OkStatus();
}

}  // namespace dspark::sim
