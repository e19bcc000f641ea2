// GPU faults on a device (skipped without one):
//  - a capacity that cannot fit in device memory is refused by the executor's pre-flight, with the
//    bytes it needs, its largest buffers and the free memory, before anything is allocated or any
//    step runs; capacities whose byte counts overflow 64 bits or whose int32 sizes overflow are
//    refused too, never wrapped into small allocations; microbench refuses its own absurd sizes;
//  - the pre-flight's plan equals, byte for byte, what the executor holds after every
//    implementation has run;
//  - (GpuFaultInjection: they make a CUDA call fail on purpose, so compute-sanitizer, which
//    reports failed API calls, skips them: scripts/gpu-sanitize.sh) a real CUDA error in step 5
//    (the executor's test seam fault_at_step, set by this file's executor factory) fails a run
//    with the GPU executor with the step, the call, the file and line; the 5 completed steps' results are written and marked
//    aborted; the executor's counts and series hold exactly the completed steps; the error is not
//    sticky, so the device stays usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/common/byte_math.h"
#include "kernels/common/device_buffer.cuh"
#include "sim/model/acceptance.h"
#include "sim/studies/run.h"
#include "sim/studies/config.h"
#include "sim/engine/engine.h"
#include "sim/exec/executor_registry.h"
#include "sim/exec/gpu_executor.cuh"
#include "sim/model/time_model.h"
#include "tests/common/gpu_test_util.cuh"
#include "tests/common/spawn_util.h"
#include "tests/common/temp_folders.h"

