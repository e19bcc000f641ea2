// token_to_req_indices(buffer) as vLLM's host mappings and #56562's kernel, each written once over
// a Backend (kernels/common/backend.h) so that the same code runs emulated on the CPU and for real
// on a GPU, issuing the same operations:
//
//   TokenMapHost        PR #47474: np.diff / np.arange / np.repeat over the HOST boundaries,
//                       one pinned host-to-device copy into the buffer, tail zeroed by a fill.
//                       2 launches (H2D copy + fill). Reads host boundaries: wrong when they
//                       are stale, and a captured graph replays the capture-time mapping.
//   TokenMapFused       PR #56562: one TokenMapKernel launch reading the device boundaries.
//
// State (c)'s device chain (diff, arange, repeat_interleave with the host total, copy_, zero_) is
// vllm_ops::TokenMapPre56562 (kernels/suite/vllm_ops.h), the one code (c) and `microbench` run.
//
// Both write the caller's buffer in place and return that same pointer (the mapping is cached by
// address for the rest of the step). Launch counts above are for M > 0 and M < N; an operation
// with nothing to do is not issued (so a graph's node count equals the counted launches).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "kernels/common/backend.h"
#include "kernels/common/status_macros.h"
#include "kernels/ops.cuh"
#include "kernels/token_map.cuh"

namespace dspark {

struct TokenMapArgs {
  const int32_t* query_start_loc = nullptr;       // [num_reqs + 1] device boundaries (truth)
  const int32_t* host_query_start_loc = nullptr;  // [num_reqs + 1] host copy: right total,
                                                  //   possibly stale per-request split
  int32_t num_reqs = 0;    // R [requests], padded requests included (query length 0)
  int32_t num_tokens = 0;  // N [tokens] entries the step uses (padded capture size)
  int32_t* out = nullptr;  // [buffer_len] caller's persistent buffer, written in place
  int32_t buffer_len = 0;  // [entries] length of `out`
};

// Host-side checks (no device access). `reads_host` adds the host-boundary invariants that the
// host and device-chain paths rely on: qsl_cpu[0] == 0, non-decreasing, and a buffer that
// holds max(M_host, N) entries.
inline absl::Status ValidateTokenMapArgs(const TokenMapArgs& a, bool reads_host) {
  if (a.num_reqs < 0)
    return absl::InvalidArgumentError(absl::StrFormat("token map: num_reqs=%d must be >= 0", a.num_reqs));
  if (a.num_tokens < 0)
    return absl::InvalidArgumentError(absl::StrFormat("token map: num_tokens=%d must be >= 0", a.num_tokens));
  if (a.query_start_loc == nullptr)
    return absl::InvalidArgumentError("token map: query_start_loc is null, expected [num_reqs + 1]");
  if (a.out == nullptr && a.buffer_len > 0)
    return absl::InvalidArgumentError("token map: out is null but buffer_len > 0");
  int32_t needed = a.num_tokens;
  if (reads_host) {
    if (a.host_query_start_loc == nullptr)
      return absl::InvalidArgumentError(
          "token map: host_query_start_loc is null, expected [num_reqs + 1] host boundaries");
    const int32_t* hq = a.host_query_start_loc;
    if (hq[0] != 0)
      return absl::InvalidArgumentError(
          absl::StrFormat("token map: host_query_start_loc[0]=%d, expected 0", hq[0]));
    for (int32_t r = 0; r < a.num_reqs; ++r)
      if (hq[r + 1] < hq[r])
        return absl::InvalidArgumentError(absl::StrFormat(
            "token map: host_query_start_loc decreases at %d (%d -> %d), expected non-decreasing",
            r + 1, hq[r], hq[r + 1]));
    needed = MaxI(needed, hq[a.num_reqs]);
  }
  if (a.buffer_len < needed)
    return absl::OutOfRangeError(absl::StrFormat(
        "token map: buffer_len=%d, expected >= %d (num_tokens%s)", a.buffer_len, needed,
        reads_host ? " and the host token total" : ""));
  return absl::OkStatus();
}

// np.repeat(np.arange(R), np.diff(hq)) on the host, as T: the request of each of the hq[R] tokens.
template <class T>
std::vector<T> HostTokenMap(const int32_t* hq, int32_t R) {
  std::vector<T> map;
  map.reserve(static_cast<size_t>(hq[R]));
  for (int32_t r = 0; r < R; ++r)
    for (int32_t k = hq[r]; k < hq[r + 1]; ++k) map.push_back(static_cast<T>(r));
  return map;
}

// PR #47474 (see the file comment). The host array is staged through pinned memory by the
// backend, as np_to_pinned_tensor(...).copy_(non_blocking=True) does.
template <class Backend>
absl::StatusOr<int32_t*> TokenMapHost(Backend& be, const TokenMapArgs& a) {
  DS_RETURN_IF_ERROR(ValidateTokenMapArgs(a, /*reads_host=*/true));
  const int32_t mapped = a.host_query_start_loc[a.num_reqs];
  // np.diff(starts); np.arange(R); np.repeat(arange, query_lens)
  const std::vector<int32_t> host_map = HostTokenMap<int32_t>(a.host_query_start_loc, a.num_reqs);
  be.NoteHostArrayOp();
  be.NoteHostArrayOp();
  be.NoteHostArrayOp();
  if (mapped > 0) be.CopyToDevice(a.out, host_map.data(), sizeof(int32_t) * static_cast<size_t>(mapped));
  if (mapped < a.num_tokens) be.Fill32(a.out + mapped, 0, static_cast<size_t>(a.num_tokens - mapped));
  DS_RETURN_IF_ERROR(be.status());
  return a.out;
}

// PR #56562: one launch, device boundaries only (kernels/token_map.cuh).
template <class Backend>
absl::StatusOr<int32_t*> TokenMapFused(Backend& be, const TokenMapArgs& a) {
  DS_RETURN_IF_ERROR(ValidateTokenMapArgs(a, /*reads_host=*/false));
  const TokenMapParams p{a.query_start_loc, a.out, a.num_reqs, a.num_tokens};
  const LaunchShape shape = TokenMapKernel::Shape(p);
  if (shape.grid > 0) be.Launch(TokenMapKernel{p}, shape);
  DS_RETURN_IF_ERROR(be.status());
  return a.out;
}

}  // namespace dspark
