#include "sim/exec/check_process.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/strings/str_format.h"
#include "sim/exec/check_group.h"

#if defined(__linux__)
#include <dirent.h>
#include <sched.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#define DSPARK_CHECK_PROCESS 1
#endif

namespace dspark::sim {

namespace {

// The shared memory: the header, then a step's inputs, then its results. Reserved, not
// committed: a step touches only the pages it writes (the largest step's, at most).
constexpr size_t kHeaderBytes = 4096;
constexpr size_t kInputBytes = size_t{1} << 30;
constexpr size_t kResultBytes = size_t{64} << 20;
constexpr size_t kSharedBytes = kHeaderBytes + kInputBytes + kResultBytes;

// How long a side polls before it sleeps on the futex: a step's check is tens of microseconds,
// a futex wake-up as much again on a small VM.
constexpr std::chrono::microseconds kSpinFor{200};

// Bounded byte streams over the shared memory; every value is plain data.
class Writer {
 public:
  Writer(unsigned char* p, size_t cap) : p_(p), cap_(cap) {}
  void Bytes(const void* src, size_t n) {
    if (overflow_ || n > cap_ - used_) {
      overflow_ = true;
      return;
    }
    if (n > 0) std::memcpy(p_ + used_, src, n);
    used_ += n;
  }
  template <typename T>
  void Put(const T& v) {
    static_assert(std::is_trivially_copyable<T>::value, "plain data only");
    Bytes(&v, sizeof(T));
  }
  template <typename T>
  void Vector(const std::vector<T>& v) {
    Put<uint64_t>(v.size());
    Bytes(v.data(), v.size() * sizeof(T));
  }
  void String(const std::string& s) {
    Put<uint64_t>(s.size());
    Bytes(s.data(), s.size());
  }
  size_t used() const { return used_; }
  bool overflow() const { return overflow_; }

 private:
  unsigned char* p_;
  size_t cap_, used_ = 0;
  bool overflow_ = false;
};

class Reader {
 public:
  Reader(const unsigned char* p, size_t size) : p_(p), size_(size) {}
  bool Bytes(void* dst, size_t n) {
    if (n > size_ - at_) return ok_ = false;
    if (n > 0) std::memcpy(dst, p_ + at_, n);
    at_ += n;
    return true;
  }
  template <typename T>
  T Get() {
    T v{};
    Bytes(&v, sizeof(T));
    return v;
  }
  template <typename T>
  void Vector(std::vector<T>* v) {
    const uint64_t n = Get<uint64_t>();
    if (!ok_ || n > (size_ - at_) / sizeof(T)) {
      ok_ = false;
      v->clear();
      return;
    }
    v->resize(n);
    Bytes(v->data(), n * sizeof(T));
  }
  std::string String() {
    const uint64_t n = Get<uint64_t>();
    if (!ok_ || n > size_ - at_) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(p_ + at_), n);
    at_ += n;
    return s;
  }
  bool ok() const { return ok_; }

