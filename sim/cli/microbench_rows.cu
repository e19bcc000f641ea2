// microbench's cases and rows (microbench_rows.cuh).
#include "sim/cli/microbench_rows.cuh"

#include "kernels/suite/vllm_ops.h"
#include "sim/cli/microbench_ladder.cuh"

namespace dspark::microbench_internal {

absl::StatusOr<BenchCase> MakeCase(const std::string& name, const Config& cfg) {
  BenchCase c;
  c.name = name;
  if (name == "decode") {
    c.lens.assign(16, 1);
    c.num_tokens = 16;
    c.description = "batch 16, q=1";
  } else if (name == "verify") {
    c.lens.assign(16, 6);
    c.num_tokens = 96;
    c.description = "DSpark verify, batch 16, q=1+K=6";
  } else if (name == "adaptive") {
    // 64 verified tokens kept by the device's top-B, split unevenly; the host holds the
    // reversed split (stale). Padded to the next multiple of 1 + K.
    c.lens = {6, 1, 6, 2, 6, 3, 1, 6, 4, 2, 6, 5, 1, 6, 4, 5};
    c.host_lens.assign(c.lens.rbegin(), c.lens.rend());
    c.num_tokens = 66;
    c.description = "DSpark adaptive verify, batch 16, 64 tokens padded to 66, host split stale";
  } else if (name == "r256") {
    c.lens.assign(256, 6);
    c.num_tokens = 1536;
    c.description = "DSpark verify, batch 256, q=6";
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("--cases: unknown case '%s' (expected decode, verify, adaptive, r256)", name));
  }
  if (c.host_lens.empty()) c.host_lens = c.lens;
  c.capacity = cfg.capacity >= c.num_tokens ? cfg.capacity : NextPow2(c.num_tokens);
  return c;
}

std::vector<int32_t> Qsl(const std::vector<int32_t>& lens) {
  std::vector<int32_t> q(lens.size() + 1, 0);
  std::partial_sum(lens.begin(), lens.end(), q.begin() + 1);
  return q;
}

GpuMemoryPlan PlanCase(const BenchCase& c, const Config& cfg) {
  const uint64_t reqs = static_cast<uint64_t>(c.num_reqs()), cap = static_cast<uint64_t>(c.capacity);
  const uint64_t stride = static_cast<uint64_t>(cfg.bt_stride);
  GpuMemoryPlan p;
  p.AddDevice("block table", SatMul(4, reqs, stride));
  p.AddDevice("indexer bt_out", SatMul(4, cap, stride));
  p.AddDevice("query_start_loc and seq_lens", 4 * (reqs + 1) + 4 * reqs);
  p.AddDevice("per-token buffers (arange, token map, seq_out, decode_lens, indices, per_req)", SatMul(6 * 4, cap));
  p.AddDevice("scratch arena", kScratchBytes);
  p.AddPinned("staging arena", kStagingBytes);
  return p;
}

namespace {

// The ladder probe over case `st`'s boundaries and block table, storing into `out`.
LadderParams LadderOn(const DeviceState& st, int32_t* out, int32_t depth, bool guess) {
  return LadderParams{st.d_qsl.get(), st.d_bt.get(), out,     st.c.num_reqs(),
                      st.cfg.bt_width, st.cfg.bt_stride, depth, guess ? 1 : 0};
}
// Cells [0, cells) of `buf` that differ from what probe `p` stores (from the host copies).
int64_t WrongLadderCells(const DeviceState& st, const LadderParams& p, const DeviceBuffer<int32_t>& buf,
                         int64_t cells) {
  const std::vector<int32_t> got = buf.Download();
  int64_t wrong = 0;
  for (int64_t i = 0; i < cells; ++i)
    wrong += got[static_cast<size_t>(i)] != LadderExpected(p, st.qsl.data(), st.block_table.data(), i);
  return wrong;
}
std::string LadderVerdict(int64_t wrong, bool* bug) {
  *bug = wrong > 0;
  return wrong > 0 ? absl::StrFormat("BUG: %d wrong cells", wrong) : std::string("ok");
}

}  // namespace

