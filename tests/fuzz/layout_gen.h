// Random batch layouts for the differential fuzz of the builder suite: one step's arrays as docs/design.md s.3 defines them, drawn from
// either libFuzzer's bytes or a seeded PRNG through the same code, so that a libFuzzer input, a
// CI seed and a GPU seed all name a layout exactly.
//
// What a layout can hold (each feature is a choice, so every combination is reachable):
//   - sizes up to the limits' capacity: R requests (real, zero-length ones among the decodes, and
//     zero-length padding requests), M real tokens, N padded (to a CUDA-graph capture size, by a
//     few tokens, or not at all), capacity from N up to the limit;
//   - decodes only (plain, DSpark verify 1 + K, adaptive 1 + k_r, draft K or its adaptive split),
//     prefills only (fresh or chunked, after a context of up to max_context), or both;
//   - block tables [R, bt_stride] with stride slack and extra columns, null blocks (block 0,
//     vLLM's freed sliding-window pages), null first blocks; cells past bt_width are a sentinel
//     no builder may read;
//   - slot_mapping -1 for padding tokens and, optionally, for some real tokens (unstored);
//   - a stale host view as adaptive verification leaves it: the host's decode split differs,
//     with the same decode total and the same prefill rows; host seq_lens exact, following the
//     host split, or an upper bound (the draft step);
//   - FP8 or BF16 prefill segmentation.
// Every layout passes ValidateBatchSizes; decode contexts are at least 2K + 2 whenever the host
// split is stale, so a host-built mapping never computes a negative position.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/batch.h"
#include "kernels/suite/cases.h"

namespace dspark::fuzz {

// Where a layout's choices come from.
class LayoutChoices {
 public:
  virtual ~LayoutChoices() = default;
  // A value in [lo, hi]; lo when hi <= lo.
  virtual int64_t Range(int64_t lo, int64_t hi) = 0;
  bool Bool() { return Range(0, 1) == 1; }
  // True for the range's top value, so that exhausted libFuzzer bytes (which give lo) pick the
  // common case, not the rare one.
  bool OneIn(int64_t n) { return Range(1, n) == n; }
};

// libFuzzer bytes, decoded as FuzzedDataProvider::ConsumeIntegralInRange does (bytes taken from
// the end of the input, as many as the range needs; lo once they run out), so that the fuzzer's
// mutations of the tail steer the sizes and the front holds the bulk of the values.
class ByteChoices final : public LayoutChoices {
 public:
  ByteChoices(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  int64_t Range(int64_t lo, int64_t hi) override;

 private:
  const uint8_t* data_;
  size_t size_;
};

// std::mt19937_64 with an explicit seed; own modulo draws (no std::*_distribution: not the same
// values across standard libraries).
class SeededChoices final : public LayoutChoices {
 public:
  explicit SeededChoices(uint64_t seed) : gen_(seed) {}
  int64_t Range(int64_t lo, int64_t hi) override;

 private:
  std::mt19937_64 gen_;
};

struct LayoutLimits {
  int32_t max_tokens = 256;    // [tokens] largest capacity (every per-token buffer's length)
  int32_t max_reqs = 48;       // [requests] most requests, padding requests included
  int32_t max_context = 4096;  // [tokens] longest context before a query
};
// The CI / GPU mix: mostly `small`; one layout in `large_one_in` from long_query or
// long_context (half each), which reach several FP8 segments and long prefill chunks, or chunked
// prefill after a long context and wide block tables. Kept apart because persistent buffers
// cost capacity x bt_stride.
struct LayoutProfile {
  LayoutLimits small;
  LayoutLimits long_query{3072, 32, 4096};
  LayoutLimits long_context{256, 32, 100000};
  int32_t large_one_in = 32;
  int32_t max_steps = 3;  // [steps] per input, run one after the other on the same buffers
};

// [int32] the widest block-table row stride a layout within `limits` has.
int32_t MaxBtStride(const LayoutLimits& limits, const ModelConsts& consts);

// One layout. `name` says which choices made it (a short recipe); seed_case is unused.
CaseBatch DrawLayout(LayoutChoices& choices, const LayoutLimits& limits, const ModelConsts& consts);

// 1..profile.max_steps layouts, each from one of the profile's limits.
std::vector<CaseBatch> DrawSteps(LayoutChoices& choices, const LayoutProfile& profile, const ModelConsts& consts);

// The layout in a form a person can check by hand: sizes, device and host boundaries and
// sequence lengths, each block-table row (its first ids, null blocks), unstored tokens.
std::string DescribeLayout(const CaseBatch& b);

// The seed of layout `index` of a run started from `base` (SplitMix64 of both): any layout of a
// long run replays alone.
uint64_t LayoutSeed(uint64_t base, uint64_t index);

}  // namespace dspark::fuzz
