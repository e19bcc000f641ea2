#include "kernels/suite/builder_memo.h"

#include <algorithm>
#include <cstring>

#include "kernels/suite/bt_rows.h"
#include "kernels/suite/suite_impls.h"

namespace dspark {

void AssignGroupOutputs(BuilderGroup g, const SuiteOutputs& src, SuiteOutputs* dst) {
  switch (g) {
    case BuilderGroup::kSwa:
      dst->swa_lens = src.swa_lens;
      dst->swa_indices = src.swa_indices;
      dst->swa_indices_noncausal = src.swa_indices_noncausal;
      dst->swa_gather_lens = src.swa_gather_lens;
      return;
    case BuilderGroup::kMlaR2: dst->mla_r2_slots = src.mla_r2_slots; return;
    case BuilderGroup::kRing: dst->ring_slots = src.ring_slots; return;
    case BuilderGroup::kIndexerR1: dst->indexer[0] = src.indexer[0]; return;
    case BuilderGroup::kIndexerR2:
      dst->indexer[1] = src.indexer[1];
      dst->indexer_r2_slots = src.indexer_r2_slots;
      dst->indexer_r2_csl = src.indexer_r2_csl;
      return;
    case BuilderGroup::kSegments:
      dst->seg_qsl = src.seg_qsl;
      dst->seg_seq_lens = src.seg_seq_lens;
      dst->seg_count = src.seg_count;
      return;
  }
}

// ---------------------------------------------------------------- CompareMemo

bool CompareMemo::KnownEqual(size_t region, const void* got) const {
  if (region * kSlots >= slot_count_) return false;
  for (size_t j = region * kSlots; j < (region + 1) * kSlots; ++j) {
    const void* p = equal_[j].load(std::memory_order_acquire);
    if (p == got) return true;
    if (p == nullptr) return false;
  }
  return false;
}

void CompareMemo::NoteEqual(size_t region, const void* got) {
  if (region * kSlots >= slot_count_ || got == nullptr) return;
  for (size_t j = region * kSlots; j < (region + 1) * kSlots; ++j) {
    const void* expected = nullptr;
    if (equal_[j].compare_exchange_strong(expected, got, std::memory_order_acq_rel)) return;
    if (expected == got) return;
  }
}

const std::vector<SuiteRegion>& CompareMemo::Regions(const std::function<std::vector<SuiteRegion>()>& make) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!regions_made_) {
    regions_ = make();
    const size_t need = regions_.size() * kSlots;
    if (need > slot_capacity_ || equal_ == nullptr) {
      equal_.reset(new std::atomic<const void*>[need]);
      slot_capacity_ = need;
    }
    slot_count_ = need;
    for (size_t j = 0; j < slot_count_; ++j) equal_[j].store(nullptr, std::memory_order_relaxed);
    regions_made_ = true;
  }
  return regions_;
}

void CompareMemo::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  regions_.clear();
  regions_made_ = false;
  slot_count_ = 0;
}

// ---------------------------------------------------------------- BuilderMemo

namespace {

// A SuiteImage with only group g's fields allocated (the others stay empty).
SuiteImage GroupImage(BuilderGroup g, const SuiteLayout& l, int32_t poison) {
  SuiteImage full = SuiteImage::Filled(SuiteLayout{}, poison);  // every field empty
  const size_t cap = static_cast<size_t>(l.token_capacity);
  switch (g) {
    case BuilderGroup::kSwa:  // the row matrices: one row; GrowRows adds the rows the steps need
      full.swa_lens.assign(cap, poison);
      full.swa_indices.assign(static_cast<size_t>(std::max(l.window, 1)), poison);
      full.swa_indices_noncausal.assign(static_cast<size_t>(std::max(l.noncausal_width, 1)), poison);
      full.swa_gather_lens.assign(static_cast<size_t>(std::max(l.max_reqs, 1)), poison);
      break;
    case BuilderGroup::kMlaR2: full.mla_r2_slots.assign(cap, poison); break;
    case BuilderGroup::kRing: full.ring_slots.assign(cap, poison); break;
    case BuilderGroup::kIndexerR1:
    case BuilderGroup::kIndexerR2: {
      // bt_out: one row; GrowRows adds the rows the steps need.
      full.indexer[g == BuilderGroup::kIndexerR1 ? 0 : 1].Fill(l, static_cast<size_t>(std::max(l.bt_out_stride, 1)),
                                                                poison);
      if (g == BuilderGroup::kIndexerR2) {
        full.indexer_r2_slots.assign(cap, poison);
        full.indexer_r2_csl.assign(static_cast<size_t>(std::max(l.max_reqs, 1)), poison);
      }
      break;
    }
    case BuilderGroup::kSegments:
      full.seg_qsl.assign(static_cast<size_t>(l.max_segments) + 1, poison);
      full.seg_seq_lens.assign(static_cast<size_t>(l.max_segments), poison);
      full.seg_count.assign(2, poison);  // the count, then #57207's max query length
      break;
  }
  return full;
}

OpCounters Minus(const OpCounters& a, const OpCounters& b) {
  OpCounters d;
  d.kernels = a.kernels - b.kernels;
  d.h2d_copies = a.h2d_copies - b.h2d_copies;
  d.d2h_copies = a.d2h_copies - b.d2h_copies;
  d.d2d_copies = a.d2d_copies - b.d2d_copies;
  d.fills = a.fills - b.fills;
  d.host_syncs = a.host_syncs - b.host_syncs;
  d.host_array_ops = a.host_array_ops - b.host_array_ops;
  return d;
}

}  // namespace