std::vector<RowSpec> Rows() {
  auto map_host = [](GpuBackend& be, const DeviceState& st) { return TokenMapHost(be, st.MapArgs()).status(); };
  // State (c)'s chain, the same code vllm-pre56562 runs (kernels/suite/vllm_ops.h): 8 launches.
  auto map_chain = [](GpuBackend& be, const DeviceState& st) {
    return vllm_ops::TokenMapPre56562(be, st.MapArgs()).status();
  };
  auto map_fused = [](GpuBackend& be, const DeviceState& st) { return TokenMapFused(be, st.MapArgs()).status(); };
  // State (c)'s chain as vLLM wrote it: device lengths, the host total (kernels/suite/vllm_indexer_ops.h).
  auto idx_chain = [](GpuBackend& be, const DeviceState& st) { return vllm_ops::IndexerDecodeChain(be, st.IdxArgs()); };
  auto idx_fused = [](GpuBackend& be, const DeviceState& st) { return IndexerFused(be, st.IdxArgs()); };
  auto pair_old = [=](GpuBackend& be, const DeviceState& st) {
    DS_RETURN_IF_ERROR(map_host(be, st));
    return idx_chain(be, st);
  };
  auto pair_fused = [=](GpuBackend& be, const DeviceState& st) {
    DS_RETURN_IF_ERROR(map_fused(be, st));
    return idx_fused(be, st);
  };
  // The same serial pair with the indexer as a programmatic dependent launch (Hopper): it reads
  // nothing the mapping writes, so it may start while the mapping runs.
  auto pair_fused_pdl = [=](GpuBackend& be, const DeviceState& st) {
    DS_RETURN_IF_ERROR(map_fused(be, st));
    be.OverlapNextLaunch();
    return idx_fused(be, st);
  };
  auto pair_fused_parallel = [=](GpuBackend& be, const DeviceState& st) {
    be.Branch(1);
    DS_RETURN_IF_ERROR(map_fused(be, st));
    be.Branch(0);
    DS_RETURN_IF_ERROR(idx_fused(be, st));
    be.Join();
    return be.status();
  };
  // The latency ladder (microbench_ladder.cuh): one launch of `grid` blocks of `block` threads
  // whose every thread runs a chain of `depth` dependent loads, into bt_out.
  auto ladder = [](int32_t depth, bool guess, int32_t grid, int32_t block) {
    const int64_t cells = int64_t{grid} * block;
    RowSpec r{"ladder",
              absl::StrFormat("depth %d%s, %dx%d", depth, guess ? " guessed" : "", grid, block),
              Method::kGraph, false, false, false,
              [=](GpuBackend& be, const DeviceState& st) {
                if (cells > static_cast<int64_t>(st.bt_out.size()))
                  return absl::InvalidArgumentError(absl::StrFormat(
                      "ladder: %d cells do not fit bt_out (%d): raise --capacity or --bt-stride", cells,
                      st.bt_out.size()));
                be.Launch(LadderKernel{LadderOn(st, st.bt_out.get(), depth, guess)}, LaunchShape{grid, block});
                return be.status();
              }};
    r.check = [=](const DeviceState& st, bool* bug) {
      return LadderVerdict(WrongLadderCells(st, LadderOn(st, st.bt_out.get(), depth, guess), st.bt_out, cells), bug);
    };
    return r;
  };
  // Two probes in one serial graph, as the mapping and the indexer of (d) are: a depth-1 chain
  // into map_out (the mapping's), then a guessed depth-2 chain into bt_out (the fused indexer's),
  // one block of 128 each; `pdl`: the second a programmatic dependent launch. What no serial pair
  // of kernels with those two chains can beat.
  auto ladder_pair = [](bool pdl) {
    const LaunchShape shape{1, 128};
    RowSpec r{"ladder", pdl ? "depth 1 then depth 2 guessed (PDL), 1x128 each" : "depth 1 then depth 2 guessed, 1x128 each",
              Method::kGraph, false, false, false,
              [=](GpuBackend& be, const DeviceState& st) {
                if (shape.block > static_cast<int64_t>(st.map_out.size()))
                  return absl::InvalidArgumentError("ladder: 128 cells do not fit map_out: raise --capacity");
                be.Launch(LadderKernel{LadderOn(st, st.map_out.get(), 1, false)}, shape);
                if (pdl) be.OverlapNextLaunch();
                be.Launch(LadderKernel{LadderOn(st, st.bt_out.get(), 2, true)}, shape);
                return be.status();
              }};
    r.check = [=](const DeviceState& st, bool* bug) {
      return LadderVerdict(
          WrongLadderCells(st, LadderOn(st, st.map_out.get(), 1, false), st.map_out, shape.block) +
              WrongLadderCells(st, LadderOn(st, st.bt_out.get(), 2, true), st.bt_out, shape.block),
          bug);
    };
    return r;
  };
  // The first row of each group is its baseline ("ratio vs chain").
  return {
      {"mapping", "host (#47474)", Method::kEager, true, true, false, map_host},
      {"mapping", "device-chain", Method::kGraph, false, true, false, map_chain},
      {"mapping", "fused", Method::kGraph, false, true, false, map_fused},
      {"mapping", "fused", Method::kEager, false, true, false, map_fused},
      // (c)'s chain reads only the host total, never the split: no stale-host allowed.
      {"indexer", "chain (c)", Method::kEager, false, false, true, idx_chain},
      {"indexer", "chain (c)", Method::kGraph, false, false, true, idx_chain},
      {"indexer", "fused", Method::kGraph, false, false, true, idx_fused},
      {"indexer", "fused", Method::kEager, false, false, true, idx_fused},
      {"mapping+indexer", "host+chain", Method::kEager, true, true, true, pair_old},
      {"mapping+indexer", "fused+fused", Method::kGraph, false, true, true, pair_fused},
      {"mapping+indexer", "fused+fused", Method::kEager, false, true, true, pair_fused},
      {"mapping+indexer", "fused+fused (PDL)", Method::kGraph, false, true, true, pair_fused_pdl},
      {"mapping+indexer", "fused||fused (2 branches)", Method::kGraph, false, true, true, pair_fused_parallel},
      // One block, then a grid the size of fused-suite's at batch-16 decode.
      ladder(0, false, 1, 128), ladder(1, false, 1, 128), ladder(2, false, 1, 128), ladder(2, true, 1, 128),
      ladder(0, false, 64, 256), ladder(1, false, 64, 256), ladder(2, false, 64, 256), ladder(2, true, 64, 256),
      ladder_pair(false), ladder_pair(true),
  };
}

