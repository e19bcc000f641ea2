// DeviceTopB (gpu_executor.cuh): the device side of adaptive verification, one pinned upload and
// kernels/topb_alloc.cuh rewriting a device query_start_loc in place.
#include "sim/exec/gpu_executor.cuh"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "kernels/topb_alloc.cuh"

namespace dspark::sim {

namespace {

constexpr int32_t kKeptPoison = -99;

size_t AlignUp(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

// Offsets [bytes] of DeviceTopB's one block (device and pinned alike): scores float [max_reqs, K_max] |
// max_drafts [max_reqs] | tail_offsets [max_reqs + 1] | kept [max_reqs], each start 256-aligned.
struct TopBLayout {
  size_t scores = 0, max_drafts = 0, tail = 0, kept = 0, bytes = 0;
};

TopBLayout MakeTopBLayout(int32_t max_reqs) {
  const size_t reqs = static_cast<size_t>(std::max(max_reqs, 0));
  TopBLayout l;
  l.scores = 0;
  l.max_drafts = AlignUp(l.scores + sizeof(float) * reqs * kTopBMaxK);
  l.tail = AlignUp(l.max_drafts + 4 * reqs);
  l.kept = AlignUp(l.tail + 4 * (reqs + 1));
  l.bytes = l.kept + 4 * reqs;
  return l;
}


}  // namespace

size_t DeviceTopB::Bytes(int32_t max_reqs) { return MakeTopBLayout(max_reqs).bytes; }

absl::StatusOr<std::unique_ptr<DeviceTopB>> DeviceTopB::Create(int32_t max_reqs) {
  if (max_reqs < 1) return absl::InvalidArgumentError(absl::StrFormat("DeviceTopB: max_reqs=%d must be >= 1", max_reqs));
  std::unique_ptr<DeviceTopB> t(new DeviceTopB());
  t->max_reqs_ = max_reqs;
  const TopBLayout l = MakeTopBLayout(max_reqs);
  t->scores_off_ = l.scores;
  t->max_drafts_off_ = l.max_drafts;
  t->tail_off_ = l.tail;
  t->kept_off_ = l.kept;
  t->bytes_ = l.bytes;
  try {
    t->device_ = DeviceBuffer<uint8_t>(t->bytes_);
    t->pinned_ = PinnedBuffer<uint8_t>(t->bytes_);
  } catch (const CudaError& e) {
    return absl::ResourceExhaustedError(absl::StrCat("DeviceTopB::Create: ", e.what()));
  }
  return t;
}

absl::Status DeviceTopB::Launch(const TopBInputs& in, int32_t num_reqs, int32_t* qsl, cudaStream_t stream) {
  if (!in.present) return absl::FailedPreconditionError("DeviceTopB::Launch: the step has no top-B inputs");
  const int32_t nd = in.num_decodes;
  if (nd > max_reqs_ || num_reqs > max_reqs_ || num_reqs < nd)
    return absl::OutOfRangeError(absl::StrFormat(
        "DeviceTopB::Launch: num_decodes=%d, num_reqs=%d must satisfy num_decodes <= num_reqs <= max_reqs=%d", nd,
        num_reqs, max_reqs_));
  const size_t slots = static_cast<size_t>(nd) * static_cast<size_t>(in.max_k);
  if (in.scores.size() != slots || in.max_drafts.size() != static_cast<size_t>(nd) ||
      in.tail_offsets.size() != static_cast<size_t>(num_reqs - nd))
    return absl::InvalidArgumentError(absl::StrFormat(
        "DeviceTopB::Launch: scores has %d entries (expected num_decodes * max_k = %d), max_drafts %d (expected %d), "
        "tail_offsets %d (expected num_reqs - num_decodes = %d)",
        in.scores.size(), slots, in.max_drafts.size(), nd, in.tail_offsets.size(), num_reqs - nd));
  uint8_t* h = pinned_.get();
  uint8_t* d = device_.get();
  TopBAllocParams p{};
  p.scores = reinterpret_cast<const float*>(d + scores_off_);
  p.max_drafts = reinterpret_cast<const int32_t*>(d + max_drafts_off_);
  p.tail_offsets = num_reqs > nd ? reinterpret_cast<const int32_t*>(d + tail_off_) : nullptr;
  p.query_start_loc = qsl;
  p.kept = reinterpret_cast<int32_t*>(d + kept_off_);
  p.num_decodes = nd;
  p.num_reqs = num_reqs;
  p.max_k = in.max_k;
  p.budget = in.budget;
  p.base_tokens = in.base_tokens;
  DS_RETURN_IF_ERROR(CanImplementTopBAlloc(p));
  if (slots) std::memcpy(h + scores_off_, in.scores.data(), sizeof(float) * slots);
  if (nd) std::memcpy(h + max_drafts_off_, in.max_drafts.data(), 4 * static_cast<size_t>(nd));
  if (num_reqs > nd) std::memcpy(h + tail_off_, in.tail_offsets.data(), 4 * in.tail_offsets.size());
  // The kept counts are poisoned in the same copy, so a kernel that did not run shows up.
  std::fill_n(reinterpret_cast<int32_t*>(h + kept_off_), nd, kKeptPoison);
  const size_t bytes = kept_off_ + 4 * static_cast<size_t>(nd);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream));
  CUDA_RETURN_IF_ERROR(LaunchTopBAlloc(p, stream));
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  ++launches_;
  return absl::OkStatus();
}

