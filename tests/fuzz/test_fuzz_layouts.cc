// The CI form of the batch-layout differential fuzz (tests/fuzz/layout_gen.h, layout_check.h):
// seeded layouts through every registered implementation in CPU emulation, a replay of one seed,
// the rules of the check on differences made by hand, and the generator's own promises. The
// libFuzzer form is fuzz_batch_layout.cc (scripts/fuzz.sh batch_layout); its committed inputs
// replay in test_fuzz_corpus.cc; the GPU form is test_fuzz_layouts_gpu.cu.
//
//   DSPARK_FUZZ_LAYOUTS=N          layouts (steps) of the seeded run (default 2000)
//   DSPARK_FUZZ_LAYOUT_SEED=S      its base seed (default 1)
//   DSPARK_FUZZ_LAYOUT_REPLAY=S    FuzzLayouts.Replay runs the one layout seed S and prints it
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/reference/indexer_prefill_step.h"
#include "kernels/suite/impl_registry.h"
#include "nlohmann/json.hpp"
#include "sim/studies/step_input.h"
#include "tests/fuzz/layout_check.h"
#include "tests/fuzz/layout_gen.h"
#include "tests/fuzz/layout_test_env.h"

namespace dspark::fuzz {
namespace {

// The layout seed being checked, for a crash (which no test assertion outlives) to name it.
volatile uint64_t g_current_seed = 0;
volatile sig_atomic_t g_running = 0;

void SayCrashingSeed(int sig) {
  if (g_running) {
    char buf[160] = "\nfuzz layouts: crashed on layout seed 0x";
    size_t n = std::strlen(buf);
    for (int shift = 60; shift >= 0; shift -= 4) buf[n++] = "0123456789abcdef"[(g_current_seed >> shift) & 0xf];
    const char tail[] = " (replay: DSPARK_FUZZ_LAYOUT_REPLAY=<seed> dspark_tests --gtest_filter=FuzzLayouts.Replay)\n";
    std::memcpy(buf + n, tail, sizeof(tail) - 1 < sizeof(buf) - n ? sizeof(tail) - 1 : sizeof(buf) - n);
    n += std::min(sizeof(tail) - 1, sizeof(buf) - n);
    (void)!write(2, buf, n);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

class CrashNamesSeed {
 public:
  CrashNamesSeed() {
    for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL}) old_[sig] = signal(sig, SayCrashingSeed);
    g_running = 1;
  }
  ~CrashNamesSeed() {
    g_running = 0;
    for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL}) signal(sig, old_[sig]);
  }

 private:
  sighandler_t old_[32] = {};
};

std::string ReplayHint(uint64_t seed) {
  return absl::StrFormat(
      "replay: DSPARK_FUZZ_LAYOUT_REPLAY=0x%x build-cpu/dspark_tests --gtest_filter=FuzzLayouts.Replay", seed);
}

