#include "kernels/suite/cases.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/hd.h"

namespace dspark {

namespace {

constexpr int32_t kUnusedBlockCell = -7777;  // block-table cells past bt_width: never read

struct CaseInfo {
  SeedCase c;
  const char* name;
  bool stale;
  bool speculative;
};
constexpr CaseInfo kCaseInfo[] = {
    {SeedCase::kPrefill, "prefill", false, false},
    {SeedCase::kChunkedPrefill, "chunked_prefill", false, false},
    {SeedCase::kMixed, "mixed", false, false},
    {SeedCase::kDecode, "decode", false, false},
    {SeedCase::kVerify, "verify", false, true},
    {SeedCase::kAdaptiveVerify, "adaptive_verify", true, true},
    {SeedCase::kDraft, "draft", true, true},
    {SeedCase::kAdaptiveDraft, "adaptive_draft", true, true},
};
const CaseInfo& Info(SeedCase c) { return kCaseInfo[static_cast<int>(c)]; }

// Own draws (no std::*_distribution: not reproducible across standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  // Inclusive range; modulo bias is irrelevant for test batches.
  int32_t Range(int32_t lo, int32_t hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<int32_t>(gen_() % static_cast<uint64_t>(static_cast<int64_t>(hi) - lo + 1));
  }
  // [0, 1) in float32 from the top 24 bits: the same value on every platform.
  float Unit() { return static_cast<float>(gen_() >> 40) * (1.0f / 16777216.0f); }

 private:
  std::mt19937_64 gen_;
};

// Global top-`budget` (request, position) slots by survival score S(r, k) = prod_{i<=k} p_{r,i},
// k = 1..max_k; returns how many positions each request keeps (a prefix, since S decreases in k
// and ties go to the smaller k).
std::vector<int32_t> AllocateTopB(Rng& rng, int32_t reqs, int32_t max_k, int32_t budget) {
  std::vector<std::tuple<float, int32_t, int32_t>> slots;
  for (int32_t r = 0; r < reqs; ++r) {
    float survival = 1.0f;
    for (int32_t k = 1; k <= max_k; ++k) {
      survival *= 0.35f + 0.6f * rng.Unit();
      slots.emplace_back(survival, r, k);
    }
  }
  std::sort(slots.begin(), slots.end(), [](const auto& a, const auto& b) {
    if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
    if (std::get<1>(a) != std::get<1>(b)) return std::get<1>(a) < std::get<1>(b);
    return std::get<2>(a) < std::get<2>(b);
  });
  std::vector<int32_t> kept(static_cast<size_t>(reqs), 0);
  const size_t take = std::min(slots.size(), static_cast<size_t>(std::max(budget, 0)));
  for (size_t i = 0; i < take; ++i) ++kept[std::get<1>(slots[i])];
  return kept;
}

// Lowers the largest entries (never below 1) until the sum fits `budget`.
void FitBudget(std::vector<int32_t>& lens, int64_t budget) {
  int64_t sum = std::accumulate(lens.begin(), lens.end(), int64_t{0});
  while (sum > budget) {
    auto largest = std::max_element(lens.begin(), lens.end());
    if (*largest <= 1) break;
    const int64_t cut = std::min<int64_t>(sum - budget, *largest - 1);
    *largest -= static_cast<int32_t>(std::max<int64_t>(cut, 1));
    sum = std::accumulate(lens.begin(), lens.end(), int64_t{0});
  }
}

// Moves one token from a request with >= 2 to another whose context allows one more; false if
// no such pair exists. `room[r]` is how many more tokens request r may take.
bool MoveOneToken(std::vector<int32_t>& lens, const std::vector<int32_t>& room) {
  for (size_t i = 0; i < lens.size(); ++i) {
    if (lens[i] < 2) continue;
    for (size_t j = 0; j < lens.size(); ++j) {
      if (j == i || room[j] < 1) continue;
      --lens[i];
      ++lens[j];
      return true;
    }
  }
  return false;
}

std::vector<int32_t> Prefix(const std::vector<int32_t>& lens) {
  std::vector<int32_t> q(lens.size() + 1, 0);
  std::partial_sum(lens.begin(), lens.end(), q.begin() + 1);
  return q;
}

}  // namespace

std::string_view SeedCaseName(SeedCase c) { return Info(c).name; }