absl::Status DeviceTopB::Verify(const TopBInputs& in, const std::vector<int32_t>& expected_qsl, const int32_t* qsl,
                                cudaStream_t stream, int64_t step) {
  if (expected_qsl.size() > static_cast<size_t>(max_reqs_) + 1 || in.num_decodes > max_reqs_)
    return absl::OutOfRangeError(absl::StrFormat("DeviceTopB::Verify: %d qsl entries, %d decodes; created for %d requests",
                                                 expected_qsl.size(), in.num_decodes, max_reqs_));
  // Both downloads into the pinned block behind the kernel, one synchronization: the tail
  // offsets' room [max_reqs + 1] takes the qsl (its upload was read before the kernel ran).
  uint8_t* h = pinned_.get();
  const size_t nq = expected_qsl.size(), nk = static_cast<size_t>(in.num_decodes);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(h + tail_off_, qsl, 4 * nq, cudaMemcpyDeviceToHost, stream));
  if (nk > 0)
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(h + kept_off_, device_.get() + kept_off_, 4 * nk, cudaMemcpyDeviceToHost, stream));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  const int32_t* q = reinterpret_cast<const int32_t*>(h + tail_off_);
  const int32_t* k = reinterpret_cast<const int32_t*>(h + kept_off_);
  const std::vector<int32_t> got(q, q + nq), kept(k, k + nk);
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != expected_qsl[i])
      return absl::InternalError(absl::StrFormat(
          "step %d: topb_alloc on the device wrote query_start_loc[%d] = %d, the plan's device view has %d "
          "(num_decodes=%d, budget B=%d, K=%d): device qsl [%s], plan [%s]",
          step, i, got[i], expected_qsl[i], in.num_decodes, in.budget, in.max_k, absl::StrJoin(got, ","),
          absl::StrJoin(expected_qsl, ",")));
  for (int32_t r = 0; r < in.num_decodes; ++r) {
    const int32_t want = expected_qsl[r + 1] - expected_qsl[r] - in.base_tokens;
    if (kept[r] != want)
      return absl::InternalError(absl::StrFormat(
          "step %d: topb_alloc on the device wrote kept[%d] = %d, the plan keeps %d drafts there%s", step, r,
          kept[r], want, kept[r] == kKeptPoison ? " (the kernel did not write it)" : ""));
  }
  return absl::OkStatus();
}

}  // namespace dspark::sim
