// The device-memory pre-flight's arithmetic, without a GPU (kernels/suite/gpu_memory_plan.h):
//  - the bytes of every buffer GpuSuite allocates, counted here buffer by buffer for small
//    capacities (odd sizes, strides wider than widths, one request);
//  - sizes from huge capacities saturate at kBytesOverflow and never wrap: the plan is never
//    below the exact (128-bit) size of its block table and bt_out buffers, and grows with every
//    field; int32-overflowing layouts are refused;
//  - the "does it fit" decision at the exact boundary, and the message a user reads;
//  - int32 overflow fixes on the way to the capacity (capture sizes, the config's block count).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/batch.h"
#include "kernels/common/byte_math.h"
#include "kernels/suite/gpu_memory_plan.h"
#include "kernels/suite/suite.h"
#include "sim/studies/config.h"

namespace dspark {
namespace {

constexpr int32_t kMaxI32 = std::numeric_limits<int32_t>::max();
using u128 = unsigned __int128;

uint64_t Clamp(u128 v) { return v > kBytesOverflow ? kBytesOverflow : static_cast<uint64_t>(v); }
uint64_t Up256(uint64_t v) { return (v + 255) / 256 * 256; }

TEST(ByteMath, SaturatesInsteadOfWrapping) {
  EXPECT_EQ(SatMul(uint64_t{1} << 32, uint64_t{1} << 31), uint64_t{1} << 63);
  EXPECT_EQ(SatMul(uint64_t{1} << 32, uint64_t{1} << 32), kBytesOverflow);
  EXPECT_EQ(SatMul(4, uint64_t{1} << 62), kBytesOverflow);
  EXPECT_EQ(SatMul(3, uint64_t{1} << 62), uint64_t{3} << 62);
  EXPECT_EQ(SatMul(0, kBytesOverflow), 0u);
  EXPECT_EQ(SatMul(4, kMaxI32, kMaxI32), uint64_t{4} * kMaxI32 * kMaxI32);
  EXPECT_EQ(SatMul(8, kMaxI32, kMaxI32), kBytesOverflow);
  EXPECT_EQ(SatAdd(kBytesOverflow - 1, 1), kBytesOverflow);
  EXPECT_EQ(SatAdd(kBytesOverflow - 1, 2), kBytesOverflow);
  EXPECT_EQ(SatAdd(kBytesOverflow, 0), kBytesOverflow);
  EXPECT_EQ(SatAdd(7, 9), 16u);
  EXPECT_EQ(SatAlign256(0), 0u);
  EXPECT_EQ(SatAlign256(1), 256u);
  EXPECT_EQ(SatAlign256(256), 256u);
  EXPECT_EQ(SatAlign256(257), 512u);
  EXPECT_EQ(SatAlign256(kBytesOverflow - 300), kBytesOverflow - 255);  // 2^64 - 256, the last multiple
  EXPECT_EQ(SatAlign256(kBytesOverflow - 10), kBytesOverflow);
}

TEST(FormatBytes, Units) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 19), "1.5 MiB");
  EXPECT_EQ(FormatBytes((uint64_t{212} << 30) + (uint64_t{400} << 20)), "212.4 GiB");
  EXPECT_EQ(FormatBytes(uint64_t{1} << 57), "134217728.0 GiB");
  EXPECT_EQ(FormatBytes(kBytesOverflow), "more than 16 EiB");
}

// Every buffer of GpuSuite (kernels/suite/gpu_suite.cu), counted one by one.
struct Expected {
  uint64_t step_inputs, block_table, arange, scratch, output_set, input_staging, qsl_staging, staging;
};

