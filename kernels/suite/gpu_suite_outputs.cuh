// GpuSuite's per-implementation persistent output buffers on the device (kernels/suite/gpu_suite.cu
// and its companions only): allocation, the -99 poison, and the whole-buffer download of the old
// check path (GpuSuite::DownloadImage).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "kernels/common/backend_gpu.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/common/status_macros.h"
#include "kernels/suite/suite.h"

namespace dspark {

namespace gpu_suite_internal {

constexpr int32_t kPoison = -99;

// Fills an int64 buffer (the poison of the int64 slot buffers; outside every counted suite run).
struct FillI64Kernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  int64_t* dst;   // [count]
  int64_t value;
  size_t count;   // [elements]
  DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
    const size_t i = static_cast<size_t>(c.block) * c.block_dim + c.thread;
    if (i < count) dst[i] = value;
  }
};

inline LaunchShape FillShape(size_t count) { return {static_cast<int32_t>((count + 255) / 256), 256}; }

// One implementation's persistent output buffers on the device.
struct Outputs {
  DeviceBuffer<int32_t> token_to_req, swa_lens, swa_indices, swa_nc, swa_gather;
  DeviceBuffer<int64_t> mla_r1, mla_r2, ring, r2_slots;
  DeviceBuffer<int32_t> r2_csl;
  DeviceBuffer<int32_t> seq_out[2], bt_out[2], decode_lens[2], indices[2], per_req[2];
  DeviceBuffer<int32_t> pf_cu[2], pf_rows[2], pf_ks[2], pf_ke[2];  // the indexer prefill chunks
  DeviceBuffer<int32_t> seg_qsl, seg_seq_lens, seg_count;
  // DeepSeek-V4 only (layout c128a_stride > 0): C128A's top-k rows and lengths.
  DeviceBuffer<int32_t> c128a_decode, c128a_decode_lens, c128a_prefill;
  SuiteOutputs view;