TEST(FuzzLayouts, SeededLayoutsMatchReferencesInEveryImplementation) {
  const uint64_t count = EnvU64("DSPARK_FUZZ_LAYOUTS", 2000);
  const uint64_t base = EnvU64("DSPARK_FUZZ_LAYOUT_SEED", 1);
  const ModelConsts consts;
  const LayoutProfile profile;
  LayoutRunStats stats;
  const auto start = std::chrono::steady_clock::now();
  {
    CrashNamesSeed crash_names_seed;
    for (uint64_t i = 0; static_cast<uint64_t>(stats.steps) < count; ++i) {
      const uint64_t seed = LayoutSeed(base, i);
      g_current_seed = seed;
      SeededChoices choices(seed);
      const std::string report = CheckStepsOnCpu(DrawSteps(choices, profile, consts), consts, &stats);
      ASSERT_TRUE(report.empty()) << absl::StrFormat("layout seed 0x%x (index %d of base seed %d); %s\n", seed, i, base,
                                                     ReplayHint(seed))
                                  << report;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "fuzz layouts: %llu layouts asked, %lld steps, %lld implementation runs in %.2f s; cells: stale-host %lld, "
      "padding-residue %lld, bug %lld; stale-split steps %lld, multi-segment FP8 steps %lld; %.1f launches and %.2f "
      "host syncs per step (all implementations)\n",
      static_cast<unsigned long long>(count), static_cast<long long>(stats.steps), static_cast<long long>(stats.runs),
      s, static_cast<long long>(stats.cells[0]), static_cast<long long>(stats.cells[1]),
      static_cast<long long>(stats.cells[2]), static_cast<long long>(stats.stale_split_steps),
      static_cast<long long>(stats.multi_segment_steps),
      static_cast<double>(stats.launches) / std::max<int64_t>(stats.steps, 1),
      static_cast<double>(stats.host_syncs) / std::max<int64_t>(stats.steps, 1));
  EXPECT_EQ(stats.runs, stats.steps * static_cast<int64_t>(ImplsOfModel(ModelKind::kV41).size()));
  // The allowed kinds are reached, so the check is not passing on layouts that never differ.
  if (count >= 1000) {
    EXPECT_GT(stats.cells[static_cast<int>(MismatchKind::kStaleHost)], 0);
    EXPECT_GT(stats.cells[static_cast<int>(MismatchKind::kPaddingResidue)], 0);
    EXPECT_GT(stats.stale_split_steps, 0);
    EXPECT_GT(stats.multi_segment_steps, 0);
  }
}

TEST(FuzzLayouts, Replay) {
  if (std::getenv("DSPARK_FUZZ_LAYOUT_REPLAY") == nullptr)
    GTEST_SKIP() << "set DSPARK_FUZZ_LAYOUT_REPLAY=<layout seed> to replay one seed of the layout fuzz";
  const uint64_t seed = EnvU64("DSPARK_FUZZ_LAYOUT_REPLAY", 0);
  const ModelConsts consts;
  SeededChoices choices(seed);
  const std::vector<CaseBatch> steps = DrawSteps(choices, LayoutProfile{}, consts);
  for (size_t i = 0; i < steps.size(); ++i) std::printf("step %zu: %s", i, DescribeLayout(steps[i]).c_str());
  const std::string report = CheckStepsOnCpu(steps, consts);
  EXPECT_TRUE(report.empty()) << report;
}

// Budgets small enough that split_indexer_prefill_chunks makes many request groups and query
// slices: every implementation, fused-suite's device-planned chunks included, still matches the
// references on the seeded layouts (vLLM's host plan reads the host seq_lens bound, exact for
// prefill rows, so no state may differ there).
TEST(FuzzLayouts, SmallPrefillBudgetsPlanManyChunksInEveryImplementation) {
  const uint64_t count = EnvU64("DSPARK_FUZZ_LAYOUTS", 2000) / 5;
  const uint64_t base = EnvU64("DSPARK_FUZZ_LAYOUT_SEED", 1) + 7777;
  ModelConsts consts;
  consts.indexer_prefill_workspace = 3000;  // [KV rows]
  consts.indexer_max_logits = 60000;        // [elements]
  const LayoutProfile profile;
  LayoutRunStats stats;
  int64_t multi_chunk_steps = 0;
  CrashNamesSeed crash_names_seed;
  for (uint64_t i = 0; static_cast<uint64_t>(stats.steps) < count; ++i) {
    const uint64_t seed = LayoutSeed(base, i);
    g_current_seed = seed;
    SeededChoices choices(seed);
    const std::vector<CaseBatch> steps = DrawSteps(choices, profile, consts);
    for (const CaseBatch& b : steps)
      multi_chunk_steps += ref::IndexerPrefillStep(b.sizes, b.Inputs().device, 1, consts, 0).chunks > 1;
    const std::string report = CheckStepsOnCpu(steps, consts, &stats);
    ASSERT_TRUE(report.empty()) << absl::StrFormat("layout seed 0x%x (small prefill budgets)\n", seed) << report;
  }
  EXPECT_EQ(stats.runs, stats.steps * static_cast<int64_t>(ImplsOfModel(ModelKind::kV41).size()));
  if (count >= 100) EXPECT_GT(multi_chunk_steps, static_cast<int64_t>(count) / 20);
}

// The rules, on differences made by hand for implementations picked by their traits.
TEST(FuzzLayouts, CheckRejectsEveryForbiddenDifference) {
  CaseOptions o;
  o.seed = 4;
  const absl::StatusOr<CaseBatch> fresh = MakeSeedCase(SeedCase::kVerify, o);
  const absl::StatusOr<CaseBatch> stale = MakeSeedCase(SeedCase::kAdaptiveVerify, o);
  const absl::StatusOr<CaseBatch> draft = MakeSeedCase(SeedCase::kDraft, o);  // host seq_lens bound only
  ASSERT_TRUE(fresh.ok() && stale.ok() && draft.ok());
  ASSERT_NE(stale->host_qsl, stale->qsl);
  ASSERT_EQ(draft->host_qsl, draft->qsl);
  ASSERT_NE(draft->host_seq_lens, draft->seq_lens);
  const auto mismatch = [](const char* builder, const char* field, MismatchKind kind) {
    FieldMismatch m;
    m.builder = builder;
    m.field = field;
    m.count = 1;
    m.kind = kind;
    return std::vector<FieldMismatch>{m};
  };
  int host_impls = 0, device_impls = 0, chain_impls = 0, other_impls = 0;
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) {
    SCOPED_TRACE(std::string(ImplName(impl)));
    const ImplTraits& t = impl.info().traits;
    EXPECT_FALSE(ClassificationViolations(impl, *stale, mismatch("swa", "swa_indices", MismatchKind::kBug)).empty());
    EXPECT_TRUE(ClassificationViolations(impl, *fresh, {}).empty());
    const auto stale_swa = mismatch("swa", "swa_indices", MismatchKind::kStaleHost);
    EXPECT_EQ(ClassificationViolations(impl, *stale, stale_swa).empty(), t.reads_host_boundaries);
    EXPECT_FALSE(ClassificationViolations(impl, *draft, stale_swa).empty());
    EXPECT_FALSE(
        ClassificationViolations(impl, *stale, mismatch("indexer_r1", "seq_out", MismatchKind::kStaleHost)).empty());
    EXPECT_FALSE(
        ClassificationViolations(impl, *stale, mismatch("mla_r2", "compressed_slots", MismatchKind::kStaleHost))
            .empty());
    const auto residue = mismatch("indexer_r2", "bt_out_padding", MismatchKind::kPaddingResidue);
    EXPECT_EQ(ClassificationViolations(impl, *fresh, residue).empty(), t.old_indexer_chain);
    EXPECT_FALSE(ClassificationViolations(impl, *fresh, mismatch("indexer_r2", "bt_out", MismatchKind::kPaddingResidue))
                     .empty());
    (t.reads_host_boundaries ? host_impls : device_impls) += 1;
    (t.old_indexer_chain ? chain_impls : other_impls) += 1;
  }
  // Both sides of each trait are registered, so each branch above was taken.
  EXPECT_GT(host_impls, 0);
  EXPECT_GT(device_impls, 0);
  EXPECT_GT(chain_impls, 0);
  EXPECT_GT(other_impls, 0);
}