 private:
  const unsigned char* p_;
  size_t size_, at_ = 0;
  bool ok_ = true;
};

void PutStatus(Writer& w, const absl::Status& s) {
  w.Put<int32_t>(static_cast<int32_t>(s.code()));
  w.String(std::string(s.message()));
}
absl::Status GetStatus(Reader& r) {
  const auto code = static_cast<absl::StatusCode>(r.Get<int32_t>());
  std::string message = r.String();
  return absl::Status(code, message);
}

void PutResult(Writer& w, const absl::StatusOr<SuiteRunResult>& result) {
  PutStatus(w, result.status());
  if (!result.ok()) return;
  w.Put(result->counters);
  w.Put<uint64_t>(result->mismatches.size());
  for (const FieldMismatch& m : result->mismatches) {
    w.String(m.builder);
    w.String(m.field);
    w.Put(m.index);
    w.Put(m.expected);
    w.Put(m.actual);
    w.Put(m.count);
    w.Put(m.kind);
  }
}
absl::StatusOr<SuiteRunResult> GetResult(Reader& r) {
  absl::Status s = GetStatus(r);
  if (!s.ok()) return s;
  SuiteRunResult result;
  result.counters = r.Get<OpCounters>();
  const uint64_t n = r.Get<uint64_t>();
  for (uint64_t i = 0; i < n && r.ok(); ++i) {
    FieldMismatch m;
    m.builder = r.String();
    m.field = r.String();
    m.index = r.Get<int64_t>();
    m.expected = r.Get<int64_t>();
    m.actual = r.Get<int64_t>();
    m.count = r.Get<int64_t>();
    m.kind = r.Get<MismatchKind>();
    result.mismatches.push_back(std::move(m));
  }
  return result;
}

// A step's inputs: BatchInputs' fields, and the arrays its pointers point into (a null pointer
// stays null).
template <typename T>
void PutArray(Writer& w, const std::vector<T>& v, const T* used) {
  w.Put<uint8_t>(used != nullptr);
  w.Vector(v);
}
template <typename T>
const T* GetArray(Reader& r, std::vector<T>* v) {
  const bool used = r.Get<uint8_t>() != 0;
  r.Vector(v);
  return used ? v->data() : nullptr;
}

struct StepCopy {
  std::vector<int32_t> qsl_device, qsl_host, seq_lens_device, seq_lens_host, block_table;
  std::vector<int64_t> slot_mapping;
};

void PutInputs(Writer& w, const BatchInputs& in, const StepArrays& a) {
  w.Put(in.sizes);
  w.Put<uint8_t>(in.fp8_prefill);
  w.Put<uint8_t>(in.causal);
  w.Put<uint8_t>(in.full_graph);
  w.Put<uint8_t>(in.adaptive);
  PutArray(w, a.qsl_device, in.device.query_start_loc);
  PutArray(w, a.seq_lens_device, in.device.seq_lens);
  PutArray(w, a.block_table, in.device.block_table);
  PutArray(w, a.slot_mapping, in.device.slot_mapping);
  PutArray(w, a.qsl_host, in.host.query_start_loc);
  PutArray(w, a.seq_lens_host, in.host.seq_lens);
}
BatchInputs GetInputs(Reader& r, StepCopy* c) {
  BatchInputs in;
  in.sizes = r.Get<BatchSizes>();
  in.fp8_prefill = r.Get<uint8_t>() != 0;
  in.causal = r.Get<uint8_t>() != 0;
  in.full_graph = r.Get<uint8_t>() != 0;
  in.adaptive = r.Get<uint8_t>() != 0;
  in.device.query_start_loc = GetArray(r, &c->qsl_device);
  in.device.seq_lens = GetArray(r, &c->seq_lens_device);
  in.device.block_table = GetArray(r, &c->block_table);
  in.device.slot_mapping = GetArray(r, &c->slot_mapping);
  in.host.query_start_loc = GetArray(r, &c->qsl_host);
  in.host.seq_lens = GetArray(r, &c->seq_lens_host);
  return in;
}

}  // namespace

struct CheckProcess::Shared {
  std::atomic<uint32_t> request{0};  // steps handed to the process (it waits for a change)
  std::atomic<uint32_t> reply{0};    // steps it answered (the run waits for it to reach request)
  std::atomic<uint32_t> quit{0};
  std::atomic<uint32_t> process_sleeping{0}, run_sleeping{0};  // a side asleep on the futex
  std::atomic<int64_t> cpu_us{0};  // the process's CPU time when it answered its last step
  uint64_t input_size = 0, result_size = 0;
  unsigned char* input() { return reinterpret_cast<unsigned char*>(this) + kHeaderBytes; }
  unsigned char* result() { return input() + kInputBytes; }
};

