#include "tests/kernels/metadata_cases.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/reference/token_map.h"

namespace dspark::testing_util {

std::vector<int32_t> QslFromLens(const std::vector<int32_t>& lens) {
  std::vector<int32_t> q(lens.size() + 1, 0);
  std::partial_sum(lens.begin(), lens.end(), q.begin() + 1);
  return q;
}

std::vector<int32_t> Reversed(const std::vector<int32_t>& lens) { return {lens.rbegin(), lens.rend()}; }

std::string LensName(const std::vector<int32_t>& lens) {
  if (lens.empty()) return "none";
  if (lens.size() > 1 && std::all_of(lens.begin(), lens.end(), [&](int32_t v) { return v == lens[0]; }))
    return absl::StrCat(lens[0], "x", lens.size());
  return absl::StrJoin(lens, "_");
}

int32_t TestRng::Uniform(int32_t lo, int32_t hi) {
  const uint64_t span = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo + 1);
  return lo + static_cast<int32_t>(gen_() % span);
}

// ---- token_to_req_indices ----

MappingCase MakeMappingCase(std::string name, std::vector<int32_t> lens, std::vector<int32_t> host_lens,
                            int32_t num_tokens, int32_t buffer_len) {
  MappingCase c;
  c.name = std::move(name);
  c.lens = std::move(lens);
  c.host_lens = std::move(host_lens);
  c.num_tokens = num_tokens;
  c.buffer_len = buffer_len;
  c.qsl = QslFromLens(c.lens);
  c.host_qsl = QslFromLens(c.host_lens);
  return c;
}

std::vector<MappingCase> MappingSeedCases() {
  std::vector<MappingCase> out;
  for (const auto& lens : {std::vector<int32_t>{1}, std::vector<int32_t>{0, 257, 1, 0, 3}, std::vector<int32_t>(64, 6),
                           std::vector<int32_t>{2, 6, 4, 0}}) {
    const int32_t n = std::accumulate(lens.begin(), lens.end(), 0);
    out.push_back(MakeMappingCase(LensName(lens), lens, lens, n + 7, n + 7));
  }
  return out;
}

std::vector<MappingCase> MappingRandomCases(uint64_t seed, int count) {
  TestRng rng(seed);
  std::vector<MappingCase> out;
  for (int i = 0; i < count; ++i) {
    const int32_t reqs = rng.Percent(8) ? 1500 : rng.Uniform(0, 40);
    std::vector<int32_t> lens(reqs);
    for (auto& l : lens) l = rng.Percent(25) ? 0 : rng.Percent(5) ? 257 : rng.Uniform(1, 9);
    const int32_t m = std::accumulate(lens.begin(), lens.end(), 0);
    const int32_t n = m + rng.Uniform(0, 17);
    const int32_t buffer = n + rng.Uniform(0, 5);
    out.push_back(MakeMappingCase(absl::StrCat("r", i, "_R", reqs, "_N", n), lens, lens, n, buffer));
  }
  return out;
}

std::vector<int32_t> ExpectedMappingImage(const MappingCase& c, const std::vector<int32_t>& qsl,
                                          const std::vector<int32_t>& before) {
  std::vector<int32_t> img = before;
  const std::vector<int32_t> mapped = ref::TokenToReq(qsl.data(), c.num_reqs(), c.num_tokens);
  std::copy(mapped.begin(), mapped.end(), img.begin());
  return img;
}

// ---- indexer decode metadata ----

IndexerCase MakeIndexerSeedCase(const std::vector<int32_t>& lens, int32_t padding) {
  IndexerCase c;
  c.name = absl::StrCat(LensName(lens), "_pad", padding);
  c.lens = lens;
  c.host_lens = lens;
  c.num_decodes = static_cast<int32_t>(lens.size());
  const int32_t n = std::accumulate(lens.begin(), lens.end(), 0);
  c.num_decode_tokens = n + padding;
  c.capacity = std::max(c.num_decode_tokens, c.num_decodes) + 31;
  c.bt_width = 65;
  c.bt_stride = 74;
  c.out_stride = 69;
  c.qsl = QslFromLens(lens);
  c.host_qsl = c.qsl;
  for (int32_t l : lens) c.seq_lens.push_back(l + 4096);
  c.block_table.resize(static_cast<size_t>(c.num_decodes) * c.bt_stride);
  std::iota(c.block_table.begin(), c.block_table.end(), 0);
  return c;
}

std::vector<IndexerCase> IndexerSeedCases() {
  std::vector<IndexerCase> out;
  for (const auto& lens : {std::vector<int32_t>{1}, std::vector<int32_t>(16, 6), std::vector<int32_t>{0, 2, 6, 0, 4},
                           std::vector<int32_t>{0, 0, 0}})
    for (int32_t padding : {0, 17}) out.push_back(MakeIndexerSeedCase(lens, padding));
  return out;
}

