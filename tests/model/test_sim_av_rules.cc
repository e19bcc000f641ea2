// The simulator's adaptive verification against direct references written from vLLM's rules
// (adaptive_verification.py, 0.28.0-0.34.0), on random cases with a fixed seed, and on every
// adaptive step of small runs (Scheduler::RecordAdaptiveStep). The references follow the
// release's code structure literally (whole arrays, linear scans, a full sort, the 0.34.0
// kernel's threshold search on float bits); the simulator's versions are the fast ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "sim/engine/engine.h"
#include "sim/model/acceptance.h"
#include "sim/model/adaptive.h"
#include "sim/model/scheduler.h"
#include "sim/model/time_model.h"

namespace dspark::sim {
namespace {

// np.interp for one x: linear scan for xp[j] <= x < xp[j + 1].
double RefInterp(double x, const std::vector<double>& xp, const std::vector<double>& fp) {
  const size_t n = xp.size();
  if (x < xp[0]) return fp[0];
  if (x > xp[n - 1]) return fp[n - 1];
  size_t j = 0;
  while (j + 1 < n && xp[j + 1] <= x) ++j;
  if (j == n - 1 || xp[j] == x) return fp[j];
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  return slope * (x - xp[j]) + fp[j];
}

// build_cost_tables_from_curves' build_table, step by step over whole arrays.
std::vector<double> RefTable(int32_t limit, const CostCurve& curve, int32_t cudagraph_limit, double floor) {
  std::vector<double> xs, ys;
  for (const auto& [x, y] : curve) {
    xs.push_back(x);
    ys.push_back(ys.empty() ? y : std::max(ys.back(), y));
  }
  const size_t n = xs.size();
  std::vector<double> result(static_cast<size_t>(limit) + 1);
  for (int32_t v = 0; v <= limit; ++v) {
    size_t idx = 0;
    while (idx < n && xs[idx] < v) ++idx;  // searchsorted(side="left")
    result[v] = ys[std::min(idx, n - 1)];
  }
  if (cudagraph_limit != 0) {
    std::vector<double> xa, ya;
    for (size_t i = 0; i < n; ++i)
      if (xs[i] > cudagraph_limit) {
        xa.push_back(xs[i]);
        ya.push_back(ys[i]);
      }
    if (!xa.empty() && limit > cudagraph_limit)
      for (int32_t v = cudagraph_limit + 1; v <= limit; ++v) result[v] = RefInterp(v, xa, ya);
  }
  if (n > 1) {
    const double slope = (ys[n - 1] - ys[n - 2]) / (xs[n - 1] - xs[n - 2]);
    for (int32_t v = 0; v <= limit; ++v)
      if (v > xs[n - 1]) result[v] = ys[n - 1] + slope * (v - xs[n - 1]);
  }
  for (double& r : result) r = std::max(r, floor);
  return result;
}

// get_num_tokens' budget, array by array.
int32_t RefBudget(const std::vector<float>& stale, int32_t k, const std::vector<int32_t>& drafts,
                  int32_t num_reqs, int32_t num_sampling, int32_t non_draft_total, int32_t max_total_logits,
                  const DraftCostTables& t) {
  std::vector<double> scores;
  for (size_t r = 0; r < drafts.size(); ++r) {
    std::vector<double> cumprod(static_cast<size_t>(k));
    for (int32_t s = 0; s < k; ++s)
      cumprod[s] = (s == 0 ? 1.0 : cumprod[s - 1]) * static_cast<double>(stale[r * k + s]);
    for (int32_t s = 0; s < drafts[r]; ++s) scores.push_back(cumprod[s]);
  }
  std::sort(scores.begin(), scores.end(), std::greater<double>());
  const int32_t total = std::accumulate(drafts.begin(), drafts.end(), 0);
  const int32_t max_budget = std::min(total, std::max(0, max_total_logits - num_reqs));
  scores.resize(static_cast<size_t>(max_budget));
  std::vector<double> cumsum(scores.size());
  std::partial_sum(scores.begin(), scores.end(), cumsum.begin());
  std::vector<double> num(1, num_sampling), cost;
  for (double c : cumsum) num.push_back(num_sampling + c);
  for (int32_t b = 0; b <= max_budget; ++b) cost.push_back(t.draft_ms[num_reqs] + t.verify_ms[non_draft_total + b]);
  int32_t best = 0;
  for (int32_t b = 1; b <= max_budget; ++b)
    if (num[b] / cost[b] > num[best] / cost[best]) best = b;
  return best;
}

// 0.34.0's _assign_draft_token_budget_kernel: float32 survival as int32 bits (-1 when not
// eligible), the largest threshold admitting `budget` slots, ties in request order.
std::vector<int32_t> RefAllocate034(const std::vector<float>& fresh, int32_t k, const std::vector<int32_t>& capacity,
                                    int32_t budget) {
  const size_t n = capacity.size();
  std::vector<int32_t> bits(n * k);
  for (size_t r = 0; r < n; ++r) {
    float survival = 1.0f;
    for (int32_t s = 0; s < k; ++s) {
      survival *= fresh[r * k + s];
      int32_t b;
      std::memcpy(&b, &survival, sizeof(b));
      bits[r * k + s] = s < capacity[r] ? b : -1;
    }
  }
  const auto at_least = [&](int64_t threshold) {
    return std::count_if(bits.begin(), bits.end(), [&](int32_t b) { return b >= threshold; });
  };
  int64_t lo = 0, hi = 0x7F800000;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (at_least(mid) >= budget) lo = mid; else hi = mid - 1;
  }
  int64_t ties_left = budget - at_least(lo + 1);
  std::vector<int32_t> kept(n);
  for (size_t r = 0; r < n; ++r) {
    int32_t above = 0, tied = 0;
    for (int32_t s = 0; s < k; ++s) {
      above += bits[r * k + s] > lo;
      tied += bits[r * k + s] == lo;
    }
    const int32_t taken = static_cast<int32_t>(std::min<int64_t>(tied, std::max<int64_t>(ties_left, 0)));
    ties_left -= tied;
    kept[r] = above + taken;
  }
  return kept;
}

float RandomConfidence(std::mt19937_64& rng, int mode) {
  switch (mode) {
    case 0: return static_cast<float>((rng() >> 11) * 0x1.0p-53);
    case 1: return 0.25f * static_cast<float>(1 + rng() % 4);  // many ties
    default: return rng() % 7 == 0 ? 0.0f : (rng() % 3 == 0 ? 1.0f : static_cast<float>((rng() >> 40) * 0x1.0p-24));
  }
}

TEST(AvRules, CostTablesEqualTheReferenceOnRandomCurves) {
  std::mt19937_64 rng(2027);
  for (int trial = 0; trial < 3000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 12);
    CostCurve curve;
    int32_t x = static_cast<int32_t>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      curve.push_back({static_cast<double>(x), static_cast<double>(rng() % 100000) * 1e-3 - (rng() % 9 == 0 ? 20.0 : 0.0)});
      x += 1 + static_cast<int32_t>(rng() % 64);
    }
    const int32_t size = static_cast<int32_t>(rng() % 700);
    const int32_t pick = static_cast<int32_t>(rng() % 4);
    const int32_t limit = pick == 0 ? 0 : pick == 1 ? static_cast<int32_t>(curve[rng() % n].first)
                                                      : static_cast<int32_t>(rng() % 600);
    const DraftCostTables t = BuildCostTables(curve, curve, size, size, limit);
    ASSERT_EQ(t.draft_ms, RefTable(size, curve, limit, 0.0)) << "trial " << trial;
    ASSERT_EQ(t.verify_ms, RefTable(size, curve, limit, 1e-6)) << "trial " << trial;
  }
}

