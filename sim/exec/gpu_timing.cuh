// Reusable pieces for timing metadata work on a GPU (used by `microbench`, and by `bench`):
// an L2 flusher, a CUDA-event timer, sample statistics, the empty-kernel floor, and the
// device/driver facts every result file carries in its meta block.
//
// Method (docs/design.md section 5 and 8): GPU time per call, CUDA events around each call; with a
// cold L2, a buffer of max(2 x L2, 256 MiB) is written before every sample, outside the timed
// region. A captured graph is timed as replays enqueued right behind the flush (the flush
// hides the host's launch call, as in the reference figures). An eager sequence is timed
// after waiting for the flush, so the host's own launch and host-side work between launches
// fall inside the window: that is what an eager path costs the GPU's timeline. Each method's
// floor (one empty kernel, same method, same run) is reported beside its figures.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/common/grid.h"
#include "sim/exec/sample_stopping.h"

namespace dspark::timing {

// ------------------------------------------------------------------ statistics (host only)

struct SampleStats {
  int64_t n = 0;          // [samples]
  double median_us = 0;   // [µs]
  double p10_us = 0;      // [µs]
  double p90_us = 0;      // [µs]
  double mean_us = 0;     // [µs]
  double min_us = 0;      // [µs]
  double max_us = 0;      // [µs]
};

// q in [0, 1] of an ascending sample, interpolating linearly between closest ranks (numpy's
// default), so that p50 of an even count is the mean of the middle two.
inline double PercentileSorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

inline SampleStats Summarize(std::vector<double> samples_us) {
  SampleStats s;
  s.n = static_cast<int64_t>(samples_us.size());
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  s.median_us = PercentileSorted(samples_us, 0.5);
  s.p10_us = PercentileSorted(samples_us, 0.1);
  s.p90_us = PercentileSorted(samples_us, 0.9);
  double sum = 0;
  for (double v : samples_us) sum += v;
  s.mean_us = sum / static_cast<double>(samples_us.size());
  s.min_us = samples_us.front();
  s.max_us = samples_us.back();
  return s;
}

// [bytes] written per flush: `l2_multiple` times the L2 (twice unless said), and never less
// than `min_bytes`.
inline size_t FlushBytes(size_t l2_bytes, size_t min_bytes, int l2_multiple = 2) {
  return std::max(static_cast<size_t>(l2_multiple) * l2_bytes, min_bytes);
}

inline constexpr size_t kMinFlushBytes = size_t{256} << 20;

// ------------------------------------------------------------------ device pieces

// Evicts the L2 by writing a buffer of FlushBytes(L2 size) bytes with a memset node.
class L2Flusher {
 public:
  explicit L2Flusher(int device, size_t min_bytes = kMinFlushBytes, int l2_multiple = 2) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    l2_bytes_ = static_cast<size_t>(prop.l2CacheSize);
    buffer_ = DeviceBuffer<uint8_t>(FlushBytes(l2_bytes_, min_bytes, l2_multiple));
  }
  // The byte value changes every call so no two flushes write the same contents.
  void Flush(cudaStream_t stream) {
    value_ = (value_ + 1) & 0xff;
    CUDA_CHECK(cudaMemsetAsync(buffer_.get(), value_, buffer_.bytes(), stream));
  }
  size_t bytes() const { return buffer_.bytes(); }
  size_t l2_bytes() const { return l2_bytes_; }

 private:
  DeviceBuffer<uint8_t> buffer_;
  size_t l2_bytes_ = 0;
  int value_ = 0;
};

// A start/stop pair of CUDA events. This object owns two events that must be destroyed once.
class EventTimer {
 public:
  EventTimer() {
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    CUDA_CHECK_NOTHROW(cudaEventDestroy(start_));
    CUDA_CHECK_NOTHROW(cudaEventDestroy(stop_));
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void Start(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(start_, s)); }
  void Stop(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(stop_, s)); }
  // Waits for the stop event; [µs] between the two events.
  double ElapsedUs() {
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return 1000.0 * static_cast<double>(ms);
  }

 private:
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
};

enum class L2Mode { kCold, kWarm };

struct TimingOptions {
  int reps = 200;    // [samples] kept, when `stopping` is unset
  int warmup = 10;   // [samples] run and dropped first
  L2Mode l2 = L2Mode::kCold;
  // NVBench-style stopping (sim/exec/sample_stopping.h) instead of exactly `reps` samples.
  std::optional<StoppingCriterion> stopping;

  StoppingCriterion Criterion() const { return stopping ? *stopping : StoppingCriterion::Fixed(reps); }
};

// How a row's sampling ended: why, and the relative standard error of its mean [fraction].
struct SamplingOutcome {
  StopReason reason = StopReason::kNotStopped;
  double noise = 0.0;
};

