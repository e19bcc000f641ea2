#include "kernels/suite/gpu_memory_plan.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/common/byte_math.h"
#include "kernels/common/status_macros.h"
#include "kernels/swa.cuh"

namespace dspark {

void GpuMemoryPlan::Append(const GpuMemoryPlan& other) {
  device.insert(device.end(), other.device.begin(), other.device.end());
  pinned.insert(pinned.end(), other.pinned.begin(), other.pinned.end());
}

namespace {

uint64_t Sum(const std::vector<GpuMemoryItem>& items) {
  uint64_t total = 0;
  for (const GpuMemoryItem& i : items) total = SatAdd(total, i.bytes);
  return total;
}

}  // namespace

uint64_t GpuMemoryPlan::device_bytes() const { return Sum(device); }
uint64_t GpuMemoryPlan::pinned_bytes() const { return Sum(pinned); }

std::string FormatBytes(uint64_t bytes) {
  if (bytes == kBytesOverflow) return "more than 16 EiB";
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t{1} << 30)) return absl::StrFormat("%.1f GiB", b / (1u << 30));
  if (bytes >= (uint64_t{1} << 20)) return absl::StrFormat("%.1f MiB", b / (1u << 20));
  if (bytes >= (uint64_t{1} << 10)) return absl::StrFormat("%.1f KiB", b / (1u << 10));
  return absl::StrFormat("%d B", bytes);
}

std::string DescribeItems(const std::vector<GpuMemoryItem>& items) {
  std::vector<GpuMemoryItem> sorted = items;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const GpuMemoryItem& a, const GpuMemoryItem& b) { return a.bytes > b.bytes; });
  return absl::StrJoin(sorted, ", ", [](std::string* out, const GpuMemoryItem& i) {
    absl::StrAppend(out, i.name, " ", FormatBytes(i.bytes));
  });
}

GpuSuiteInputLayout MakeGpuSuiteInputLayout(const GpuSuiteCapacity& c) {
  const uint64_t reqs = static_cast<uint64_t>(std::max(c.max_reqs, 0));
  const uint64_t tokens = static_cast<uint64_t>(std::max(c.max_tokens, 0));
  const uint64_t stride = static_cast<uint64_t>(std::max(c.max_bt_stride, 0));
  GpuSuiteInputLayout l;
  l.qsl_off = 0;
  l.seq_off = SatAlign256(l.qsl_off + 4 * (reqs + 1));
  l.slot_off = SatAlign256(l.seq_off + 4 * reqs);
  l.bt_off = SatAlign256(l.slot_off + 8 * tokens);
  l.bytes = SatAdd(l.bt_off, SatMul(4, reqs, stride));
  return l;
}