absl::StatusOr<SeedCase> ParseSeedCase(std::string_view name) {
  for (const CaseInfo& i : kCaseInfo)
    if (name == i.name) return i.c;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown case '", std::string(name),
      "', expected prefill, chunked_prefill, mixed, decode, verify, adaptive_verify, draft or adaptive_draft"));
}

bool SeedCaseHostStale(SeedCase c) { return Info(c).stale; }
bool SeedCaseSpeculative(SeedCase c) { return Info(c).speculative; }

int32_t PaddedTokenCount(int32_t tokens, const std::vector<int32_t>& capture_sizes) {
  const auto it = std::lower_bound(capture_sizes.begin(), capture_sizes.end(), tokens);
  return it == capture_sizes.end() ? tokens : *it;
}

BatchInputs CaseBatch::Inputs() const {
  BatchInputs in;
  in.sizes = sizes;
  in.device = DeviceBatch{qsl.data(), seq_lens.data(), block_table.data(), slot_mapping.data()};
  in.host = HostBatch{host_qsl.data(), host_seq_lens.data()};
  in.fp8_prefill = fp8_prefill;
  in.causal = causal;
  in.full_graph = full_graph;
  in.adaptive = adaptive;
  return in;
}

bool CaseBatch::HostStale() const { return host_qsl != qsl || host_seq_lens != seq_lens; }

