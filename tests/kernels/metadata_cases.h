// Test cases and exact-output oracles shared by the CPU-emulation and GPU tests of the token
// mapping and indexer implementations (tests/test_token_map*.c*, tests/test_indexer*.c*).
// Pure host C++: the GPU tests download their buffers into the same images.
#pragma once

#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "kernels/reference/indexer_decode.h"

namespace dspark::testing_util {

inline constexpr int32_t kPoison = -99;

std::vector<int32_t> QslFromLens(const std::vector<int32_t>& lens);
std::vector<int32_t> Reversed(const std::vector<int32_t>& lens);
// A gtest-safe parameter name: [6]*64 -> "6x64", [0,257,1,0,3] -> "0_257_1_0_3", [] -> "none".
std::string LensName(const std::vector<int32_t>& lens);

// Fixed-seed draws of our own (no std::*_distribution, whose output differs by library).
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : gen_(seed) {}
  int32_t Uniform(int32_t lo, int32_t hi);  // inclusive; modulo bias is irrelevant here
  bool Percent(int32_t p) { return Uniform(0, 99) < p; }

 private:
  std::mt19937_64 gen_;
};

// ---- token_to_req_indices ----

struct MappingCase {
  std::string name;
  std::vector<int32_t> lens;       // device query lengths per request
  std::vector<int32_t> host_lens;  // the host's split: same total, possibly different
  int32_t num_tokens = 0;          // N
  int32_t buffer_len = 0;          // >= N
  std::vector<int32_t> qsl, host_qsl;
  int32_t num_reqs() const { return static_cast<int32_t>(lens.size()); }
};
MappingCase MakeMappingCase(std::string name, std::vector<int32_t> lens, std::vector<int32_t> host_lens,
                            int32_t num_tokens, int32_t buffer_len);
// The PR's cases: [1], [0,257,1,0,3], [6]*64, [2,6,4,0]; N = buffer = n + 7; host == device.
std::vector<MappingCase> MappingSeedCases();
// Odd sizes: up to 1500 requests (past the shared-memory boundary cache), zero-length and
// 257-token requests, padding 0..17, buffers longer than N. host == device.
std::vector<MappingCase> MappingRandomCases(uint64_t seed, int count);
// The whole buffer the mapping must leave: ref on [0, N) from `qsl`, `before` elsewhere.
std::vector<int32_t> ExpectedMappingImage(const MappingCase& c, const std::vector<int32_t>& qsl,
                                          const std::vector<int32_t>& before);

// ---- indexer decode metadata ----

struct IndexerCase {
  std::string name;
  std::vector<int32_t> lens;       // device per-request query lengths
  std::vector<int32_t> host_lens;  // host split: same total, possibly stale
  int32_t num_decodes = 0;
  int32_t num_decode_tokens = 0;  // N_d = sum(lens) + padding
  int32_t capacity = 0;
  int32_t bt_width = 0, bt_stride = 0, out_stride = 0;
  std::vector<int32_t> qsl, host_qsl;  // [num_decodes + 1]
  std::vector<int32_t> seq_lens;       // [num_decodes]
  std::vector<int32_t> block_table;    // [num_decodes, bt_stride]
  int32_t actual() const { return qsl.back(); }
};
// The PR's test: block table = arange(reqs * 74) viewed [reqs, 74], first 65 columns used;
// bt_out row stride 69; seq = lens + 4096; tokens = n + padding; capacity = max(tokens, reqs) + 31.
IndexerCase MakeIndexerSeedCase(const std::vector<int32_t>& lens, int32_t padding);
// [1], [6]*16, [0,2,6,0,4], [0,0,0] x padding {0, 17}.
std::vector<IndexerCase> IndexerSeedCases();
// Odd widths, strides > width, zero-length requests, capacity == N_d and capacity - 1 == N_d,
// up to 1100 requests (past the shared-memory boundary cache). host == device.
std::vector<IndexerCase> IndexerRandomCases(uint64_t seed, int count);
// Same case, with device lengths `lens` and the host keeping `host_lens` (same total).
IndexerCase WithStaleHost(IndexerCase c, const std::vector<int32_t>& device_lens);

// Host images of the five output buffers (bt_out is [capacity, out_stride]).
struct IndexerImages {
  std::vector<int32_t> seq_out, bt_out, decode_lens, indices, per_req;
  static IndexerImages Filled(const IndexerCase& c, int32_t value);
  // Distinct non-zero contents, as an earlier step would leave them.
  static IndexerImages Garbage(const IndexerCase& c, uint64_t seed);
  bool operator==(const IndexerImages& o) const {
    return seq_out == o.seq_out && bt_out == o.bt_out && decode_lens == o.decode_lens && indices == o.indices &&
           per_req == o.per_req;
  }
};

// Reference from the DEVICE boundaries (the truth).
ref::IndexerDecodeOut Reference(const IndexerCase& c);
// Every buffer the fused kernel must leave: `before` with each defined cell set to the reference.
IndexerImages ExpectedFusedImage(const IndexerCase& c, const IndexerImages& before);
// Every buffer state (c)'s chain must leave, derived from the reference (ExpectedFusedImage) and
// vLLM's padding rule, independently of the chain's code: only column 0 of padding block-table
// rows cleared, decode_lens[N_d:num_decodes] left holding the device lens. The host decode total
// must equal the device's (vLLM's compact_batch keeps it so).
IndexerImages ExpectedChainImage(const IndexerCase& c, const IndexerImages& before);

// Differences from the reference over the defined cells, by field. Padding rows of bt_out are
// split into column 0 and the rest, so padding residue is told apart from wrong values.
struct IndexerDiff {
  int64_t seq_out = 0, bt_valid_rows = 0, bt_pad_col0 = 0, bt_pad_rest = 0;
  int64_t decode_lens = 0, indices = 0, per_req = 0;
  int64_t StaleFields() const { return seq_out + bt_valid_rows + indices; }
  int64_t Total() const { return seq_out + bt_valid_rows + bt_pad_col0 + bt_pad_rest + decode_lens + indices + per_req; }
};
IndexerDiff DiffAgainstReference(const IndexerCase& c, const IndexerImages& got);

// gtest prints parameters by name instead of as raw bytes.
inline void PrintTo(const MappingCase& c, std::ostream* os) { *os << c.name; }
inline void PrintTo(const IndexerCase& c, std::ostream* os) { *os << c.name; }

}  // namespace dspark::testing_util
