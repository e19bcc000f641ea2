// The GPU Backend (see kernels/common/backend.h): launches kernel bodies on one stream.
// Every CUDA call is checked; the first failure is kept as a sticky status naming the call,
// file and line, and later operations become no-ops so a broken step cannot cascade.
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "kernels/common/backend.h"
#include "kernels/common/cuda_check.h"

namespace dspark {

// Side streams and the events that fork them from, and join them back to, a main stream. This
// object owns CUDA streams and events that must be destroyed exactly once.
class SideStreams {
 public:
  explicit SideStreams(int count) : streams_(count), join_(count) {
    CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
    for (int i = 0; i < count; ++i) {
      CUDA_CHECK(cudaStreamCreateWithFlags(&streams_[i], cudaStreamNonBlocking));
      CUDA_CHECK(cudaEventCreateWithFlags(&join_[i], cudaEventDisableTiming));
    }
  }
  ~SideStreams() {
    for (auto s : streams_) CUDA_CHECK_NOTHROW(cudaStreamDestroy(s));
    for (auto e : join_) CUDA_CHECK_NOTHROW(cudaEventDestroy(e));
    CUDA_CHECK_NOTHROW(cudaEventDestroy(fork_));
  }
  SideStreams(const SideStreams&) = delete;
  SideStreams& operator=(const SideStreams&) = delete;
  int count() const { return static_cast<int>(streams_.size()); }
  cudaStream_t stream(int i) const { return streams_[i]; }
  cudaEvent_t fork_event() const { return fork_; }
  cudaEvent_t join_event(int i) const { return join_[i]; }

 private:
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> join_;
  cudaEvent_t fork_{};
};

class GpuBackend {
 public:
  // `scratch` is device memory of `scratch_bytes`; `staging` is pinned host memory of
  // `staging_bytes`. Both are owned by the caller and outlive the backend.
  GpuBackend(cudaStream_t stream, uint8_t* scratch, size_t scratch_bytes, uint8_t* staging,
             size_t staging_bytes)
      : stream_(stream), current_(stream), arena_(scratch, scratch_bytes), staging_(staging, staging_bytes) {}

  // Lets Branch() put independent work on side streams; without it branches run in order on
  // the main stream. Forks and joins are event waits, so inside a capture they become parallel
  // graph branches, and eagerly they overlap on the device.
  void AttachSideStreams(SideStreams* side) { side_ = side; }

  // Subsequent operations go to branch `i` (0 = the main stream). Every branch i > 0 starts
  // after everything issued on the main stream so far.
  void Branch(int i) {
    if (!status_.ok()) return;
    if (i == 0 || side_ == nullptr || side_->count() == 0) {
      current_ = stream_;
      return;
    }
    const int b = (i - 1) % side_->count();
    if (!forked_) {
      Check(cudaEventRecord(side_->fork_event(), stream_), "cudaEventRecord(fork)", __FILE__, __LINE__);
      forked_ = true;
    }
    if (!(joined_mask_ & (1u << b))) {
      Check(cudaStreamWaitEvent(side_->stream(b), side_->fork_event(), 0), "cudaStreamWaitEvent(fork)",
            __FILE__, __LINE__);
      joined_mask_ |= 1u << b;
    }
    current_ = side_->stream(b);
  }
  // Subsequent operations go to branch `i`, which starts after everything issued so far on
  // branch `after` (opened as Branch(after) would) and on the main stream: vLLM's branches that
  // start after another (AttnMetadataCudaGraphs._forked_build's readers of a clamped block
  // table). Without side streams, the same as Branch(i).
  void BranchAfter(int i, int after) {
    if (!status_.ok()) return;
    if (side_ == nullptr || side_->count() == 0 || i == 0) {
      Branch(i);
      return;
    }
    Branch(after);
    cudaStream_t from = current_;
    cudaEvent_t mark = after == 0 ? side_->fork_event() : side_->join_event((after - 1) % side_->count());
    Check(cudaEventRecord(mark, from), "cudaEventRecord(branch after)", __FILE__, __LINE__);
    Branch(i);
    Check(cudaStreamWaitEvent(current_, mark, 0), "cudaStreamWaitEvent(branch after)", __FILE__, __LINE__);
  }
  // Waits, on the main stream, for every branch opened since the last Join.
  void Join() {
    current_ = stream_;
    if (!status_.ok() || side_ == nullptr) return;
    for (int b = 0; b < side_->count(); ++b) {
      if (!(joined_mask_ & (1u << b))) continue;
      Check(cudaEventRecord(side_->join_event(b), side_->stream(b)), "cudaEventRecord(join)", __FILE__, __LINE__);
      Check(cudaStreamWaitEvent(stream_, side_->join_event(b), 0), "cudaStreamWaitEvent(join)", __FILE__, __LINE__);
    }
    joined_mask_ = 0;
    forked_ = false;
  }