std::string CheckOutputs(const RowSpec& spec, const DeviceState& st, bool* bug) {
  if (spec.check) return spec.check(st, bug);
  const BenchCase& c = st.c;
  const int32_t R = c.num_reqs(), N = c.num_tokens, W = st.cfg.bt_width, stride = st.cfg.bt_stride;
  int64_t stale = 0, residue = 0, other = 0;
  if (spec.maps) {
    const auto want = ref::TokenToReq(st.qsl.data(), R, N);
    const auto got = st.map_out.Download();
    for (int32_t t = 0; t < N; ++t) stale += got[t] != want[t];
  }
  if (spec.indexes) {
    const ref::IndexerDecodeOut want =
        ref::IndexerDecode(st.qsl.data(), st.seq_lens.data(), st.block_table.data(), stride, W, R, N, c.capacity);
    const auto seq = st.seq_out.Download(), bt = st.bt_out.Download(), lens = st.decode_lens.Download(),
               idx = st.indices.Download(), per = st.per_req.Download();
    const int32_t actual = st.qsl[R];
    for (int32_t t = 0; t < c.capacity; ++t) stale += seq[t] != want.seq_out[t];
    for (int32_t t = 0; t < N; ++t) {
      stale += idx[t] != want.indices[t];
      other += lens[t] != want.decode_lens[t];
      for (int32_t col = 0; col < W; ++col) {
        const bool differs = bt[static_cast<size_t>(t) * stride + col] != want.bt_rows[static_cast<size_t>(t) * W + col];
        if (t < actual) stale += differs;
        else if (col == 0) other += differs;
        else residue += differs;
      }
    }
    for (int32_t r = 0; r < R; ++r) other += per[r] != want.per_req[r];
  }
  const bool host_split_differs = st.host_qsl != st.qsl;
  std::vector<std::string> kinds;
  if (stale > 0) {
    if (spec.reads_host && host_split_differs) kinds.push_back(absl::StrFormat("stale-host(%d)", stale));
    else kinds.push_back(absl::StrFormat("BUG: %d wrong cells", stale));
  }
  if (residue > 0) {
    if (spec.impl.find("chain") != std::string::npos) kinds.push_back(absl::StrFormat("padding-residue(%d)", residue));
    else kinds.push_back(absl::StrFormat("BUG: %d padding cells", residue));
  }
  if (other > 0) kinds.push_back(absl::StrFormat("BUG: %d wrong per-request/decode_lens cells", other));
  *bug = false;
  for (const auto& k : kinds) *bug |= k.rfind("BUG", 0) == 0;
  return kinds.empty() ? "ok" : absl::StrJoin(kinds, " ");
}

