// A captured CUDA graph and its instantiation (GpuSuite's graphs per padded-size key).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dspark {

// A captured graph and its instantiation. This object owns both handles and destroys them once;
// the destructor never throws.
class SuiteGraph {
 public:
  SuiteGraph() = default;
  ~SuiteGraph();
  SuiteGraph(const SuiteGraph&) = delete;
  SuiteGraph& operator=(const SuiteGraph&) = delete;

  // Takes `captured` (a freshly captured graph). With an instantiation already held, tries
  // cudaGraphExecUpdate first and re-instantiates only when the update is refused.
  absl::Status Adopt(cudaGraph_t captured);
  absl::Status Launch(cudaStream_t stream) const;
  struct NodeCounts {
    size_t total = 0, kernels = 0, memcpys = 0, memsets = 0, other = 0;
  };
  absl::StatusOr<NodeCounts> CountNodes() const;
  bool valid() const { return exec_ != nullptr; }
  int updates() const { return updates_; }          // successful cudaGraphExecUpdate calls
  int instantiations() const { return instantiations_; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  int updates_ = 0;
  int instantiations_ = 0;
};

}  // namespace dspark