  template <class K>
  void Launch(const K& k, LaunchShape shape) {
    ++counters_.kernels;
    const bool dependent = overlap_next_;
    overlap_next_ = false;
    if (!status_.ok() || shape.grid <= 0) return;
    if (dependent)
      Check(LaunchFunctorDependent(k, shape, current_), "LaunchFunctorDependent", __FILE__, __LINE__);
    else
      Check(LaunchFunctor(k, shape, current_), "LaunchFunctor", __FILE__, __LINE__);
  }
  // The next Launch is a programmatic dependent launch (grid.h, LaunchFunctorDependent): the
  // caller promises that its kernel reads nothing the previous kernel writes.
  void OverlapNextLaunch() { overlap_next_ = true; }
  // Stages through pinned memory, as np_to_pinned_tensor(...).copy_(non_blocking=True) does.
  // The staging arena is reset only by ResetStaging(), which the executor calls after it has
  // made sure earlier copies finished, so a staged buffer is never overwritten in flight.
  void CopyToDevice(void* dst, const void* src, size_t bytes) {
    ++counters_.h2d_copies;
    if (!status_.ok() || bytes == 0) return;
    void* pinned = staging_.Take(bytes);
    if (pinned == nullptr) {
      status_ = absl::ResourceExhaustedError("pinned staging arena exhausted");
      return;
    }
    std::memcpy(pinned, src, bytes);
    Check(cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, current_),
          "cudaMemcpyAsync(H2D)", __FILE__, __LINE__);
  }
  void CopyToHost(void* dst, const void* src, size_t bytes) {
    ++counters_.d2h_copies;
    ++counters_.host_syncs;
    if (!status_.ok()) return;
    Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, current_),
          "cudaMemcpyAsync(D2H)", __FILE__, __LINE__);
    Check(cudaStreamSynchronize(current_), "cudaStreamSynchronize", __FILE__, __LINE__);
  }
  void CopyDeviceToDevice(void* dst, const void* src, size_t bytes) {
    ++counters_.d2d_copies;
    if (!status_.ok() || bytes == 0) return;
    Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, current_),
          "cudaMemcpyAsync(D2D)", __FILE__, __LINE__);
  }
  void Fill32(int32_t* dst, int32_t value, size_t count) {
    ++counters_.fills;
    if (!status_.ok() || count == 0) return;
    // torch's fill_ on an int32 tensor lowers to one elementwise kernel; so does this.
    FillKernel k{dst, value, count};
    Check(LaunchFunctor(k, {static_cast<int32_t>((count + 255) / 256), 256}, current_),
          "LaunchFunctor(Fill32)", __FILE__, __LINE__);
  }
  void NoteHostArrayOp() { ++counters_.host_array_ops; }

  template <class T>
  T* Scratch(size_t count) {
    void* p = arena_.Take(count * sizeof(T));
    if (p == nullptr && status_.ok())
      status_ = absl::ResourceExhaustedError("device scratch arena exhausted");
    return static_cast<T*>(p);
  }
  void ResetScratch() { arena_.Reset(); }
  void ResetStaging() { staging_.Reset(); }

  OpCounters& counters() { return counters_; }
  const absl::Status& status() const { return status_; }
  cudaStream_t stream() const { return stream_; }
  static constexpr bool kIsGpu = true;

  // Public only because nvcc rejects a private nested type as a __global__ template argument.
  struct FillKernel {
    static constexpr int kPhases = 1;
    using Shared = NoShared;
    int32_t* dst;
    int32_t value;
    size_t count;
    DS_HD void Phase(int, const ThreadCtx& c, Shared&) const {
      const size_t i = static_cast<size_t>(c.block) * c.block_dim + c.thread;
      if (i < count) dst[i] = value;
    }
  };

 private:
  void Check(cudaError_t err, const char* call, const char* file, int line) {
    if (err != cudaSuccess && status_.ok()) status_ = CudaStatus(err, call, file, line);
  }

  cudaStream_t stream_;
  cudaStream_t current_;
  SideStreams* side_ = nullptr;
  bool forked_ = false;
  bool overlap_next_ = false;  // OverlapNextLaunch
  uint32_t joined_mask_ = 0;
  ScratchArena arena_;
  ScratchArena staging_;
  OpCounters counters_;
  absl::Status status_;
};

}  // namespace dspark
