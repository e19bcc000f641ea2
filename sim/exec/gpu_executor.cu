#include "sim/exec/gpu_executor.cuh"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "kernels/topb_alloc.cuh"
#include "sim/engine/step_executor.h"
#include "sim/exec/cuda_device.h"
#include "sim/exec/executor_registry.h"
#include "sim/exec/gpu_timing.cuh"
#include "sim/model/time_model.h"
#include "sim/results/result_files.h"

namespace dspark::sim {

namespace {

constexpr int32_t kKeptPoison = -99;

size_t AlignUp(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

double MicrosSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

const char* const kKindKeys[3] = {"stale_host", "padding_residue", "bug"};

}  // namespace

// ---------------------------------------------------------------- DeviceTopB

namespace {

// Offsets [bytes] of DeviceTopB's one block (device and pinned alike): scores float [max_reqs, K_max] |
// max_drafts [max_reqs] | tail_offsets [max_reqs + 1] | kept [max_reqs], each start 256-aligned.
struct TopBLayout {
  size_t scores = 0, max_drafts = 0, tail = 0, kept = 0, bytes = 0;
};

TopBLayout MakeTopBLayout(int32_t max_reqs) {
  const size_t reqs = static_cast<size_t>(std::max(max_reqs, 0));
  TopBLayout l;
  l.scores = 0;
  l.max_drafts = AlignUp(l.scores + sizeof(float) * reqs * kTopBMaxK);
  l.tail = AlignUp(l.max_drafts + 4 * reqs);
  l.kept = AlignUp(l.tail + 4 * (reqs + 1));
  l.bytes = l.kept + 4 * reqs;
  return l;
}

}  // namespace

size_t DeviceTopB::Bytes(int32_t max_reqs) { return MakeTopBLayout(max_reqs).bytes; }

absl::StatusOr<std::unique_ptr<DeviceTopB>> DeviceTopB::Create(int32_t max_reqs) {
  if (max_reqs < 1) return absl::InvalidArgumentError(absl::StrFormat("DeviceTopB: max_reqs=%d must be >= 1", max_reqs));
  std::unique_ptr<DeviceTopB> t(new DeviceTopB());
  t->max_reqs_ = max_reqs;
  const TopBLayout l = MakeTopBLayout(max_reqs);
  t->scores_off_ = l.scores;
  t->max_drafts_off_ = l.max_drafts;
  t->tail_off_ = l.tail;
  t->kept_off_ = l.kept;
  t->bytes_ = l.bytes;
  try {
    t->device_ = DeviceBuffer<uint8_t>(t->bytes_);
    t->pinned_ = PinnedBuffer<uint8_t>(t->bytes_);
  } catch (const CudaError& e) {
    return absl::ResourceExhaustedError(absl::StrCat("DeviceTopB::Create: ", e.what()));
  }
  return t;
}

absl::Status DeviceTopB::Launch(const TopBInputs& in, int32_t num_reqs, int32_t* qsl, cudaStream_t stream) {
  if (!in.present) return absl::FailedPreconditionError("DeviceTopB::Launch: the step has no top-B inputs");
  const int32_t nd = in.num_decodes;
  if (nd > max_reqs_ || num_reqs > max_reqs_ || num_reqs < nd)
    return absl::OutOfRangeError(absl::StrFormat(
        "DeviceTopB::Launch: num_decodes=%d, num_reqs=%d must satisfy num_decodes <= num_reqs <= max_reqs=%d", nd,
        num_reqs, max_reqs_));
  const size_t slots = static_cast<size_t>(nd) * static_cast<size_t>(in.max_k);
  if (in.scores.size() != slots || in.max_drafts.size() != static_cast<size_t>(nd) ||
      in.tail_offsets.size() != static_cast<size_t>(num_reqs - nd))
    return absl::InvalidArgumentError(absl::StrFormat(
        "DeviceTopB::Launch: scores has %d entries (expected num_decodes * max_k = %d), max_drafts %d (expected %d), "
        "tail_offsets %d (expected num_reqs - num_decodes = %d)",
        in.scores.size(), slots, in.max_drafts.size(), nd, in.tail_offsets.size(), num_reqs - nd));
  uint8_t* h = pinned_.get();
  uint8_t* d = device_.get();
  TopBAllocParams p{};
  p.scores = reinterpret_cast<const float*>(d + scores_off_);
  p.max_drafts = reinterpret_cast<const int32_t*>(d + max_drafts_off_);
  p.tail_offsets = num_reqs > nd ? reinterpret_cast<const int32_t*>(d + tail_off_) : nullptr;
  p.query_start_loc = qsl;
  p.kept = reinterpret_cast<int32_t*>(d + kept_off_);
  p.num_decodes = nd;
  p.num_reqs = num_reqs;
  p.max_k = in.max_k;
  p.budget = in.budget;
  p.base_tokens = in.base_tokens;
  DS_RETURN_IF_ERROR(CanImplementTopBAlloc(p));
  if (slots) std::memcpy(h + scores_off_, in.scores.data(), sizeof(float) * slots);
  if (nd) std::memcpy(h + max_drafts_off_, in.max_drafts.data(), 4 * static_cast<size_t>(nd));
  if (num_reqs > nd) std::memcpy(h + tail_off_, in.tail_offsets.data(), 4 * in.tail_offsets.size());
  // The kept counts are poisoned in the same copy, so a kernel that did not run shows up.
  std::fill_n(reinterpret_cast<int32_t*>(h + kept_off_), nd, kKeptPoison);
  const size_t bytes = kept_off_ + 4 * static_cast<size_t>(nd);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream));
  CUDA_RETURN_IF_ERROR(LaunchTopBAlloc(p, stream));
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  ++launches_;
  return absl::OkStatus();
}