Expected CountBuffers(int32_t T, int32_t R, int32_t S, const ModelConsts& m) {
  const uint64_t t = T, r = R, s = S, w = m.swa_window;
  const uint64_t seg = r + (t + m.prefill_segment - 1) / m.prefill_segment;
  Expected e{};
  // Packed inputs: qsl int32 [R + 1], seq_lens int32 [R], slot_mapping int64 [T], each 256-aligned,
  // then the block table int32 [R, S].
  e.step_inputs = Up256(Up256(Up256(4 * (r + 1)) + 4 * r) + 8 * t);
  e.block_table = 4 * r * s;
  e.arange = 4 * std::max<uint64_t>(t, w);
  // The scratch arena's sizing rule (kernels/suite/suite_layout.cc), in int32 cells then bytes.
  e.scratch = 4 * (6 * t * w + 3 * t * s + 2 * r * s + 64 * t + 16 * r + 8 * seg) + 32 * t + 65536;
  // One implementation: token_to_req, swa_lens [T]; swa_indices [T, W]; mla_r1, mla_r2, ring and
  // the indexer's ratio-2 slots int64 [T]; its compressed_seq_lens [R]; per indexer seq_out,
  // decode_lens, indices, per_req [T] and bt_out [T, S]; seg_qsl [seg + 1], seg_seq_lens [seg],
  // seg_count [2]; the SWA gather lengths [R]; per indexer the prefill chunks' cu_seq_lens
  // [2 (R + T)], token_to_seq [4 T], ks and ke [T].
  const uint64_t ncw = (w + m.spec_k + 63) / 64 * 64;  // the DSpark draft rows' width
  e.output_set = 4 * t + 4 * t + 4 * t * w + 4 * t * ncw + 8 * t * 4 + 4 * r + 2 * (4 * t * 4 + 4 * t * s) + 4 * (seg + 1) +
                 4 * seg + 8 + 4 * r + 2 * 4 * (2 * (r + t) + 4 * t + 2 * t);
  e.input_staging = e.step_inputs + e.block_table;
  e.qsl_staging = 4 * (r + 1);
  e.staging = 4 * (16 * t + 16 * r + 3 * seg + 3) + 256 * 64;
  return e;
}

struct SmallCase {
  int32_t tokens, reqs, stride;
  int sets;
};

class PlanSmall : public ::testing::TestWithParam<SmallCase> {};

TEST_P(PlanSmall, CountsEveryBufferExactly) {
  const SmallCase c = GetParam();
  const ModelConsts m;
  auto plan = PlanGpuSuiteMemory({c.tokens, c.reqs, c.stride}, m, c.sets);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const Expected e = CountBuffers(c.tokens, c.reqs, c.stride, m);
  ASSERT_EQ(plan->device.size(), c.sets > 0 ? 5u : 4u);
  EXPECT_EQ(plan->device[0].name, "step inputs (query_start_loc, seq_lens, slot_mapping)");
  EXPECT_EQ(plan->device[0].bytes, e.step_inputs);
  EXPECT_EQ(plan->device[1].name, "block table");
  EXPECT_EQ(plan->device[1].bytes, e.block_table);
  EXPECT_EQ(plan->device[2].bytes, e.arange);
  EXPECT_EQ(plan->device[3].name, "scratch arena");
  EXPECT_EQ(plan->device[3].bytes, e.scratch);
  const uint64_t outputs = static_cast<uint64_t>(c.sets) * e.output_set;
  if (c.sets > 0) {
    EXPECT_EQ(plan->device[4].name, absl::StrCat("outputs of ", c.sets, " implementation", c.sets == 1 ? "" : "s"));
    EXPECT_EQ(plan->device[4].bytes, outputs);
  }
  EXPECT_EQ(plan->device_bytes(), e.step_inputs + e.block_table + e.arange + e.scratch + outputs);
  EXPECT_EQ(plan->pinned_bytes(), e.input_staging + e.qsl_staging + e.staging);
  EXPECT_EQ(GpuSuiteOutputSetBytes(MakeSuiteLayout(c.tokens, c.reqs, c.stride, m)), e.output_set);
  const GpuSuiteInputLayout in = MakeGpuSuiteInputLayout({c.tokens, c.reqs, c.stride});
  EXPECT_EQ(in.bt_off, e.step_inputs);
  EXPECT_EQ(in.bytes, e.input_staging);
  EXPECT_EQ(in.qsl_off, 0u);
  EXPECT_EQ(in.seq_off % 256, 0u);
  EXPECT_EQ(in.slot_off % 256, 0u);
  EXPECT_GE(in.slot_off, in.seq_off + 4 * static_cast<uint64_t>(c.reqs));
}