std::vector<IndexerCase> IndexerRandomCases(uint64_t seed, int count) {
  TestRng rng(seed);
  std::vector<IndexerCase> out;
  for (int i = 0; i < count; ++i) {
    IndexerCase c;
    const bool large = rng.Percent(5);
    c.num_decodes = large ? 1100 : rng.Uniform(0, 20);
    for (int32_t r = 0; r < c.num_decodes; ++r)
      c.lens.push_back(large ? rng.Uniform(0, 2) : rng.Percent(20) ? 0 : rng.Uniform(1, 7));
    c.host_lens = c.lens;
    const int32_t n = std::accumulate(c.lens.begin(), c.lens.end(), 0);
    c.num_decode_tokens = n + (rng.Percent(40) ? 0 : rng.Uniform(1, 17));
    const int32_t floor = std::max(c.num_decode_tokens, c.num_decodes);
    const int32_t pick = rng.Uniform(0, 3);
    c.capacity = floor + (pick == 0 ? 0 : pick == 1 ? 1 : rng.Uniform(2, 600));
    // Wide rows cross the kernels' staging bounds (4 columns per lane of 128; a guessed row fits
    // 512 columns).
    const int32_t wide[] = {129, 300, 512, 513, 1100};
    c.bt_width = large ? rng.Uniform(1, 5) : rng.Percent(15) ? wide[rng.Uniform(0, 4)] : rng.Uniform(1, 70);
    c.bt_stride = c.bt_width + rng.Uniform(0, 9);
    c.out_stride = c.bt_width + rng.Uniform(0, 5);
    c.qsl = QslFromLens(c.lens);
    c.host_qsl = c.qsl;
    for (int32_t l : c.lens) c.seq_lens.push_back(l + rng.Uniform(0, 200000));
    c.block_table.resize(static_cast<size_t>(c.num_decodes) * c.bt_stride);
    for (auto& b : c.block_table) b = rng.Uniform(0, 100000);
    c.name = absl::StrCat("r", i, "_nd", c.num_decodes, "_Nd", c.num_decode_tokens, "_cap", c.capacity, "_W",
                          c.bt_width);
    out.push_back(std::move(c));
  }
  return out;
}

IndexerCase WithStaleHost(IndexerCase c, const std::vector<int32_t>& device_lens) {
  c.lens = device_lens;
  c.qsl = QslFromLens(device_lens);
  c.name += "_stale";
  return c;
}

IndexerImages IndexerImages::Filled(const IndexerCase& c, int32_t value) {
  const size_t cap = static_cast<size_t>(c.capacity);
  IndexerImages im;
  im.seq_out.assign(cap, value);
  im.bt_out.assign(cap * static_cast<size_t>(c.out_stride), value);
  im.decode_lens.assign(cap, value);
  im.indices.assign(cap, value);
  im.per_req.assign(cap, value);
  return im;
}

IndexerImages IndexerImages::Garbage(const IndexerCase& c, uint64_t seed) {
  TestRng rng(seed);
  IndexerImages im = Filled(c, 0);
  for (auto* v : {&im.seq_out, &im.bt_out, &im.decode_lens, &im.indices, &im.per_req})
    for (auto& x : *v) x = rng.Uniform(1000, 900000);
  return im;
}

ref::IndexerDecodeOut Reference(const IndexerCase& c) {
  return ref::IndexerDecode(c.qsl.data(), c.seq_lens.data(), c.block_table.data(), c.bt_stride, c.bt_width,
                            c.num_decodes, c.num_decode_tokens, c.capacity);
}

IndexerImages ExpectedFusedImage(const IndexerCase& c, const IndexerImages& before) {
  const ref::IndexerDecodeOut r = Reference(c);
  IndexerImages im = before;
  im.seq_out = r.seq_out;
  for (int32_t t = 0; t < c.num_decode_tokens; ++t) {
    for (int32_t col = 0; col < c.bt_width; ++col)
      im.bt_out[static_cast<size_t>(t) * c.out_stride + col] = r.bt_rows[static_cast<size_t>(t) * c.bt_width + col];
    im.decode_lens[t] = r.decode_lens[t];
    im.indices[t] = r.indices[t];
  }
  for (int32_t q = 0; q < c.num_decodes; ++q) im.per_req[q] = r.per_req[q];
  return im;
}

IndexerImages ExpectedChainImage(const IndexerCase& c, const IndexerImages& before) {
  // The chain's values are the reference's wherever it writes (it expands by the DEVICE lengths,
  // and the host total it sizes the expansions with equals the device's, as compact_batch keeps
  // it); vLLM's chain differs from the fused kernel only by two rules: padding rows [A, N_d) of
  // bt_out are cleared in column 0 alone, and decode_lens[N_d:num_decodes] keep torch.diff's
  // device lengths (the fill with 1 covers [0, N_d) only).
  IndexerImages im = ExpectedFusedImage(c, before);
  const int32_t actual = c.host_qsl[c.num_decodes];  // int(decode_lens_cpu.sum())
  for (int32_t t = std::max(actual, 0); t < c.num_decode_tokens; ++t)
    for (int32_t col = 1; col < c.bt_width; ++col) {
      const size_t at = static_cast<size_t>(t) * c.out_stride + col;
      im.bt_out[at] = before.bt_out[at];
    }
  for (int32_t q = std::max(c.num_decode_tokens, 0); q < c.num_decodes; ++q) im.decode_lens[q] = c.qsl[q + 1] - c.qsl[q];
  return im;
}

IndexerDiff DiffAgainstReference(const IndexerCase& c, const IndexerImages& got) {
  const ref::IndexerDecodeOut r = Reference(c);
  IndexerDiff d;
  for (int32_t t = 0; t < c.capacity; ++t) d.seq_out += got.seq_out[t] != r.seq_out[t];
  const int32_t actual = c.actual();
  for (int32_t t = 0; t < c.num_decode_tokens; ++t) {
    for (int32_t col = 0; col < c.bt_width; ++col) {
      const bool differs =
          got.bt_out[static_cast<size_t>(t) * c.out_stride + col] != r.bt_rows[static_cast<size_t>(t) * c.bt_width + col];
      if (t < actual) d.bt_valid_rows += differs;
      else if (col == 0) d.bt_pad_col0 += differs;
      else d.bt_pad_rest += differs;
    }
    d.decode_lens += got.decode_lens[t] != r.decode_lens[t];
    d.indices += got.indices[t] != r.indices[t];
  }
  for (int32_t q = 0; q < c.num_decodes; ++q) d.per_req += got.per_req[q] != r.per_req[q];
  return d;
}

}  // namespace dspark::testing_util