bool SameLayout(const CaseBatch& a, const CaseBatch& b);

// A report names a STEP.json file holding the layout, which `dspark-sim step` reads back to the
// same arrays (workloads/STEP.md).
TEST(FuzzLayouts, ReportWritesTheLayoutAsAStepFile) {
  CaseOptions o;
  o.seed = 3;
  o.padding_reqs = 2;
  o.bt_stride_slack = 3;
  const absl::StatusOr<CaseBatch> b = MakeSeedCase(SeedCase::kAdaptiveVerify, o);
  ASSERT_TRUE(b.ok()) << b.status();
  const std::string report = ViolationReport(ImplsOfModel(ModelKind::kV41).front(), 0, *b, {"bug: made up"}, {});
  const std::string marker = "dspark-sim step --json ";
  const size_t at = report.find(marker);
  ASSERT_NE(at, std::string::npos) << report;
  const std::string path = report.substr(at + marker.size(), report.find('\n', at) - at - marker.size());
  const absl::StatusOr<nlohmann::json> j = sim::ReadStepFile(path);
  ASSERT_TRUE(j.ok()) << j.status();
  const absl::StatusOr<sim::StepInput> back = sim::ParseStepInput(*j, sim::StepInputSource{path, {}});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->batch.qsl, b->qsl);
  EXPECT_EQ(back->batch.host_qsl, b->host_qsl);
  EXPECT_EQ(back->batch.seq_lens, b->seq_lens);
  EXPECT_EQ(back->batch.host_seq_lens, b->host_seq_lens);
  EXPECT_EQ(back->batch.slot_mapping, b->slot_mapping);
  EXPECT_EQ(back->batch.sizes.bt_stride, b->sizes.bt_stride);
  EXPECT_EQ(back->batch.sizes.capacity, b->sizes.capacity);
  std::remove(path.c_str());
}

bool SameLayout(const CaseBatch& a, const CaseBatch& b) {
  return a.name == b.name && a.qsl == b.qsl && a.seq_lens == b.seq_lens && a.block_table == b.block_table &&
         a.slot_mapping == b.slot_mapping && a.host_qsl == b.host_qsl && a.host_seq_lens == b.host_seq_lens &&
         a.fp8_prefill == b.fp8_prefill && a.sizes.capacity == b.sizes.capacity;
}