namespace dspark::sim {
namespace {

namespace fs = std::filesystem;

std::string Dir(const std::string& name) { return testing_util::ProcessTempDir("gpu_faults_gpu", name, true); }

using testing_util::SlurpFile;

int64_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

void ExpectContains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "missing '" << part << "' in: " << text;
}

// `run --executor gpu` on batch1-512's first requests.
RunConfig SmallGpuRun(const std::string& out) {
  RunConfig c;
  c.workload = "batch1-512";
  c.num_requests = 2;
  c.impls = {Impl::kFused, Impl::kChain};
  c.check = false;  // the executor compares on the device itself
  c.executor = "gpu";
  c.gpu_cold_l2 = false;
  c.out_dir = out;
  return c;
}

// ---------------------------------------------------------------- capacity pre-flight

// `run` options cannot ask for more memory than an H200 has (RunConfig::Validate bounds the token
// budget and the model length first), so the pre-flight is tested against a device whose memory
// is mostly taken: this test holds all but half of what the run needs. It must run alone on the
// device (scripts/gpu-sanitize.sh leaves it out of its parallel shards).
TEST(GpuFaults, ACapacityBeyondTheFreeMemoryIsRefusedBeforeAnyStepRuns) {
  DS_REQUIRE_GPU();
  const std::string out = Dir("too_big") + "/run";
  RunConfig c = SmallGpuRun(out);
  ASSERT_TRUE(c.Validate().ok()) << c.Validate();
  GpuExecutorOptions o;
  o.impls = c.impls;
  o.capacity = CapacityFor(c.scheduler);
  auto plan = PlanGpuExecutorMemory(o, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const uint64_t reserve = uint64_t{512} << 20;
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  ASSERT_GT(free_before, plan->device_bytes() + reserve) << "the run must fit an idle device";
  // Leaves free about half of what the run needs (with the reserve).
  DeviceBuffer<uint8_t> hog(free_before - (plan->device_bytes() + reserve) / 2);
  const absl::StatusOr<RunResult> r = ExecuteRun(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  const std::string msg(r.status().message());
  EXPECT_EQ(msg.rfind(absl::StrCat("GPU executor: max_tokens=", o.capacity.max_tokens, ", max_reqs=", o.capacity.max_reqs,
                                   ", max_bt_stride=", o.capacity.max_bt_stride, " with 2 implementations needs "),
                      0),
            0u)
      << msg;
  // The sizes print in MiB here (the run needs ~210 MiB), the largest buffer first.
  for (const char* part : {" of device memory (", "scratch arena ", "outputs of 2 implementations", "block table",
                           "plus a 512.0 MiB reserve", " free of ",
                           "; lower --max-num-batched-tokens, --max-num-seqs or --max-model-len"})
    ExpectContains(msg, part);
  // Nothing ran: no step reached an observer, so nothing was written; nothing stayed allocated.
  EXPECT_FALSE(fs::exists(out));
  size_t free_after = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_GE(free_after + (size_t{64} << 20), free_before - hog.bytes()) << "the refused run kept device memory";
}

TEST(GpuFaults, SizesBeyondSixtyFourBitsOrInt32AreRefusedNeverWrapped) {
  DS_REQUIRE_GPU();
  GpuExecutorOptions o;
  o.impls = {Impl::kFused};
  // bt_out: 2 x (2^31 - 1)^2 x 4 bytes does not fit in 64 bits; wrapped, it would be small.
  o.capacity = {std::numeric_limits<int32_t>::max(), 1, std::numeric_limits<int32_t>::max()};
  auto ex = GpuExecutor::Create(o);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().code(), absl::StatusCode::kResourceExhausted) << ex.status();
  ExpectContains(std::string(ex.status().message()), "needs more than 16 EiB of device memory");
  // Fits in an H200's memory (about 41 GiB) but not in the kernels' int32 indices: 16 x 2^27 cells.
  o.capacity = {16, 1, 1 << 27};
  o.cold_l2 = false;
  ex = GpuExecutor::Create(o);
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().code(), absl::StatusCode::kInvalidArgument) << ex.status();
  ExpectContains(std::string(ex.status().message()),
                 "max_tokens x max_bt_stride cells of the [tokens, block-table stride] buffers = 2147483648 exceed "
                 "the int32 range");
  // A DeviceBuffer whose byte count overflows size_t throws instead of allocating count * 4 mod 2^64.
  EXPECT_THROW(DeviceBuffer<int32_t>(std::numeric_limits<size_t>::max() / 2), CudaError);
}

TEST(GpuFaults, MicrobenchRefusesAbsurdSizesWithOneLine) {
  DS_REQUIRE_GPU();
  if (testing_util::SimBinary().empty()) GTEST_SKIP() << "no dspark-sim binary beside the test binary";
  const std::string dir = Dir("microbench");
  const testing_util::SpawnResult r =
      testing_util::SpawnSim({"microbench", "--cases", "decode", "--reps", "10", "--capacity", "1073741824",
                              "--bt-stride", "1048576", "--json", dir + "/mb.json"},
                             {}, dir);
  ASSERT_TRUE(r.started && r.exited) << "signal " << r.signal << ": " << r.err;
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  ExpectContains(r.err, "dspark-sim microbench: microbench case decode: capacity=1073741824, bt_stride=1048576, "
                        "16 requests needs ");
  ExpectContains(r.err, "indexer bt_out 4194304.0 GiB");  // 2^30 x 2^20 x 4 bytes
  ExpectContains(r.err, "; lower --capacity or --bt-stride");
  EXPECT_FALSE(fs::exists(dir + "/mb.json"));
}

// ---------------------------------------------------------------- the plan is what is allocated

class ForwardToExecutor final : public StepObserver {
 public:
  explicit ForwardToExecutor(GpuExecutor* executor) : executor_(executor) {}
  absl::string_view name() const override { return "test_forward"; }
  absl::Status OnStep(const StepPlan& plan) override { return executor_->Execute(plan); }

 private:
  GpuExecutor* executor_;
};

struct EngineRun {
  std::unique_ptr<GpuExecutor> executor;
  absl::Status status;
  int64_t engine_steps = 0;
};

// A small adaptive workload through the executor (KV blocks of the executor's model).
EngineRun RunSmall(GpuExecutorOptions o) {
  EngineRun run;
  SchedulerConfig sc;
  sc.block_size = o.consts.mla_block_size;
  sc.max_num_seqs = 8;
  sc.max_num_batched_tokens = 2048;
  sc.max_model_len = 4096;
  sc.bt_stride_pad = 3;
  // Short: a prefill step (one prompt chunked), then drafts and verifications.
  std::vector<RequestSpec> workload;
  const int32_t prompts[] = {300, 2500, 77};
  for (int i = 0; i < 3; ++i) workload.push_back({i, 0.0, prompts[i], 10 + 3 * i, {}});
  auto preset = AcceptancePreset("default", sc.spec_k);
  if (!preset.ok()) {
    run.status = preset.status();
    return run;
  }
  const AcceptanceModel acceptance(*preset, sc.spec_k);
  const TimeModel time_model(DefaultTimeModelParams());
  o.capacity = CapacityFor(sc);
  auto ex = GpuExecutor::Create(o);
  if (!ex.ok()) {
    run.status = ex.status();
    return run;
  }
  run.executor = *std::move(ex);
  ForwardToExecutor forward(run.executor.get());
  Engine engine(sc, workload, acceptance, time_model, EngineOptions{}, 5);
  engine.AddObserver(&forward);
  run.status = engine.Run();
  run.engine_steps = engine.steps();
  return run;
}

TEST(GpuFaults, ThePlanIsExactlyWhatTheExecutorAllocates) {
  DS_REQUIRE_GPU();
  GpuExecutorOptions o;
  o.impls = ImplsOfModel(ModelKind::kV41);
  o.cold_l2 = true;  // the flush buffer is part of the plan
  EngineRun run = RunSmall(o);
  ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_NE(run.executor, nullptr);
  for (Impl impl : ImplsOfModel(ModelKind::kV41)) ASSERT_GT(run.executor->stats(impl).check.steps, 0) << ImplName(impl);
  EXPECT_EQ(run.executor->device_bytes(), run.executor->memory_plan().device_bytes());
  // The executor's flush writes the L2 size once, NVBench's (gpu_executor.cu, kExecutorFlushMinBytes).
  int l2 = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), cudaSuccess);
  uint64_t flush = 0;
  for (const GpuMemoryItem& item : run.executor->memory_plan().device)
    if (item.name == "L2 flush buffer") flush = item.bytes;
  EXPECT_EQ(flush, static_cast<uint64_t>(l2));
}

