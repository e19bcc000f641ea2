#include "sim/exec/cupti_timer.h"

#include <cstdlib>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

#if defined(DSPARK_HAVE_CUPTI)
#include <cupti.h>
#endif

namespace dspark::timing {

#if defined(DSPARK_HAVE_CUPTI)
namespace {

// CUPTI calls these C callbacks from its own threads; the running sum is shared state.
struct Collected {
  std::mutex mu;
  uint64_t ns = 0;
  int64_t records = 0;
  int64_t dropped = 0;
};
Collected& State() {
  static Collected c;
  return c;
}
bool g_instance = false;  // one timer per process (CUPTI's buffers are process-wide)

constexpr size_t kBufferBytes = size_t{8} << 20;
constexpr size_t kAlign = 8;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void Add(uint32_t graph_id, uint64_t start, uint64_t end, Collected& c) {
  if (graph_id == 0 || end < start) return;
  c.ns += end - start;
  ++c.records;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Collected& c = State();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
          const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
          Add(k->graphId, k->start, k->end, c);
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
          Add(m->graphId, m->start, m->end, c);
          break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
          const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
          Add(m->graphId, m->start, m->end, c);
          break;
        }
        default:
          break;
      }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) c.dropped += dropped;
  }
  std::free(buffer);
}

absl::Status Check(CUptiResult r, const char* call) {
  if (r == CUPTI_SUCCESS) return absl::OkStatus();
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  return absl::UnavailableError(absl::StrFormat("%s:%d: %s: CUPTI error %d (%s)", __FILE__, __LINE__, call,
                                                static_cast<int>(r), msg != nullptr ? msg : "?"));
}
#define DS_CUPTI(call) Check((call), #call)

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

}  // namespace

absl::StatusOr<std::unique_ptr<CuptiGraphTimer>> CuptiGraphTimer::Create() {
  if (g_instance) return absl::FailedPreconditionError("CuptiGraphTimer: one timer per process");
  if (absl::Status s = DS_CUPTI(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted)); !s.ok()) return s;
  g_instance = true;
  return std::unique_ptr<CuptiGraphTimer>(new CuptiGraphTimer());
}

CuptiGraphTimer::~CuptiGraphTimer() {
  (void)Disable();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  g_instance = false;
}

absl::Status CuptiGraphTimer::Enable() {
  if (enabled_) return absl::OkStatus();
  for (CUpti_ActivityKind k : kKinds)
    if (absl::Status s = DS_CUPTI(cuptiActivityEnable(k)); !s.ok()) return s;
  enabled_ = true;
  return absl::OkStatus();
}

absl::Status CuptiGraphTimer::Disable() {
  if (!enabled_) return absl::OkStatus();
  enabled_ = false;
  for (CUpti_ActivityKind k : kKinds)
    if (absl::Status s = DS_CUPTI(cuptiActivityDisable(k)); !s.ok()) return s;
  return absl::OkStatus();
}

absl::Status CuptiGraphTimer::Discard() {
  if (absl::Status s = DS_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)); !s.ok()) return s;
  Collected& c = State();
  std::lock_guard<std::mutex> lock(c.mu);
  c.ns = 0;
  c.records = 0;
  return absl::OkStatus();
}

absl::StatusOr<CuptiGraphTimer::Sum> CuptiGraphTimer::Take() {
  if (absl::Status s = DS_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)); !s.ok()) return s;
  Collected& c = State();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.dropped > 0)
    return absl::DataLossError(absl::StrFormat("CUPTI dropped %d activity records", c.dropped));
  Sum sum{static_cast<double>(c.ns) / 1000.0, c.records};
  c.ns = 0;
  c.records = 0;
  return sum;
}

#else  // no CUPTI in this build

absl::StatusOr<std::unique_ptr<CuptiGraphTimer>> CuptiGraphTimer::Create() {
  return absl::UnavailableError("CUPTI is not built in (CUDA::cupti was not found at configure time)");
}
CuptiGraphTimer::~CuptiGraphTimer() = default;
absl::Status CuptiGraphTimer::Enable() { return absl::UnavailableError("CUPTI is not built in"); }
absl::Status CuptiGraphTimer::Discard() { return absl::UnavailableError("CUPTI is not built in"); }
absl::StatusOr<CuptiGraphTimer::Sum> CuptiGraphTimer::Take() { return absl::UnavailableError("CUPTI is not built in"); }
absl::Status CuptiGraphTimer::Disable() { return absl::OkStatus(); }

#endif

}  // namespace dspark::timing