uint64_t GpuSuiteOutputSetBytes(const SuiteLayout& l) {
  const uint64_t cap = static_cast<uint64_t>(std::max(l.token_capacity, 0));
  const uint64_t window = static_cast<uint64_t>(std::max(l.window, 0));
  const uint64_t stride = static_cast<uint64_t>(std::max(l.bt_out_stride, 0));
  const uint64_t seg = static_cast<uint64_t>(std::max(l.max_segments, 0));
  // token_to_req and swa_lens: int32 [cap]; swa_indices: int32 [cap, window]; the MLA r1 / r2 and
  // ring slots and the indexer's ratio-2 compressed slots: int64 [cap]; its compressed_seq_lens:
  // int32 [max(max_reqs, 1)].
  // swa_indices_noncausal: int32 [cap, noncausal_width] (the DSpark draft rows).
  uint64_t bytes = SatAdd(SatMul(2 * 4, cap), SatMul(4, cap, window));
  bytes = SatAdd(bytes, SatMul(4, cap, static_cast<uint64_t>(std::max(l.noncausal_width, 0))));
  bytes = SatAdd(bytes, SatMul(4 * 8, cap));
  bytes = SatAdd(bytes, 4 * std::max<uint64_t>(static_cast<uint64_t>(std::max(l.max_reqs, 0)), 1));
  // Two indexers: seq_out, decode_lens, indices, per_req int32 [cap]; bt_out int32 [cap, stride].
  bytes = SatAdd(bytes, SatMul(2, SatAdd(SatMul(4 * 4, cap), SatMul(4, cap, stride))));
  // Prefill metadata: SWA gather lengths int32 [max(max_reqs, 1)]; per indexer the prefill chunks'
  // cu_seq_lens [max(prefill_cu_len, 1)], token_to_seq [max(prefill_rows, 1)], ks and ke [cap].
  const uint64_t cu = std::max<uint64_t>(static_cast<uint64_t>(std::max(l.prefill_cu_len, 0)), 1);
  const uint64_t rows = std::max<uint64_t>(static_cast<uint64_t>(std::max(l.prefill_rows, 0)), 1);
  bytes = SatAdd(bytes, 4 * std::max<uint64_t>(static_cast<uint64_t>(std::max(l.max_reqs, 0)), 1));
  bytes = SatAdd(bytes, SatMul(2 * 4, SatAdd(SatAdd(cu, rows), SatMul(2, cap))));
  // DeepSeek-V4 (c128a_stride > 0): C128A's decode and prefill top-k rows int32 [cap, c128a_stride]
  // and its decode lengths int32 [cap].
  const uint64_t c128a = static_cast<uint64_t>(std::max(l.c128a_stride, 0));
  if (c128a > 0) bytes = SatAdd(bytes, SatAdd(SatMul(2 * 4, cap, c128a), SatMul(4, cap)));
  // Prefill segments: seg_qsl [seg + 1], seg_seq_lens [max(seg, 1)], seg_count [2] (count, max
  // query len).
  return SatAdd(bytes, 4 * (seg + 1) + 4 * std::max<uint64_t>(seg, 1) + 8);
}

namespace {

absl::Status CheckPositive(const GpuSuiteCapacity& c, const ModelConsts& consts) {
  if (c.max_tokens < 1 || c.max_reqs < 1 || c.max_bt_stride < 1)
    return absl::InvalidArgumentError(absl::StrFormat(
        "GpuSuite: max_tokens=%d, max_reqs=%d and max_bt_stride=%d must be >= 1", c.max_tokens, c.max_reqs,
        c.max_bt_stride));
  if (consts.prefill_segment < 1 || consts.swa_window < 1)
    return absl::InvalidArgumentError(absl::StrFormat(
        "GpuSuite: prefill_segment=%d and swa_window=%d must be >= 1", consts.prefill_segment, consts.swa_window));
  return absl::OkStatus();
}

// max_reqs + ceil(max_tokens / prefill_segment), in 64 bits.
int64_t SegmentBound(const GpuSuiteCapacity& c, const ModelConsts& consts) {
  return int64_t{c.max_reqs} + (int64_t{c.max_tokens} + consts.prefill_segment - 1) / consts.prefill_segment;
}

}  // namespace

absl::Status ValidateGpuSuiteCapacity(const GpuSuiteCapacity& c, const ModelConsts& consts) {
  DS_RETURN_IF_ERROR(CheckPositive(c, consts));
  const int64_t tokens = c.max_tokens, reqs = c.max_reqs, stride = c.max_bt_stride;
  struct Limit {
    const char* what;
    int64_t value;
  };
  // What the kernels (and the chains' PyTorch-like ops) compute or index in int32.
  const Limit limits[] = {
      {"max_tokens + prefill_segment - 1 (the ceil-division of the segment bound)",
       tokens + consts.prefill_segment - 1},
      {"max_reqs + ceil(max_tokens / prefill_segment) prefill segments", SegmentBound(c, consts)},
      {"max_tokens x max_bt_stride cells of the [tokens, block-table stride] buffers", tokens * stride},
      {"max_tokens x swa_window cells of swa_indices", tokens * consts.swa_window},
      {"max_reqs x max_bt_stride cells of the block table", reqs * stride},
  };
  for (const Limit& l : limits)
    if (l.value > std::numeric_limits<int32_t>::max())
      return absl::InvalidArgumentError(absl::StrFormat(
          "GpuSuite: %s = %d exceed the int32 range the kernels index with (at most %d; max_tokens=%d, max_reqs=%d, "
          "max_bt_stride=%d)",
          l.what, l.value, std::numeric_limits<int32_t>::max(), c.max_tokens, c.max_reqs, c.max_bt_stride));
  return absl::OkStatus();
}