// One hand-checked value, so the counting above is itself pinned: T=8, R=3, S=5, two sets.
TEST(PlanSmallHandChecked, EightTokensThreeRequestsStrideFive) {
  auto plan = PlanGpuSuiteMemory({8, 3, 5}, ModelConsts{}, 2);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // inputs 768 + 60, arange 512, scratch 4 * 6886 + 256 + 65536 = 93336, outputs 2 x 11764
  // (4968 before the indexer's ratio-2 inputs, 8 x 8 + 3 x 4, the second seg_count cell, 4, the
  // non-causal draft rows, 8 x 192 x 4, and the prefill metadata, 3 x 4 + 2 x 4 x (22 + 32 + 16)).
  EXPECT_EQ(plan->device_bytes(), 768u + 60u + 512u + 93336u + 2u * 11764u);
  // input staging 828, qsl staging 16, staging arena 4 * (16 x 8 + 16 x 3 + 3 x 4 + 3) + 256 x 64.
  EXPECT_EQ(plan->pinned_bytes(), 828u + 16u + 764u + 16384u);
}

// DeepSeek-V4's output set adds C128A's decode and prefill rows int32 [T, w] and its decode
// lengths [T], w = C128aWidth of a block table S columns wide; the plan sizes them as the suite
// allocates them (MakeSuiteLayout), and V4.1 has none.
TEST(PlanDeepSeekV4, CountsC128aRowsAndLengths) {
  const ModelConsts v4 = ModelConstsFor(ModelKind::kV4);
  for (const SmallCase& c : {SmallCase{64, 4, 8, 1}, SmallCase{300, 7, 33, 3}}) {
    const uint64_t t = c.tokens;
    const uint64_t w = static_cast<uint64_t>(C128aWidth(v4, int64_t{c.stride} * v4.mla_block_size));
    ASSERT_GT(w, 0u);
    const SuiteLayout layout = MakeSuiteLayout(c.tokens, c.reqs, c.stride, v4);
    EXPECT_EQ(GpuSuiteOutputSetBytes(layout), CountBuffers(c.tokens, c.reqs, c.stride, v4).output_set + 2 * 4 * t * w + 4 * t);
    auto plan = PlanGpuSuiteMemory({c.tokens, c.reqs, c.stride}, v4, c.sets);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->device.size(), 5u);
    EXPECT_EQ(plan->device[3].bytes, MaxWorkspaceBytes(layout));
    EXPECT_EQ(plan->device[4].bytes, static_cast<uint64_t>(c.sets) * GpuSuiteOutputSetBytes(layout));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, PlanSmall,
    ::testing::Values(SmallCase{1, 1, 1, 1}, SmallCase{2, 1, 3, 0}, SmallCase{3, 2, 7, 5}, SmallCase{7, 3, 17, 2},
                      SmallCase{17, 7, 65, 1}, SmallCase{65, 17, 257, 3}, SmallCase{257, 65, 130, 5},
                      SmallCase{1023, 256, 131, 1}, SmallCase{1025, 516, 259, 5}, SmallCase{16384, 516, 261, 5}),
    [](const ::testing::TestParamInfo<SmallCase>& info) {
      return absl::StrCat("T", info.param.tokens, "_R", info.param.reqs, "_S", info.param.stride, "_sets",
                          info.param.sets);
    });

// The largest terms, exactly in 128 bits: the plan may saturate, never fall below them.
uint64_t ExactFloor(int32_t T, int32_t R, int32_t S, int sets) {
  const u128 bt = u128{4} * static_cast<u128>(R) * static_cast<u128>(S);
  const u128 bt_out = u128{2} * 4 * static_cast<u128>(T) * static_cast<u128>(S) * static_cast<u128>(sets);
  return Clamp(bt + bt_out);
}

