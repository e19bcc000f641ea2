// DSPARK_REGISTER_IMPL: how an implementation file (kernels/impls/<name>.cu) registers itself.
//
//   template <class Backend>
//   absl::Status RunMine(Backend& be, const SuiteStep& s) { ... }
//   DSPARK_REGISTER_IMPL(mine, RunMine, [] {   // the last argument may hold commas
//     ImplInfo i;
//     i.name = "mine";
//     i.description = "what it does, in one line";
//     return i;
//   });
//
// The CPU-emulation entry is RunMine<CpuBackend>. The GPU entry RunMine<GpuBackend> exists only
// when nvcc compiles the file (__CUDACC__); a CPU-only build compiles the same .cu file as C++
// (CMakeLists.txt) and registers the CPU entry alone. The files are linked as an OBJECT library,
// so the linker keeps every registration. workspace_bytes defaults to SuiteScratchBytes.
#pragma once

#include "kernels/common/backend.h"
#include "kernels/suite/impl_registry.h"
#include "kernels/suite/suite_impls.h"

#ifdef __CUDACC__
#include "kernels/common/backend_gpu.cuh"
#define DSPARK_IMPL_GPU_ENTRY_(fn) (&fn<::dspark::GpuBackend>)
#else
#define DSPARK_IMPL_GPU_ENTRY_(fn) nullptr
#endif

#define DSPARK_REGISTER_IMPL(ident, fn, ...)                            \
  namespace {                                                                 \
  [[maybe_unused]] const bool ds_impl_registered_##ident = ::dspark::RegisterImpl([] {         \
    ::dspark::ImplInfo info_ = (__VA_ARGS__)();                                 \
    info_.cpu = &fn<::dspark::CpuBackend>;                                    \
    info_.gpu = DSPARK_IMPL_GPU_ENTRY_(fn);                                   \
    if (info_.workspace_bytes == nullptr) info_.workspace_bytes = &::dspark::SuiteScratchBytes; \
    return info_;                                                             \
  }());                                                                       \
  }