// The flush's size in the plan (no device needed): the L2 once, and no buffer with a warm L2.
// DeepSeek-V4's states on its own layout (256-token blocks, C128A's buffers, both indexer paths
// regions in the check's reference pack): the plan still holds exactly what is allocated, and
// every step's device check agrees with the CPU compare of its downloaded spans.
TEST(GpuFaults, ThePlanIsExactlyWhatTheExecutorAllocatesOnDeepSeekV4) {
  DS_REQUIRE_GPU();
  GpuExecutorOptions o;
  o.consts = ModelConstsFor(ModelKind::kV4);
  o.impls = ImplsOfModel(ModelKind::kV4);
  EngineRun run = RunSmall(o);
  ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_NE(run.executor, nullptr);
  for (Impl impl : ImplsOfModel(ModelKind::kV4)) {
    ASSERT_GT(run.executor->stats(impl).check.steps, 0) << ImplName(impl);
    EXPECT_EQ(run.executor->stats(impl).check.cells[static_cast<int>(MismatchKind::kBug)], 0) << ImplName(impl);
  }
  EXPECT_EQ(run.executor->device_bytes(), run.executor->memory_plan().device_bytes());
}

TEST(GpuExecutorPlan, TheFlushIsTheL2Once) {
  GpuExecutorOptions o;
  o.impls = {Impl::kFusedSuite};
  o.capacity = GpuSuiteCapacity{256, 8, 64};
  o.cold_l2 = true;
  const size_t l2 = size_t{60} << 20;
  const auto flush_of = [&]() -> absl::StatusOr<uint64_t> {
    auto plan = PlanGpuExecutorMemory(o, l2);
    if (!plan.ok()) return plan.status();
    for (const GpuMemoryItem& item : plan->device)
      if (item.name == "L2 flush buffer") return item.bytes;
    return absl::NotFoundError("no flush buffer in the plan");
  };
  absl::StatusOr<uint64_t> once = flush_of();
  ASSERT_TRUE(once.ok()) << once.status();
  EXPECT_EQ(*once, l2);
  o.cold_l2 = false;  // no flush, no buffer
  EXPECT_EQ(flush_of().status().code(), absl::StatusCode::kNotFound);
}

// ---------------------------------------------------------------- a CUDA error mid-run

// The GPU executor with its fault seam set, as `run --executor gpu` builds it otherwise
// (GpuExecutorOptionsFor, MakeGpuStepExecutor); registered for every run but active only for
// runs whose --out is a folder of this test named <marker><step>.
constexpr char kFaultMarker[] = "gpu_faults_gpu_fault_at_";

const RegisterExecutor kRegisterFaultingGpuExecutor(
    "test-gpu-executor-fault", kGpuExecutorOrder,
    [](const ExecutorRequest& request) -> absl::StatusOr<std::unique_ptr<StepExecutor>> {
      const std::string name = fs::path(request.out_dir).filename().string();
      if (name.rfind(kFaultMarker, 0) != 0) return std::unique_ptr<StepExecutor>();
      GpuExecutorOptions options = GpuExecutorOptionsFor(request);
      options.fault_at_step = std::stoll(name.substr(sizeof(kFaultMarker) - 1));
      return MakeGpuStepExecutor(options, request.out_dir);
    });

