// DeepGEMM's paged-MQA-logits scheduler metadata, varlen form: what vLLM's indexer builder gets
// from `get_paged_mqa_logits_metadata(seq_lens, block_size, num_sms, indices)` at the end of every
// decode build, in states (c) and (d) alike (docs/states.md s.2.5). DeepGEMM's kernel is
// `sched::smxx_paged_mqa_logits_metadata<aligned_batch, SPLIT_KV = 256, num_sms, varlen>`: one
// warp, one block. This is a body of the same shape and the same output, written from its
// semantics:
//   atoms     walking the tokens from the left, token t and t + 1 form one atom when they
//             belong to the same request (indices[t] == indices[t + 1]); the atom's length is
//             the later token's context length. Otherwise t is an atom alone.
//   segments  each atom has ceil(len / SPLIT_KV) KV segments; prefix[a] is the inclusive sum.
//   split     total = prefix[last]; q = total / num_sms, r = total % num_sms; the first
//             num_sms - r SMs get q segments and the last r get q + 1 ("reversed allocation"), so
//             SM s starts at segment  s * q + max(s - (num_sms - r), 0).
//   output    for s in [0, num_sms]: the first atom a with prefix[a] > start; out[2s] is that
//             atom's first token (num_tokens when a is past the last atom) and out[2s + 1] the
//             segment offset inside it (start - prefix[a - 1]).
// Like DeepGEMM, lane 0 walks the atoms alone; a 32-thread scan makes the prefix. The scan and
// atom tables live in a global work buffer (DeepGEMM uses shared memory sized by the batch; a
// block barrier orders global memory within a block just the same), so no batch size is
// refused. The CPU truth is kernels/reference/paged_mqa_schedule.h.
#pragma once

#include <cstdint>

#include "kernels/common/grid.h"
#include "kernels/common/hd.h"

namespace dspark {

struct PagedMqaScheduleParams {
  const int32_t* context_lens;  // [num_tokens] KV length of each decode token (uint32 in DeepGEMM)
  const int32_t* indices;       // [num_tokens] request of each decode token (non-decreasing)
  int32_t* work;                // [2 * num_tokens] scratch: atom first tokens, then prefix sums
  int32_t* out;                 // [2 * (num_sms + 1)] (first token, segment offset) per SM
  int32_t num_tokens;           // [tokens] DeepGEMM's batch_size
  int32_t num_sms;              // [SMs] 132 on an H200
};

struct PagedMqaScheduleKernel {
  static constexpr int32_t kThreads = 32;    // one warp, as DeepGEMM launches it
  static constexpr int32_t kSplitKv = 256;   // [tokens] DeepGEMM's split_kv (block_kv 64 x 4)
  static constexpr int32_t kScanSteps = 5;   // log2(kThreads)
  static constexpr int kPhases = kScanSteps + 4;
  struct Shared {
    int32_t num_atoms;
    uint32_t part[2][kThreads];  // per-thread segment sums, then their inclusive scan
  };
  PagedMqaScheduleParams p;

  static LaunchShape Shape(const PagedMqaScheduleParams&) { return {1, kThreads}; }

  DS_HD int32_t* AtomStart() const { return p.work; }
  DS_HD uint32_t* Prefix() const { return reinterpret_cast<uint32_t*>(p.work + p.num_tokens); }

  DS_HD void Phase(int phase, const ThreadCtx& c, Shared& s) const {
    if (phase == 0) {  // lane 0 walks the atoms (DeepGEMM does the same, serially)
      if (c.thread != 0) return;
      int32_t t = 0, a = 0;
      while (t < p.num_tokens) {
        const bool paired = t + 1 < p.num_tokens && p.indices[t] == p.indices[t + 1];
        const uint32_t len = static_cast<uint32_t>(p.context_lens[paired ? t + 1 : t]);
        AtomStart()[a] = t;
        Prefix()[a] = (len + kSplitKv - 1) / kSplitKv;  // segments; summed below
        t += paired ? 2 : 1;
        ++a;
      }
      s.num_atoms = a;
      return;
    }
    const int32_t n = s.num_atoms;
    const int32_t chunk = (n + kThreads - 1) / kThreads;
    const int32_t begin = MinI(c.thread * chunk, n), end = MinI(begin + chunk, n);
    if (phase == 1) {
      uint32_t sum = 0;
      for (int32_t i = begin; i < end; ++i) sum += Prefix()[i];
      s.part[0][c.thread] = sum;
      return;
    }
    if (phase <= 1 + kScanSteps) {  // Hillis-Steele over the 32 chunk sums
      const int32_t step = phase - 2, offset = 1 << step;
      const uint32_t* src = s.part[step & 1];
      uint32_t* dst = s.part[(step + 1) & 1];
      dst[c.thread] = src[c.thread] + (c.thread >= offset ? src[c.thread - offset] : 0u);
      return;
    }
    const uint32_t* scanned = s.part[kScanSteps & 1];
    if (phase == 2 + kScanSteps) {  // chunk prefix sums, in place
      uint32_t running = c.thread > 0 ? scanned[c.thread - 1] : 0u;
      for (int32_t i = begin; i < end; ++i) {
        running += Prefix()[i];
        Prefix()[i] = running;
      }
      return;
    }
    const uint32_t total = scanned[kThreads - 1];
    for (uint32_t sm = static_cast<uint32_t>(c.thread); sm <= static_cast<uint32_t>(p.num_sms); sm += kThreads)
      WriteSm(sm, n, total);
  }

  // SM `sm`'s (first token, segment offset), from the atoms' inclusive prefix sums.
  DS_HD void WriteSm(uint32_t sm, int32_t n, uint32_t total) const {
    const uint32_t sms = static_cast<uint32_t>(p.num_sms);
    const uint32_t q = total / sms, r = total % sms, pivot = sms - r;
    const uint32_t start = sm * q + (sm > pivot ? sm - pivot : 0u);
    int32_t lo = 0, hi = n;  // first atom with prefix > start
    while (lo < hi) {
      const int32_t mid = (lo + hi) / 2;
      if (Prefix()[mid] <= start) lo = mid + 1; else hi = mid;
    }
    p.out[2 * sm] = lo < n ? AtomStart()[lo] : p.num_tokens;
    p.out[2 * sm + 1] = static_cast<int32_t>(lo == 0 ? start : start - Prefix()[lo - 1]);
  }

  // The emulator's path (grid.h): lane 0's walk, then the chunked scan as one running sum (the
  // same uint32 sums: addition mod 2^32 does not depend on the grouping), then every SM's row.
  // The same work / out bytes as the thread-by-thread emulation (tests/kernels/test_cpu_paths.cc).
  void CpuRun(LaunchShape) const {
    Shared s;
    Phase(0, ThreadCtx{0, 0, kThreads, 1}, s);
    const int32_t n = s.num_atoms;
    uint32_t running = 0;
    for (int32_t i = 0; i < n; ++i) {
      running += Prefix()[i];
      Prefix()[i] = running;
    }
    for (uint32_t sm = 0; sm <= static_cast<uint32_t>(p.num_sms); ++sm) WriteSm(sm, n, running);
  }
};

}  // namespace dspark
