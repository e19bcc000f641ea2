// Paged KV cache block manager (vLLM-like). Block 0 is the null page and is never handed out;
// the free list is a LIFO stack initialised so that a fresh pool hands out 1, 2, 3, ... and a
// freed block is reused first, which keeps block ids (and therefore slot mappings) a pure
// function of the schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace dspark::sim {

// [bytes] The KV cache one token adds on each GPU, every layer together (the pool a --kv-gb
// holds, docs/models.md): DeepSeek-V4-Flash's 21 CSA layers keep a compressed entry of 640 B
// (512 FP8 latent + 64 BF16 rope dims) and an indexer key of 128 B per 4 tokens, its 20 HCA
// layers a 640 B entry per 128 tokens: 21 * (640 + 128) / 4 + 20 * 640 / 128 = 4,132 B. One KV
// head, so each tensor-parallel rank holds all of it. The sliding windows (128 tokens per layer
// and request) are per request, not per token, and are not in it.
inline constexpr int64_t kKvBytesPerToken = 21 * (640 + 128) / 4 + 20 * 640 / 128;
static_assert(kKvBytesPerToken == 4132, "the derivation above");

class KvCache {
 public:
  // num_blocks includes the null block 0; block_size [tokens per block].
  KvCache(int32_t num_blocks, int32_t block_size);

  int32_t block_size() const { return block_size_; }
  int32_t num_blocks() const { return num_blocks_; }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_used() const { return num_blocks_ - 1 - num_free(); }
  // The free list itself (read-only), for checkers that account blocks independently.
  const std::vector<int32_t>& free_blocks() const { return free_; }

  // Blocks a request holding `tokens` tokens needs.
  int32_t BlocksFor(int32_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // Whether `blocks` already covers `tokens` tokens (BlocksFor(tokens) <= blocks.size(),
  // without the division: the planner asks this of every request every step).
  bool Covers(const std::vector<int32_t>& blocks, int32_t tokens) const {
    return static_cast<int64_t>(blocks.size()) * block_size_ >= tokens;
  }

  // Grows `blocks` so that it covers `tokens` tokens. All or nothing: returns false, and
  // changes nothing, when the pool has too few free blocks.
  bool Grow(std::vector<int32_t>& blocks, int32_t tokens) {
    const int32_t need = BlocksFor(tokens) - static_cast<int32_t>(blocks.size());
    if (need <= 0) return true;
    if (need > num_free()) return false;
    for (int32_t i = 0; i < need; ++i) {
      blocks.push_back(free_.back());
      free_.pop_back();
    }
    return true;
  }

  // Returns every block of `blocks` to the pool (last block first, so that the request's first
  // block is the next one handed out) and clears it.
  void Release(std::vector<int32_t>& blocks) {
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) free_.push_back(*it);
    blocks.clear();
  }

  // Checks that the free list and the blocks `held` by live requests partition 1..num_blocks-1
  // exactly: nothing leaked, nothing double-owned, the null block never handed out.
  absl::Status CheckConsistency(const std::vector<const std::vector<int32_t>*>& held) const;

 private:
  int32_t num_blocks_;
  int32_t block_size_;
  std::vector<int32_t> free_;  // stack; back() is handed out next
};

}  // namespace dspark::sim
