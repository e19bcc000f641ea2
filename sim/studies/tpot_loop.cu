#include "sim/studies/tpot_loop.cuh"

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/status_macros.h"
#include "sim/exec/cuda_device.h"
#include "sim/exec/gpu_timing.cuh"
#include "sim/observe/metrics.h"
#include "sim/studies/tpot_loop_parts.cuh"

namespace dspark::sim {

namespace {

using namespace tpot_internal;

// One thread spins until %globaltimer (ns, device-wide) has advanced by `duration_ns`.
__global__ void ForwardStandInKernel(unsigned long long duration_ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < duration_ns);
}

}  // namespace

absl::Status LaunchForwardStandIn(double duration_us, cudaStream_t stream) {
  const unsigned long long ns = duration_us > 0 ? static_cast<unsigned long long>(duration_us * 1e3 + 0.5) : 0ull;
  ForwardStandInKernel<<<1, 1, 0, stream>>>(ns);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::StatusOr<double> MeasureForwardStandIn(double duration_us, cudaStream_t stream) {
  try {
    DS_RETURN_IF_ERROR(LaunchForwardStandIn(1.0, stream));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    timing::EventTimer timer;
    timer.Start(stream);
    DS_RETURN_IF_ERROR(LaunchForwardStandIn(duration_us, stream));
    timer.Stop(stream);
    return timer.ElapsedUs();
  } catch (const CudaError& e) {
    return absl::InternalError(absl::StrCat("MeasureForwardStandIn: ", e.what()));
  }
}

struct TpotLoop::State {
  std::array<std::unique_ptr<GpuSuite>, kTpotLoopSuites> suites;
  std::array<std::unique_ptr<DeviceTopB>, kTpotLoopSuites> topb;
  int32_t max_reqs = 0;
};

TpotLoop::TpotLoop(std::unique_ptr<State> state) : d_(std::move(state)) {}
TpotLoop::~TpotLoop() = default;

absl::StatusOr<std::unique_ptr<TpotLoop>> TpotLoop::Create(const GpuSuiteCapacity& capacity, const ModelConsts& consts) {
  DS_RETURN_IF_ERROR(RequireCudaDeviceToMeasure("the TPOT loop"));
  auto st = std::make_unique<State>();
  st->max_reqs = capacity.max_reqs;
  for (int s = 0; s < kTpotLoopSuites; ++s) {
    DS_ASSIGN_OR_RETURN(st->suites[s], GpuSuite::Create(capacity, consts));
    DS_ASSIGN_OR_RETURN(st->topb[s], DeviceTopB::Create(capacity.max_reqs));
  }
  return std::unique_ptr<TpotLoop>(new TpotLoop(std::move(st)));
}

namespace {

// The inputs an engine stages for `plan`: the host's boundaries where the device allocation will
// rewrite them.
BatchInputs StagedInputs(const StepPlan& plan, const StepArrays& a) {
  BatchInputs in = ToBatchInputs(plan, a);
  if (a.topb.present) in.device.query_start_loc = a.qsl_host.data();
  return in;
}

}  // namespace

absl::StatusOr<TpotLoopResult> TpotLoop::Run(const TpotLoopOptions& opt, const std::vector<RequestSpec>& workload) {
  State& st = *d_;
  if (workload.empty()) return absl::InvalidArgumentError("TpotLoop: empty workload");
  if (opt.concurrency < 0)
    return absl::InvalidArgumentError(absl::StrFormat("TpotLoop: concurrency=%d must be >= 0", opt.concurrency));
  const bool spec = opt.scheduler.mode != SpecMode::kNone;
  const TimeModel time_model(opt.time_params);
  const AcceptanceModel acceptance(opt.acceptance, opt.scheduler.spec_k);
  const Impl impl = opt.impl;
  const std::string impl_name(ImplName(impl));
  const auto fail = [&](int64_t step, absl::string_view what, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrFormat("TPOT loop (%s, mode %s), step %d: %s: %s", impl_name,
                                                  SpecModeName(opt.scheduler.mode), step, what, s.message()));
  };

  // ---- Warm-up: the same schedule, no forward work; every graph captured on every suite.
  if (opt.warm_up) {
    Scheduler sched(opt.scheduler, workload, acceptance, time_model, opt.seed);
    EventLog log;
    sched.set_events(&log);
    ClientSlots client(opt.concurrency, workload.size());
    client.SubmitAvailable([&](int32_t req) { sched.Submit(req); });
    std::array<std::set<int>, kTpotLoopSuites> eager_cases;
    std::array<bool, kTpotLoopSuites> topb_loaded{};
    for (int s = 0; s < kTpotLoopSuites; ++s) {
      DS_RETURN_IF_ERROR(LaunchForwardStandIn(1.0, st.suites[s]->stream()));
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st.suites[s]->stream()));
    }
    for (int64_t step = 0; sched.HasWork() || client.more(); ++step) {
      if (!sched.HasWork()) {
        client.SubmitAvailable([&](int32_t req) { sched.Submit(req); });
        if (!sched.HasWork()) return absl::InternalError("TPOT loop warm-up: requests left but no free client slot");
      }
      StepPlan plan;
      plan.index = step;
      if (absl::Status s = sched.Plan(0.0, &plan); !s.ok()) return fail(step, "warm-up Scheduler::Plan", s);
      auto arrays = plan.Arrays();
      if (!arrays.ok()) return fail(step, "warm-up step arrays", arrays.status());
      const BatchInputs in = StagedInputs(plan, **arrays);
      const bool graph = ExecutorReplaysGraph(impl, in);  // vllm-0.34: vLLM's recorded graphs
      for (int s = 0; s < kTpotLoopSuites; ++s) {
        GpuSuite& suite = *st.suites[s];
        if (absl::Status r = suite.Stage(in); !r.ok()) return fail(step, "warm-up GpuSuite::Stage", r);
        if ((*arrays)->topb.present && !topb_loaded[s]) {
          if (absl::Status r = st.topb[s]->Launch((*arrays)->topb, plan.num_reqs, suite.device_query_start_loc(),
                                                 suite.stream());
              !r.ok())
            return fail(step, "warm-up DeviceTopB::Launch", r);
          topb_loaded[s] = true;
        }
        if (graph) {
          if (!suite.Graph(impl).ok())
            if (absl::Status r = suite.Capture(impl); !r.ok()) return fail(step, "warm-up capture", r);
        } else if (eager_cases[s].insert(static_cast<int>(plan.step_case)).second) {
          if (absl::Status r = suite.Run(impl); !r.ok()) return fail(step, "warm-up eager run", r);
        }
        if (absl::Status r = suite.Synchronize(); !r.ok()) return fail(step, "warm-up sync", r);
      }
      log.finished_now.clear();
      sched.Commit(0.0);
      client.Free(log.finished_now.size());
      client.SubmitAvailable([&](int32_t req) { sched.Submit(req); });
    }
  }

  // ---- The timed loop.
  Scheduler sched(opt.scheduler, workload, acceptance, time_model, opt.seed);
  EventLog log;
  sched.set_events(&log);
  StepClock clock;
  DS_ASSIGN_OR_RETURN(const Clock::time_point t0, clock.Start(st.suites[0]->stream()));
  const auto now_s = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  ClientSlots client(opt.concurrency, workload.size());
  const auto submit_at = [&](double t) {
    client.SubmitAvailable([&](int32_t req) {
      sched.Submit(req);
      log.Arrival(req, t);
    });
  };
  submit_at(0.0);

  TpotLoopResult res;
  std::vector<StepPlan> plans;  // summary fields, for the metrics' per-step series
  std::vector<double> step_start_s;
  double host_us_sum = 0, forward_us_sum = 0;
  int64_t launches = 0;
  cudaEvent_t prev_done = nullptr;
  int64_t step = 0, last_draft_step = -1;
  std::deque<int64_t> target_steps;  // the last inflight_steps target steps
  const EngineCostParams& engine = opt.time_params.engine;
  for (; sched.HasWork() || client.more(); ++step) {
    if (!sched.HasWork()) {
      submit_at(now_s());
      if (!sched.HasWork()) return absl::InternalError("TPOT loop: requests left but no free client slot");
    }
    const Clock::time_point t_plan = Clock::now();
    StepPlan plan;
    plan.index = step;
    log.now_s = now_s();
    if (absl::Status s = sched.Plan(log.now_s, &plan); !s.ok()) return fail(step, "Scheduler::Plan", s);
    // Async scheduling: at most inflight_steps engine steps queued, gated on the target step
    // of the engine step that many back; a draft step joins its target's engine step
    // (sim/model/engine_clock.h, step 1).
    const bool joins = spec && plan.draft_step;
    if (opt.model_host && !joins && static_cast<int32_t>(target_steps.size()) >= engine.inflight_steps)
      if (absl::Status r = clock.WaitFor(target_steps[target_steps.size() - engine.inflight_steps]); !r.ok())
        return fail(step, "inflight wait", r);
    if (!joins) {
      target_steps.push_back(step);
      if (static_cast<int32_t>(target_steps.size()) > engine.inflight_steps) target_steps.pop_front();
    }
    const Clock::time_point t_step = std::max(t_plan, Clock::now());
    auto arrays = plan.Arrays();
    if (!arrays.ok()) return fail(step, "step arrays", arrays.status());
    const StepArrays& a = **arrays;
    const BatchInputs in = StagedInputs(plan, a);
    // The CPU time model's terms of this step, charged for real here (engine_clock.h).
    const StepWork work = time_model.Work(plan, impl, spec);
    if (opt.model_host) SpinUntil(After(t_step, work.host_pre_us));
    const Clock::time_point t_builders = Clock::now();

    const int s = static_cast<int>(step % kTpotLoopSuites);
    GpuSuite& suite = *st.suites[s];
    cudaStream_t stream = suite.stream();
    if (absl::Status r = suite.Stage(in); !r.ok()) return fail(step, "GpuSuite::Stage", r);
    if (prev_done != nullptr) CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, prev_done, 0));
    if (a.topb.present) {
      if (absl::Status r = st.topb[s]->Launch(a.topb, plan.num_reqs, suite.device_query_start_loc(), stream);
          !r.ok())
        return fail(step, "DeviceTopB::Launch", r);
      ++res.topb_launches;
    }
    const bool graph = ExecutorReplaysGraph(impl, in);  // vllm-0.34: vLLM's recorded graphs
    if (graph) {
      if (!suite.Graph(impl).ok()) {
        ++res.late_captures;
        if (absl::Status r = suite.Capture(impl); !r.ok()) return fail(step, "capture", r);
      }
      if (absl::Status r = suite.Replay(impl); !r.ok()) return fail(step, "graph replay", r);
      ++res.graph_replays;
    } else {
      if (absl::Status r = suite.Run(impl); !r.ok()) return fail(step, "eager suite", r);
      ++res.eager_runs;
      if (ReadsHostBoundaries(impl)) ++res.staging_syncs;
    }
    const OpCounters& c = suite.last_counters(impl);
    res.impl_host_syncs += c.host_syncs;
    launches += c.Launches();
    const int32_t eager = work.launches + work.extra_launches;
    // The launch gaps of those eager kernels follow the metadata on the GPU, while the host
    // dispatches them (the engine clock's per-launch GPU share): hidden behind a host-bound
    // step's dispatch, serial in a GPU-bound one.
    const double gaps_us = opt.model_host ? eager * engine.gpu_gap_us_per_launch : 0.0;
    if (gaps_us > 0)
      if (absl::Status r = LaunchForwardStandIn(gaps_us, stream); !r.ok()) return fail(step, "launch gaps", r);
    // A Python engine dispatches each eager launch of the builders (and of compact_batch) at
    // dispatch_us_per_launch: the host is busy until then, whatever the C++ launches took.
    if (opt.model_host) SpinUntil(After(t_builders, eager * engine.dispatch_us_per_launch + engine.graph_launch_us));
    const double forward_us = work.forward_us;
    if (absl::Status r = LaunchForwardStandIn(forward_us, stream); !r.ok()) return fail(step, "forward stand-in", r);
    auto done = clock.Record(step, stream);
    if (!done.ok()) return fail(step, "step event", done.status());
    prev_done = *done;
    if (opt.model_host && work.stage_sync) {
      // stage_confidences: event.synchronize() on the copy the previous draft step queued.
      if (last_draft_step >= 0)
        if (absl::Status r = clock.WaitFor(last_draft_step); !r.ok()) return fail(step, "stage_confidences sync", r);
      ++res.stage_syncs;
      SpinUntil(After(Clock::now(), engine.sync_us + engine.stage_launches * engine.dispatch_us_per_launch));
      last_draft_step = step;
    }
    forward_us_sum += forward_us + gaps_us;
    const double host_us = std::chrono::duration<double, std::micro>(Clock::now() - t_step).count();
    host_us_sum += host_us;
    plan.gpu_us = forward_us;
    plan.host_us = host_us;
    step_start_s.push_back(std::chrono::duration<double>(t_step - t0).count());
    plans.push_back(plan);

    log.current_step = step;
    log.finished_now.clear();
    sched.Commit(now_s());
    if (absl::Status r = clock.Poll(); !r.ok()) return fail(step, "step clock", r);
    if (!log.finished_now.empty()) {
      client.Free(log.finished_now.size());
      if (client.more()) {
        // The client learns of the completion only when the step's outputs exist.
        if (absl::Status r = clock.WaitFor(step); !r.ok()) return fail(step, "client wait", r);
        ++res.client_syncs;
        submit_at(now_s());
      }
    }
  }
  if (absl::Status r = clock.Drain(); !r.ok()) return fail(step, "final wait", r);

  // ---- Metrics from the real times.
  MetricsObserver metrics(workload);
  for (size_t i = 0; i < plans.size(); ++i) {
    plans[i].start_s = step_start_s[i];
    plans[i].end_s = clock.time_s(static_cast<int64_t>(i));
    DS_RETURN_IF_ERROR(metrics.OnStep(plans[i]));
  }
  for (const EventLog::Event& e : log.events) {
    switch (e.kind) {
      case EventLog::Kind::kArrival: metrics.OnArrival(e.req, e.time_s); break;
      case EventLog::Kind::kTokens: metrics.OnTokens(e.req, clock.time_s(e.step), e.a); break;
      case EventLog::Kind::kVerification: metrics.OnVerification(e.req, e.a, e.b, e.c); break;
      case EventLog::Kind::kFinished: metrics.OnFinished(e.req, clock.time_s(e.step)); break;
      case EventLog::Kind::kPreempted: metrics.OnPreempted(e.req, e.time_s); break;
    }
  }
  DS_RETURN_IF_ERROR(metrics.Finish(&res.metrics));
  res.metrics.update(ServingResultJson(metrics.serving_result()));  // vLLM's keys (sim/observe/serving_result.h)
  const nlohmann::json& m = res.metrics;
  res.ttft_ms_mean = m["mean_ttft_ms"].get<double>();
  res.tpot_ms_mean = m["mean_tpot_ms"].get<double>();
  res.tpot_ms_median = m["median_tpot_ms"].get<double>();
  res.itl_ms_mean = m["mean_itl_ms"].get<double>();
  res.e2el_ms_mean = m["mean_e2el_ms"].get<double>();
  res.output_tok_s = m["output_throughput"].get<double>();
  res.duration_s = m["duration"].get<double>();
  res.completed = m["completed"].get<int64_t>();
  res.output_tokens = m["total_output_tokens"].get<int64_t>();
  res.mean_acceptance_length = metrics.mean_acceptance_length();
  res.steps = step;
  res.host_us_per_step = step ? host_us_sum / static_cast<double>(step) : 0.0;
  res.forward_us_per_step = step ? forward_us_sum / static_cast<double>(step) : 0.0;
  res.launches_per_step = step ? static_cast<double>(launches) / static_cast<double>(step) : 0.0;
  if (res.completed != static_cast<int64_t>(workload.size()))
    return absl::InternalError(absl::StrFormat("TPOT loop (%s): %d of %d requests completed", impl_name,
                                               res.completed, workload.size()));
  return res;
}

}  // namespace dspark::sim