absl::StatusOr<GpuMemoryPlan> PlanGpuSuiteMemory(const GpuSuiteCapacity& c, const ModelConsts& consts,
                                                 int output_sets) {
  DS_RETURN_IF_ERROR(CheckPositive(c, consts));
  if (output_sets < 0)
    return absl::InvalidArgumentError(absl::StrFormat("GpuSuite: output_sets=%d must be >= 0", output_sets));
  // The layout MakeSuiteLayout builds, with the segment bound computed in 64 bits: a capacity past
  // the int32 range still gets its (saturating) byte count, and ValidateGpuSuiteCapacity refuses it.
  SuiteLayout layout;
  layout.token_capacity = c.max_tokens;
  layout.max_reqs = c.max_reqs;
  layout.bt_out_stride = c.max_bt_stride;
  layout.window = consts.swa_window;
  layout.noncausal_width = SwaNoncausalWidth(consts.swa_window, consts.spec_k);
  layout.max_segments =
      static_cast<int32_t>(std::min<int64_t>(SegmentBound(c, consts), std::numeric_limits<int32_t>::max()));
  layout.arange_len = std::max(c.max_tokens, consts.swa_window);
  layout.prefill_cu_len = PrefillChunkCuBound(c.max_reqs, c.max_tokens);
  layout.prefill_rows = static_cast<int32_t>(std::min<int64_t>(4 * int64_t{c.max_tokens}, std::numeric_limits<int32_t>::max()));
  if (consts.model == ModelKind::kV4)  // C128A's row width, as MakeSuiteLayout sizes it
    layout.c128a_stride = C128aWidth(consts, int64_t{std::max(c.max_bt_stride, 1)} * consts.mla_block_size);
  const GpuSuiteInputLayout in = MakeGpuSuiteInputLayout(c);
  const uint64_t reqs = static_cast<uint64_t>(c.max_reqs);
  GpuMemoryPlan plan;
  plan.AddDevice("step inputs (query_start_loc, seq_lens, slot_mapping)", in.bt_off);
  plan.AddDevice("block table", in.bytes == kBytesOverflow ? kBytesOverflow : in.bytes - in.bt_off);
  plan.AddDevice("arange", 4 * static_cast<uint64_t>(layout.arange_len));
  plan.AddDevice("scratch arena", MaxWorkspaceBytes(layout));
  if (output_sets > 0)
    plan.AddDevice(absl::StrFormat("outputs of %d implementation%s", output_sets, output_sets == 1 ? "" : "s"),
                   SatMul(static_cast<uint64_t>(output_sets), GpuSuiteOutputSetBytes(layout)));
  plan.AddPinned("input staging", in.bytes);
  plan.AddPinned("query_start_loc staging", 4 * (reqs + 1));
  plan.AddPinned("staging arena", SuiteStagingBytes(layout));
  return plan;
}

absl::Status CheckMemoryFits(const GpuMemoryPlan& plan, absl::string_view who, absl::string_view hint, int device,
                             uint64_t free_bytes, uint64_t total_bytes, uint64_t host_physical_bytes) {
  const uint64_t need = plan.device_bytes();
  if (SatAdd(need, kDeviceMemoryReserve) > free_bytes)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s needs %s of device memory (%s) plus a %s reserve (CUDA graphs, kernel code, allocator rounding), but "
        "device %d has %s free of %s; %s",
        who, FormatBytes(need), DescribeItems(plan.device), FormatBytes(kDeviceMemoryReserve), device,
        FormatBytes(free_bytes), FormatBytes(total_bytes), hint));
  const uint64_t pinned = plan.pinned_bytes();
  if (host_physical_bytes > 0 && pinned > host_physical_bytes)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s needs %s of pinned host memory (%s), but this host has %s of physical memory; %s", who,
        FormatBytes(pinned), DescribeItems(plan.pinned), FormatBytes(host_physical_bytes), hint));
  return absl::OkStatus();
}

}  // namespace dspark
