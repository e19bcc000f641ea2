// Clean pages: the CPU check's proof that a capacity-sized tail did not change since it was last
// compared, so that a step's check costs its tokens, not the buffers' capacity.
//
// Most of a persistent output buffer is a constant tail (-1 slots, 0 lengths past the step's
// tokens) that every step fills again and the check compares again. When the check has compared
// a whole memory page of such a tail equal to its value v, it write-protects the page (mprotect)
// and records it as "clean, holding v". From then on:
//   - any write to the page, by any code, traps (SIGSEGV); the handler marks the page dirty and
//     makes it writable again before the write is retried, so the write happens as before;
//   - a fill of v over cells of a clean page (TailFill) skips them: they hold v already;
//   - the check skips a clean page holding the tail's expected value (ForEachUnknown): its cells
//     were compared equal and nothing has written them since.
// Whatever is skipped is therefore equal by construction: the hardware, not the code that wrote
// the buffer, says that nothing changed. A page is protected only after a comparison found it
// equal, so an unequal cell is always compared (tests/kernels/test_clean_pages.cc changes one
// cell at random positions of every tail, between steps and inside a step's emulation).
//
// Off unless Enable()d (the CPU executor's deduplicated check enables it), and always off under
// a sanitizer (they own SIGSEGV). Process-wide: pages are keyed by address. Before a buffer that
// may hold clean pages is freed, ForgetAll() must run (CpuSuite does, on a new layout and at its
// end), so that a clean record never outlives its memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace dspark::clean_pages {

// Whether clean pages are in use (Enable succeeded and was not turned off).
bool Enabled();
// Installs the SIGSEGV handler (once) and turns tracking on; false where it cannot be used
// (a sanitizer build, no handler). Enable(false) forgets every page and turns it off.
bool Enable(bool on = true);
// Makes every clean page writable again and forgets it. Not concurrent with TailFill/compares.
void ForgetAll();

// The page size in bytes (a power of two).
size_t PageBytes();

// Whether the page starting at `page` (page-aligned) is clean with the pattern (value, size).
bool IsClean(const void* page, int64_t value, int size);
// Records [first, last) (page-aligned, whole pages) as clean holding (value, size) and protects
// it. The caller has just compared every cell equal to value. False if it could not (the table
// is full, mprotect failed): the pages then stay as they were, unprotected and unknown.
bool MarkClean(void* first, void* last, int64_t value, int size);

// Counters, for tests and the run's report.
struct Stats {
  int64_t faults = 0;        // writes that trapped on a clean page
  int64_t pages_marked = 0;  // pages made clean
};
Stats GetStats();

// While a MarkScope lives on a thread, TailFill there also marks clean the whole pages it has
// just filled (they hold the value: it wrote them), except inside [exclude_begin, exclude_end)
// (a scratch arena, whose pages serve other uses in the next op). Only for buffers whose owner
// calls ForgetAll before freeing them (CpuSuite's emulation of a step).
class MarkScope {
 public:
  MarkScope(const void* exclude_begin, const void* exclude_end);
  ~MarkScope();
  MarkScope(const MarkScope&) = delete;
  MarkScope& operator=(const MarkScope&) = delete;

 private:
  bool was_on_;
  uintptr_t was_begin_, was_end_;
};
// Whether this thread is in a MarkScope; its excluded range.
bool Marking(uintptr_t* exclude_begin, uintptr_t* exclude_end);

namespace internal {
// The pages [base, base + k * page) whose state is the page at `base`'s (clean with the
// pattern of (value, size), or not): returns k in [1, max_pages] and that state. One call per
// run of pages, not one per page.
int64_t PageRun(uintptr_t base, int64_t max_pages, int64_t value, int size, bool* clean);
}  // namespace internal

// Calls fn(begin, end) (element offsets into p) for the sub-ranges of [0, n) that are not
// covered by a page clean with `value`: the cells a comparison with value must still read.
// Consecutive such pages give one range.
template <typename T, typename F>
void ForEachUnknown(const T* p, int64_t n, T value, F&& fn) {
  static_assert(std::is_integral<T>::value, "clean pages hold integer patterns");
  if (n <= 0) return;
  if (!Enabled()) {
    fn(int64_t{0}, n);
    return;
  }
  const uintptr_t page = PageBytes();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = reinterpret_cast<uintptr_t>(p + n);
  // The first and last pages may be partial: a clean one covers the cells of [p, p + n) on it.
  uintptr_t base = begin & ~(page - 1);
  int64_t run = 0;  // where the pending range of cells to read starts
  while (base < end) {
    bool clean = false;
    const int64_t pages =
        internal::PageRun(base, static_cast<int64_t>((end - base + page - 1) / page), static_cast<int64_t>(value),
                          sizeof(T), &clean);
    const uintptr_t stop = base + static_cast<uintptr_t>(pages) * page;
    if (clean) {
      const int64_t b = base <= begin ? 0 : static_cast<int64_t>((base - begin) / sizeof(T));
      const int64_t e = stop >= end ? n : static_cast<int64_t>((stop - begin) / sizeof(T));
      if (run < b) fn(run, b);
      run = e;
    }
    base = stop;
  }
  if (run < n) fn(run, n);
}

// p[begin, end) were just compared equal to value: marks the whole pages inside clean.
template <typename T>
void NoteEqual(T* p, int64_t begin, int64_t end, T value) {
  if (!Enabled() || end <= begin) return;
  const size_t page = PageBytes();
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p + begin) + page - 1) & ~(uintptr_t{page} - 1);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(p + end) & ~(uintptr_t{page} - 1);
  if (hi > lo) MarkClean(reinterpret_cast<void*>(lo), reinterpret_cast<void*>(hi), static_cast<int64_t>(value), sizeof(T));
}

// std::fill(first, last, value), skipping the cells of pages clean with value (they hold it).
template <typename T>
void TailFill(T* first, T* last, T value) {
  static_assert(std::is_integral<T>::value, "clean pages hold integer patterns");
  if (last <= first) return;
  if (!Enabled()) {
    std::fill(first, last, value);
    return;
  }
  uintptr_t lo = 0, hi = 0;
  const bool mark = Marking(&lo, &hi);
  ForEachUnknown(static_cast<const T*>(first), last - first, value, [&](int64_t b, int64_t e) {
    std::fill(first + b, first + e, value);
    const uintptr_t fb = reinterpret_cast<uintptr_t>(first + b), fe = reinterpret_cast<uintptr_t>(first + e);
    if (mark && (fe <= lo || fb >= hi)) NoteEqual(first, b, e, value);
  });
}

}  // namespace dspark::clean_pages
