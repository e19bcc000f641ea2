// The device-memory pre-flight (host-only arithmetic, no CUDA): what a GpuSuite and its users
// will allocate for a given capacity, computed BEFORE anything is allocated, and the check of
// that plan against the device's free memory with the message a user acts on.
//
//   PlanGpuSuiteMemory    every buffer GpuSuite::Create allocates (the packed step inputs with the
//                         block table, arange, the scratch arena; pinned: the input staging, the
//                         qsl staging, the staging arena) plus `output_sets` implementations'
//                         persistent outputs (allocated on each implementation's first use).
//                         Bytes are 64-bit and saturating (kernels/common/byte_math.h): a capacity
//                         too large for 64 bits is kBytesOverflow, never a wrapped small size.
//   CheckMemoryFits       the plan against free device memory minus kDeviceMemoryReserve (and the
//                         pinned part against the host's physical memory): ResourceExhausted
//                         naming the total, the largest items, what the device has, and the hint.
//   ValidateGpuSuiteCapacity  what fits in memory must also fit the kernels' int32 arithmetic:
//                         element counts of the 2-D buffers, the prefill-segment bound and its
//                         ceil-division stay <= INT32_MAX. Checked after the memory (a capacity
//                         that cannot fit anywhere is told so with its byte count first).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/batch.h"
#include "kernels/suite/suite.h"

namespace dspark {

struct GpuSuiteCapacity {
  int32_t max_tokens = 8192;    // [tokens] length of every per-token buffer (>= every step's capacity)
  int32_t max_reqs = 256;       // [requests] most requests of a step, padding requests included
  int32_t max_bt_stride = 2048; // [int32] largest block-table row stride (also the bt_out stride)
};

// [bytes] kept free beyond the plan: CUDA graphs (captured and instantiated per padded size),
// the kernels' module code, streams and events, and the allocator's rounding of each cudaMalloc
// (2 MiB pages for large allocations), none of which the plan itemizes.
inline constexpr uint64_t kDeviceMemoryReserve = uint64_t{512} << 20;

struct GpuMemoryItem {
  std::string name;
  uint64_t bytes = 0;  // saturating: kBytesOverflow means more than 2^64 - 1
};

struct GpuMemoryPlan {
  std::vector<GpuMemoryItem> device;  // cudaMalloc
  std::vector<GpuMemoryItem> pinned;  // cudaMallocHost

  void AddDevice(std::string name, uint64_t bytes) { device.push_back({std::move(name), bytes}); }
  void AddPinned(std::string name, uint64_t bytes) { pinned.push_back({std::move(name), bytes}); }
  void Append(const GpuMemoryPlan& other);
  uint64_t device_bytes() const;  // saturating sums
  uint64_t pinned_bytes() const;
};

// "12.3 GiB", "4.0 MiB", "768 B"; kBytesOverflow as "more than 16 EiB".
std::string FormatBytes(uint64_t bytes);
// The items, largest first, as "block table 4.0 GiB, scratch arena 1.2 GiB, ...".
std::string DescribeItems(const std::vector<GpuMemoryItem>& items);

// Offsets [bytes] of GpuSuite's packed input block: qsl [max_reqs + 1] | seq_lens [max_reqs] |
// slot_mapping int64 [max_tokens] | block_table [max_reqs, max_bt_stride], each start 256-aligned.
struct GpuSuiteInputLayout {
  uint64_t qsl_off = 0, seq_off = 0, slot_off = 0, bt_off = 0;
  uint64_t bytes = 0;  // bt_off + the block table
};
GpuSuiteInputLayout MakeGpuSuiteInputLayout(const GpuSuiteCapacity& capacity);

// [bytes] of one implementation's persistent outputs for `layout` (GpuSuite's per-impl Outputs).
uint64_t GpuSuiteOutputSetBytes(const SuiteLayout& layout);

// InvalidArgument unless every field is >= 1 and every int32 size derived from them (the layout's
// segment bound, max_tokens x max_bt_stride, max_tokens x swa_window, max_reqs x max_bt_stride)
// is at most INT32_MAX.
absl::Status ValidateGpuSuiteCapacity(const GpuSuiteCapacity& capacity, const ModelConsts& consts);

// InvalidArgument only for a field < 1 or output_sets < 0; any size beyond that gets its bytes.
absl::StatusOr<GpuMemoryPlan> PlanGpuSuiteMemory(const GpuSuiteCapacity& capacity, const ModelConsts& consts,
                                                 int output_sets);

// `who` opens the message ("GPU executor: max_tokens=..."), `hint` closes it ("lower --capacity").
// host_physical_bytes 0 skips the pinned check.
absl::Status CheckMemoryFits(const GpuMemoryPlan& plan, absl::string_view who, absl::string_view hint, int device,
                             uint64_t free_bytes, uint64_t total_bytes, uint64_t host_physical_bytes);

}  // namespace dspark