  explicit Outputs(const SuiteLayout& l) {
    const size_t cap = static_cast<size_t>(l.token_capacity);
    token_to_req = DeviceBuffer<int32_t>(cap);
    swa_lens = DeviceBuffer<int32_t>(cap);
    swa_indices = DeviceBuffer<int32_t>(cap * static_cast<size_t>(l.window));
    swa_nc = DeviceBuffer<int32_t>(cap * static_cast<size_t>(l.noncausal_width));
    swa_gather = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.max_reqs), 1));
    mla_r1 = DeviceBuffer<int64_t>(cap);
    mla_r2 = DeviceBuffer<int64_t>(cap);
    ring = DeviceBuffer<int64_t>(cap);
    r2_slots = DeviceBuffer<int64_t>(cap);
    r2_csl = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.max_reqs), 1));
    for (int k = 0; k < 2; ++k) {
      seq_out[k] = DeviceBuffer<int32_t>(cap);
      bt_out[k] = DeviceBuffer<int32_t>(cap * static_cast<size_t>(l.bt_out_stride));
      decode_lens[k] = DeviceBuffer<int32_t>(cap);
      indices[k] = DeviceBuffer<int32_t>(cap);
      per_req[k] = DeviceBuffer<int32_t>(cap);
      pf_cu[k] = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.prefill_cu_len), 1));
      pf_rows[k] = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.prefill_rows), 1));
      pf_ks[k] = DeviceBuffer<int32_t>(cap);
      pf_ke[k] = DeviceBuffer<int32_t>(cap);
    }
    seg_qsl = DeviceBuffer<int32_t>(static_cast<size_t>(l.max_segments) + 1);
    seg_seq_lens = DeviceBuffer<int32_t>(std::max<size_t>(static_cast<size_t>(l.max_segments), 1));
    seg_count = DeviceBuffer<int32_t>(2);  // count, prefill_segment_max_query_len
    if (l.c128a_stride > 0) {
      c128a_decode = DeviceBuffer<int32_t>(cap * static_cast<size_t>(l.c128a_stride));
      c128a_decode_lens = DeviceBuffer<int32_t>(cap);
      c128a_prefill = DeviceBuffer<int32_t>(cap * static_cast<size_t>(l.c128a_stride));
      view.c128a_decode = c128a_decode.get();
      view.c128a_decode_lens = c128a_decode_lens.get();
      view.c128a_prefill = c128a_prefill.get();
    }
    view.token_to_req = token_to_req.get();
    view.swa_lens = swa_lens.get();
    view.swa_indices = swa_indices.get();
    view.swa_indices_noncausal = swa_nc.get();
    view.swa_gather_lens = swa_gather.get();
    view.mla_r1_slots = mla_r1.get();
    view.mla_r2_slots = mla_r2.get();
    view.ring_slots = ring.get();
    view.indexer_r2_slots = r2_slots.get();
    view.indexer_r2_csl = r2_csl.get();
    for (int k = 0; k < 2; ++k)
      view.indexer[k] = IndexerOutputs{seq_out[k].get(), bt_out[k].get(), decode_lens[k].get(), indices[k].get(),
                                       per_req[k].get(),  pf_cu[k].get(),  pf_rows[k].get(),     pf_ks[k].get(),
                                       pf_ke[k].get()};
    view.seg_qsl = seg_qsl.get();
    view.seg_seq_lens = seg_seq_lens.get();
    view.seg_count = seg_count.get();
  }

  uint64_t Bytes() const {
    uint64_t b = token_to_req.bytes() + swa_lens.bytes() + swa_indices.bytes() + swa_nc.bytes() + swa_gather.bytes() +
                 mla_r1.bytes() +
                 mla_r2.bytes() +
                 ring.bytes() + r2_slots.bytes() + r2_csl.bytes() + seg_qsl.bytes() + seg_seq_lens.bytes() +
                 seg_count.bytes() + c128a_decode.bytes() + c128a_decode_lens.bytes() + c128a_prefill.bytes();
    for (int k = 0; k < 2; ++k)
      b += seq_out[k].bytes() + bt_out[k].bytes() + decode_lens[k].bytes() + indices[k].bytes() + per_req[k].bytes() +
           pf_cu[k].bytes() + pf_rows[k].bytes() + pf_ks[k].bytes() + pf_ke[k].bytes();
    return b;
  }

  absl::Status Poison(cudaStream_t s) {
    for (DeviceBuffer<int32_t>* b :
         {&token_to_req, &swa_lens, &swa_indices, &swa_nc, &swa_gather, &r2_csl, &seg_qsl, &seg_seq_lens, &seg_count})
      CUDA_RETURN_IF_ERROR(FillI32(*b, s));
    for (DeviceBuffer<int32_t>* b : {&c128a_decode, &c128a_decode_lens, &c128a_prefill})
      if (b->size() > 0) CUDA_RETURN_IF_ERROR(FillI32(*b, s));
    for (int k = 0; k < 2; ++k)
      for (DeviceBuffer<int32_t>* b : {&seq_out[k], &bt_out[k], &decode_lens[k], &indices[k], &per_req[k], &pf_cu[k],
                                       &pf_rows[k], &pf_ks[k], &pf_ke[k]})
        CUDA_RETURN_IF_ERROR(FillI32(*b, s));
    for (DeviceBuffer<int64_t>* b : {&mla_r1, &mla_r2, &ring, &r2_slots})
      CUDA_RETURN_IF_ERROR(LaunchFunctor(FillI64Kernel{b->get(), kPoison, b->size()}, FillShape(b->size()), s));
    return absl::OkStatus();
  }

  static cudaError_t FillI32(DeviceBuffer<int32_t>& b, cudaStream_t s) {
    return LaunchFunctor(GpuBackend::FillKernel{b.get(), kPoison, b.size()}, FillShape(b.size()), s);
  }

  template <class T>
  static absl::Status Get(const DeviceBuffer<T>& b, std::vector<T>& host) {
    host.resize(b.size());
    if (!host.empty()) CUDA_RETURN_IF_ERROR(cudaMemcpy(host.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost));
    return absl::OkStatus();
  }

  absl::Status Download(const SuiteLayout& l, SuiteImage& im) const {
    DS_RETURN_IF_ERROR(Get(token_to_req, im.token_to_req));
    DS_RETURN_IF_ERROR(Get(swa_lens, im.swa_lens));
    DS_RETURN_IF_ERROR(Get(swa_indices, im.swa_indices));
    DS_RETURN_IF_ERROR(Get(swa_nc, im.swa_indices_noncausal));
    DS_RETURN_IF_ERROR(Get(swa_gather, im.swa_gather_lens));
    DS_RETURN_IF_ERROR(Get(mla_r1, im.mla_r1_slots));
    DS_RETURN_IF_ERROR(Get(mla_r2, im.mla_r2_slots));
    DS_RETURN_IF_ERROR(Get(ring, im.ring_slots));
    for (int k = 0; k < 2; ++k) {
      DS_RETURN_IF_ERROR(Get(seq_out[k], im.indexer[k].seq_out));
      DS_RETURN_IF_ERROR(Get(bt_out[k], im.indexer[k].bt_out));
      DS_RETURN_IF_ERROR(Get(decode_lens[k], im.indexer[k].decode_lens));
      DS_RETURN_IF_ERROR(Get(indices[k], im.indexer[k].indices));
      DS_RETURN_IF_ERROR(Get(per_req[k], im.indexer[k].per_req));
      DS_RETURN_IF_ERROR(Get(pf_cu[k], im.indexer[k].prefill_cu_seq_lens));
      DS_RETURN_IF_ERROR(Get(pf_rows[k], im.indexer[k].prefill_token_to_seq));
      DS_RETURN_IF_ERROR(Get(pf_ks[k], im.indexer[k].prefill_ks));
      DS_RETURN_IF_ERROR(Get(pf_ke[k], im.indexer[k].prefill_ke));
    }
    DS_RETURN_IF_ERROR(Get(r2_slots, im.indexer_r2_slots));
    DS_RETURN_IF_ERROR(Get(r2_csl, im.indexer_r2_csl));
    DS_RETURN_IF_ERROR(Get(seg_qsl, im.seg_qsl));
    DS_RETURN_IF_ERROR(Get(seg_seq_lens, im.seg_seq_lens));
    im.seg_seq_lens.resize(static_cast<size_t>(l.max_segments));  // the buffer holds at least one cell
    DS_RETURN_IF_ERROR(Get(seg_count, im.seg_count));
    if (l.c128a_stride > 0) {
      DS_RETURN_IF_ERROR(Get(c128a_decode, im.c128a_decode));
      DS_RETURN_IF_ERROR(Get(c128a_decode_lens, im.c128a_decode_lens));
      DS_RETURN_IF_ERROR(Get(c128a_prefill, im.c128a_prefill));
    }
    return absl::OkStatus();
  }
};

}  // namespace gpu_suite_internal

}  // namespace dspark