absl::StatusOr<RowResult> MeasureRow(const RowSpec& spec, DeviceState& st, cudaStream_t stream,
                                     timing::L2Flusher& flusher, const timing::TimingOptions& opt) {
  RowResult res;
  res.spec = &spec;
  // Eager first call: loads the modules outside any capture, and counts the operations.
  {
    GpuBackend be = st.Backend(stream);
    DS_RETURN_IF_ERROR(spec.run(be, st));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    res.counters = be.counters();
  }
  CudaGraph graph;
  if (spec.method == Method::kGraph) {
    GpuBackend be = st.Backend(stream);
    graph.BeginCapture(stream);
    const absl::Status s = spec.run(be, st);
    graph.EndCapture(stream);
    DS_RETURN_IF_ERROR(s);
    res.graph_nodes = static_cast<int64_t>(graph.NodeCount());
    if (res.graph_nodes != be.counters().Launches())
      return absl::InternalError(absl::StrFormat("%s/%s: graph has %d nodes but %d launches were counted",
                                                 spec.group, spec.impl, res.graph_nodes, be.counters().Launches()));
    res.stats = timing::Summarize(timing::TimeGraph(graph, stream, flusher, opt));
  } else {
    absl::Status first_error;
    res.stats = timing::Summarize(timing::TimeEager(
        [&](cudaStream_t s) {
          GpuBackend be = st.Backend(s);  // fresh arenas: the previous sample has finished
          const absl::Status r = spec.run(be, st);
          if (!r.ok() && first_error.ok()) first_error = r;
        },
        stream, flusher, opt));
    DS_RETURN_IF_ERROR(first_error);
  }
  // One more call on poisoned outputs, the same way, for the correctness check.
  st.PoisonOutputs();
  if (spec.method == Method::kGraph) {
    graph.Replay(stream);
  } else {
    GpuBackend be = st.Backend(stream);
    DS_RETURN_IF_ERROR(spec.run(be, st));
  }
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  res.check = CheckOutputs(spec, st, &res.bug);
  return res;
}

nlohmann::ordered_json StatsJson(const SampleStats& s) {
  return {{"median_us", s.median_us}, {"p10_us", s.p10_us}, {"p90_us", s.p90_us}, {"mean_us", s.mean_us},
          {"min_us", s.min_us},       {"max_us", s.max_us}, {"samples", s.n}};
}

}  // namespace dspark::microbench_internal
