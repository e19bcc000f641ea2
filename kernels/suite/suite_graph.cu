// SuiteGraph (kernels/suite/suite_graph.cuh): a captured graph and its instantiation.
#include "kernels/suite/suite_graph.cuh"

#include <vector>

#include "kernels/common/cuda_check.h"

namespace dspark {

SuiteGraph::~SuiteGraph() {
  if (exec_ != nullptr) CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_));
  if (graph_ != nullptr) CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
}

absl::Status SuiteGraph::Adopt(cudaGraph_t captured) {
  if (exec_ != nullptr) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(exec_, captured, &info) == cudaSuccess) {
      if (graph_ != nullptr) CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
      graph_ = captured;
      ++updates_;
      return absl::OkStatus();
    }
    (void)cudaGetLastError();  // the refused update's error is not sticky; clear it
    CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_));
    exec_ = nullptr;
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, captured, 0);
  if (err != cudaSuccess) {
    CUDA_CHECK_NOTHROW(cudaGraphDestroy(captured));
    return CudaStatus(err, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  if (graph_ != nullptr) CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
  graph_ = captured;
  exec_ = exec;
  ++instantiations_;
  return absl::OkStatus();
}

absl::Status SuiteGraph::Launch(cudaStream_t stream) const {
  if (exec_ == nullptr) return absl::FailedPreconditionError("SuiteGraph: nothing instantiated");
  CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, stream));
  return absl::OkStatus();
}

absl::StatusOr<SuiteGraph::NodeCounts> SuiteGraph::CountNodes() const {
  NodeCounts c;
  if (graph_ == nullptr) return c;
  size_t n = 0;
  CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph_, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph_, nodes.data(), &n));
  c.total = n;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDA_RETURN_IF_ERROR(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeKernel) ++c.kernels;
    else if (type == cudaGraphNodeTypeMemcpy) ++c.memcpys;
    else if (type == cudaGraphNodeTypeMemset) ++c.memsets;
    else ++c.other;
  }
  return c;
}
}  // namespace dspark
