// The cases, rows and device state of `dspark-sim microbench` (sim/cli/cmd_microbench.cu):
// what a row launches, how it is timed and checked. Not part of any interface.
#pragma once

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kernels/common/backend_gpu.cuh"
#include "kernels/common/byte_math.h"
#include "kernels/common/device_buffer.cuh"
#include "kernels/common/status_macros.h"
#include "kernels/indexer_impls.h"
#include "kernels/reference/indexer_decode.h"
#include "kernels/reference/token_map.h"
#include "kernels/suite/gpu_suite.cuh"
#include "kernels/token_map_impls.h"
#include "sim/cli/cli_registry.h"
#include "sim/cli/command.h"
#include "sim/exec/cuda_device.h"
#include "sim/exec/gpu_timing.cuh"
#include "sim/results/git_info.h"
#include "sim/results/result_files.h"

namespace dspark::microbench_internal {

using timing::SampleStats;

struct Config {
  int reps = 200;
  int warmup = 10;
  std::string l2 = "cold";
  std::string cases = "decode,verify,adaptive,r256";
  std::string json_path;
  int32_t seq_len = 8192;   // [tokens] context per request, varied slightly per request
  int32_t bt_width = 128;   // [blocks] used block-table columns (8192 / 64)
  int32_t bt_stride = 130;  // [int32] block-table row stride
  int32_t capacity = 512;   // [tokens] persistent buffer length (raised where a case needs more)
  int device = 0;

  absl::Status Validate() const {
    if (reps < 10) return absl::InvalidArgumentError(absl::StrFormat("--reps=%d: need at least 10", reps));
    if (warmup < 0) return absl::InvalidArgumentError(absl::StrFormat("--warmup=%d: need >= 0", warmup));
    if (l2 != "cold" && l2 != "warm")
      return absl::InvalidArgumentError(absl::StrFormat("--l2=%s: expected cold or warm", l2));
    if (bt_width < 1 || bt_stride < bt_width)
      return absl::InvalidArgumentError(
          absl::StrFormat("--bt-width=%d / --bt-stride=%d: need 1 <= width <= stride", bt_width, bt_stride));
    if (seq_len < 8) return absl::InvalidArgumentError(absl::StrFormat("--seq-len=%d: need >= 8", seq_len));
    if (capacity < 1) return absl::InvalidArgumentError(absl::StrFormat("--capacity=%d: need >= 1", capacity));
    return absl::OkStatus();
  }
};

// One batch shape. Every request is a decode (the indexer sees N_d = N).
struct BenchCase {
  std::string name;
  std::string description;
  std::vector<int32_t> lens;       // device query lengths (truth)
  std::vector<int32_t> host_lens;  // host split: same total, stale under adaptive verification
  int32_t num_tokens = 0;          // N = N_d [tokens], the padded capture size
  int32_t capacity = 0;            // [tokens]
  int32_t num_reqs() const { return static_cast<int32_t>(lens.size()); }
};

absl::StatusOr<BenchCase> MakeCase(const std::string& name, const Config& cfg);
// [R + 1] exclusive prefix sum of `lens`.
std::vector<int32_t> Qsl(const std::vector<int32_t>& lens);

constexpr size_t kScratchBytes = size_t{32} << 20;  // the chains' device scratch arena per case
constexpr size_t kStagingBytes = size_t{8} << 20;   // pinned staging arena per case

// Everything DeviceState allocates for `c`, computed without allocating (saturating arithmetic).
GpuMemoryPlan PlanCase(const BenchCase& c, const Config& cfg);

// Inputs and persistent outputs of one case, on the device.
struct DeviceState {
  const BenchCase& c;
  const Config& cfg;
  std::vector<int32_t> qsl, host_qsl, seq_lens, block_table;
  DeviceBuffer<int32_t> d_qsl, d_seq, d_bt, d_arange;
  DeviceBuffer<int32_t> map_out, seq_out, bt_out, decode_lens, indices, per_req;
  DeviceBuffer<uint8_t> scratch{kScratchBytes};
  PinnedBuffer<uint8_t> staging{kStagingBytes};
  // One side stream: the fused mapping and the fused indexer are independent (the indexer
  // searches the boundaries itself), so they can run as two parallel graph branches.
  mutable SideStreams side{1};