TEST(AvRules, BudgetEqualsTheReferenceOnRandomSteps) {
  std::mt19937_64 rng(2028);
  DraftBudgetScratch scratch;
  for (int trial = 0; trial < 3000; ++trial) {
    const int32_t k = 1 + static_cast<int32_t>(rng() % 8);
    const int32_t nd = static_cast<int32_t>(rng() % 40);
    const int32_t num_reqs = nd + static_cast<int32_t>(rng() % 5);
    std::vector<float> stale(static_cast<size_t>(nd) * k);
    for (float& c : stale) c = RandomConfidence(rng, trial % 3);
    std::vector<int32_t> drafts(static_cast<size_t>(nd));
    for (int32_t& d : drafts) d = static_cast<int32_t>(rng() % (k + 1));
    const int32_t non_draft = nd + static_cast<int32_t>(rng() % 50);
    const int32_t sampling = static_cast<int32_t>(rng() % (num_reqs + 1));
    CostCurve draft = {{1, 0.5 + (rng() % 100) * 0.01}, {64, 2.0}}, verify;
    for (int32_t s = 1; s <= 512; s *= 2) verify.push_back({static_cast<double>(s), 1.0 + s * 0.01 * (1 + rng() % 5)});
    const DraftCostTables t = BuildCostTables(draft, verify, 64, 512, 64);
    const int32_t logits = trial % 4 == 0 ? static_cast<int32_t>(rng() % 60) : MaxChunkLogits(129280);
    BudgetInputs in{stale.data(), drafts.data(), nd, k, num_reqs, sampling, non_draft};
    in.max_total_logits = logits;
    ASSERT_EQ(ComputeDraftBudget(in, t, &scratch),
              RefBudget(stale, k, drafts, num_reqs, sampling, non_draft, logits, t))
        << "trial " << trial;
  }
}

