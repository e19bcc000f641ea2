#include "kernels/common/clean_pages.h"

#include <atomic>
#include <mutex>

#if defined(__unix__) || defined(__APPLE__)
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#define DSPARK_CLEAN_PAGES_POSIX 1
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DSPARK_CLEAN_PAGES_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define DSPARK_CLEAN_PAGES_SANITIZED 1
#endif
#endif

namespace dspark::clean_pages {
namespace {

// An open-addressed table of pages, lock-free for readers and for the signal handler. A key,
// once set, is never cleared (ForgetAll only marks every entry not clean), so the handler
// always finds the page of a write that trapped on a protection this module set.
constexpr size_t kSlots = size_t{1} << 16;
constexpr size_t kProbe = 64;

struct Slot {
  std::atomic<uintptr_t> page{0};
  std::atomic<uint32_t> clean{0};  // 1: protected, every 8 bytes of the page hold `pattern`
  std::atomic<uint64_t> pattern{0};  // the 8 bytes every 8 bytes of the page hold
};

// The 8-byte pattern of a page filled with `value` of `size` bytes: int32 -1 and int64 -1 fill
// a page with the same bytes, and so do int32 0 and int64 0.
uint64_t PatternOf(int64_t value, int size) {
  if (size == 8) return static_cast<uint64_t>(value);
  const uint64_t v = static_cast<uint32_t>(static_cast<int32_t>(value));
  return v | (v << 32);
}

Slot* g_slots = nullptr;  // allocated once by Enable, never freed (the handler may read it)
std::atomic<bool> g_enabled{false};
std::atomic<int64_t> g_faults{0};
std::atomic<int64_t> g_marked{0};
size_t g_page = 4096;
std::mutex g_mu;  // inserts and ForgetAll

// The page number's low bits: the pages of one buffer take consecutive slots, so a walk over a
// buffer's pages (ForEachUnknown) reads the table in order instead of a cache miss per page.
// Pages 2^16 apart share a home slot and probe on (a key is never moved, so Find still finds it).
size_t Hash(uintptr_t page) { return static_cast<size_t>(page / g_page) & (kSlots - 1); }

Slot* Find(uintptr_t page) {
  if (g_slots == nullptr) return nullptr;
  for (size_t i = 0, h = Hash(page); i < kProbe; ++i, h = (h + 1) & (kSlots - 1)) {
    const uintptr_t k = g_slots[h].page.load(std::memory_order_acquire);
    if (k == page) return &g_slots[h];
    if (k == 0) return nullptr;
  }
  return nullptr;
}

// Under g_mu.
Slot* FindOrInsert(uintptr_t page) {
  for (size_t i = 0, h = Hash(page); i < kProbe; ++i, h = (h + 1) & (kSlots - 1)) {
    const uintptr_t k = g_slots[h].page.load(std::memory_order_acquire);
    if (k == page) return &g_slots[h];
    if (k == 0) {
      g_slots[h].page.store(page, std::memory_order_release);
      return &g_slots[h];
    }
  }
  return nullptr;
}

#if defined(DSPARK_CLEAN_PAGES_POSIX) && !defined(DSPARK_CLEAN_PAGES_SANITIZED)
struct sigaction g_previous;
bool g_installed = false;

void OnSegv(int sig, siginfo_t* info, void* context) {
  const uintptr_t page = reinterpret_cast<uintptr_t>(info->si_addr) & ~(uintptr_t{g_page} - 1);
  Slot* s = Find(page);
  if (s != nullptr && mprotect(reinterpret_cast<void*>(page), g_page, PROT_READ | PROT_WRITE) == 0) {
    // A write to a page this module protected: it is dirty now, and writable when retried.
    s->clean.store(0, std::memory_order_release);
    g_faults.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Not ours: whatever handled SIGSEGV before (the default: the process dies as it would have).
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  sigaction(SIGSEGV, &g_previous, nullptr);  // the fault repeats under the previous action
}

bool Install() {
  if (g_installed) return true;
  const long page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || (page & (page - 1)) != 0) return false;
  g_page = static_cast<size_t>(page);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = OnSegv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &g_previous) != 0) return false;
  g_installed = true;
  return true;
}
bool Protect(uintptr_t lo, uintptr_t hi, bool read_only) {
  return mprotect(reinterpret_cast<void*>(lo), hi - lo, read_only ? PROT_READ : PROT_READ | PROT_WRITE) == 0;
}
#else
bool Install() { return false; }
bool Protect(uintptr_t, uintptr_t, bool) { return false; }
#endif

}  // namespace

bool Enabled() { return g_enabled.load(std::memory_order_relaxed); }

size_t PageBytes() { return g_page; }