absl::Status DeviceTopB::Verify(const TopBInputs& in, const std::vector<int32_t>& expected_qsl, const int32_t* qsl,
                                cudaStream_t stream, int64_t step) const {
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  std::vector<int32_t> got(expected_qsl.size()), kept(static_cast<size_t>(in.num_decodes));
  CUDA_RETURN_IF_ERROR(cudaMemcpy(got.data(), qsl, 4 * got.size(), cudaMemcpyDeviceToHost));
  if (!kept.empty())
    CUDA_RETURN_IF_ERROR(
        cudaMemcpy(kept.data(), device_.get() + kept_off_, 4 * kept.size(), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != expected_qsl[i])
      return absl::InternalError(absl::StrFormat(
          "step %d: topb_alloc on the device wrote query_start_loc[%d] = %d, the plan's device view has %d "
          "(num_decodes=%d, budget B=%d, K=%d): device qsl [%s], plan [%s]",
          step, i, got[i], expected_qsl[i], in.num_decodes, in.budget, in.max_k, absl::StrJoin(got, ","),
          absl::StrJoin(expected_qsl, ",")));
  for (int32_t r = 0; r < in.num_decodes; ++r) {
    const int32_t want = expected_qsl[r + 1] - expected_qsl[r] - in.base_tokens;
    if (kept[r] != want)
      return absl::InternalError(absl::StrFormat(
          "step %d: topb_alloc on the device wrote kept[%d] = %d, the plan keeps %d drafts there%s", step, r,
          kept[r], want, kept[r] == kKeptPoison ? " (the kernel did not write it)" : ""));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------- capacity

GpuSuiteCapacity CapacityFor(const SchedulerConfig& c) {
  const int32_t k = c.mode == SpecMode::kNone ? 0 : c.spec_k;
  const std::vector<int32_t> sizes = GraphCaptureSizes(c.max_num_seqs, c.max_num_batched_tokens, k);
  const int32_t max_capture = sizes.empty() ? 0 : sizes.back();
  GpuSuiteCapacity cap;
  cap.max_tokens = std::max(c.max_num_batched_tokens, max_capture);
  cap.max_reqs = std::max(c.max_num_seqs, max_capture);
  // In 64 bits, saturated at the int32 maximum: no device holds such a block table, and the
  // executor's memory pre-flight says so instead of a wrapped stride allocating too little.
  const int64_t stride = (int64_t{c.max_model_len} + c.block_size - 1) / c.block_size + c.bt_stride_pad;
  cap.max_bt_stride = static_cast<int32_t>(std::min<int64_t>(stride, std::numeric_limits<int32_t>::max()));
  return cap;
}

// ---------------------------------------------------------------- GpuExecutor

namespace {

struct StepRow {
  int64_t step = 0;
  StepCase step_case = StepCase::kPrefill;
  Impl impl = Impl::kFused;
  bool graph = false;
  int32_t num_reqs = 0, num_tokens = 0;
  double gpu_us = -1, host_us = 0;  // gpu_us -1: not timed
  OpCounters counters;
  bool staging_sync = false;
  std::array<int64_t, 3> cells{};
};

// One step's effects on the executor's counts and series, applied only once the whole step has
// succeeded: a step that fails leaves the results of the steps before it exactly as they were.
struct StepDelta {
  std::map<Impl, ExecutorImplStats> stats;
  std::vector<StepRow> rows;
  std::vector<std::pair<Impl, std::string>> keys;  // graph keys replayed
  double stage_us = 0;
  int64_t topb_launches = 0, topb_stale_steps = 0;
};

template <class T>
void AppendAll(std::vector<T>& into, const std::vector<T>& from) {
  into.insert(into.end(), from.begin(), from.end());
}

void Accumulate(ExecutorImplStats& into, const ExecutorImplStats& d) {
  into.steps += d.steps;
  into.graph_replays += d.graph_replays;
  into.eager_runs += d.eager_runs;
  into.captures += d.captures;
  into.graph_nodes += d.graph_nodes;
  into.counters += d.counters;
  into.staging_syncs += d.staging_syncs;
  AppendAll(into.gpu_us, d.gpu_us);
  AppendAll(into.host_us, d.host_us);
  for (int c = 0; c < kNumStepCases; ++c) {
    AppendAll(into.gpu_us_by_case[c], d.gpu_us_by_case[c]);
    into.steps_by_case[c] += d.steps_by_case[c];
    into.launches_by_case[c] += d.launches_by_case[c];
    for (int k = 0; k < 3; ++k) into.mismatch_steps_by_case[c][k] += d.mismatch_steps_by_case[c][k];
  }
  for (int k = 0; k < 3; ++k) {
    into.mismatch_steps[k] += d.mismatch_steps[k];
    into.mismatch_cells[k] += d.mismatch_cells[k];
  }
  for (const auto& [field, cells] : d.cells_by_field)
    for (int k = 0; k < 3; ++k) into.cells_by_field[field][k] += cells[k];
  if (into.first_stale_host.empty()) into.first_stale_host = d.first_stale_host;
}

// A real failing CUDA call through the checked path: a device-to-device copy into a null
// destination, which the runtime refuses when it is issued (cudaErrorInvalidValue, not sticky:
// the context stays usable). The runtime's last error is cleared after it.
absl::Status InjectCudaFault(const int32_t* src, cudaStream_t stream) {
  const absl::Status s = [&]() -> absl::Status {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(nullptr, src, sizeof(int32_t), cudaMemcpyDeviceToDevice, stream));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    return absl::InternalError("cudaMemcpyAsync into a null destination unexpectedly succeeded");
  }();
  (void)cudaGetLastError();
  return s;
}

}  // namespace

struct GpuExecutor::State {
  GpuExecutorOptions options;
  GpuMemoryPlan plan;          // what Create checked against the free device memory
  nlohmann::json device_meta;  // GpuMetaJson, read at Create: writing results needs no device
  std::unique_ptr<GpuSuite> suite;
  std::unique_ptr<DeviceTopB> topb;
  std::unique_ptr<timing::L2Flusher> flusher;
  std::unique_ptr<timing::EventTimer> timer;
  std::map<Impl, ExecutorImplStats> stats;
  std::map<Impl, std::set<std::string>> keys;  // graph keys replayed so far
  std::map<std::string, int64_t> nodes_by_key;  // "<impl>|<key>" -> graph node count
  std::vector<StepRow> rows;
  int64_t steps = 0;
  int64_t topb_launches = 0;
  int64_t topb_stale_steps = 0;
  double stage_us = 0;

  absl::Status RunStep(const StepPlan& plan, StepDelta& delta);
  void Commit(StepDelta& delta);
};

GpuExecutor::GpuExecutor(std::unique_ptr<State> state) : d_(std::move(state)) {}
GpuExecutor::~GpuExecutor() = default;

absl::StatusOr<GpuMemoryPlan> PlanGpuExecutorMemory(const GpuExecutorOptions& options, size_t l2_bytes) {
  const int impls = static_cast<int>(std::set<Impl>(options.impls.begin(), options.impls.end()).size());
  DS_ASSIGN_OR_RETURN(GpuMemoryPlan plan, PlanGpuSuiteMemory(options.capacity, options.consts, impls));
  const size_t topb = DeviceTopB::Bytes(options.capacity.max_reqs);
  plan.AddDevice("top-B allocation inputs", topb);
  plan.AddPinned("top-B staging", topb);
  if (options.time_steps && options.cold_l2)
    plan.AddDevice("L2 flush buffer", timing::FlushBytes(l2_bytes, timing::kMinFlushBytes));
  return plan;
}

absl::StatusOr<std::unique_ptr<GpuExecutor>> GpuExecutor::Create(const GpuExecutorOptions& options) {
  if (options.impls.empty()) return absl::InvalidArgumentError("GpuExecutor: no implementation selected");
  DS_RETURN_IF_ERROR(RequireCudaDevice(kGpuExecutorNeedsDevice));
  auto st = std::make_unique<State>();
  st->options = options;
  if (options.device >= 0) CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  else CUDA_RETURN_IF_ERROR(cudaGetDevice(&st->options.device));
  const int device = st->options.device;

  // The pre-flight: the whole plan must fit before anything is allocated or any step runs.
  int l2_bytes = 0;
  CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  DS_ASSIGN_OR_RETURN(st->plan, PlanGpuExecutorMemory(options, static_cast<size_t>(l2_bytes)));
  const int impls = static_cast<int>(std::set<Impl>(options.impls.begin(), options.impls.end()).size());
  DS_RETURN_IF_ERROR(CheckFreeDeviceMemory(
      st->plan,
      absl::StrFormat("GPU executor: max_tokens=%d, max_reqs=%d, max_bt_stride=%d with %d implementation%s",
                      options.capacity.max_tokens, options.capacity.max_reqs, options.capacity.max_bt_stride, impls,
                      impls == 1 ? "" : "s"),
      "lower --max-num-batched-tokens, --max-num-seqs or --max-model-len, or check fewer --impl"));

  try {
    st->device_meta = GpuMetaJson(device);
  } catch (const CudaError& e) {
    return absl::InternalError(absl::StrCat("GpuExecutor::Create: reading the device: ", e.what()));
  }
  DS_ASSIGN_OR_RETURN(st->suite, GpuSuite::Create(options.capacity, options.consts, impls));
  DS_ASSIGN_OR_RETURN(st->topb, DeviceTopB::Create(options.capacity.max_reqs));
  try {
    if (options.time_steps) {
      st->timer = std::make_unique<timing::EventTimer>();
      if (options.cold_l2) st->flusher = std::make_unique<timing::L2Flusher>(device);
    }
  } catch (const CudaError& e) {
    return absl::ResourceExhaustedError(absl::StrCat("GpuExecutor::Create: ", e.what()));
  }
  for (Impl impl : options.impls) st->stats[impl] = ExecutorImplStats{};
  return std::unique_ptr<GpuExecutor>(new GpuExecutor(std::move(st)));
}

namespace {

// What a captured graph of `impl` freezes (mirrors the GpuSuite's key): the sizes and the FP8
// flag, and for device-chain the host totals its op sizes come from.
std::string GraphKeyString(Impl impl, const BatchInputs& in) {
  const BatchSizes& z = in.sizes;
  std::string key = absl::StrFormat("R=%d N=%d nd=%d Nd=%d C=%d W=%d S=%d fp8=%d causal=%d", z.num_reqs,
                                    z.num_tokens, z.num_decodes, z.num_decode_tokens, z.capacity, z.bt_width,
                                    z.bt_stride, in.fp8_prefill ? 1 : 0, in.causal ? 1 : 0);
  if (impl == Impl::kDeviceChain && in.host.query_start_loc != nullptr)
    absl::StrAppendFormat(&key, " M_host=%d A_host=%d", in.host.query_start_loc[z.num_reqs],
                          in.host.query_start_loc[z.num_decodes]);
  return key;
}

}  // namespace

absl::Status GpuExecutor::Execute(const StepPlan& plan) {
  State& st = *d_;
  StepDelta delta;
  absl::Status s;
  try {
    s = st.RunStep(plan, delta);
  } catch (const CudaError& e) {
    s = absl::InternalError(e.what());
  }
  // Every failure names the step at this boundary; the steps before it stay committed.
  if (!s.ok())
    return absl::Status(s.code(), absl::StrFormat("gpu executor, step %d (%s, R=%d, N=%d): %s", plan.index,
                                                  std::string(StepCaseName(plan.step_case)), plan.num_reqs,
                                                  plan.num_tokens, s.message()));
  st.Commit(delta);
  return absl::OkStatus();
}

void GpuExecutor::State::Commit(StepDelta& delta) {
  for (const auto& [impl, s] : delta.stats) Accumulate(stats[impl], s);
  for (auto& [impl, key] : delta.keys) keys[impl].insert(std::move(key));
  for (auto& [impl, k] : keys) stats[impl].distinct_keys = static_cast<int64_t>(k.size());
  rows.insert(rows.end(), delta.rows.begin(), delta.rows.end());
  stage_us += delta.stage_us;
  topb_launches += delta.topb_launches;
  topb_stale_steps += delta.topb_stale_steps;
  ++steps;
}

absl::Status GpuExecutor::State::RunStep(const StepPlan& plan, StepDelta& delta) {
  const std::string case_name(StepCaseName(plan.step_case));
  const auto annotate = [&](const absl::Status& s, absl::string_view what) {
    return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
  };
  auto arrays = plan.Arrays();
  if (!arrays.ok()) return annotate(arrays.status(), "materializing the step");
  const StepArrays& a = **arrays;
  BatchInputs in = ToBatchInputs(plan, a);
  const bool device_alloc = a.topb.present;
  // The engine uploads what the host knows; the allocation kernel turns it into the truth.
  if (device_alloc) in.device.query_start_loc = a.qsl_host.data();

  const auto t_stage = std::chrono::steady_clock::now();
  if (absl::Status s = suite->Stage(in); !s.ok()) return annotate(s, "GpuSuite::Stage");
  delta.stage_us = MicrosSince(t_stage);
  if (device_alloc) {
    int32_t* qsl = suite->device_query_start_loc();
    if (absl::Status s = topb->Launch(a.topb, plan.num_reqs, qsl, suite->stream()); !s.ok())
      return annotate(s, "DeviceTopB::Launch");
    ++delta.topb_launches;
    if (absl::Status s = topb->Verify(a.topb, a.qsl_device, qsl, suite->stream(), plan.index); !s.ok())
      return annotate(s, "device top-B allocation");
    if (a.qsl_host != a.qsl_device) ++delta.topb_stale_steps;
  }
  if (options.fault_at_step >= 0 && plan.index == options.fault_at_step)
    return annotate(InjectCudaFault(suite->device_query_start_loc(), suite->stream()),
                    absl::StrFormat("injected fault (testing aid %s=%d)", kGpuFaultAtStepEnv, options.fault_at_step));

  std::map<Impl, size_t> row_of;
  for (Impl impl : options.impls) {
    ExecutorImplStats& s = delta.stats[impl];
    const std::string impl_name(ImplName(impl));
    const bool graph = GraphCapturable(impl) && plan.graph_padded;
    StepRow row;
    row.step = plan.index;
    row.step_case = plan.step_case;
    row.impl = impl;
    row.graph = graph;
    row.num_reqs = plan.num_reqs;
    row.num_tokens = plan.num_tokens;
    std::string key;
    if (graph) {
      key = GraphKeyString(impl, in);
      if (!suite->Graph(impl).ok()) {
        if (absl::Status c = suite->Capture(impl); !c.ok()) return annotate(c, absl::StrCat(impl_name, ": capture"));
        ++s.captures;
        auto nodes = suite->GraphNodes(impl);
        if (!nodes.ok()) return annotate(nodes.status(), absl::StrCat(impl_name, ": graph nodes"));
        nodes_by_key[absl::StrCat(impl_name, "|", key)] = static_cast<int64_t>(nodes->total);
        // The first launch of a new executable graph uploads it; keep that out of the timing.
        if (absl::Status r = suite->Replay(impl); !r.ok()) return annotate(r, absl::StrCat(impl_name, ": replay"));
        CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(suite->stream()));
      }
      delta.keys.emplace_back(impl, key);
    }
    cudaStream_t stream = suite->stream();
    if (options.time_steps) {
      if (flusher) flusher->Flush(stream);
      if (!graph) CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
      timer->Start(stream);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const absl::Status run = graph ? suite->Replay(impl) : suite->Run(impl);
    const double host_us = MicrosSince(t0);
    if (!run.ok()) return annotate(run, absl::StrCat(impl_name, graph ? ": replay" : ": eager run"));
    if (options.time_steps) {
      timer->Stop(stream);
      const double gpu_us = timer->ElapsedUs();
      s.gpu_us.push_back(gpu_us);
      s.gpu_us_by_case[static_cast<int>(plan.step_case)].push_back(gpu_us);
      row.gpu_us = gpu_us;
    }
    s.host_us.push_back(host_us);
    row.host_us = host_us;
    const OpCounters& c = suite->last_counters(impl);
    row.counters = c;
    row.staging_sync = !graph && ReadsHostBoundaries(impl);
    row_of[impl] = delta.rows.size();
    delta.rows.push_back(row);
    s.counters += c;
    ++s.steps;
    ++s.steps_by_case[static_cast<int>(plan.step_case)];
    s.launches_by_case[static_cast<int>(plan.step_case)] += c.Launches();
    if (graph) {
      ++s.graph_replays;
      s.graph_nodes += nodes_by_key[absl::StrCat(impl_name, "|", key)];
    } else {
      ++s.eager_runs;
      if (ReadsHostBoundaries(impl)) ++s.staging_syncs;
    }
  }

  if (options.check) {
    for (Impl impl : options.impls) {
      ExecutorImplStats& s = delta.stats[impl];
      const std::string impl_name(ImplName(impl));
      absl::StatusOr<SuiteRunResult> result = suite->Download(impl);
      if (!result.ok()) return annotate(result.status(), absl::StrCat(impl_name, ": download"));
      std::array<bool, 3> has{};
      for (const FieldMismatch& m : result->mismatches) {
        const int k = static_cast<int>(m.kind);
        if (m.kind == MismatchKind::kBug)
          return absl::InternalError(absl::StrFormat(
              "BUG in impl %s: builder %s, field %s, first differing index %d (expected %d, got %d; %d cells "
              "differ)%s",
              impl_name, m.builder, m.field, m.index, m.expected, m.actual, m.count,
              ReadsHostBoundaries(impl) ? " with a host view equal to the device's" : ""));
        has[k] = true;
        s.mismatch_cells[k] += m.count;
        delta.rows[row_of[impl]].cells[k] += m.count;
        s.cells_by_field[m.builder + "." + m.field][k] += m.count;
        if (m.kind == MismatchKind::kStaleHost && s.first_stale_host.empty())
          s.first_stale_host = absl::StrFormat(
              "step %d (%s): builder %s, field %s, first differing index %d (expected %d, got %d; %d cells)",
              plan.index, case_name, m.builder, m.field, m.index, m.expected, m.actual, m.count);
      }
      for (int k = 0; k < 3; ++k)
        if (has[k]) {
          ++s.mismatch_steps[k];
          ++s.mismatch_steps_by_case[static_cast<int>(plan.step_case)][k];
        }
    }
  }
  return absl::OkStatus();
}

const ExecutorImplStats& GpuExecutor::stats(Impl impl) const { return d_->stats.at(impl); }
int64_t GpuExecutor::steps() const { return d_->steps; }
int64_t GpuExecutor::topb_launches() const { return d_->topb_launches; }
int64_t GpuExecutor::topb_stale_steps() const { return d_->topb_stale_steps; }
double GpuExecutor::stage_host_us() const { return d_->stage_us; }
const GpuMemoryPlan& GpuExecutor::memory_plan() const { return d_->plan; }
uint64_t GpuExecutor::device_bytes() const {
  return d_->suite->device_bytes() + d_->topb->device_bytes() + (d_->flusher ? d_->flusher->bytes() : 0);
}

namespace {

nlohmann::json StatsJson(const std::vector<double>& samples) {
  const timing::SampleStats s = timing::Summarize(samples);
  return {{"median", s.median_us}, {"p10", s.p10_us}, {"p90", s.p90_us},
          {"mean", s.mean_us},     {"max", s.max_us}, {"samples", s.n}};
}

}  // namespace

nlohmann::json GpuExecutor::Summary() const {
  const State& st = *d_;
  nlohmann::json out;
  out["note"] =
      "Every step ran through the kernels on the GPU: graph-capturable implementations as one CUDA graph per padded "
      "size (replayed), unpadded steps and chain / cached eagerly. gpu_us: CUDA events around the suite, L2 " +
      std::string(st.options.cold_l2 ? "flushed before each" : "warm") +
      "; host_us: host time of the Run / Replay call. Outputs compared exactly with the CPU reference from the "
      "device truth: stale_host / padding_residue / bug count differing cells (a bug stops the run).";
  out["device"] = st.device_meta;
  out["l2"] = st.options.cold_l2 ? "cold" : "warm";
  out["steps"] = st.steps;
  out["checked"] = st.options.check;
  out["topb_on_device"] = {{"launches", st.topb_launches},
                           {"host_qsl_stale_steps", st.topb_stale_steps},
                           {"verified", "device qsl and kept counts equal the plan's device view at every launch"}};
  const double steps = st.steps ? static_cast<double>(st.steps) : 1.0;
  // The executor's own staging: one pinned copy of the step's inputs, plus one of the top-B inputs
  // in adaptive verifications; not part of any implementation's counts.
  out["staging"] = {{"h2d_copies_per_step", (static_cast<double>(st.steps) + st.topb_launches) / steps},
                    {"host_us_per_step", st.stage_us / steps}};
  for (Impl impl : st.options.impls) {
    const ExecutorImplStats& s = st.stats.at(impl);
    const auto per_step = [&](int64_t v) { return s.steps ? static_cast<double>(v) / s.steps : 0.0; };
    nlohmann::json j;
    for (int k = 0; k < 3; ++k) j[kKindKeys[k]] = s.mismatch_cells[k];
    for (int k = 0; k < 3; ++k) j["steps_with"][kKindKeys[k]] = s.mismatch_steps[k];
    j["reads_host_boundaries"] = ReadsHostBoundaries(impl);
    j["steps"] = s.steps;
    j["graph_replays"] = s.graph_replays;
    j["eager_runs"] = s.eager_runs;
    j["captures"] = s.captures;
    j["distinct_graph_keys"] = s.distinct_keys;
    j["graph_nodes_per_replay"] = s.graph_replays ? static_cast<double>(s.graph_nodes) / s.graph_replays : 0.0;
    j["launches_per_step"] = per_step(s.counters.Launches());
    j["kernels_per_step"] = per_step(s.counters.kernels);
    j["h2d_copies_per_step"] = per_step(s.counters.h2d_copies);
    j["d2h_copies_per_step"] = per_step(s.counters.d2h_copies);
    j["host_syncs_per_step"] = per_step(s.counters.host_syncs);
    j["staging_syncs_per_step"] = per_step(s.staging_syncs);
    j["host_array_ops_per_step"] = per_step(s.counters.host_array_ops);
    if (!s.gpu_us.empty()) j["gpu_us"] = StatsJson(s.gpu_us);
    j["host_us"] = StatsJson(s.host_us);
    for (const auto& [field, v] : s.cells_by_field)
      for (int k = 0; k < 3; ++k)
        if (v[k]) j["cells_by_field"][kKindKeys[k]][field] = v[k];
    if (!s.first_stale_host.empty()) j["first_stale_host"] = s.first_stale_host;
    for (int c = 0; c < kNumStepCases; ++c) {
      if (!s.steps_by_case[c]) continue;
      nlohmann::json cj;
      cj["steps"] = s.steps_by_case[c];
      cj["launches_per_step"] = static_cast<double>(s.launches_by_case[c]) / s.steps_by_case[c];
      if (!s.gpu_us_by_case[c].empty()) cj["gpu_us"] = StatsJson(s.gpu_us_by_case[c]);
      for (int k = 0; k < 3; ++k) cj[kKindKeys[k]] = s.mismatch_steps_by_case[c][k];
      j["by_case"][std::string(StepCaseName(static_cast<StepCase>(c)))] = std::move(cj);
    }
    out["impls"][std::string(ImplName(impl))] = std::move(j);
  }
  return out;
}

std::string GpuExecutor::StepsCsv() const {
  std::string out =
      "step,case,impl,method,num_reqs,num_tokens,gpu_us,host_us,launches,kernels,h2d_copies,d2h_copies,d2d_copies,"
      "fills,host_syncs,staging_sync,stale_host,padding_residue,bug\n";
  for (const StepRow& r : d_->rows) {
    const OpCounters& c = r.counters;
    absl::StrAppendFormat(&out, "%d,%s,%s,%s,%d,%d,%s,%.3f,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d\n", r.step,
                          std::string(StepCaseName(r.step_case)), std::string(ImplName(r.impl)),
                          r.graph ? "graph" : "eager", r.num_reqs, r.num_tokens,
                          r.gpu_us < 0 ? std::string() : absl::StrFormat("%.3f", r.gpu_us), r.host_us, c.Launches(),
                          c.kernels, c.h2d_copies, c.d2h_copies, c.d2d_copies, c.fills, c.host_syncs,
                          r.staging_sync ? 1 : 0, r.cells[0], r.cells[1], r.cells[2]);
  }
  return out;
}

nlohmann::json GpuMetaJson(int device) {
  const timing::GpuMeta m = timing::ReadGpuMeta(device);
  return {{"gpu", m.device_name},
          {"device", device},
          {"compute_capability", absl::StrFormat("%d.%d", m.cc_major, m.cc_minor)},
          {"sm_count", m.sm_count},
          {"l2_bytes", m.l2_bytes},
          {"driver", m.driver_version},
          {"cuda_driver_api", m.cuda_driver_api},
          {"cuda_runtime", m.cuda_runtime},
          {"date_utc", m.date_utc}};
}

// ---------------------------------------------------------------- `run --executor gpu`

namespace {

// The GPU executor as a stage of the engine; writes the per-step series next to run's other
// files (OUT/gpu_steps.csv).
class GpuStepExecutor final : public StepExecutor {
 public:
  GpuStepExecutor(std::unique_ptr<GpuExecutor> executor, std::string out_dir)
      : executor_(std::move(executor)), out_dir_(std::move(out_dir)) {}
  absl::string_view name() const override { return "gpu_executor"; }
  // The engine built the arrays already; plan.Arrays() hands the same ones back.
  absl::Status Execute(const StepPlan& plan, const StepArrays& /*arrays*/) override {
    return executor_->Execute(plan);
  }
  absl::Status Finish(nlohmann::json* section) override {
    try {
      *section = executor_->Summary();
    } catch (const CudaError& e) {
      return absl::InternalError(absl::StrCat("gpu executor summary: ", e.what()));
    }
    std::error_code ec;
    std::filesystem::create_directories(out_dir_, ec);
    const std::string path = (std::filesystem::path(out_dir_) / "gpu_steps.csv").string();
    if (absl::Status s = WriteFileAtomically(path, executor_->StepsCsv()); !s.ok())
      return absl::Status(s.code(), absl::StrCat("gpu executor: ", s.message()));
    (*section)["steps_csv"] = "gpu_steps.csv";
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<GpuExecutor> executor_;
  std::string out_dir_;
};

// DSPARK_GPU_FAULT_AT_STEP: unset or empty is -1 (no fault).
absl::StatusOr<int64_t> FaultAtStepFromEnv() {
  const char* v = std::getenv(kGpuFaultAtStepEnv);
  if (v == nullptr || *v == '\0') return int64_t{-1};
  int64_t step = -1;
  if (!absl::SimpleAtoi(v, &step) || step < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        kGpuFaultAtStepEnv, "='", v,
        "': expected a step index >= 0 (a testing aid: the GPU executor fails that step with a real CUDA error)"));
  return step;
}

const RegisterExecutor kRegisterGpuExecutor(
    "gpu-executor", kGpuExecutorOrder,
    [](const ExecutorRequest& request) -> absl::StatusOr<std::unique_ptr<StepExecutor>> {
      if (request.device != "gpu") return std::unique_ptr<StepExecutor>();
      if (absl::Status s = RequireCudaDevice(kGpuExecutorNeedsDevice); !s.ok())
        return absl::Status(s.code(), absl::StrCat("--executor gpu: ", s.message()));
      GpuExecutorOptions options;
      options.impls = request.impls;
      options.capacity = CapacityFor(request.scheduler);
      options.cold_l2 = request.gpu_cold_l2;
      DS_ASSIGN_OR_RETURN(options.fault_at_step, FaultAtStepFromEnv());
      DS_ASSIGN_OR_RETURN(std::unique_ptr<GpuExecutor> executor, GpuExecutor::Create(options));
      return std::unique_ptr<StepExecutor>(std::make_unique<GpuStepExecutor>(std::move(executor), request.out_dir));
    });

}  // namespace

}  // namespace dspark::sim
