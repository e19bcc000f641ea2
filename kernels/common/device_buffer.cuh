// RAII owners of CUDA allocations. Each object owns one allocation that must be freed exactly
// once; destructors never throw.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/cuda_check.h"

namespace dspark {

// Throws CudaError when count * element_bytes does not fit in size_t, so an element count derived
// from a huge capacity can never wrap into a small allocation.
inline void CheckAllocationSize(size_t count, size_t element_bytes, const char* what) {
  if (element_bytes != 0 && count > std::numeric_limits<size_t>::max() / element_bytes)
    throw CudaError(std::string(what) + ": " + std::to_string(count) + " elements of " +
                    std::to_string(element_bytes) + " bytes overflow size_t");
}

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    CheckAllocationSize(count_, sizeof(T), "DeviceBuffer");
    if (count_) CUDA_CHECK(cudaMalloc(&ptr_, count_ * sizeof(T)));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { Upload(host); }
  ~DeviceBuffer() {
    if (ptr_) CUDA_CHECK_NOTHROW(cudaFree(ptr_));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  void Upload(const std::vector<T>& host) {
    if (host.size() > count_) throw CudaError("DeviceBuffer::Upload: host vector larger than buffer");
    if (!host.empty()) CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> Download() const {
    std::vector<T> host(count_);
    if (count_) CUDA_CHECK(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    return host;
  }
  void FillBytes(int byte) {
    if (count_) CUDA_CHECK(cudaMemset(ptr_, byte, bytes()));
  }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t count) : count_(count) {
    CheckAllocationSize(count_, sizeof(T), "PinnedBuffer");
    if (count_) CUDA_CHECK(cudaMallocHost(&ptr_, count_ * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (ptr_) CUDA_CHECK_NOTHROW(cudaFreeHost(ptr_));
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept { *this = std::move(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  T* get() const { return ptr_; }
  size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

class CudaStream {
 public:
  CudaStream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~CudaStream() { CUDA_CHECK_NOTHROW(cudaStreamDestroy(s_)); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_{};
};

// A captured and instantiated graph.
class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph() { Reset(); }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  CudaGraph(CudaGraph&& o) noexcept { *this = std::move(o); }
  CudaGraph& operator=(CudaGraph&& o) noexcept {
    std::swap(graph_, o.graph_);
    std::swap(exec_, o.exec_);
    return *this;
  }

  void BeginCapture(cudaStream_t s) { CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)); }
  void EndCapture(cudaStream_t s) {
    Reset();
    CUDA_CHECK(cudaStreamEndCapture(s, &graph_));
    CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  void Replay(cudaStream_t s) const { CUDA_CHECK(cudaGraphLaunch(exec_, s)); }
  // Kernel and memcpy/memset nodes of the captured graph.
  size_t NodeCount() const {
    size_t n = 0;
    if (graph_) CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &n));
    return n;
  }
  bool valid() const { return exec_ != nullptr; }

 private:
  void Reset() {
    if (exec_) CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_));
    if (graph_) CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
    exec_ = nullptr;
    graph_ = nullptr;
  }
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// True when a CUDA device can run our kernels.
inline bool CudaDevicePresent() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

}  // namespace dspark
