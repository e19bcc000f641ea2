// Error handling for CUDA calls (after nvbench's cuda_call.cuh). Every CUDA runtime call in
// this project goes through one of these, so a failure names the call, file and line.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace dspark {

inline absl::Status CudaStatus(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat("%s:%d: %s failed: %s (%s)", file, line, call,
                                             cudaGetErrorString(err), cudaGetErrorName(err)));
}

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dspark

// Inside libraries: turns a failing call into an absl::Status return.
#define CUDA_RETURN_IF_ERROR(call)                                                    \
  do {                                                                                \
    const cudaError_t ds_err_ = (call);                                               \
    if (ds_err_ != cudaSuccess) return ::dspark::CudaStatus(ds_err_, #call, __FILE__, __LINE__); \
  } while (0)

// In binaries and tests: throws dspark::CudaError with call text, file and line.
#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    const cudaError_t ds_err_ = (call);                                               \
    if (ds_err_ != cudaSuccess)                                                       \
      throw ::dspark::CudaError(                                                      \
          std::string(::dspark::CudaStatus(ds_err_, #call, __FILE__, __LINE__).message())); \
  } while (0)

// In destructors: never throws; reports and carries on.
#define CUDA_CHECK_NOTHROW(call)                                                      \
  do {                                                                                \
    const cudaError_t ds_err_ = (call);                                               \
    if (ds_err_ != cudaSuccess)                                                       \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,       \
                   cudaGetErrorString(ds_err_));                                      \
  } while (0)