TEST(AvRules, AllocationEqualsThe034KernelOnRandomSteps) {
  std::mt19937_64 rng(2029);
  TopBAllocator allocator(1024 * 8);
  for (int trial = 0; trial < 3000; ++trial) {
    const int32_t k = 1 + static_cast<int32_t>(rng() % 8);
    const int32_t n = static_cast<int32_t>(rng() % 100);
    std::vector<float> fresh(static_cast<size_t>(n) * k), scores(fresh.size());
    for (float& c : fresh) c = RandomConfidence(rng, trial % 3);
    std::vector<int32_t> caps(static_cast<size_t>(n));
    for (int32_t& c : caps) c = static_cast<int32_t>(rng() % (k + 1));
    const int32_t total = std::accumulate(caps.begin(), caps.end(), 0);
    if (total < 2) continue;
    const int32_t budget = 1 + static_cast<int32_t>(rng() % (total - 1));  // 0 < B < total, as called
    for (int32_t r = 0; r < n; ++r) SurvivalScores(&fresh[static_cast<size_t>(r) * k], k, &scores[static_cast<size_t>(r) * k]);
    std::vector<int32_t> kept(static_cast<size_t>(n));
    allocator.Allocate(scores.data(), caps.data(), n, k, budget, kept.data());
    ASSERT_EQ(kept, RefAllocate034(fresh, k, caps, budget)) << "trial " << trial;
  }
}

// Every adaptive step of small runs (prefills mixed in, graph padding, a logits chunk that
// binds or not) against the references: tables, budget, host split (compact_batch), device
// allocation and the device qsl and cu_num_logits (reallocate_drafts).
struct RunCase {
  int32_t vocab_size;
  bool cuda_graphs;
  int mode;  // acceptance: 0 the default preset, 1 a flat curve of 0.5
};

class AvRunSteps : public ::testing::TestWithParam<RunCase> {};

