#include "sim/exec/step_dump.h"

#include <algorithm>
#include <cstdint>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/common/status_macros.h"
#include "kernels/suite/reference_fields.h"
#include "kernels/suite/suite.h"
#include "sim/exec/executor_registry.h"
#include "sim/results/npy.h"
#include "sim/results/result_files.h"

namespace fs = std::filesystem;

namespace dspark::sim {
namespace {

// The host view as if it were the device's: what an implementation that reads host boundaries
// would compute, to classify a difference as stale-host divergence.
BatchInputs HostAsDevice(const BatchInputs& in) {
  BatchInputs h = in;
  h.device.query_start_loc = in.host.query_start_loc;
  h.device.seq_lens = in.host.seq_lens;
  return h;
}

SuiteLayout DumpLayout(const BatchInputs& in, const ModelConsts& consts) {
  return MakeSuiteLayout(in.sizes.capacity, in.sizes.num_reqs, in.sizes.bt_stride, consts);
}

absl::Status WriteFields(const fs::path& dir, const std::string& prefix, const BatchInputs& in,
                         const ModelConsts& consts, int64_t* bytes) {
  const SuiteLayout layout = DumpLayout(in, consts);
  const SuiteReference ref = ComputeSuiteReference(in, layout, consts);
  for (const ReferenceField& f : ReferenceFields(ref, in, layout, consts)) {
    const fs::path path = dir / absl::StrCat(prefix, f.name, ".npy");
    DS_RETURN_IF_ERROR(f.int64_field ? WriteNpy(path, f.shape, f.i64) : WriteNpy(path, f.shape, f.i32));
    *bytes += static_cast<int64_t>(f.int64_field ? 8 * f.i64.size() : 4 * f.i32.size());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> FreeBytes(const fs::path& path) {
  std::error_code ec;
  const fs::space_info info = fs::space(path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("--dump-steps: cannot read the free space of '", path.string(), "': ", ec.message()));
  return static_cast<int64_t>(std::min<uintmax_t>(info.available, INT64_MAX));
}

StepDumpExecutor::StepDumpExecutor(fs::path dir, int64_t limit, nlohmann::json meta, ModelConsts consts,
                                   FreeBytesFn free_bytes, std::ostream* console)
    : dir_(std::move(dir)),
      limit_(limit),
      meta_(std::move(meta)),
      consts_(consts),
      free_bytes_(std::move(free_bytes)),
      console_(console) {}

absl::Status StepDumpExecutor::Execute(const StepPlan& plan, const StepArrays& a) {
  ++seen_;
  if (static_cast<int64_t>(steps_.size()) >= limit_) return absl::OkStatus();
  const std::string rel = absl::StrFormat("steps/%06d", plan.index);
  const fs::path dir = dir_ / rel;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("--dump-steps: cannot create '", dir.string(), "': ", ec.message()));
  // Never fill the disk: the next step may be up to twice the largest so far (one step's inputs
  // and references, and the host-view references of a stale step).
  DS_ASSIGN_OR_RETURN(const int64_t free_bytes, free_bytes_(dir_));
  const int64_t need = kDumpReserveBytes + 2 * largest_step_bytes_;
  if (free_bytes < need)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "--dump-steps '%s': %d steps written (%d bytes of arrays), and only %d MiB are left free on its file "
        "system where the next step needs %d MiB (%d MiB kept free): free space, or lower --dump-steps-limit "
        "(now %d)",
        dir_.string(), steps_.size(), bytes_, free_bytes >> 20, (need >> 20) - (kDumpReserveBytes >> 20),
        kDumpReserveBytes >> 20, limit_));
  const int64_t bytes_before = bytes_;
  const BatchInputs in = ToBatchInputs(plan, a);
  const BatchSizes& z = in.sizes;
  const int64_t R = z.num_reqs, N = z.num_tokens;
  DS_RETURN_IF_ERROR(WriteNpy(dir / "device.query_start_loc.npy", {R + 1}, a.qsl_device));
  DS_RETURN_IF_ERROR(WriteNpy(dir / "device.seq_lens.npy", {R}, a.seq_lens_device));
  DS_RETURN_IF_ERROR(WriteNpy(dir / "device.block_table.npy", {R, z.bt_stride}, a.block_table));
  DS_RETURN_IF_ERROR(WriteNpy(dir / "device.slot_mapping.npy", {N}, a.slot_mapping));
  DS_RETURN_IF_ERROR(WriteNpy(dir / "host.query_start_loc.npy", {R + 1}, a.qsl_host));
  DS_RETURN_IF_ERROR(WriteNpy(dir / "host.seq_lens.npy", {R}, a.seq_lens_host));
  bytes_ += 4 * static_cast<int64_t>(a.qsl_device.size() + a.seq_lens_device.size() + a.block_table.size() +
                                     a.qsl_host.size() + a.seq_lens_host.size()) +
            8 * static_cast<int64_t>(a.slot_mapping.size());
  DS_RETURN_IF_ERROR(WriteFields(dir, "ref.", in, consts_, &bytes_));
  const bool stale = HostViewStale(in);
  if (stale) DS_RETURN_IF_ERROR(WriteFields(dir, "hostref.", HostAsDevice(in), consts_, &bytes_));
  largest_step_bytes_ = std::max(largest_step_bytes_, bytes_ - bytes_before);
  if (steps_.empty() && console_ != nullptr)
    *console_ << absl::StrFormat(
        "--dump-steps '%s': the first step holds %.1f KiB of arrays; up to %d steps (--dump-steps-limit) take about "
        "%.0f MiB, %d MiB free there\n",
        dir_.string(), bytes_ / 1024.0, limit_, static_cast<double>(bytes_) * static_cast<double>(limit_) / (1 << 20),
        free_bytes >> 20);
  steps_.push_back({{"index", plan.index},
                    {"dir", rel},
                    {"case", std::string(StepCaseName(plan.step_case))},
                    {"draft_step", plan.draft_step},
                    {"graph_padded", plan.graph_padded},
                    {"host_view_stale", stale},
                    {"fp8_prefill", in.fp8_prefill},
                    {"causal", in.causal},
                    {"sizes",
                     {{"num_reqs", z.num_reqs},
                      {"num_reqs_real", plan.num_reqs_real},
                      {"num_tokens", z.num_tokens},
                      {"num_tokens_real", plan.num_tokens_real},
                      {"num_decodes", z.num_decodes},
                      {"num_decode_tokens", z.num_decode_tokens},
                      {"capacity", z.capacity},
                      {"bt_width", z.bt_width},
                      {"bt_stride", z.bt_stride}}}});
  return absl::OkStatus();
}

absl::Status StepDumpExecutor::Finish(nlohmann::json* section) {
  nlohmann::json index;
  index["meta"] = meta_;
  index["meta"]["schema"] = "dspark-step-dump";
  index["meta"]["schema_version"] = kStepDumpSchemaVersion;
  index["consts"] = {{"swa_window", consts_.swa_window},
                     {"swa_block_size", consts_.swa_block_size},
                     {"mla_block_size", consts_.mla_block_size},
                     {"spec_k", consts_.spec_k},
                     {"prefill_segment", consts_.prefill_segment},
                     {"compressor_ring_capacity", CompressorRingCapacity(consts_.spec_k)}};
  // The model layout the steps were built for (run --model): absent means DeepSeek-V4.1.
  if (consts_.model != ModelKind::kV41) index["consts"]["model"] = std::string(ModelFlag(consts_.model));
  index["steps_in_run"] = seen_;
  index["steps_dumped"] = steps_.size();
  index["limit"] = limit_;
  index["steps"] = steps_;
  DS_RETURN_IF_ERROR(WriteFileAtomically(dir_ / "index.json", index.dump(1) + "\n"));
  *section = {{"dir", dir_.string()},
              {"steps_dumped", steps_.size()},
              {"steps_in_run", seen_},
              {"limit", limit_},
              {"array_bytes", bytes_}};
  return absl::OkStatus();
}

namespace {

const RegisterExecutor kRegisterStepDump(
    "step-dump", kStepDumpOrder,
    [](const ExecutorRequest& request) -> absl::StatusOr<std::unique_ptr<StepExecutor>> {
      if (request.dump_dir.empty()) return std::unique_ptr<StepExecutor>();
      return std::unique_ptr<StepExecutor>(
          std::make_unique<StepDumpExecutor>(request.dump_dir, request.dump_limit, request.meta, request.consts));
    });

}  // namespace

}  // namespace dspark::sim
