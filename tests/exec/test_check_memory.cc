// The metadata check's pre-flight of host memory (sim/exec/check_memory.h): sizes that cannot fit
// give a clear ResourceExhausted naming the option to change, not a bad_alloc later; a 128K
// context fits in 1 GB.
#include <string>

#include "gtest/gtest.h"
#include "sim/exec/check_memory.h"
#include "sim/exec/executor_registry.h"

namespace dspark::sim {
namespace {

ExecutorRequest Request(int32_t max_model_len) {
  ExecutorRequest r;
  r.impls = ImplsOfModel(ModelKind::kV41);
  r.scheduler.max_model_len = max_model_len;
  return r;
}

TEST(CheckMemory, LongContextFitsInAGigabyte) {
  EXPECT_TRUE(CheckCpuCheckMemory(Request(131072), uint64_t{1} << 30).ok()) << CheckCpuCheckMemory(Request(131072), 0);
}

TEST(CheckMemory, TooLargeIsAClearError) {
  const absl::Status s = CheckCpuCheckMemory(Request(1 << 24), uint64_t{8} << 30);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("--max-model-len 16777216"), std::string::npos) << s;
  EXPECT_NE(s.message().find("--no-check"), std::string::npos) << s;
  // The estimate grows with the block-table stride (no wrap-around into a small value).
  EXPECT_GT(CpuCheckBytes(Request(1 << 24)), uint64_t{32} << 30);
  EXPECT_GT(CpuCheckBytes(Request(1 << 24)), CpuCheckBytes(Request(131072)));
  EXPECT_GT(AvailableHostMemory(), uint64_t{0});
}

}  // namespace
}  // namespace dspark::sim