  DeviceState(const BenchCase& bc, const Config& config) : c(bc), cfg(config) {
    qsl = Qsl(c.lens);
    host_qsl = Qsl(c.host_lens);
    const int32_t R = c.num_reqs();
    for (int32_t r = 0; r < R; ++r) seq_lens.push_back(cfg.seq_len - (r * 37) % 61);
    // Block ids: a deterministic scramble, never the null page 0.
    block_table.resize(static_cast<size_t>(R) * cfg.bt_stride);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (auto& b : block_table) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      b = 1 + static_cast<int32_t>(x % 200000);
    }
    std::vector<int32_t> arange(c.capacity);
    std::iota(arange.begin(), arange.end(), 0);
    d_qsl = DeviceBuffer<int32_t>(qsl);
    d_seq = DeviceBuffer<int32_t>(seq_lens);
    d_bt = DeviceBuffer<int32_t>(block_table);
    d_arange = DeviceBuffer<int32_t>(arange);
    map_out = DeviceBuffer<int32_t>(c.capacity);
    seq_out = DeviceBuffer<int32_t>(c.capacity);
    bt_out = DeviceBuffer<int32_t>(static_cast<size_t>(c.capacity) * cfg.bt_stride);
    decode_lens = DeviceBuffer<int32_t>(c.capacity);
    indices = DeviceBuffer<int32_t>(c.capacity);
    per_req = DeviceBuffer<int32_t>(c.capacity);
    // The uploads above run on the legacy stream; the timed work runs on a non-blocking one.
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  GpuBackend Backend(cudaStream_t s) const {
    GpuBackend be(s, scratch.get(), scratch.size(), staging.get(), staging.size());
    be.AttachSideStreams(&side);
    return be;
  }
  TokenMapArgs MapArgs() const {
    return TokenMapArgs{d_qsl.get(), host_qsl.data(), c.num_reqs(), c.num_tokens, map_out.get(), c.capacity};
  }
  IndexerArgs IdxArgs() const {
    IndexerArgs a;
    a.query_start_loc = d_qsl.get();
    a.seq_lens = d_seq.get();
    a.block_table = d_bt.get();
    a.host_query_start_loc = host_qsl.data();
    a.arange = d_arange.get();
    a.num_decodes = c.num_reqs();
    a.num_decode_tokens = c.num_tokens;
    a.capacity = c.capacity;
    a.bt_width = cfg.bt_width;
    a.bt_stride = cfg.bt_stride;
    a.out_stride = cfg.bt_stride;
    a.seq_out = seq_out.get();
    a.bt_out = bt_out.get();
    a.decode_lens = decode_lens.get();
    a.indices = indices.get();
    a.per_req = per_req.get();
    return a;
  }
  // -1 everywhere, so a cell an implementation should write and did not shows up.
  void PoisonOutputs() {
    for (auto* b : {&map_out, &seq_out, &bt_out, &decode_lens, &indices, &per_req}) b->FillBytes(0xff);
    CUDA_CHECK(cudaDeviceSynchronize());  // cudaMemset may still be running when it returns
  }
};

enum class Method { kGraph, kEager };
inline const char* MethodName(Method m) { return m == Method::kGraph ? "graph" : "eager"; }

struct RowSpec {
  std::string group;  // mapping, indexer, mapping+indexer
  std::string impl;
  Method method;
  bool reads_host;    // reads host boundaries: expected to diverge where the host split is stale
  bool maps, indexes; // which outputs it writes
  std::function<absl::Status(GpuBackend&, const DeviceState&)> run;
  // A probe's own check (the latency ladder's), in place of the mapping / indexer check: "ok" or
  // "BUG: ..." with *bug set.
  std::function<std::string(const DeviceState&, bool*)> check = nullptr;
};

std::vector<RowSpec> Rows();

struct RowResult {
  const RowSpec* spec = nullptr;
  SampleStats stats;
  OpCounters counters;
  int64_t graph_nodes = -1;  // -1: eager
  std::string check;         // ok, stale-host, padding-residue, or BUG: ...
  bool bug = false;
  double floor_us = 0, ratio_floor = 0, ratio_chain = 0;
};

// Compares the outputs a row wrote (after PoisonOutputs) with the reference built from the
// device boundaries, and says what kind of difference it is (docs/design.md section 6).
std::string CheckOutputs(const RowSpec& spec, const DeviceState& st, bool* bug);
absl::StatusOr<RowResult> MeasureRow(const RowSpec& spec, DeviceState& st, cudaStream_t stream,
                                     timing::L2Flusher& flusher, const timing::TimingOptions& opt);
nlohmann::ordered_json StatsJson(const SampleStats& s);

}  // namespace dspark::microbench_internal