// Times `call` (which enqueues one call's work on the stream it is given) once per sample,
// until opt.Criterion() stops it; `outcome` (optional) says why it stopped. `wait_for_flush`:
// false for graph replays, true for eager sequences (see the file comment).
inline std::vector<double> TimeSamples(const std::function<void(cudaStream_t)>& call, cudaStream_t stream,
                                       L2Flusher& flusher, const TimingOptions& opt, bool wait_for_flush,
                                       SamplingOutcome* outcome = nullptr) {
  EventTimer timer;
  const auto sample = [&] {
    if (opt.l2 == L2Mode::kCold) flusher.Flush(stream);
    if (wait_for_flush) CUDA_CHECK(cudaStreamSynchronize(stream));
    timer.Start(stream);
    call(stream);
    timer.Stop(stream);
    return timer.ElapsedUs();
  };
  for (int i = 0; i < opt.warmup; ++i) sample();
  SampleStopping stopping(opt.Criterion());
  // A failing CUDA call throws (CUDA_CHECK), so the loop itself never returns an error.
  absl::StatusOr<std::vector<double>> samples = SampleUntilStopped(
      opt.Criterion(), [&]() -> absl::StatusOr<double> { return sample(); }, &stopping);
  if (outcome != nullptr) *outcome = {stopping.reason(), stopping.relative_std_error()};
  return *std::move(samples);
}

inline std::vector<double> TimeGraph(const CudaGraph& graph, cudaStream_t stream, L2Flusher& flusher,
                                     const TimingOptions& opt) {
  return TimeSamples([&](cudaStream_t s) { graph.Replay(s); }, stream, flusher, opt, /*wait_for_flush=*/false);
}

inline std::vector<double> TimeEager(const std::function<void(cudaStream_t)>& call, cudaStream_t stream,
                                     L2Flusher& flusher, const TimingOptions& opt) {
  return TimeSamples(call, stream, flusher, opt, /*wait_for_flush=*/true);
}

// The floor of the method: one kernel that does nothing.
struct EmptyKernel {
  static constexpr int kPhases = 1;
  using Shared = NoShared;
  DS_HD void Phase(int, const ThreadCtx&, Shared&) const {}
};

inline void LaunchEmpty(cudaStream_t s) { CUDA_CHECK(LaunchFunctor(EmptyKernel{}, LaunchShape{1, 1}, s)); }

// A graph holding exactly one empty kernel node.
inline void CaptureEmptyGraph(CudaGraph& graph, cudaStream_t s) {
  LaunchEmpty(s);  // loads the module outside the capture
  CUDA_CHECK(cudaStreamSynchronize(s));
  graph.BeginCapture(s);
  LaunchEmpty(s);
  graph.EndCapture(s);
}

struct Floors {
  SampleStats graph;  // one-empty-kernel graph, timed as graphs are
  SampleStats eager;  // one empty kernel launched eagerly, timed as eager sequences are
};

inline Floors MeasureFloors(cudaStream_t stream, L2Flusher& flusher, const TimingOptions& opt) {
  CudaGraph graph;
  CaptureEmptyGraph(graph, stream);
  Floors f;
  f.graph = Summarize(TimeGraph(graph, stream, flusher, opt));
  f.eager = Summarize(TimeEager([](cudaStream_t s) { LaunchEmpty(s); }, stream, flusher, opt));
  return f;
}

// ------------------------------------------------------------------ provenance

struct GpuMeta {
  std::string device_name;
  int device = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t l2_bytes = 0;
  std::string driver_version;    // kernel-module version, e.g. "580.159.03", or "unknown"
  std::string cuda_driver_api;   // cudaDriverGetVersion, e.g. "13.0"
  std::string cuda_runtime;      // cudaRuntimeGetVersion, e.g. "13.0"
  std::string date_utc;          // ISO 8601
};

inline std::string CudaVersionString(int v) { return absl::StrFormat("%d.%d", v / 1000, (v % 1000) / 10); }

// The NVIDIA kernel module's version from /proc (no NVML dependency); "unknown" elsewhere.
inline std::string NvidiaDriverVersion() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line)) return "unknown";
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.03  Thu ..." or
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
  // the first word made of digits and dots (with at least one dot) is the version.
  for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    if (word.find('.') != absl::string_view::npos &&
        word.find_first_not_of("0123456789.") == absl::string_view::npos)
      return std::string(word);
  }
  return "unknown";
}

inline std::string UtcNowIso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline GpuMeta ReadGpuMeta(int device) {
  GpuMeta m;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  m.device = device;
  m.device_name = prop.name;
  m.cc_major = prop.major;
  m.cc_minor = prop.minor;
  m.sm_count = prop.multiProcessorCount;
  m.l2_bytes = static_cast<size_t>(prop.l2CacheSize);
  int drv = 0, rt = 0;
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  m.cuda_driver_api = CudaVersionString(drv);
  m.cuda_runtime = CudaVersionString(rt);
  m.driver_version = NvidiaDriverVersion();
  m.date_utc = UtcNowIso8601();
  return m;
}

}  // namespace dspark::timing
