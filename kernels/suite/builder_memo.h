// Builder-level deduplication of the CPU check: the vLLM states (a)-(d) run most
// builders op for op on the same inputs, so a step's check emulates each such builder once and
// every implementation that calls it on the same inputs reads that one result.
//
// A builder call is shared when it is the same builder (BuilderGroup: the function, and
// `variant`: its static flags, e.g. IndexerBuild's `fused`) on the CANONICAL inputs: the step's
// BatchInputs, which every implementation of a step reads alike, and, for the builders that
// read a token map (SWA, ring), a map equal over [0, qsl[R]) (the cells those kernels read,
// t < qsl[R]) to the device truth (the reference's token_to_req). A call on any other input, e.g.
// (a) / (b)'s host map when the host split is stale, runs on the implementation's own buffers.
//
// The first implementation to call a shared builder in a step (the leader) runs it into a
// buffer owned here, one per (group, variant), and records what it issued (OpCounters) and which
// scratch it took; the others wait for it, add the same counters, take the same scratch, return
// the same status, and their outputs for the group are that buffer. Which thread leads never
// matters: the buffer and what it holds depend only on (group, variant) and the inputs.
//
// Why a shared buffer is "provably the implementation's own": the old indexer chain leaves
// cells of earlier steps in its buffers (padding residue), so a buffer's content depends on its
// history. Every (group, variant) buffer is poisoned when allocated, like an implementation's
// own, and written by the same builder on the same inputs at every step by every implementation
// that shares it, provided all of them run every step (CpuSuite::BeginStep checks it). The
// SWA and ring builders rewrite their whole compared region every step (a function of the
// inputs alone), so an implementation that ran them privately in one step still gets exact
// results from the shared buffer in the next. Outputs of a shared builder are read by nothing
// but the comparison (no later builder reads them). tests/kernels/test_builder_memo.cc: dedup
// on and off give identical mismatches, counters and defined regions on random steps.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kernels/common/backend.h"
#include "kernels/suite/regions.h"
#include "kernels/suite/suite.h"

namespace dspark {

struct SuiteStep;

// The shareable builders and the output fields each writes (kernels/suite/suite.h lists them).
enum class BuilderGroup : int8_t {
  kSwa,        // swa_lens, swa_indices, swa_indices_noncausal, swa_gather_lens
  kMlaR2,      // mla_r2_slots
  kRing,       // ring_slots
  kIndexerR1,  // indexer[0]
  kIndexerR2,  // indexer[1], indexer_r2_slots, indexer_r2_csl
  kSegments,   // seg_qsl, seg_seq_lens, seg_count (count and max query length)
};

// dst's pointers of group g's fields become src's.
void AssignGroupOutputs(BuilderGroup g, const SuiteOutputs& src, SuiteOutputs* dst);

// Regions already found equal in this step: a second comparison of the same buffer over the same
// region of the step's table (Regions(): the same want, rows, cols and got's row stride for every
// implementation) is a few atomic loads. Thread-safe, lock-free past Regions(). Kept per region,
// not per row: a step has a few dozen regions but thousands of block-table rows.
class CompareMemo {
 public:
  // Region `region` (its index in Regions()) of buffer `got` was found equal / is known equal.
  bool KnownEqual(size_t region, const void* got) const;
  void NoteEqual(size_t region, const void* got);
  // The step's region table, made by the first caller (every implementation of a step compares
  // the same regions of the same reference).
  const std::vector<SuiteRegion>& Regions(const std::function<std::vector<SuiteRegion>()>& make);
  void Clear();
  // The per-capacity tails are compared through clean pages (kernels/common/clean_pages.h):
  // only for buffers whose owner calls clean_pages::ForgetAll before freeing them (CpuSuite).
  void TrackTails(bool on) { track_tails_ = on; }
  bool tracks_tails() const { return track_tails_; }

 private:
  bool track_tails_ = false;
  // [buffers] noted per region; a region of more distinct equal buffers than this is compared
  // again (the result is the same, only not memoized).
  static constexpr size_t kSlots = 8;
  std::mutex mu_;
  bool regions_made_ = false;
  std::vector<SuiteRegion> regions_;
  size_t slot_count_ = 0;     // regions_.size() * kSlots: the slots of this step's table
  size_t slot_capacity_ = 0;  // the slots equal_ holds, kept across steps
  std::unique_ptr<std::atomic<const void*>[]> equal_;  // per region, kSlots buffers, nullptr-ended
};

class BuilderMemo {
 public:
  // The layout of the shared buffers; a new layout drops them (re-made, poisoned, on first use).
  void SetLayout(const SuiteLayout& layout, int32_t poison);
  // A new step: nothing has run yet; token maps equal to canonical_map[0, mapped) are canonical.
  void BeginStep(const int32_t* canonical_map, int32_t mapped);

  // Runs `body` for group g as described in the file comment; sets g's fields of `effective` to
  // where the outputs are (the shared buffer, or s.out for a private call). `token_map`: the map
  // the builder reads, or nullptr for a builder that reads none.
  absl::Status Run(CpuBackend& be, const SuiteStep& s, BuilderGroup g, int32_t variant, const int32_t* token_map,
                   const std::function<absl::Status(const SuiteStep&)>& body, SuiteOutputs* effective);

  CompareMemo& compare() { return compare_; }

 private:
  struct Entry {
    SuiteOutputs out;          // where the group's outputs are
    bool done = false;         // (under mu_)
    std::atomic<bool> ready{false};  // done, readable without mu_ (a follower polls it first)
    OpCounters counters;       // what the builder issued
    std::vector<size_t> takes; // [bytes] its scratch allocations, in order
    absl::Status status;
  };
  bool Canonical(const int32_t* token_map) const;

  std::mutex mu_;
  std::condition_variable done_;
  SuiteLayout layout_;
  int32_t poison_ = 0;
  const int32_t* canonical_map_ = nullptr;
  int32_t mapped_ = 0;
  std::map<std::pair<int, int32_t>, Entry> entries_;        // this step's, by (group, variant)
  std::map<std::pair<int, int32_t>, SuiteImage> buffers_;   // persistent, the group's fields only
  CompareMemo compare_;
};

// An implementation's handle on the step's memo: where its outputs end up.
struct BuilderMemoSession {
  BuilderMemo* memo = nullptr;
  SuiteOutputs* effective = nullptr;  // starts as the implementation's own buffers
  // Set when the implementation's own row matrices (bt_out, swa_indices, swa_indices_noncausal)
  // were not grown to the step's rows in advance (ImplInfo::rows_via_builder_memo): a private
  // call of group g grows g's and gets the outputs with g's pointers moved.
  std::function<SuiteOutputs(BuilderGroup g)> own_rows;
};

}  // namespace dspark