TEST(PlanHuge, NeverWrapsAndGrowsWithEveryField) {
  std::mt19937_64 rng(20240611);
  const ModelConsts m;
  const auto draw = [&]() -> int32_t {
    const uint64_t x = rng();
    switch (x % 4) {
      case 0: return static_cast<int32_t>(1 + (x >> 8) % 64);                 // tiny
      case 1: return static_cast<int32_t>(1 + (x >> 8) % (1 << 20));          // realistic
      case 2: return static_cast<int32_t>(kMaxI32 - static_cast<int32_t>((x >> 8) % 1024));  // near the top
      default: return static_cast<int32_t>(1 + (x >> 8) % static_cast<uint64_t>(kMaxI32));
    }
  };
  int saturated = 0, checked = 0;
  for (int i = 0; i < 2000; ++i) {
    const int32_t T = draw(), S = draw();
    const int32_t R = static_cast<int32_t>(1 + rng() % (1 << 20));
    const int sets = static_cast<int>(1 + rng() % 5);
    auto plan = PlanGpuSuiteMemory({T, R, S}, m, sets);
    ASSERT_TRUE(plan.ok()) << T << " " << R << " " << S << ": " << plan.status();
    const uint64_t bytes = plan->device_bytes();
    EXPECT_GE(bytes, ExactFloor(T, R, S, sets)) << "T=" << T << " R=" << R << " S=" << S << " sets=" << sets;
    saturated += bytes == kBytesOverflow;
    ++checked;
    // Growing a field never shrinks the plan.
    if (T < kMaxI32 / 2) {
      auto bigger = PlanGpuSuiteMemory({2 * T, R, S}, m, sets);
      ASSERT_TRUE(bigger.ok());
      EXPECT_GE(bigger->device_bytes(), bytes);
    }
    if (S < kMaxI32 / 2) {
      auto bigger = PlanGpuSuiteMemory({T, R, 2 * S}, m, sets);
      ASSERT_TRUE(bigger.ok());
      EXPECT_GE(bigger->device_bytes(), bytes);
    }
    auto more_sets = PlanGpuSuiteMemory({T, R, S}, m, sets + 1);
    ASSERT_TRUE(more_sets.ok());
    EXPECT_GE(more_sets->device_bytes(), bytes);
  }
  EXPECT_GT(saturated, 0) << "the draws must reach sizes beyond 64 bits";
  EXPECT_LT(saturated, checked) << "and sizes below";
}

TEST(PlanHuge, TheLargestInt32CapacityIsOverflowNotSmall) {
  auto plan = PlanGpuSuiteMemory({kMaxI32, 1, kMaxI32}, ModelConsts{}, 1);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->device_bytes(), kBytesOverflow);
  EXPECT_EQ(SuiteScratchBytes(MakeSuiteLayout(kMaxI32, 1, kMaxI32, ModelConsts{})), kBytesOverflow);
  const absl::Status s = CheckMemoryFits(*plan, "GpuSuite", "lower it", 0, uint64_t{1} << 40, uint64_t{1} << 40, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(s.message()).find("GpuSuite needs more than 16 EiB of device memory"), std::string::npos) << s;
}

