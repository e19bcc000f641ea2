// Where a metadata implementation's operations go, and what they cost in launches and copies.
//
// Every implementation of the `impl` axis (kernels/suite/) is written once as a template over
// a Backend. CpuBackend runs kernel bodies through the grid emulator over host memory;
// GpuBackend (kernels/common/backend_gpu.cuh) launches the same bodies on a stream. Both count
// the same operations the same way, so launch and copy counts agree between CPU and GPU runs.
//
// A Backend provides:
//   template <class K> void Launch(const K& kernel, LaunchShape shape);
//   void CopyToDevice(void* dst, const void* host_src, size_t bytes);  // via pinned staging
//   void CopyToHost(void* host_dst, const void* src, size_t bytes);    // blocking: a host sync
//   void CopyDeviceToDevice(void* dst, const void* src, size_t bytes);
//   void Fill32(int32_t* dst, int32_t value, size_t count);           // a memset-like node
//   template <class T> T* Scratch(size_t count);  // per-suite workspace, reset by ResetScratch
//   void Branch(int i); void Join();  // independent work on parallel branches (GPU only)
//   void BranchAfter(int i, int j);   // branch i, started after what branch j issued so far
//   void OverlapNextLaunch();  // the next launch may overlap the previous one (GPU only)
//   OpCounters& counters();
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/common/clean_pages.h"
#include "kernels/common/grid.h"

namespace dspark {

struct OpCounters {
  int64_t kernels = 0;       // kernel launches
  int64_t h2d_copies = 0;    // host-to-device copies (from pinned staging)
  int64_t d2h_copies = 0;    // device-to-host copies (each one blocks the host)
  int64_t d2d_copies = 0;    // device-to-device copies
  int64_t fills = 0;         // memset-like fills
  int64_t host_syncs = 0;    // times the host waited for the device
  int64_t host_array_ops = 0;  // host-side array ops (np.repeat, cumsum, ...) on the host path
  // Replays of a recorded metadata graph (MetadataExecution::kRecordedUniformDecode): a replayed
  // step is 1 graph launch, and the counts above are the nodes inside it.
  int64_t graph_launches = 0;

  // What a captured graph would hold as nodes, or an eager path issues as launches.
  int64_t Launches() const { return kernels + h2d_copies + d2h_copies + d2d_copies + fills; }
  OpCounters& operator+=(const OpCounters& o) {
    kernels += o.kernels; h2d_copies += o.h2d_copies; d2h_copies += o.d2h_copies;
    d2d_copies += o.d2d_copies; fills += o.fills; host_syncs += o.host_syncs;
    host_array_ops += o.host_array_ops;
    graph_launches += o.graph_launches;
    return *this;
  }
};

// A bump allocator over one arena allocated at capacity. Reset per suite run, so a graph
// captured once sees the same addresses on every replay.
class ScratchArena {
 public:
  ScratchArena() = default;
  ScratchArena(uint8_t* base, size_t bytes) : base_(base), bytes_(bytes) {}
  void Reset() { used_ = 0; }
  // Returns nullptr when the arena is exhausted; Backends turn that into an error status.
  void* Take(size_t bytes) {
    const size_t aligned = (used_ + 255) & ~size_t{255};
    if (aligned + bytes > bytes_) return nullptr;
    used_ = aligned + bytes;
    return base_ + aligned;
  }
  size_t used() const { return used_; }
  size_t capacity() const { return bytes_; }

 private:
  uint8_t* base_ = nullptr;
  size_t bytes_ = 0;
  size_t used_ = 0;
};

// Runs every operation on the host; "device" memory is host memory.
class CpuBackend {
 public:
  // Zeroed as before, by calloc: a large block comes from fresh pages that the kernel maps
  // (zero) only when a step first touches them, so a backend costs what its steps use, not
  // scratch_bytes, and no 34 MB clear runs per implementation.
  // `staging_bytes`: the pinned staging arena the GPU backend stages host arrays through
  // (SuiteStagingBytes); its copies are accounted here as there (the same 256-byte alignment),
  // so that a step that would exhaust it on the GPU fails the same way in the emulation.
  explicit CpuBackend(size_t scratch_bytes = size_t{64} << 20, size_t staging_bytes = SIZE_MAX)
      : storage_(static_cast<uint8_t*>(std::calloc(scratch_bytes == 0 ? 1 : scratch_bytes, 1))),
        arena_(storage_.get(), storage_ ? scratch_bytes : 0), staging_bytes_(staging_bytes) {}

