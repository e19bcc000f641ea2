// One background thread for the GPU executor: it computes a step's CPU reference while the
// GPU runs that step's implementations (the main thread waits on their timing events), so the
// check that follows the timed work does not wait for it. One job at a time; the owner calls
// Wait before the job's inputs go away.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace dspark::sim {

class ReferenceWorker {
 public:
  ReferenceWorker();
  ~ReferenceWorker();  // waits for a running job, then stops the thread
  ReferenceWorker(const ReferenceWorker&) = delete;
  ReferenceWorker& operator=(const ReferenceWorker&) = delete;

  // Runs `job` on the worker; the previous job must have been waited for.
  void Start(std::function<void()> job);
  // Until the job started last has finished; rethrows what it threw. No job: returns at once.
  void Wait();
  // The same, dropping what it threw (for unwinding paths).
  void WaitNoThrow() noexcept;

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace dspark::sim
