// One lane of the GPU layout fuzz (tests/fuzz/test_fuzz_layouts_gpu.cu): persistent device
// inputs and, per registered implementation, persistent outputs in ONE device block with a pinned
// host mirror, a pinned staging arena and a shared scratch arena, all allocated once. A layout
// costs one host-to-device copy, each implementation's registered GPU entry (the same
// ValidateSuiteStep + ImplInfo::gpu call GpuSuite::Run makes), four device-to-host copies per
// implementation sized to the step (the compared regions), and one stream sync; the reference
// is computed on the host while the device works.
//
// Why not GpuSuite itself for the bulk: its Download issues about 24 synchronous cudaMemcpy of
// whole buffers per implementation on the legacy default stream, which every worker thread
// shares, so a million layouts would take far longer than the five minutes asked for. The lane
// cross-checks itself against GpuSuite (Stage, Run, Download) on every `gpusuite_every`-th layout.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/suite/cases.h"
#include "kernels/suite/gpu_memory_plan.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/suite/suite.h"
#include "tests/fuzz/layout_check.h"

namespace dspark::fuzz {

// Byte offsets of every SuiteOutputs field in one implementation's output block: the 1-D fields
// first (downloaded whole), then the 2-D ones (downloaded as the step's row prefix).
struct OutputPack {
  size_t token_to_req = 0, swa_lens = 0, mla_r1 = 0, mla_r2 = 0, ring = 0;
  size_t seq_out[2] = {}, decode_lens[2] = {}, indices[2] = {}, per_req[2] = {};
  size_t seg_qsl = 0, seg_seq_lens = 0, seg_count = 0, r2_slots = 0, r2_csl = 0;
  size_t swa_gather = 0, pf_cu[2] = {}, pf_rows[2] = {}, pf_ks[2] = {}, pf_ke[2] = {};
  size_t one_d_end = 0;  // [bytes] the 1-D fields end here
  size_t swa_indices = 0, swa_noncausal = 0, bt_out[2] = {};
  size_t bytes = 0;
};
OutputPack MakeOutputPack(const SuiteLayout& layout);
SuiteOutputs OutputsAt(uint8_t* base, const OutputPack& pack);

class GpuLayoutLane {
 public:
  static absl::StatusOr<std::unique_ptr<GpuLayoutLane>> Create(const GpuSuiteCapacity& capacity,
                                                               const ModelConsts& consts);
  ~GpuLayoutLane();
  GpuLayoutLane(const GpuLayoutLane&) = delete;
  GpuLayoutLane& operator=(const GpuLayoutLane&) = delete;

  bool Fits(const BatchSizes& z) const;
  // Runs every registered implementation on `b` and checks every cell (layout_check.h): "" when
  // clean, otherwise the report. Counts into `stats`. A CUDA failure is an error status.
  absl::StatusOr<std::string> RunAndCheck(const CaseBatch& b, size_t step, LayoutRunStats& stats);
  // The same layout through GpuSuite (Stage, Run, Download), checked by the same rules.
  absl::StatusOr<std::string> CheckThroughGpuSuite(const CaseBatch& b, size_t step);

 private:
  GpuLayoutLane() = default;

  GpuSuiteCapacity capacity_;
  ModelConsts consts_;
  SuiteLayout layout_;
  GpuSuiteInputLayout in_layout_;
  OutputPack pack_;
  CudaStream stream_;
  std::unique_ptr<DeviceBuffer<uint8_t>> inputs_;
  std::unique_ptr<PinnedBuffer<uint8_t>> inputs_pinned_;
  std::unique_ptr<DeviceBuffer<int32_t>> arange_;
  std::unique_ptr<DeviceBuffer<uint8_t>> scratch_;
  std::vector<std::unique_ptr<DeviceBuffer<uint8_t>>> outputs_;  // by Impl::index()
  std::vector<std::unique_ptr<PinnedBuffer<uint8_t>>> mirrors_;  // by Impl::index()
  std::vector<std::unique_ptr<PinnedBuffer<uint8_t>>> staging_;  // by Impl::index()
  std::unique_ptr<GpuSuite> suite_;                              // the cross-check, made on first use
};

}  // namespace dspark::fuzz
