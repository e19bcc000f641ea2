// `run --dump-steps DIR`: writes every step's data so that a kernel outside this tool (a Triton
// kernel, PyTorch code) can be replayed on the simulated steps (scripts/replay_steps.py).
//
// Layout (documented for users in workloads/STEP_DUMP.md):
//   DIR/index.json                   meta block, model constants, one entry per dumped step
//   DIR/steps/<index>/<name>.npy     numpy arrays, C order, int32 ("<i4") or int64 ("<i8"):
//     device.query_start_loc [R+1]   the truth, as the GPU rewrote it
//     device.seq_lens        [R]
//     device.block_table     [R, bt_stride]
//     device.slot_mapping    [N]      int64, -1 for padding
//     host.query_start_loc   [R+1]   what the host believes: right total, maybe stale split
//     host.seq_lens          [R]     maybe an upper bound
//     ref.<builder>.<field>          the reference from the device view, cut to the defined
//                                    region (kernels/suite/reference_fields.h)
//     hostref.<builder>.<field>      the same reference computed from the HOST view; written
//                                    only for steps whose host view is stale, so that a
//                                    difference can be classified as stale-host divergence
// Bounded: at most `limit` steps are written (the first ones), and the index says how many steps
// the run had. Before each step the free space of DIR's file system is checked: a step is written
// only while at least kDumpReserveBytes plus twice the largest step so far stay free, so a long
// dump stops with an error naming --dump-steps-limit instead of filling the disk. After the first
// step, one console line states the expected size of the whole dump (that step's bytes times the
// limit) beside the free space.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/batch.h"
#include "nlohmann/json.hpp"
#include "sim/engine/step_executor.h"

namespace dspark::sim {

inline constexpr int kStepDumpSchemaVersion = 1;
inline constexpr int64_t kDefaultDumpStepsLimit = 1000;
inline constexpr int kStepDumpOrder = 30;  // after the device and the CPU check
inline constexpr int64_t kDumpReserveBytes = int64_t{256} << 20;  // left free on DIR's file system

// The bytes free to an unprivileged writer on the file system holding a path.
using FreeBytesFn = std::function<absl::StatusOr<int64_t>(const std::filesystem::path&)>;
absl::StatusOr<int64_t> FreeBytes(const std::filesystem::path& path);

class StepDumpExecutor : public StepExecutor {
 public:
  StepDumpExecutor(std::filesystem::path dir, int64_t limit, nlohmann::json meta, ModelConsts consts = {},
                   FreeBytesFn free_bytes = FreeBytes, std::ostream* console = &std::cerr);

  absl::string_view name() const override { return "step_dump"; }
  absl::Status Execute(const StepPlan& plan, const StepArrays& arrays) override;
  absl::Status Finish(nlohmann::json* section) override;

 private:
  std::filesystem::path dir_;
  int64_t limit_;
  nlohmann::json meta_;
  ModelConsts consts_;
  nlohmann::json steps_ = nlohmann::json::array();
  FreeBytesFn free_bytes_;
  std::ostream* console_;
  int64_t seen_ = 0;
  int64_t bytes_ = 0;
  int64_t largest_step_bytes_ = 0;
};

}  // namespace dspark::sim
