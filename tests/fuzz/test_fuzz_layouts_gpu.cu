// The GPU form of the batch-layout differential fuzz: the seeded layouts of
// tests/fuzz/test_fuzz_layouts.cc (the same seeds give the same steps) through every registered
// implementation's GPU entry, every cell compared with the references and classified by the same
// rules (tests/fuzz/layout_check.h). Worker threads each own persistent lanes
// (tests/fuzz/gpu_layout_lane.cuh; nothing is allocated per layout) and pull layout indices from
// one counter; every DSPARK_FUZZ_GPU_SUITE_EVERY-th layout also goes through GpuSuite.
//
//   DSPARK_FUZZ_GPU_LAYOUTS=N         layouts (steps) to check (default 20000; the H200 run: 1000000)
//   DSPARK_FUZZ_LAYOUT_SEED=S         base seed (default 1), as the CPU form
//   DSPARK_FUZZ_GPU_THREADS=T         worker threads (default: hardware threads - 2, at most 14)
//   DSPARK_FUZZ_GPU_SECONDS=L         fail when N layouts take longer than L seconds (default 540)
//   DSPARK_FUZZ_GPU_SUITE_EVERY=K     cross-check through GpuSuite every K-th input (default 997)
//   DSPARK_FUZZ_LAYOUT_REPLAY=S       FuzzLayoutsGpu.Replay runs the one layout seed S on a fresh lane
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "tests/common/gpu_test_util.cuh"
#include "tests/fuzz/gpu_layout_lane.cuh"
#include "tests/fuzz/layout_check.h"
#include "tests/fuzz/layout_gen.h"
#include "tests/fuzz/layout_test_env.h"

namespace dspark::fuzz {
namespace {

GpuSuiteCapacity CapacityFor(const LayoutLimits& l, const ModelConsts& consts) {
  GpuSuiteCapacity c;
  c.max_tokens = l.max_tokens;
  c.max_reqs = std::min(l.max_reqs, l.max_tokens);
  c.max_bt_stride = MaxBtStride(l, consts);
  return c;
}

// One thread's lanes, one per limits of the profile (made on first use), and what it saw.
struct Worker {
  const LayoutProfile* profile = nullptr;
  ModelConsts consts;
  std::unique_ptr<GpuLayoutLane> lanes[3];
  LayoutRunStats stats;
  uint64_t previous_seed = 0;
  bool has_previous = false;

  absl::StatusOr<GpuLayoutLane*> LaneFor(const BatchSizes& z) {
    const LayoutLimits* limits[3] = {&profile->small, &profile->long_query, &profile->long_context};
    for (int k = 0; k < 3; ++k) {
      const GpuSuiteCapacity cap = CapacityFor(*limits[k], consts);
      if (z.capacity > cap.max_tokens || z.num_reqs > cap.max_reqs || z.bt_stride > cap.max_bt_stride) continue;
      if (lanes[k] == nullptr) {
        absl::StatusOr<std::unique_ptr<GpuLayoutLane>> lane = GpuLayoutLane::Create(cap, consts);
        if (!lane.ok()) return lane.status();
        lanes[k] = *std::move(lane);
      }
      if (lanes[k]->Fits(z)) return lanes[k].get();
    }
    return absl::InternalError("no lane holds this layout (a generator bug)");
  }