namespace {

// The fewest runnable tasks besides this one over five samples 2 ms apart (a task that runs for a
// moment is no load); 0 where /proc/stat cannot be read.
int32_t OtherRunnableTasks() {
  int32_t fewest = INT32_MAX;
  for (int sample = 0; sample < 5; ++sample) {
    if (sample > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::FILE* f = std::fopen("/proc/stat", "r");
    if (f == nullptr) return 0;
    char line[256];
    int running = -1;
    while (std::fgets(line, sizeof(line), f) != nullptr)
      if (std::sscanf(line, "procs_running %d", &running) == 1) break;
    std::fclose(f);
    if (running < 1) return 0;
    fewest = std::min(fewest, running - 1);
  }
  return fewest;
}

}  // namespace

int32_t CheckProcess::DefaultJobs() {
  int32_t cores = static_cast<int32_t>(std::thread::hardware_concurrency());
#if defined(__linux__)
  if (cpu_set_t set; sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
#endif
  if (cores < 2) return 1;
  return OtherRunnableTasks() <= cores - 2 ? 2 : 1;
}

CheckProcess::CheckProcess(std::vector<Impl> impls, Shared* shared, pid_t pid)
    : impls_(std::move(impls)), shared_(shared), pid_(pid) {}

#if defined(DSPARK_CHECK_PROCESS)

namespace {

uint32_t* Word(std::atomic<uint32_t>* a) { return reinterpret_cast<uint32_t*>(a); }

void Wake(std::atomic<uint32_t>* word, const std::atomic<uint32_t>& sleeping) {
  if (sleeping.load(std::memory_order_seq_cst) != 0)
    syscall(SYS_futex, Word(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Until done(): polls for kSpinFor, then sleeps on `word` (`sleeping` set meanwhile) for
// `timeout_ms` at a time; false if alive() says the other side is gone. A waker changes `word`
// first and then reads `sleeping` (both sequentially consistent), and the futex sleeps only while
// `word` still holds the value read before done() was checked: no wake-up is lost.
template <typename Done, typename Alive>
bool Await(std::atomic<uint32_t>* word, std::atomic<uint32_t>* sleeping, Done done, Alive alive, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + kSpinFor;
  for (uint32_t i = 1;; ++i) {
    if (done()) return true;
    if ((i & 63) == 0) {
      if (std::chrono::steady_clock::now() >= until) break;
      std::this_thread::yield();  // a process that shares this core goes first
    }
    CpuRelax();
  }
  while (true) {
    const uint32_t seen = word->load(std::memory_order_seq_cst);
    sleeping->store(1, std::memory_order_seq_cst);
    if (done()) {
      sleeping->store(0, std::memory_order_relaxed);
      return true;
    }
    const timespec ts{timeout_ms / 1000, static_cast<long>(timeout_ms % 1000) * 1000000L};
    syscall(SYS_futex, Word(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
    sleeping->store(0, std::memory_order_relaxed);
    if (done()) return true;
    if (!alive()) return false;
  }
}

int ThreadsOfThisProcess() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int n = 0;
  while (const dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

// The process: one CheckGroup, a step per request, until told to quit or the run is gone.
[[noreturn]] void ProcessMain(CheckProcess::Shared* sh, std::vector<Impl> impls, ModelConsts consts, bool dedup,
                              pid_t run) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != run) _exit(0);
  int code = 0;
  try {
    CheckGroup group(std::move(impls), consts, dedup);
    StepCopy copy;
    std::vector<absl::StatusOr<SuiteRunResult>> results;
    uint32_t seen = 0;
    while (true) {
      const bool asked = Await(
          &sh->request, &sh->process_sleeping, [&] { return sh->request.load(std::memory_order_acquire) != seen; },
          [&] { return getppid() == run; }, 1000);
      if (!asked) break;
      seen = sh->request.load(std::memory_order_acquire);
      if (sh->quit.load(std::memory_order_acquire) != 0) break;
      Reader r(sh->input(), sh->input_size);
      const BatchInputs in = GetInputs(r, &copy);
      absl::Status step = r.ok() ? group.Run(in, &results)
                                 : absl::InternalError("the check process could not read the step's inputs");
      Writer w(sh->result(), kResultBytes);
      PutStatus(w, step);
      if (step.ok())
        for (const auto& result : results) PutResult(w, result);
      if (w.overflow()) {
        w = Writer(sh->result(), kResultBytes);
        PutStatus(w, absl::ResourceExhaustedError(
                         absl::StrFormat("the check process's results exceed its %d bytes", kResultBytes)));
      }
      sh->result_size = w.used();
      sh->cpu_us.store(static_cast<int64_t>(static_cast<double>(std::clock()) * 1e6 / CLOCKS_PER_SEC),
                       std::memory_order_relaxed);
      sh->reply.store(seen, std::memory_order_seq_cst);
      Wake(&sh->reply, sh->run_sleeping);
    }
  } catch (...) {
    code = 3;  // the run reads it from the exit status
  }
  _exit(code);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckProcess>> CheckProcess::Start(std::vector<Impl> impls, ModelConsts consts,
                                                                 bool dedup) {
  static_assert(sizeof(Shared) <= kHeaderBytes, "the header outgrew its page");
  // fork copies only the calling thread: another thread's locks would stay held in the copy.
  if (const int threads = ThreadsOfThisProcess(); threads != 1)
    return absl::FailedPreconditionError(
        absl::StrFormat("this process runs %d threads; a second check process needs it to run one", threads));
  void* mem = mmap(nullptr, kSharedBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED)
    return absl::UnavailableError(absl::StrFormat("mmap of %d bytes of shared memory: %s", kSharedBytes,
                                                  std::strerror(errno)));
  Shared* shared = new (mem) Shared();
  const pid_t run = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    munmap(mem, kSharedBytes);
    return absl::UnavailableError(absl::StrFormat("fork: %s", std::strerror(err)));
  }
  if (pid == 0) ProcessMain(shared, impls, consts, dedup, run);
  return std::unique_ptr<CheckProcess>(new CheckProcess(std::move(impls), shared, pid));
}

CheckProcess::~CheckProcess() {
  if (!exited_) {
    shared_->quit.store(1, std::memory_order_seq_cst);
    shared_->request.fetch_add(1, std::memory_order_seq_cst);
    Wake(&shared_->request, shared_->process_sleeping);
    // It leaves after the step it may be in; one that does not within 10 s is killed.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= until) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  munmap(shared_, kSharedBytes);
}

double CheckProcess::cpu_s() const { return static_cast<double>(shared_->cpu_us.load(std::memory_order_relaxed)) * 1e-6; }

absl::Status CheckProcess::Ended(const char* while_doing) {
  int status = 0;
  const pid_t got = waitpid(pid_, &status, WNOHANG);
  if (got == 0) return absl::OkStatus();
  exited_ = true;
  std::string how = got < 0                ? std::string("could not be waited for")
                    : WIFSIGNALED(status) ? absl::StrFormat("was killed by signal %d", WTERMSIG(status))
                                          : absl::StrFormat("exited with status %d", WEXITSTATUS(status));
  return absl::InternalError(absl::StrFormat("the metadata check's process %d %s %s", pid_, how, while_doing));
}

absl::Status CheckProcess::Submit(const BatchInputs& in, const StepArrays& arrays) {
  if (exited_) return absl::InternalError("the metadata check's process has ended");
  Writer w(shared_->input(), kInputBytes);
  PutInputs(w, in, arrays);
  if (w.overflow())
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the step's arrays exceed the %d bytes the check's second process takes; run with --jobs 1", kInputBytes));
  shared_->input_size = w.used();
  shared_->request.fetch_add(1, std::memory_order_seq_cst);
  Wake(&shared_->request, shared_->process_sleeping);
  return absl::OkStatus();
}

absl::Status CheckProcess::Collect(std::vector<absl::StatusOr<SuiteRunResult>>* results) {
  const uint32_t want = shared_->request.load(std::memory_order_relaxed);
  absl::Status ended;
  const bool done = Await(
      &shared_->reply, &shared_->run_sleeping,
      [&] { return shared_->reply.load(std::memory_order_acquire) == want; },
      [&] {
        ended = Ended("during a step");
        return ended.ok();
      },
      50);
  if (!done) return ended;
  Reader r(shared_->result(), shared_->result_size);
  absl::Status step = GetStatus(r);
  if (!step.ok()) return step;
  results->clear();
  for (size_t i = 0; i < impls_.size() && r.ok(); ++i) results->push_back(GetResult(r));
  if (!r.ok()) return absl::InternalError("the metadata check's process sent results that could not be read");
  return absl::OkStatus();
}

#else  // not Linux: the executor checks every group itself

double CheckProcess::cpu_s() const { return 0; }
absl::StatusOr<std::unique_ptr<CheckProcess>> CheckProcess::Start(std::vector<Impl>, ModelConsts, bool) {
  return absl::UnimplementedError("a second check process needs Linux");
}
CheckProcess::~CheckProcess() = default;
absl::Status CheckProcess::Ended(const char*) { return absl::OkStatus(); }
absl::Status CheckProcess::Submit(const BatchInputs&, const StepArrays&) {
  return absl::UnimplementedError("a second check process needs Linux");
}
absl::Status CheckProcess::Collect(std::vector<absl::StatusOr<SuiteRunResult>>*) {
  return absl::UnimplementedError("a second check process needs Linux");
}

#endif

}  // namespace dspark::sim