absl::StatusOr<CaseBatch> MakeSeedCase(SeedCase c, const CaseOptions& o) {
  if (o.batch < 0 || o.padding_reqs < 0 || o.max_num_batched_tokens < 1 || o.max_num_seqs < 1 ||
      o.max_context < 0 || o.extra_bt_cols < 0 || o.bt_stride_slack < 0 || o.min_bt_width < 0)
    return absl::InvalidArgumentError(
        "case options: batch, padding_reqs, extra_bt_cols, bt_stride_slack, min_bt_width, max_context must be >= 0 "
        "and max_num_batched_tokens, max_num_seqs >= 1");
  const int32_t B = o.batch, K = o.consts.spec_k, budget = o.max_num_batched_tokens;
  const int32_t min_ctx = 2 * K + 2;
  const int32_t max_ctx = std::max(o.max_context, min_ctx);
  Rng rng(o.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(c) * 0x632BE59BD9B4E019ull + 1);

  // Per real request: device query length and context before the query, and the host's view.
  std::vector<int32_t> q(B, 0), ctx(B, 0), host_q, host_ctx;
  int32_t real_decodes = 0;
  const int32_t chunk_cap = std::max(1, 2 * budget / std::max(B, 1));
  switch (c) {
    case SeedCase::kPrefill: {
      // Request 0 is long enough for several FP8 segments; the rest share what is left.
      if (B == 0) break;
      q[0] = std::max(1, std::min(2051, budget * 5 / 8));
      const int32_t rest = std::max(budget - q[0], B - 1);
      std::vector<int32_t> others;
      for (int32_t r = 1; r < B; ++r) others.push_back(rng.Range(1, std::max(1, 2 * rest / std::max(B - 1, 1))));
      FitBudget(others, rest);
      for (int32_t r = 1; r < B; ++r) q[r] = others[r - 1];
      break;
    }
    case SeedCase::kChunkedPrefill:
      for (int32_t r = 0; r < B; ++r) {
        q[r] = rng.Range(1, chunk_cap);
        ctx[r] = rng.Range(1, std::max(1, max_ctx / 1024)) * 1024 - rng.Range(0, 1023);
        ctx[r] = std::max(ctx[r], 0);
      }
      FitBudget(q, budget);
      break;
    case SeedCase::kMixed: {
      // B - 1 decodes and one prefill chunk. vLLM's V1 Scheduler.schedule (vllm/v1/core/sched/
      // scheduler.py, read_file id 61369248005) schedules the running requests first and admits
      // waiting ones with what is left of the token budget, so a decode-heavy batch takes in one
      // new request at a time. The seed's own figures say the same: its mixed "After" (72.48 us)
      // is decode's (46.27) plus a fifth of prefill's (118.21), so its prefill part is one light
      // chunk, not half a batch of them (our earlier B / 2 prefills made mixed's "After" cost more
      // than a whole prefill batch's).
      real_decodes = std::max(B - 1, 0);
      std::vector<int32_t> prefill_q;
      for (int32_t r = 0; r < B; ++r) {
        if (r < real_decodes) {
          q[r] = 1;
          ctx[r] = rng.Range(min_ctx, max_ctx);
        } else {
          prefill_q.push_back(rng.Range(1, chunk_cap));
          ctx[r] = rng.Range(0, max_ctx / 4);
        }
      }
      FitBudget(prefill_q, std::max<int64_t>(budget - real_decodes, 1));
      for (int32_t r = real_decodes; r < B; ++r) q[r] = prefill_q[r - real_decodes];
      break;
    }
    case SeedCase::kDecode:
    case SeedCase::kVerify:
      real_decodes = B;
      for (int32_t r = 0; r < B; ++r) {
        q[r] = c == SeedCase::kDecode ? 1 : 1 + K;
        ctx[r] = rng.Range(min_ctx, max_ctx);
      }
      break;
    case SeedCase::kAdaptiveVerify: {
      real_decodes = B;
      const int32_t drafts = o.adaptive_budget_per_req * B;
      const std::vector<int32_t> device_k = AllocateTopB(rng, B, K, drafts);
      const std::vector<int32_t> host_k = AllocateTopB(rng, B, K, drafts);  // the previous step's scores
      host_q.resize(B);
      for (int32_t r = 0; r < B; ++r) {
        q[r] = 1 + device_k[r];
        host_q[r] = 1 + host_k[r];
        ctx[r] = rng.Range(min_ctx, max_ctx);
      }
      if (host_q == q) {
        std::vector<int32_t> room(B);
        for (int32_t r = 0; r < B; ++r) room[r] = 1 + K - host_q[r];
        MoveOneToken(host_q, room);
      }
      host_ctx = ctx;
      break;
    }
    case SeedCase::kDraft:
    case SeedCase::kAdaptiveDraft: {
      real_decodes = B;
      // Verification accepted a_r of K drafts (known on the device first); the host assumes K.
      host_q.assign(B, K);
      host_ctx.resize(B);
      for (int32_t r = 0; r < B; ++r) {
        const int32_t base = rng.Range(min_ctx, max_ctx);
        const int32_t accepted = r == 0 ? rng.Range(0, K - 1) : rng.Range(0, K);
        ctx[r] = base + 1 + accepted;
        host_ctx[r] = base + 1 + K;
        q[r] = K;
      }
      if (c == SeedCase::kAdaptiveDraft) {
        const std::vector<int32_t> extra = AllocateTopB(rng, B, 2 * K - 2, B * (K - 1));
        for (int32_t r = 0; r < B; ++r) q[r] = 1 + extra[r];
        if (q == host_q) {
          std::vector<int32_t> room(B, 1);
          MoveOneToken(q, room);
        }
      }
      break;
    }
  }
  if (host_q.empty()) host_q = q;
  if (host_ctx.empty()) host_ctx = ctx;

  const bool decode_only = c != SeedCase::kPrefill && c != SeedCase::kChunkedPrefill && c != SeedCase::kMixed;
  const int32_t R = B + o.padding_reqs;
  std::vector<int32_t> lens(R, 0), host_lens(R, 0);
  CaseBatch b;
  b.seed_case = c;
  b.fp8_prefill = o.fp8_prefill;
  b.causal = c != SeedCase::kDraft && c != SeedCase::kAdaptiveDraft;
  b.name = absl::StrFormat("%s_b%d_s%d", std::string(SeedCaseName(c)), B, o.seed);
  b.seq_lens.assign(R, 0);
  b.host_seq_lens.assign(R, 0);
  for (int32_t r = 0; r < B; ++r) {
    lens[r] = q[r];
    host_lens[r] = host_q[r];
    b.seq_lens[r] = ctx[r] + q[r];
    b.host_seq_lens[r] = host_ctx[r] + host_q[r];
  }
  b.qsl = Prefix(lens);
  b.host_qsl = Prefix(host_lens);
  const int32_t M = b.qsl[R];

  BatchSizes& z = b.sizes;
  z.num_reqs = R;
  z.num_decodes = decode_only ? R : real_decodes;
  z.num_tokens =
      o.pad_to_capture_size && M > 0
          ? PaddedTokenCount(M, GraphCaptureSizes(o.max_num_seqs, o.max_num_batched_tokens, SeedCaseSpeculative(c) ? K : 0))
          : M;
  z.num_decode_tokens = decode_only ? z.num_tokens : b.qsl[z.num_decodes];
  // As the simulator's steps (sim/model/step_plan.h): a decode-only step whose tokens fit a
  // capture size runs a FULL graph; the adaptive verification case is vLLM's max_query_len step.
  if (decode_only && o.pad_to_capture_size && M > 0) {
    const std::vector<int32_t> sizes =
        GraphCaptureSizes(o.max_num_seqs, o.max_num_batched_tokens, SeedCaseSpeculative(c) ? K : 0);
    b.full_graph = !sizes.empty() && M <= sizes.back();
  }
  b.adaptive = c == SeedCase::kAdaptiveVerify;
  z.capacity = o.capacity > 0 ? o.capacity : std::max({z.num_tokens, R, budget});
  if (z.capacity < z.num_tokens || z.capacity < z.num_decodes)
    return absl::InvalidArgumentError(absl::StrFormat(
        "case %s: capacity=%d is below num_tokens=%d or num_decodes=%d", b.name, z.capacity, z.num_tokens,
        z.num_decodes));

  // Blocks of the model's block size (64 tokens on DeepSeek-V4.1, 256 on DeepSeek-V4).
  const int32_t bs = o.consts.mla_block_size;
  int32_t needed_cols = 1;
  for (int32_t r = 0; r < R; ++r)
    needed_cols = std::max(needed_cols, CeilDiv(std::max(b.seq_lens[r], b.host_seq_lens[r]), bs));
  z.bt_width = std::max(needed_cols, o.min_bt_width) + o.extra_bt_cols;
  z.bt_stride = z.bt_width + o.bt_stride_slack;
  b.block_table.assign(static_cast<size_t>(R) * z.bt_stride, kUnusedBlockCell);
  for (int32_t r = 0; r < R; ++r)
    for (int32_t col = 0; col < z.bt_width; ++col)
      b.block_table[static_cast<size_t>(r) * z.bt_stride + col] = r < B ? rng.Range(1, 1000000) : 0;
  if (o.null_first_block_every > 0)
    for (int32_t r = 0; r < B; r += o.null_first_block_every) b.block_table[static_cast<size_t>(r) * z.bt_stride] = 0;

  // The ordinary (ratio-1, `bs`-token block) KV slot of every real token; -1 for graph padding.
  b.slot_mapping.assign(z.num_tokens, -1);
  for (int32_t r = 0; r < R; ++r) {
    for (int32_t t = b.qsl[r]; t < b.qsl[r + 1]; ++t) {
      const int32_t pos = b.seq_lens[r] - lens[r] + (t - b.qsl[r]);
      const int64_t blk = b.block_table[static_cast<size_t>(r) * z.bt_stride + pos / bs];
      b.slot_mapping[t] = blk * bs + pos % bs;
    }
  }
  if (o.unstored_token_every > 0)
    for (int32_t t = 0; t < M; t += o.unstored_token_every) b.slot_mapping[t] = -1;
  // An engine's buffers exist even in an empty step; an empty vector's data() may be null.
  b.seq_lens.reserve(1);
  b.host_seq_lens.reserve(1);
  b.block_table.reserve(1);
  b.slot_mapping.reserve(1);
  return b;
}

