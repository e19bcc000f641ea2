#include "sim/exec/check_memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/batch.h"
#include "kernels/common/byte_math.h"
#include "kernels/prefill_segments.cuh"
#include "kernels/suite/suite.h"

namespace dspark::sim {

namespace {

struct CheckSizes {
  int32_t capacity = 0;  // [tokens] of every per-token buffer
  uint64_t stride = 0;   // [int32] block-table row stride
  uint64_t reqs = 0;     // [requests] rows of a step's block table, graph padding included
  uint64_t rows = 0;     // [rows] of a step's expanded indexer block tables (N_d)
};

CheckSizes SizesOf(const SchedulerConfig& c) {
  const std::vector<int32_t> captures =
      c.cuda_graphs ? GraphCaptureSizes(c.max_num_seqs, c.max_num_batched_tokens, c.spec_k) : std::vector<int32_t>{};
  const int64_t max_capture = captures.empty() ? 0 : captures.back();
  CheckSizes z;
  z.capacity = std::max<int32_t>(c.max_num_batched_tokens, static_cast<int32_t>(max_capture));
  z.stride = static_cast<uint64_t>((int64_t{c.max_model_len} + c.block_size - 1) / std::max(c.block_size, 1) +
                                   std::max(c.bt_stride_pad, 0));
  z.reqs = static_cast<uint64_t>(std::max<int64_t>(c.max_num_seqs, max_capture));
  // Every running request with 1 + K tokens (or a capture size of padding), at most the capacity.
  z.rows = static_cast<uint64_t>(std::min<int64_t>(
      z.capacity, std::max<int64_t>(int64_t{c.max_num_seqs} * (1 + std::max(c.spec_k, 0)), max_capture)));
  return z;
}

}  // namespace

uint64_t CpuCheckBytes(const ExecutorRequest& request) {
  const CheckSizes z = SizesOf(request.scheduler);
  const uint64_t cap = static_cast<uint64_t>(z.capacity);
  const uint64_t w = static_cast<uint64_t>(ModelConsts{}.swa_window);
  const uint64_t segments = static_cast<uint64_t>(PrefillSegmentBound(
      static_cast<int32_t>(std::min<uint64_t>(z.reqs, 1u << 30)), z.capacity, ModelConsts{}.prefill_segment));
  // One implementation's buffers (kernels/suite/suite.h): int32 per-token fields, swa_indices,
  // two indexers' bt_out rows and per-token fields, the segments; three int64 slot fields.
  const uint64_t image_int32s = SatAdd(SatMul(cap, 2 + w), SatAdd(SatMul(2, SatAdd(SatMul(z.rows, z.stride), SatMul(4, cap))),
                                                                   SatAdd(SatMul(2, segments), 2)));
  const uint64_t image = SatAdd(SatMul(4, image_int32s), SatMul(24, cap));
  // A step's scratch: the chain's SWA tensors and per-token vectors, the old chain's expanded rows.
  const uint64_t scratch = SatMul(4, SatAdd(SatMul(6 * w, cap), SatAdd(SatMul(3, z.rows, z.stride), SatMul(64, cap))));
  // The step's block table (device and its view) and the reference's expanded rows.
  const uint64_t step = SatMul(4, SatAdd(SatMul(2, z.reqs, z.stride), SatMul(z.rows, z.stride)));
  const uint64_t impls = request.impls.size();
  return SatAdd(SatMul(impls + 1, image), SatAdd(SatMul(impls, scratch), step));
}

absl::Status CheckCpuCheckMemory(const ExecutorRequest& request, uint64_t available_bytes) {
  const uint64_t need = CpuCheckBytes(request);
  if (need <= available_bytes) return absl::OkStatus();
  const SchedulerConfig& c = request.scheduler;
  const CheckSizes z = SizesOf(c);
  return absl::ResourceExhaustedError(absl::StrFormat(
      "metadata check: needs about %.2f GB of host memory at these sizes (capacity %d tokens, block-table stride %d "
      "from --max-model-len %d, %d implementations), the machine has %.2f GB available; lower --max-model-len or "
      "--max-num-batched-tokens, check fewer implementations (--impl), or run with --no-check",
      static_cast<double>(need) / 1e9, z.capacity, z.stride, c.max_model_len,
      static_cast<int64_t>(request.impls.size()), static_cast<double>(available_bytes) / 1e9));
}

uint64_t AvailableHostMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t kb = 0;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return SatMul(kb, 1024);
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? SatMul(static_cast<uint64_t>(pages), static_cast<uint64_t>(page_size))
                                    : ~uint64_t{0};
}

}  // namespace dspark::sim