  // "" when every step of the input is clean, else the report.
  std::string RunInput(uint64_t seed, bool through_gpu_suite, int64_t* steps_done) {
    SeededChoices choices(seed);
    const std::vector<CaseBatch> steps = DrawSteps(choices, *profile, consts);
    for (size_t s = 0; s < steps.size(); ++s) {
      absl::StatusOr<GpuLayoutLane*> lane = LaneFor(steps[s].sizes);
      if (!lane.ok()) return lane.status().ToString() + "\n" + DescribeLayout(steps[s]);
      absl::StatusOr<std::string> report = (*lane)->RunAndCheck(steps[s], s, stats);
      if (report.ok() && report->empty() && through_gpu_suite) report = (*lane)->CheckThroughGpuSuite(steps[s], s);
      if (!report.ok()) return "CUDA failure: " + report.status().ToString() + "\n" + DescribeLayout(steps[s]);
      if (!report->empty()) return *report;
    }
    *steps_done = static_cast<int64_t>(steps.size());
    return "";
  }
};

std::string ReplayHints(uint64_t seed) {
  return absl::StrFormat(
      "replay on the CPU: DSPARK_FUZZ_LAYOUT_REPLAY=0x%x build-cpu/dspark_tests --gtest_filter=FuzzLayouts.Replay\n"
      "replay on the GPU: DSPARK_FUZZ_LAYOUT_REPLAY=0x%x build-gpu/dspark_tests --gtest_filter=FuzzLayoutsGpu.Replay",
      seed, seed);
}

TEST(FuzzLayoutsGpu, SeededLayoutsMatchReferencesInEveryImplementation) {
  DS_REQUIRE_GPU();
  const int64_t count = static_cast<int64_t>(EnvU64("DSPARK_FUZZ_GPU_LAYOUTS", 20000));
  const uint64_t base = EnvU64("DSPARK_FUZZ_LAYOUT_SEED", 1);
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  const int threads = static_cast<int>(EnvU64("DSPARK_FUZZ_GPU_THREADS", std::clamp(hw - 2, 1, 14)));
  const double limit_s = static_cast<double>(EnvU64("DSPARK_FUZZ_GPU_SECONDS", 540));
  const uint64_t suite_every = EnvU64("DSPARK_FUZZ_GPU_SUITE_EVERY", 997);
  const LayoutProfile profile;

  std::atomic<uint64_t> next_input{0};
  std::atomic<int64_t> steps_done{0};
  std::atomic<int64_t> next_progress{100000};
  std::atomic<bool> stop{false}, out_of_time{false};
  std::mutex mu;
  std::string failure;
  std::vector<Worker> workers(static_cast<size_t>(threads));
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const auto work = [&](Worker& w) {
    w.profile = &profile;
    while (!stop.load(std::memory_order_relaxed) && steps_done.load(std::memory_order_relaxed) < count) {
      if (elapsed() > limit_s) {
        out_of_time = true;
        break;
      }
      const uint64_t index = next_input.fetch_add(1);
      const uint64_t seed = LayoutSeed(base, index);
      int64_t done = 0;
      const std::string report = w.RunInput(seed, suite_every > 0 && index % suite_every == 0, &done);
      if (!report.empty()) {
        std::lock_guard<std::mutex> lock(mu);
        if (failure.empty())
          failure = absl::StrFormat("layout seed 0x%x (input %d of base seed %d)%s\n%s\n", seed, index, base,
                                    w.has_previous
                                        ? absl::StrFormat("; this lane's previous input: seed 0x%x", w.previous_seed)
                                        : std::string(),
                                    ReplayHints(seed)) +
                    report;
        stop = true;
        break;
      }
      w.previous_seed = seed;
      w.has_previous = true;
      const int64_t now = steps_done.fetch_add(done) + done;
      int64_t mark = next_progress.load();
      if (now >= mark && next_progress.compare_exchange_strong(mark, mark + 100000))
        std::printf("fuzz layouts gpu: %lld layouts, %.1f s, %.0f layouts/s\n", static_cast<long long>(now), elapsed(),
                    now / std::max(elapsed(), 1e-9));
    }
  };
  (void)ImplsOfModel(ModelKind::kV41);  // the registry freezes on its first read: here, before the threads read it
  std::vector<std::thread> pool;
  for (Worker& w : workers) pool.emplace_back(work, std::ref(w));
  for (std::thread& t : pool) t.join();
  const double s = elapsed();

  LayoutRunStats total;
  for (const Worker& w : workers) total.Add(w.stats);
  std::printf(
      "fuzz layouts gpu: %lld layouts (%lld inputs) on %d threads in %.1f s = %.0f layouts/s; cells: "
      "stale-host %lld, padding-residue %lld, bug %lld; stale-split steps %lld, multi-segment FP8 steps %lld; %.1f "
      "launches and %.2f host syncs per step (all implementations)\n",
      static_cast<long long>(total.steps), static_cast<long long>(next_input.load()), threads, s,
      total.steps / std::max(s, 1e-9), static_cast<long long>(total.cells[0]), static_cast<long long>(total.cells[1]),
      static_cast<long long>(total.cells[2]), static_cast<long long>(total.stale_split_steps),
      static_cast<long long>(total.multi_segment_steps),
      static_cast<double>(total.launches) / std::max<int64_t>(total.steps, 1),
      static_cast<double>(total.host_syncs) / std::max<int64_t>(total.steps, 1));
  ASSERT_TRUE(failure.empty()) << failure;
  EXPECT_FALSE(out_of_time) << "only " << steps_done.load() << " of " << count << " layouts in " << limit_s
                            << " s (DSPARK_FUZZ_GPU_SECONDS); raise DSPARK_FUZZ_GPU_THREADS or the limit";
  EXPECT_GE(total.steps, count);
  if (count >= 1000) {
    EXPECT_GT(total.cells[static_cast<int>(MismatchKind::kStaleHost)], 0);
    EXPECT_GT(total.cells[static_cast<int>(MismatchKind::kPaddingResidue)], 0);
    EXPECT_GT(total.stale_split_steps, 0);
  }
}

TEST(FuzzLayoutsGpu, Replay) {
  DS_REQUIRE_GPU();
  if (std::getenv("DSPARK_FUZZ_LAYOUT_REPLAY") == nullptr)
    GTEST_SKIP() << "set DSPARK_FUZZ_LAYOUT_REPLAY=<layout seed> to replay one seed of the layout fuzz on the GPU";
  const uint64_t seed = EnvU64("DSPARK_FUZZ_LAYOUT_REPLAY", 0);
  const LayoutProfile profile;
  Worker w;
  w.profile = &profile;
  SeededChoices choices(seed);
  for (const CaseBatch& b : DrawSteps(choices, profile, w.consts)) std::printf("%s", DescribeLayout(b).c_str());
  int64_t done = 0;
  const std::string report = w.RunInput(seed, /*through_gpu_suite=*/true, &done);
  EXPECT_TRUE(report.empty()) << report;
}

}  // namespace
}  // namespace dspark::fuzz