TEST_P(AvRunSteps, EveryAdaptiveStepFollowsTheReference) {
  const RunCase rc = GetParam();
  SchedulerConfig c;
  c.mode = SpecMode::kAdaptive;
  c.max_num_seqs = 24;
  c.max_num_batched_tokens = 512;
  c.max_model_len = 2048;
  c.cuda_graphs = rc.cuda_graphs;
  c.vocab_size = rc.vocab_size;
  std::mt19937_64 rng(2030);
  std::vector<RequestSpec> reqs(60);
  for (int32_t i = 0; i < 60; ++i)
    reqs[i] = {i, 0.002 * i, 20 + static_cast<int32_t>(rng() % 300), 10 + static_cast<int32_t>(rng() % 80), {}};
  AcceptanceParams ap = *AcceptancePreset("default", 5);
  if (rc.mode == 1) ap.curve = {0.5, 0.5, 0.5, 0.5, 0.5};
  const AcceptanceModel acceptance(ap, 5);
  const TimeModel time_model(DefaultTimeModelParams());
  EngineOptions options;
  options.concurrency = 16;
  Engine engine(c, reqs, acceptance, time_model, options, 5);
  struct Check final : StepObserver {
    absl::string_view name() const override { return "check"; }
    void OnStart(const Engine& e) override { sched = &e.scheduler(); }
    absl::Status OnStep(const StepPlan& plan) override {
      auto ok = sched->RecordAdaptiveStep(plan, &rec);
      if (!ok.ok()) return ok.status();
      if (!*ok) return absl::OkStatus();
      ++steps;
      const int32_t k = sched->config().spec_k, n = rec.num_reqs;
      int32_t non_draft = 0, sampling = 0, nd = 0, total = 0;
      for (int32_t r = 0; r < n; ++r) {
        non_draft += rec.scheduled_tokens[r] - rec.drafts[r];
        sampling += rec.num_computed[r] + rec.scheduled_tokens[r] - rec.drafts[r] >= rec.prefill_len[r];
        total += rec.drafts[r];
        if (rec.drafts[r] > 0) EXPECT_EQ(nd++, r) << "verification rows lead";
      }
      const int32_t logits = MaxChunkLogits(sched->config().vocab_size);
      const int32_t b = RefBudget(rec.stale_conf, k, rec.drafts, n, sampling, non_draft, logits, sched->cost_tables());
      EXPECT_EQ(rec.budget, b) << "step " << plan.index;
      binding += b < total;
      capped += std::min(total, std::max(0, logits - n)) < total;
      std::vector<int32_t> host(n);
      for (int32_t r = 0; r < n; ++r)
        host[r] = rec.scheduled_tokens[r] - rec.drafts[r] +
                  (b == total ? rec.drafts[r] : rec.drafts[r] == 0 ? 0 : b / nd + (r < b % nd));
      EXPECT_EQ(rec.host_tokens, host) << "step " << plan.index;
      std::vector<int32_t> dev = b == 0 ? std::vector<int32_t>(n, 0) : rec.drafts;
      if (b > 0 && b < total) dev = RefAllocate034(rec.fresh_conf, k, rec.drafts, b);
      EXPECT_EQ(rec.device_drafts, dev) << "step " << plan.index;
      std::vector<int32_t> qsl(static_cast<size_t>(rec.num_reqs_padded) + 1, 0), cu(1, 0);
      for (int32_t r = 0; r < n; ++r) {
        qsl[r + 1] = qsl[r] + dev[r] + rec.scheduled_tokens[r] - rec.drafts[r];
        cu.push_back(cu.back() + dev[r] + 1);
      }
      for (size_t i = static_cast<size_t>(n) + 1; i < qsl.size(); ++i) qsl[i] = non_draft + b;
      EXPECT_EQ(rec.qsl_device, qsl) << "step " << plan.index;
      EXPECT_EQ(rec.cu_num_logits, cu) << "step " << plan.index;
      return absl::OkStatus();
    }
    const Scheduler* sched = nullptr;
    AvStepRecord rec;
    int steps = 0, binding = 0, capped = 0;
  } check;
  engine.AddObserver(&check);
  ASSERT_TRUE(engine.Run().ok());
  const Scheduler& s = engine.scheduler();
  EXPECT_EQ(s.cost_tables().draft_ms, RefTable(c.max_num_seqs, s.draft_cost_curve(), s.cost_cudagraph_limit(), 0.0));
  EXPECT_EQ(s.cost_tables().verify_ms,
            RefTable(c.max_num_batched_tokens, s.verify_cost_curve(), s.cost_cudagraph_limit(), 1e-6));
  EXPECT_GT(check.steps, 50);
  EXPECT_GT(check.binding, 10);
  if (rc.vocab_size > 1000000) EXPECT_GT(check.capped, 10);
}

INSTANTIATE_TEST_SUITE_P(Runs, AvRunSteps,
                         ::testing::Values(RunCase{129280, true, 0}, RunCase{129280, false, 1},
                                           RunCase{6710886, true, 0}, RunCase{6710886, true, 1}),
                         [](const ::testing::TestParamInfo<RunCase>& info) {
                           return std::string(info.param.vocab_size > 1000000 ? "chunk40" : "chunk2076") +
                                  (info.param.cuda_graphs ? "_graphs" : "_eager") +
                                  (info.param.mode == 1 ? "_flatcurve" : "");
                         });

}  // namespace
}  // namespace dspark::sim