TEST(PlanInvalid, RefusesZeroFields) {
  for (GpuSuiteCapacity c : {GpuSuiteCapacity{0, 1, 1}, GpuSuiteCapacity{1, 0, 1}, GpuSuiteCapacity{1, 1, 0},
                             GpuSuiteCapacity{-5, 1, 1}}) {
    auto plan = PlanGpuSuiteMemory(c, ModelConsts{}, 1);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(plan.status().message()).find("must be >= 1"), std::string::npos) << plan.status();
    EXPECT_EQ(ValidateGpuSuiteCapacity(c, ModelConsts{}).code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(PlanGpuSuiteMemory({8, 1, 1}, ModelConsts{}, -1).status().code(), absl::StatusCode::kInvalidArgument);
}

struct Int32Case {
  std::string name;
  GpuSuiteCapacity capacity;
  std::string refusal;  // empty: valid (at the limit)
  int32_t window = 128; // [tokens] swa_window (1 isolates the limits the window rule would mask)
};

class Int32Limits : public ::testing::TestWithParam<Int32Case> {};

TEST_P(Int32Limits, AtTheLimitOrOnePast) {
  const Int32Case& c = GetParam();
  ModelConsts consts;
  consts.swa_window = c.window;
  const absl::Status s = ValidateGpuSuiteCapacity(c.capacity, consts);
  if (c.refusal.empty()) {
    EXPECT_TRUE(s.ok()) << s;
  } else {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.message()).find(c.refusal), std::string::npos) << s;
    EXPECT_NE(std::string(s.message()).find("exceed the int32 range the kernels index with (at most 2147483647"),
              std::string::npos)
        << s;
  }
  // The plan itself is never refused for size: it counts the bytes.
  EXPECT_TRUE(PlanGpuSuiteMemory(c.capacity, consts, 1).ok());
}

INSTANTIATE_TEST_SUITE_P(
    Boundaries, Int32Limits,
    ::testing::Values(
        // ceil(max_tokens / 1024) is computed as (max_tokens + 1023) / 1024 in int32.
        Int32Case{"CeilDivAtLimit", {kMaxI32 - 1023, 1, 1}, "", 1},
        Int32Case{"CeilDivPast", {kMaxI32 - 1022, 1, 1},
                  "max_tokens + prefill_segment - 1 (the ceil-division of the segment bound) = 2147483648", 1},
        // max_reqs + ceil(max_tokens / 1024) with ceil(2^20 / 1024) = 1024 segments from the tokens.
        Int32Case{"SegmentsAtLimit", {1 << 20, kMaxI32 - 1024, 1}, ""},
        Int32Case{"SegmentsPast", {1 << 20, kMaxI32 - 1023, 1},
                  "max_reqs + ceil(max_tokens / prefill_segment) prefill segments = 2147483648"},
        // [tokens, stride] cells: 2 x 1073741823 fits, 2 x 2^30 does not; 1 x (2^31 - 1) fits.
        Int32Case{"TokenStrideAtLimit", {2, 1, 1073741823}, ""},
        Int32Case{"TokenStrideOne", {1, 1, kMaxI32}, ""},
        Int32Case{"TokenStridePast", {2, 1, 1 << 30},
                  "max_tokens x max_bt_stride cells of the [tokens, block-table stride] buffers = 2147483648"},
        Int32Case{"RealisticPast", {16384, 256, 131073}, "max_tokens x max_bt_stride"},
        // [tokens, window = 128] cells.
        Int32Case{"WindowAtLimit", {16777215, 1, 1}, ""},
        Int32Case{"WindowPast", {16777216, 1, 1}, "max_tokens x swa_window cells of swa_indices = 2147483648"},
        // [reqs, stride] cells of the block table.
        Int32Case{"BlockTablePast", {1, 2, 1 << 30}, "max_reqs x max_bt_stride cells of the block table = 2147483648"}),
    [](const ::testing::TestParamInfo<Int32Case>& info) { return info.param.name; });

// ---------------------------------------------------------------- the decision and its message

GpuMemoryPlan ExamplePlan() {
  GpuMemoryPlan p;
  p.AddDevice("scratch arena", (uint64_t{12} << 30) + (uint64_t{400} << 20));
  p.AddDevice("block table", uint64_t{200} << 30);
  p.AddPinned("input staging", uint64_t{3} << 30);
  return p;
}

TEST(CheckMemoryFits, TheMessageNamesTotalItemsFreeMemoryAndHint) {
  const absl::Status s = CheckMemoryFits(ExamplePlan(), "GPU executor: max_tokens=16384, max_reqs=516, max_bt_stride=256",
                                         "lower --max-num-batched-tokens", 0,
                                         (uint64_t{139} << 30) + (uint64_t{100} << 20), uint64_t{140} << 30, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(s.message()),
            "GPU executor: max_tokens=16384, max_reqs=516, max_bt_stride=256 needs 212.4 GiB of device memory (block "
            "table 200.0 GiB, scratch arena 12.4 GiB) plus a 512.0 MiB reserve (CUDA graphs, kernel code, allocator "
            "rounding), but device 0 has 139.1 GiB free of 140.0 GiB; lower --max-num-batched-tokens");
}