bool Enable(bool on) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!on) {
    g_enabled.store(false, std::memory_order_relaxed);
    if (g_slots != nullptr)
      for (size_t i = 0; i < kSlots; ++i)
        if (g_slots[i].clean.load(std::memory_order_acquire)) {
          const uintptr_t p = g_slots[i].page.load(std::memory_order_acquire);
          Protect(p, p + g_page, false);
          g_slots[i].clean.store(0, std::memory_order_release);
        }
    return true;
  }
  if (g_slots == nullptr) g_slots = new Slot[kSlots];
  if (!Install()) return false;
  g_enabled.store(true, std::memory_order_relaxed);
  return true;
}

void ForgetAll() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_slots == nullptr) return;
  for (size_t i = 0; i < kSlots; ++i)
    if (g_slots[i].clean.load(std::memory_order_acquire)) {
      const uintptr_t p = g_slots[i].page.load(std::memory_order_acquire);
      Protect(p, p + g_page, false);
      g_slots[i].clean.store(0, std::memory_order_release);
    }
}

bool IsClean(const void* page, int64_t value, int size) {
  const Slot* s = Find(reinterpret_cast<uintptr_t>(page));
  return s != nullptr && s->clean.load(std::memory_order_acquire) != 0 &&
         s->pattern.load(std::memory_order_relaxed) == PatternOf(value, size);
}

namespace internal {
int64_t PageRun(uintptr_t base, int64_t max_pages, int64_t value, int size, bool* clean) {
  const uint64_t pattern = PatternOf(value, size);
  const auto is_clean = [pattern](uintptr_t page) {
    const Slot* s = Find(page);
    return s != nullptr && s->clean.load(std::memory_order_acquire) != 0 &&
           s->pattern.load(std::memory_order_relaxed) == pattern;
  };
  *clean = is_clean(base);
  int64_t k = 1;
  while (k < max_pages && is_clean(base + static_cast<uintptr_t>(k) * g_page) == *clean) ++k;
  return k;
}
}  // namespace internal

bool MarkClean(void* first, void* last, int64_t value, int size) {
  if (!Enabled()) return false;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(first), hi = reinterpret_cast<uintptr_t>(last);
  if (hi <= lo || (lo & (g_page - 1)) != 0 || (hi & (g_page - 1)) != 0) return false;
  if (size != 4 && size != 8) return false;
  const uint64_t pattern = PatternOf(value, size);
  std::lock_guard<std::mutex> lock(g_mu);
  // Only the pages not clean already need protecting; whole runs of them at once.
  uintptr_t run = 0;
  bool ok = true;
  const auto flush = [&](uintptr_t end) {
    if (run == 0) return;
    if (Protect(run, end, true)) {
      for (uintptr_t p = run; p < end; p += g_page) {
        Slot* s = Find(p);
        s->pattern.store(pattern, std::memory_order_relaxed);
        s->clean.store(1, std::memory_order_release);
      }
      g_marked.fetch_add(static_cast<int64_t>((end - run) / g_page), std::memory_order_relaxed);
    } else {
      ok = false;
    }
    run = 0;
  };
  for (uintptr_t p = lo; p < hi; p += g_page) {
    Slot* s = FindOrInsert(p);
    if (s == nullptr) {  // the table is full around this page: leave it unknown
      flush(p);
      ok = false;
      continue;
    }
    const bool same = s->clean.load(std::memory_order_acquire) != 0 &&
                      s->pattern.load(std::memory_order_relaxed) == pattern;
    if (same) {
      flush(p);
      continue;
    }
    if (run == 0) run = p;
  }
  flush(hi);
  return ok;
}

namespace {
struct ThreadMarking {
  bool on = false;
  uintptr_t begin = 0, end = 0;
};
thread_local ThreadMarking t_marking;
}  // namespace

MarkScope::MarkScope(const void* exclude_begin, const void* exclude_end)
    : was_on_(t_marking.on), was_begin_(t_marking.begin), was_end_(t_marking.end) {
  t_marking.on = true;
  t_marking.begin = reinterpret_cast<uintptr_t>(exclude_begin);
  t_marking.end = reinterpret_cast<uintptr_t>(exclude_end);
}
MarkScope::~MarkScope() {
  t_marking.on = was_on_;
  t_marking.begin = was_begin_;
  t_marking.end = was_end_;
}
bool Marking(uintptr_t* exclude_begin, uintptr_t* exclude_end) {
  if (!t_marking.on || !Enabled()) return false;
  *exclude_begin = t_marking.begin;
  *exclude_end = t_marking.end;
  return true;
}

Stats GetStats() { return Stats{g_faults.load(), g_marked.load()}; }

}  // namespace dspark::clean_pages