  template <class K>
  void Launch(const K& k, LaunchShape shape) {
    ++counters_.kernels;
    if (shape.grid > 0) EmulateGrid(k, shape);
  }
  // Launches run one after the other here; the GPU's overlap changes no result.
  void OverlapNextLaunch() {}
  void CopyToDevice(void* dst, const void* src, size_t bytes) {
    ++counters_.h2d_copies;
    if (bytes == 0) return;
    const size_t aligned = (staging_used_ + 255) & ~size_t{255};
    if (aligned > staging_bytes_ || bytes > staging_bytes_ - aligned) {
      if (status_.ok())
        status_ = absl::ResourceExhaustedError(absl::StrFormat(
            "pinned staging arena of %d bytes exhausted (as the GPU backend's would be)",
            static_cast<int64_t>(staging_bytes_)));
      return;
    }
    staging_used_ = aligned + bytes;
    std::memcpy(dst, src, bytes);
  }
  void CopyToHost(void* dst, const void* src, size_t bytes) {
    ++counters_.d2h_copies;
    ++counters_.host_syncs;
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void CopyDeviceToDevice(void* dst, const void* src, size_t bytes) {
    ++counters_.d2d_copies;
    if (bytes) std::memmove(dst, src, bytes);
  }
  void Fill32(int32_t* dst, int32_t value, size_t count) {
    ++counters_.fills;
    clean_pages::TailFill(dst, dst + count, value);  // std::fill but for pages holding value already
  }
  // A fill issued (counted) whose stores the caller has proven dead: the next op overwrites every
  // cell it would write (suite_internal::FillI64MinusOneOverwritten). Nothing is written.
  void CountDeadFill() { ++counters_.fills; }
  void NoteHostArrayOp() { ++counters_.host_array_ops; }
  // Independent work may go to parallel branches on a GPU; the emulator runs it in issue order,
  // which gives the same results because branches never read each other's outputs.
  void Branch(int) {}
  void BranchAfter(int, int) {}
  void Join() {}

  template <class T>
  T* Scratch(size_t count) {
    if (take_log_ != nullptr) take_log_->push_back(count * sizeof(T));
    void* p = arena_.Take(count * sizeof(T));
    if (p == nullptr && status_.ok())
      status_ = absl::ResourceExhaustedError(absl::StrFormat(
          "CPU scratch arena of %d bytes exhausted", static_cast<int64_t>(arena_.capacity())));
    return static_cast<T*>(p);
  }
  void ResetScratch() { arena_.Reset(); }
  void ResetStaging() { staging_used_ = 0; }
  // The scratch arena's bytes [begin, end).
  const uint8_t* ScratchBegin() const { return storage_.get(); }
  const uint8_t* ScratchEnd() const { return storage_.get() + arena_.capacity(); }
  // While set, every Scratch request's size [bytes] is appended to *log (a deduplicated builder
  // records what it took, so that a sharer takes the same: kernels/suite/builder_memo.h).
  void LogScratch(std::vector<size_t>* log) { take_log_ = log; }
  bool LoggingScratch() const { return take_log_ != nullptr; }

  OpCounters& counters() { return counters_; }
  const absl::Status& status() const { return status_; }
  static constexpr bool kIsGpu = false;

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> storage_;  // nullptr when calloc failed: every Scratch then errs
  ScratchArena arena_;
  OpCounters counters_;
  absl::Status status_;
  std::vector<size_t>* take_log_ = nullptr;
  size_t staging_bytes_ = SIZE_MAX;  // [bytes] the GPU's pinned staging arena
  size_t staging_used_ = 0;          // [bytes] taken since ResetStaging
};

}  // namespace dspark