TEST(GpuFaultInjection, CudaErrorInStep5NamesStepAndCallAndKeepsTheFiveCompletedSteps) {
  DS_REQUIRE_GPU();
  const std::string out = Dir("fault") + "/" + kFaultMarker + "5";
  RunConfig c = SmallGpuRun(out);
  c.executor = "cpu";  // the GPU executor comes from the factory above, with its fault seam set
  const absl::StatusOr<RunResult> r = ExecuteRun(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << r.status();
  const std::string msg(r.status().message());
  EXPECT_EQ(msg.rfind("gpu executor, step 5 (", 0), 0u) << msg;
  for (const char* part : {"injected fault (test seam fault_at_step=5): ", "sim/exec/gpu_executor.cu:",
                           ": cudaMemcpyAsync(nullptr, src, sizeof(int32_t), cudaMemcpyDeviceToDevice, stream) failed: ",
                           "[run aborted: the 5 completed steps' results are in "})
    ExpectContains(msg, part);

  const nlohmann::json s = nlohmann::json::parse(SlurpFile(fs::path(out) / "summary.json"));
  EXPECT_EQ(s["status"], "aborted");
  EXPECT_EQ(s["steps_completed"], 5);
  EXPECT_EQ(s["scheduler"]["steps"], 5);
  EXPECT_EQ(s["metrics"]["steps"]["total"], 5);
  EXPECT_EQ(s["error"].get<std::string>().rfind("gpu executor, step 5 (", 0), 0u);
  const nlohmann::json& g = s["gpu_executor"];
  EXPECT_EQ(g["steps"], 5);
  // Sections are keyed by the registry's canonical names (fused and chain are aliases).
  const std::string fused(ImplName(Impl::kFused)), chain(ImplName(Impl::kChain));
  EXPECT_EQ(g.at("impls").at(fused).at("steps"), 5);
  EXPECT_EQ(g.at("impls").at(chain).at("steps"), 5);
  EXPECT_EQ(g.at("impls").at(fused).at("host_us").at("samples"), 5);
  EXPECT_TRUE(g["device"].contains("gpu"));
  EXPECT_EQ(Lines(SlurpFile(fs::path(out) / "steps.csv")), 1 + 5);
  EXPECT_EQ(Lines(SlurpFile(fs::path(out) / "gpu_steps.csv")), 1 + 5 * 2);
  EXPECT_TRUE(fs::exists(fs::path(out) / "requests.csv"));
  EXPECT_TRUE(fs::exists(fs::path(out) / "perf.json"));
}

TEST(GpuFaultInjection, AFailedStepLeavesTheExecutorAtTheCompletedStepsAndTheDeviceUsable) {
  DS_REQUIRE_GPU();
  GpuExecutorOptions o;
  o.impls = {Impl::kFused, Impl::kDeviceChain, Impl::kCached};
  o.cold_l2 = false;
  o.fault_at_step = 3;
  EngineRun run = RunSmall(o);
  ASSERT_NE(run.executor, nullptr) << run.status;
  ASSERT_FALSE(run.status.ok());
  const std::string msg(run.status.message());
  EXPECT_EQ(msg.rfind("gpu executor, step 3 (", 0), 0u) << msg;
  ExpectContains(msg, "cudaMemcpyAsync(nullptr");
  ExpectContains(msg, "(cudaErrorInvalidValue)");
  EXPECT_EQ(run.engine_steps, 3);
  EXPECT_EQ(run.executor->steps(), 3);
  for (Impl impl : o.impls) {
    const ExecutorImplStats& s = run.executor->stats(impl);
    EXPECT_EQ(s.check.steps, 3) << ImplName(impl);
    EXPECT_EQ(static_cast<int64_t>(s.host_us.size()), 3) << ImplName(impl);
    EXPECT_EQ(static_cast<int64_t>(s.gpu_us.size()), 3) << ImplName(impl);
    EXPECT_EQ(s.graph_replays + s.eager_runs, 3) << ImplName(impl);
  }
  EXPECT_EQ(Lines(run.executor->StepsCsv()), 1 + 3 * static_cast<int64_t>(o.impls.size()));
  // Not sticky: the runtime reports no pending error and the device still runs work.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  DeviceBuffer<int32_t> probe(std::vector<int32_t>{1, 2, 3});
  EXPECT_EQ(probe.Download(), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(run.executor->Summary()["steps"], 3);
}

}  // namespace
}  // namespace dspark::sim
