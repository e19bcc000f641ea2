// `run --dump-steps`: the dump says its expected size after the first step, and stops with an
// error naming --dump-steps-limit before the free space of its file system falls under what the
// next step may need, instead of filling the disk.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sim/engine/engine.h"
#include "sim/exec/step_dump.h"
#include "sim/model/acceptance.h"
#include "sim/model/scheduler.h"
#include "sim/model/time_model.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

// Feeds every step of a small adaptive run to `dump`; the first error stops the run.
absl::Status RunInto(StepDumpExecutor& dump) {
  SchedulerConfig c;
  c.mode = SpecMode::kAdaptive;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 256;
  c.max_model_len = 512;
  std::vector<RequestSpec> reqs(4);
  for (size_t i = 0; i < reqs.size(); ++i)
    reqs[i] = {static_cast<int64_t>(i), 0.001 * i, 40 + 9 * static_cast<int32_t>(i), 30, {}};
  const AcceptanceModel acceptance(*AcceptancePreset("default", 5), 5);
  const TimeModel time_model(DefaultTimeModelParams());
  Engine engine(c, reqs, acceptance, time_model, EngineOptions{}, 1);
  struct Feed final : StepObserver {
    explicit Feed(StepDumpExecutor& d) : dump(d) {}
    absl::string_view name() const override { return "feed"; }
    absl::Status OnStep(const StepPlan& p) override {
      absl::StatusOr<const StepArrays*> a = p.Arrays();
      if (!a.ok()) return a.status();
      return dump.Execute(p, **a);
    }
    StepDumpExecutor& dump;
  } feed(dump);
  engine.AddObserver(&feed);
  return engine.Run();
}

TEST(StepDumpSpace, StopsBeforeTheDiskFillsAndSaysWhichLimitToLower) {
  const fs::path dir = fs::path(::testing::TempDir()) / "dump_space";
  fs::remove_all(dir);
  // The file system's free space falls by what the dump writes: it starts 3 steps' worth above
  // the reserve.
  int64_t calls = 0;
  StepDumpExecutor dump(dir, 1000, nlohmann::json::object(), ModelConsts{},
                        [&calls](const fs::path&) -> absl::StatusOr<int64_t> {
                          ++calls;
                          return kDumpReserveBytes + (calls <= 3 ? int64_t{1} << 30 : int64_t{0});
                        },
                        nullptr);
  const absl::Status s = RunInto(dump);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("--dump-steps-limit"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("3 steps written"), std::string::npos) << s.message();
  EXPECT_EQ(calls, 4);
}

TEST(StepDumpSpace, ARunWithRoomWritesEveryStepUpToTheLimit) {
  const fs::path dir = fs::path(::testing::TempDir()) / "dump_room";
  fs::remove_all(dir);
  std::ostringstream console;
  StepDumpExecutor dump(dir, 5, nlohmann::json::object(), ModelConsts{}, FreeBytes, &console);
  ASSERT_TRUE(RunInto(dump).ok());
  // One line, after the first step, with the expected size of the whole dump.
  const std::string said = console.str();
  EXPECT_NE(said.find("up to 5 steps (--dump-steps-limit) take about"), std::string::npos) << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  int dumped = 0;
  for (const auto& e : fs::directory_iterator(dir / "steps")) dumped += e.is_directory() ? 1 : 0;
  EXPECT_EQ(dumped, 5);
  const absl::StatusOr<int64_t> free_bytes = FreeBytes(dir);
  ASSERT_TRUE(free_bytes.ok()) << free_bytes.status();
  EXPECT_GT(*free_bytes, 0);
  EXPECT_FALSE(FreeBytes(dir / "no" / "such" / "folder").ok());
}

}  // namespace
}  // namespace dspark::sim