void BuilderMemo::SetLayout(const SuiteLayout& layout, int32_t poison) {
  std::lock_guard<std::mutex> lock(mu_);
  if (layout == layout_ && poison == poison_) return;
  layout_ = layout;
  poison_ = poison;
  buffers_.clear();
  entries_.clear();
}

void BuilderMemo::BeginStep(const int32_t* canonical_map, int32_t mapped) {
  std::lock_guard<std::mutex> lock(mu_);
  canonical_map_ = canonical_map;
  mapped_ = std::max(mapped, 0);
  entries_.clear();
  compare_.Clear();
}

namespace {
// [polls] of a follower before it blocks on the leader: about 20 to 50 us.
constexpr int32_t kFollowerSpins = 1 << 15;
}  // namespace

bool BuilderMemo::Canonical(const int32_t* token_map) const {
  if (token_map == nullptr) return true;
  if (mapped_ == 0) return true;
  return canonical_map_ != nullptr &&
         std::memcmp(token_map, canonical_map_, sizeof(int32_t) * static_cast<size_t>(mapped_)) == 0;
}

absl::Status BuilderMemo::Run(CpuBackend& be, const SuiteStep& s, BuilderGroup g, int32_t variant,
                              const int32_t* token_map, const std::function<absl::Status(const SuiteStep&)>& body,
                              SuiteOutputs* effective) {
  if (be.LoggingScratch())
    return absl::InternalError("builder memo: a deduplicated builder called another one (bodies must not nest)");
  if (!Canonical(token_map)) {  // this implementation's own inputs: its own buffers
    if (!s.memo.own_rows) {
      AssignGroupOutputs(g, s.out, effective);
      return body(s);
    }
    SuiteStep own = s;
    AssignGroupOutputs(g, s.memo.own_rows(g), &own.out);
    AssignGroupOutputs(g, own.out, effective);
    return body(own);
  }
  const std::pair<int, int32_t> key{static_cast<int>(g), variant};
  std::unique_lock<std::mutex> lock(mu_);
  auto [it, lead] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (lead) {
    auto buf = buffers_.find(key);
    if (buf == buffers_.end()) buf = buffers_.emplace(key, GroupImage(g, layout_, poison_)).first;
    GrowRows(&buf->second, RowsOf(s.in->sizes), layout_.bt_out_stride, layout_, poison_);
    e.out = buf->second.View();
    lock.unlock();
    SuiteStep shared = s;
    AssignGroupOutputs(g, e.out, &shared.out);
    const OpCounters before = be.counters();
    std::vector<size_t> takes;
    be.LogScratch(&takes);
    const absl::Status status = body(shared);
    be.LogScratch(nullptr);
    lock.lock();
    e.counters = Minus(be.counters(), before);
    e.takes = std::move(takes);
    e.status = status;
    e.done = true;
    e.ready.store(true, std::memory_order_release);
    done_.notify_all();
  } else {
    // A builder takes microseconds and its leader runs on another core: poll for a while before
    // sleeping (a futex wake-up costs a sleeping thread tens of microseconds on a small VM).
    if (!e.done) {
      lock.unlock();
      for (int32_t spins = 0; spins < kFollowerSpins && !e.ready.load(std::memory_order_acquire); ++spins) {
      }
      lock.lock();
    }
    done_.wait(lock, [&e] { return e.done; });
    be.counters() += e.counters;
    for (size_t bytes : e.takes) be.template Scratch<uint8_t>(bytes);
  }
  AssignGroupOutputs(g, e.out, effective);
  return e.status.ok() ? be.status() : e.status;
}

}  // namespace dspark