absl::StatusOr<std::vector<int32_t>> ResplitDecodeTokens(const CaseBatch& batch) {
  const int32_t nd = batch.sizes.num_decodes;
  std::vector<int32_t> who, lens, room;
  for (int32_t r = 0; r < nd; ++r) {
    if (batch.seq_lens[r] <= 0) continue;  // padding requests own no tokens and no context
    const int32_t len = batch.qsl[r + 1] - batch.qsl[r];
    who.push_back(r);
    lens.push_back(len);
  }
  std::vector<int32_t> moved(lens.rbegin(), lens.rend());
  bool fits = true;
  for (size_t i = 0; i < who.size(); ++i) fits = fits && moved[i] <= batch.seq_lens[who[i]];
  if (!fits || moved == lens) {
    moved = lens;
    room.resize(who.size());
    for (size_t i = 0; i < who.size(); ++i) room[i] = batch.seq_lens[who[i]] - lens[i];
    if (!MoveOneToken(moved, room))
      return absl::FailedPreconditionError(
          absl::StrCat("case ", batch.name, ": no different split of the decode tokens exists"));
  }
  std::vector<int32_t> all(batch.sizes.num_reqs);
  for (int32_t r = 0; r < batch.sizes.num_reqs; ++r) all[r] = batch.qsl[r + 1] - batch.qsl[r];
  for (size_t i = 0; i < who.size(); ++i) all[who[i]] = moved[i];
  return Prefix(all);
}

}  // namespace dspark