// Layouts are a function of the seed (or the bytes), valid, within their limits, and reach every
// feature the fuzz promises.
TEST(FuzzLayouts, GeneratorIsDeterministicValidAndReachesEveryFeature) {
  const ModelConsts consts;
  const LayoutProfile profile;
  int padding_reqs = 0, padded_tokens = 0, stale = 0, host_bound = 0, strided = 0, nulls = 0, unstored = 0, fp8 = 0,
      bf16 = 0, chunked = 0, mixed = 0, empty = 0, wide_capacity = 0, zero_len_mid = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    SeededChoices a(LayoutSeed(7, i)), b(LayoutSeed(7, i));
    const std::vector<CaseBatch> x = DrawSteps(a, profile, consts), y = DrawSteps(b, profile, consts);
    ASSERT_EQ(x.size(), y.size());
    for (size_t s = 0; s < x.size(); ++s) {
      ASSERT_TRUE(SameLayout(x[s], y[s])) << i;
      const CaseBatch& c = x[s];
      const BatchSizes& z = c.sizes;
      ASSERT_TRUE(ValidateBatchSizes(z).ok()) << ValidateBatchSizes(z) << "\n" << DescribeLayout(c);
      const bool fits = [&](std::initializer_list<const LayoutLimits*> all) {
        for (const LayoutLimits* l : all)
          if (z.capacity <= l->max_tokens && z.num_reqs <= l->max_reqs && z.bt_stride <= MaxBtStride(*l, consts))
            return true;
        return false;
      }({&profile.small, &profile.long_query, &profile.long_context});
      ASSERT_TRUE(fits) << DescribeLayout(c);
      ASSERT_EQ(c.host_qsl.back(), c.qsl.back());
      ASSERT_EQ(c.host_qsl[z.num_decodes], c.qsl[z.num_decodes]);
      const int32_t M = c.qsl.back();
      padding_reqs += z.num_reqs > 0 && c.seq_lens[z.num_reqs - 1] == 0;
      padded_tokens += z.num_tokens > M;
      stale += c.host_qsl != c.qsl;
      host_bound += c.host_qsl == c.qsl && c.host_seq_lens != c.seq_lens;
      strided += z.bt_stride > z.bt_width;
      nulls += z.num_reqs > 0 && !c.block_table.empty() && c.block_table[0] == 0 && c.seq_lens[0] > 0;  // an empty step has no row
      wide_capacity += z.capacity > z.num_tokens;
      fp8 += c.fp8_prefill;
      bf16 += !c.fp8_prefill;
      chunked += c.name.find("chunked") != std::string::npos;
      mixed += z.num_decodes > 0 && z.num_decodes < z.num_reqs && c.qsl[z.num_decodes] > 0;
      empty += M == 0;
      for (int32_t r = 0; r + 1 < z.num_decodes; ++r)
        if (c.qsl[r + 1] == c.qsl[r] && c.qsl[r + 1] < c.qsl[z.num_decodes]) {
          ++zero_len_mid;
          break;
        }
      for (int32_t t = 0; t < M && unstored == 0; ++t) unstored += c.slot_mapping[t] == -1;
    }
  }
  for (int seen : {padding_reqs, padded_tokens, stale, host_bound, strided, nulls, unstored, fp8, bf16, chunked, mixed,
                   empty, wide_capacity, zero_len_mid})
    EXPECT_GT(seen, 0);
  const uint8_t bytes[] = {9, 200, 3, 77, 1, 0, 250, 13, 42, 42, 5};
  ByteChoices p(bytes, sizeof(bytes)), q(bytes, sizeof(bytes));
  EXPECT_TRUE(SameLayout(DrawLayout(p, profile.small, consts), DrawLayout(q, profile.small, consts)));
}

// FuzzedDataProvider::ConsumeIntegralInRange: bytes from the end, as many as the range needs.
TEST(FuzzLayouts, ByteChoicesDecodeAsFuzzedDataProvider) {
  const uint8_t bytes[] = {0x01, 0x02, 0x03};
  ByteChoices c(bytes, sizeof(bytes));
  EXPECT_EQ(c.Range(7, 7), 7);           // consumes nothing
  EXPECT_EQ(c.Range(0, 255), 3);         // one byte
  EXPECT_EQ(c.Range(0, 65535), 0x0201);  // two bytes, the later one first
  EXPECT_EQ(c.Range(5, 9), 5);           // exhausted: lo
}

}  // namespace
}  // namespace dspark::fuzz
