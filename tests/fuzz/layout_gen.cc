#include "tests/fuzz/layout_gen.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/common/hd.h"

namespace dspark::fuzz {

namespace {

constexpr int32_t kUnusedBlockCell = -7777;  // block-table cells past bt_width: never read
constexpr int32_t kMaxBlockId = 1 << 20;     // a realistic KV pool; slots stay far from int32 limits
constexpr int32_t kMaxNumSeqs = 256;         // the engine limit that sets the capture sizes
constexpr int32_t kMaxPadReqs = 4;           // [requests] zero-length padding requests
constexpr int32_t kMaxPadTokens = 8;         // [tokens] padding past M when not a capture size
constexpr int32_t kSmallQuery = 64;          // [tokens] the usual prefill chunk drawn

enum class Shape { kDecodes, kPrefills, kMixed, kEmpty };
enum class DecodeStyle { kPlain, kVerify, kAdaptiveVerify, kDraft, kAdaptiveDraft };
constexpr const char* kStyleNames[] = {"plain", "verify", "adaptive_verify", "draft", "adaptive_draft"};
enum class HostSeq { kExact, kFollowsSplit, kUpperBound };
constexpr const char* kHostSeqNames[] = {"exact", "follows-split", "upper-bound"};

int32_t DecodeQuery(LayoutChoices& ch, DecodeStyle style, int32_t K) {
  switch (style) {
    case DecodeStyle::kPlain:
      return 1;
    case DecodeStyle::kVerify:
      return 1 + K;
    case DecodeStyle::kAdaptiveVerify:
      return static_cast<int32_t>(1 + ch.Range(0, K));
    case DecodeStyle::kDraft:
      return K;
    case DecodeStyle::kAdaptiveDraft:
      return static_cast<int32_t>(1 + ch.Range(0, 2 * K - 2));
  }
  return 1;
}

int32_t ContextHi(const LayoutLimits& l, int32_t K) { return std::max(l.max_context, 2 * K + 2 + 64); }

// Moves decode tokens between requests on the host, as a placeholder split with the device's
// decode total; true when the split now differs. Every host query keeps 1..qmax tokens.
bool MakeHostSplitStale(LayoutChoices& ch, const std::vector<int32_t>& q, int32_t D, int32_t qmax,
                        std::vector<int32_t>& host_q) {
  const int64_t moves = ch.Range(1, D);
  for (int64_t m = 0; m < moves; ++m) {
    const int64_t i = ch.Range(0, D - 1), j = ch.Range(0, D - 1);
    if (i == j || host_q[i] <= 1 || host_q[j] >= qmax) continue;
    --host_q[i];
    ++host_q[j];
  }
  if (std::equal(host_q.begin(), host_q.begin() + D, q.begin())) {
    for (int32_t i = 0; i < D; ++i) {
      if (host_q[i] <= 1) continue;
      for (int32_t j = 0; j < D; ++j) {
        if (j == i || host_q[j] >= qmax) continue;
        --host_q[i];
        ++host_q[j];
        return true;
      }
    }
    return false;
  }
  return true;
}

std::vector<int32_t> Prefix(const std::vector<int32_t>& lens) {
  std::vector<int32_t> out(lens.size() + 1, 0);
  std::partial_sum(lens.begin(), lens.end(), out.begin() + 1);
  return out;
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

int64_t ByteChoices::Range(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  uint64_t result = 0;
  size_t offset = 0;
  while (offset < 64 && (range >> offset) > 0 && size_ > 0) {
    --size_;
    result = (result << 8) | data_[size_];
    offset += 8;
  }
  if (range != UINT64_MAX) result %= range + 1;
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + result);
}

int64_t SeededChoices::Range(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;  // 0: all 64 bits
  const uint64_t v = gen_();
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + (span == 0 ? v : v % span));
}

int32_t MaxBtStride(const LayoutLimits& l, const ModelConsts& consts) {
  const int64_t longest =
      int64_t{ContextHi(l, consts.spec_k)} + std::max(l.max_tokens, 2 * consts.spec_k) + consts.spec_k;
  return static_cast<int32_t>(CeilDiv64(longest, 64)) + 3 + 7;  // extra columns, stride slack
}

CaseBatch DrawLayout(LayoutChoices& ch, const LayoutLimits& l, const ModelConsts& consts) {
  const int32_t K = consts.spec_k;
  const int32_t cap_limit = std::max(l.max_tokens, 1);
  const int32_t max_reqs = std::clamp(l.max_reqs, 1, cap_limit);
  const int64_t shape_draw = ch.Range(0, 9);
  const Shape shape = shape_draw < 4   ? Shape::kDecodes
                      : shape_draw < 6 ? Shape::kPrefills
                      : shape_draw < 9 ? Shape::kMixed
                                       : Shape::kEmpty;
  const int32_t pad_reqs = ch.OneIn(3) ? static_cast<int32_t>(ch.Range(1, std::min(kMaxPadReqs, max_reqs))) : 0;
  const int32_t room = max_reqs - pad_reqs;
  const bool has_decodes = shape == Shape::kDecodes || shape == Shape::kMixed;
  const bool has_prefills = shape == Shape::kPrefills || (shape == Shape::kMixed && room >= 2);
  // Small batches are the common case; a second draw skews toward them.
  int32_t D = 0, P = 0;
  if (has_decodes && room >= 1)
    D = static_cast<int32_t>(ch.Range(1, ch.Range(1, std::max(1, room - (has_prefills ? 1 : 0)))));
  if (has_prefills && room - D >= 1) P = static_cast<int32_t>(ch.Range(1, ch.Range(1, room - D)));

  const DecodeStyle style = static_cast<DecodeStyle>(ch.Range(0, 4));
  std::vector<int32_t> q, ctx;
  int32_t tokens = 0;
  // Zero-length decode requests among the others (a context or none): they own no token.
  const bool zero_mid = ch.OneIn(4);
  for (int32_t r = 0; r < D; ++r) {
    const int32_t len = zero_mid && ch.OneIn(3) ? 0 : DecodeQuery(ch, style, K);
    if (tokens + len > cap_limit) break;
    q.push_back(len);
    tokens += len;
  }
  D = static_cast<int32_t>(q.size());
  P = std::min(P, cap_limit - tokens);
  int32_t remaining = cap_limit - tokens;
  // Where the limits allow it, the first prefill is often past two FP8 segments (#57207).
  const bool long_first = cap_limit > 2 * consts.prefill_segment && ch.Bool();
  for (int32_t i = 0; i < P; ++i) {
    const int32_t most = remaining - (P - i - 1);
    const int32_t len =
        static_cast<int32_t>(i == 0 && long_first ? ch.Range(std::min(most, 2 * consts.prefill_segment + 1), most)
                             : ch.OneIn(3)        ? ch.Range(1, most)
                                                  : ch.Range(1, std::min(most, kSmallQuery)));
    q.push_back(len);
    remaining -= len;
  }
  const int32_t real = D + P, R = real + pad_reqs;
  int32_t qmax = std::max(1 + K, 2 * K - 1);  // [tokens] a host query's most, as the device's
  for (int32_t r = 0; r < D; ++r) qmax = std::max(qmax, q[r]);
  const bool want_stale = D >= 2 && ch.Bool();
  const int32_t ctx_hi = ContextHi(l, K);
  ctx.resize(static_cast<size_t>(real));
  for (int32_t r = 0; r < D; ++r) {
    const int32_t lo = want_stale ? 2 * K + 2 : 0;
    ctx[r] = static_cast<int32_t>(ch.OneIn(4) ? ch.Range(lo, 2 * K + 2 + 64) : ch.Range(lo, ctx_hi));
  }
  const bool chunked = ch.Bool();
  for (int32_t r = D; r < real; ++r) ctx[r] = chunked ? static_cast<int32_t>(ch.Range(1, l.max_context)) : 0;

  CaseBatch b;
  b.fp8_prefill = ch.Bool();
  // vLLM's DSpark draft step (decodes only) builds non-causal SWA rows; no draw of its own, so
  // the layouts of a seed stay what they were.
  b.causal = !(D > 0 && P == 0 && (style == DecodeStyle::kDraft || style == DecodeStyle::kAdaptiveDraft));
  std::vector<int32_t> lens(static_cast<size_t>(R), 0), host_lens;
  b.seq_lens.assign(static_cast<size_t>(R), 0);
  for (int32_t r = 0; r < real; ++r) {
    lens[r] = q[r];
    b.seq_lens[r] = ctx[r] + q[r];
  }
  host_lens = lens;
  const bool stale = want_stale && MakeHostSplitStale(ch, lens, D, qmax, host_lens);
  const HostSeq host_seq = static_cast<HostSeq>(ch.Range(0, 2));
  b.host_seq_lens = b.seq_lens;
  for (int32_t r = 0; r < D && host_seq != HostSeq::kExact; ++r)
    b.host_seq_lens[r] =
        ctx[r] + host_lens[r] + (host_seq == HostSeq::kUpperBound ? static_cast<int32_t>(ch.Range(0, K)) : 0);
  b.qsl = Prefix(lens);
  b.host_qsl = Prefix(host_lens);
  const int32_t M = b.qsl[R];

  BatchSizes& z = b.sizes;
  z.num_reqs = R;
  const int64_t pad_mode = ch.Range(0, 2);
  const bool speculative = D > 0 && style != DecodeStyle::kPlain;
  if (pad_mode == 0 && M > 0)
    z.num_tokens = PaddedTokenCount(M, GraphCaptureSizes(kMaxNumSeqs, cap_limit, speculative ? K : 0));
  else if (pad_mode == 1)
    z.num_tokens = std::min(cap_limit, M + static_cast<int32_t>(ch.Range(0, kMaxPadTokens)));
  else
    z.num_tokens = M;
  // Decode-only steps count their padding requests and tokens as decodes (N_d = N).
  const bool decode_only = P == 0;
  z.num_decodes = decode_only ? R : D;
  z.num_decode_tokens = decode_only ? z.num_tokens : b.qsl[D];
  const int32_t cap_lo = std::max({z.num_tokens, z.num_decodes, 1});
  // Mostly tight (as an engine sized for its capture sizes), sometimes up to the limit.
  z.capacity = static_cast<int32_t>(ch.OneIn(4) ? ch.Range(cap_lo, cap_limit)
                                                : std::min<int64_t>(cap_limit, cap_lo + ch.Range(0, 16)));

  int32_t needed = 1;
  for (int32_t r = 0; r < R; ++r) needed = std::max(needed, CeilDiv(std::max(b.seq_lens[r], b.host_seq_lens[r]), 64));
  z.bt_width = needed + (ch.OneIn(3) ? static_cast<int32_t>(ch.Range(1, 3)) : 0);
  z.bt_stride = z.bt_width + (ch.Bool() ? static_cast<int32_t>(ch.Range(1, 7)) : 0);
  const int64_t nulls = ch.Range(0, 3);  // bit 0: null first blocks; bit 1: scattered null blocks
  b.block_table.assign(static_cast<size_t>(R) * z.bt_stride, kUnusedBlockCell);
  for (int32_t r = 0; r < R; ++r) {
    int32_t* row = b.block_table.data() + static_cast<size_t>(r) * z.bt_stride;
    for (int32_t col = 0; col < z.bt_width; ++col) {
      const bool null_cell = r >= real || ((nulls & 2) && ch.OneIn(8)) || ((nulls & 1) && col == 0 && r % 3 == 0);
      row[col] = null_cell ? 0 : static_cast<int32_t>(ch.Range(1, kMaxBlockId));
    }
  }
  const bool unstored = ch.OneIn(4);
  b.slot_mapping.assign(static_cast<size_t>(z.num_tokens), -1);
  for (int32_t r = 0; r < real; ++r)
    for (int32_t t = b.qsl[r]; t < b.qsl[r + 1]; ++t) {
      if (unstored && ch.OneIn(8)) continue;
      const int32_t pos = b.seq_lens[r] - lens[r] + (t - b.qsl[r]);
      const int64_t blk = b.block_table[static_cast<size_t>(r) * z.bt_stride + pos / 64];
      b.slot_mapping[t] = blk * 64 + pos % 64;
    }
  // An engine's buffers exist even in an empty step; an empty vector's data() may be null.
  b.seq_lens.reserve(1);
  b.host_seq_lens.reserve(1);
  b.block_table.reserve(1);
  b.slot_mapping.reserve(1);

  static constexpr const char* kShapeNames[] = {"decodes", "prefills", "mixed", "empty"};
  b.name = absl::StrFormat("%s(%s)%s D=%d P=%d pad_reqs=%d M=%d N=%d(%s) %s%s host_seq=%s %s nulls=%d%s",
                           kShapeNames[static_cast<int>(shape)], kStyleNames[static_cast<int>(style)],
                           zero_mid ? " zero-len" : "", D, P, pad_reqs, M, z.num_tokens,
                           pad_mode == 0   ? "capture"
                           : pad_mode == 1 ? "+pad"
                                           : "exact",
                           chunked && P > 0 ? "chunked " : "", stale ? "stale-split" : "fresh-split",
                           kHostSeqNames[static_cast<int>(host_seq)], b.fp8_prefill ? "fp8" : "bf16",
                           static_cast<int>(nulls), unstored ? " unstored" : "");
  return b;
}

std::vector<CaseBatch> DrawSteps(LayoutChoices& ch, const LayoutProfile& p, const ModelConsts& consts) {
  std::vector<CaseBatch> steps;
  const int64_t count = ch.Range(1, std::max(p.max_steps, 1));
  for (int64_t i = 0; i < count; ++i) {
    const bool large = ch.OneIn(std::max(p.large_one_in, 1));
    steps.push_back(DrawLayout(ch, !large ? p.small : ch.Bool() ? p.long_context : p.long_query, consts));
  }
  return steps;
}

std::string DescribeLayout(const CaseBatch& b) {
  const BatchSizes& z = b.sizes;
  std::string out = absl::StrFormat(
      "layout %s\n  sizes: R=%d N=%d num_decodes=%d N_d=%d capacity=%d bt_width=%d bt_stride=%d fp8=%d\n", b.name,
      z.num_reqs, z.num_tokens, z.num_decodes, z.num_decode_tokens, z.capacity, z.bt_width, z.bt_stride,
      b.fp8_prefill ? 1 : 0);
  absl::StrAppend(&out, "  qsl:           [", absl::StrJoin(b.qsl, ","), "]\n");
  absl::StrAppend(&out, "  host qsl:      ", b.host_qsl == b.qsl ? "same" : "[" + absl::StrJoin(b.host_qsl, ",") + "]",
                  "\n");
  absl::StrAppend(&out, "  seq_lens:      [", absl::StrJoin(b.seq_lens.begin(), b.seq_lens.begin() + z.num_reqs, ","),
                  "]\n");
  absl::StrAppend(&out, "  host seq_lens: ",
                  b.host_seq_lens == b.seq_lens
                      ? "same"
                      : "[" + absl::StrJoin(b.host_seq_lens.begin(), b.host_seq_lens.begin() + z.num_reqs, ",") + "]",
                  "\n");
  for (int32_t r = 0; r < z.num_reqs; ++r) {
    const int32_t* row = b.block_table.data() + static_cast<size_t>(r) * z.bt_stride;
    std::vector<int32_t> null_cols;
    for (int32_t c = 0; c < z.bt_width; ++c)
      if (row[c] == 0) null_cols.push_back(c);
    absl::StrAppendFormat(
        &out, "  block_table[%d]: %s ... (%d null blocks%s%s)\n", r,
        absl::StrJoin(row, row + std::min(z.bt_width, 4), ","), static_cast<int>(null_cols.size()),
        null_cols.empty() ? "" : " at ",
        absl::StrJoin(null_cols.begin(), null_cols.begin() + std::min<size_t>(null_cols.size(), 8), ","));
  }
  std::vector<int32_t> unstored;
  for (int32_t t = 0; t < b.qsl[z.num_reqs]; ++t)
    if (b.slot_mapping[t] == -1) unstored.push_back(t);
  constexpr size_t kShown = 32;
  absl::StrAppend(&out, "  real tokens with slot -1 (", unstored.size(), "): [",
                  absl::StrJoin(unstored.begin(), unstored.begin() + std::min(unstored.size(), kShown), ","),
                  unstored.size() > kShown ? ",..." : "", "]\n");
  return out;
}

uint64_t LayoutSeed(uint64_t base, uint64_t index) {
  return SplitMix64(SplitMix64(base) ^ (index * 0xD1B54A32D192ED03ull));
}

}  // namespace dspark::fuzz