TEST(CheckMemoryFits, ExactBoundaryWithTheReserve) {
  const GpuMemoryPlan p = ExamplePlan();
  const uint64_t need = p.device_bytes() + kDeviceMemoryReserve;
  EXPECT_TRUE(CheckMemoryFits(p, "x", "y", 3, need, need, 0).ok());
  EXPECT_TRUE(CheckMemoryFits(p, "x", "y", 3, need + 1, need + 1, 0).ok());
  const absl::Status s = CheckMemoryFits(p, "x", "y", 3, need - 1, need, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(s.message()).find("but device 3 has"), std::string::npos) << s;
  // An empty plan still needs the reserve.
  EXPECT_FALSE(CheckMemoryFits(GpuMemoryPlan{}, "x", "y", 0, kDeviceMemoryReserve - 1, kDeviceMemoryReserve, 0).ok());
  EXPECT_TRUE(CheckMemoryFits(GpuMemoryPlan{}, "x", "y", 0, kDeviceMemoryReserve, kDeviceMemoryReserve, 0).ok());
}

TEST(CheckMemoryFits, PinnedMemoryBeyondTheHostIsRefused) {
  const GpuMemoryPlan p = ExamplePlan();
  const uint64_t free = uint64_t{1} << 40;
  EXPECT_TRUE(CheckMemoryFits(p, "x", "y", 0, free, free, 0).ok()) << "0: no host check";
  EXPECT_TRUE(CheckMemoryFits(p, "x", "y", 0, free, free, uint64_t{3} << 30).ok());
  const absl::Status s = CheckMemoryFits(p, "bench", "lower --batch", 0, free, free, (uint64_t{3} << 30) - 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(s.message()),
            "bench needs 3.0 GiB of pinned host memory (input staging 3.0 GiB), but this host has 3.0 GiB of physical "
            "memory; lower --batch");
}

TEST(DescribeItems, LargestFirstStableForTies) {
  const std::vector<GpuMemoryItem> items = {{"a", 10}, {"b", 2048}, {"c", 10}, {"d", kBytesOverflow}};
  EXPECT_EQ(DescribeItems(items), "d more than 16 EiB, b 2.0 KiB, a 10 B, c 10 B");
  EXPECT_EQ(DescribeItems({}), "");
}

// ---------------------------------------------------------------- int32 overflow on the way

TEST(Int32Overflow, CaptureSizesOfAHugeMaxNumSeqsAreCappedNotWrapped) {
  const std::vector<int32_t> sizes = GraphCaptureSizes(1 << 29, 16384, 5);
  ASSERT_FALSE(sizes.empty());
  EXPECT_EQ(sizes.back(), 516);  // min(max_num_seqs * 6 * 2, 512) = 512, rounded up to a multiple of 6
  EXPECT_EQ(GraphCaptureSizes(kMaxI32, 16384, 5), sizes);
}

TEST(Int32Overflow, ConfigBlockCountOfTheLongestModelLength) {
  sim::RunConfig c;
  c.workload = "batch1-512";
  c.impls = {Impl::kFused};
  c.scheduler.num_kv_blocks = 100;
  // INT32_MAX tokens is refused by the range check before any block count is formed ...
  c.scheduler.max_model_len = kMaxI32;
  absl::Status s = c.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--max-model-len: expected an integer in [2, 16777216], got 2147483647");
  // ... and the longest accepted length counts its blocks without overflow.
  c.scheduler.max_model_len = 1 << 24;
  s = c.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("(262144 blocks of 64, plus the null block 0): need 0 (auto) or >= 262145"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace dspark
