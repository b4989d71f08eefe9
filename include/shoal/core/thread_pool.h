// A fixed pool of worker threads, optionally pinned one per core. run(fn) calls fn(tid) on every
// thread (the caller is tid 0) and returns when all are done: a fork-join region with no
// allocation, no std::function and no OpenMP. Threads spin briefly and then sleep on a futex
// (std::atomic::wait), so an idle pool costs nothing and a busy loop of short steps does not
// pay a wake-up per step.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <string_view>
#include <thread>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal {

struct Range {
  Index begin = 0;
  Index end = 0;
  Index size() const { return end - begin; }
};

// The contiguous share of [0, n) for thread tid of nthreads. Chunk boundaries are multiples of
// `grain` (except the last), and the split depends only on (n, nthreads): deterministic.
Range split_range(Index n, int tid, int nthreads, Index grain = 1);

// CPUs this process may run on (sched_getaffinity), in ascending order.
std::vector<int> allowed_cpus();

// The threads an option asks for (0: every CPU this process may use), refused with an error
// naming `option` when negative or more than those CPUs: a data-parallel step's workers beyond
// the CPUs only wait on each other at its barriers, and tens of thousands of them exhaust the
// process's threads.
int checked_thread_count(int64_t requested, std::string_view option);
// Pins the calling thread to one CPU; returns false (and changes nothing) if not permitted.
bool pin_current_thread(int cpu);

// Pins the calling thread to one CPU for the object's lifetime, then gives the thread its
// previous mask back: a caller that does a share of the work itself (a fleet's worker 0) must
// not stay pinned afterwards (a Python interpreter, or the processes it spawns, which inherit
// the mask).
class ScopedPin {
 public:
  explicit ScopedPin(int cpu);
  ~ScopedPin();
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;

 private:
  cpu_set_t mask_;
  bool saved_ = false;
};

enum class Pinning : uint8_t {
  kNone,     // leave scheduling to the OS
  kWorkers,  // pin worker threads only; the caller keeps its affinity (library default)
  kAll,      // pin the caller too (CLI default: one stream per core)
};

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads, Pinning pinning = Pinning::kWorkers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(tid) for tid in [0, size()) and waits. The first exception thrown by any thread
  // is rethrown here after all threads finish. Not reentrant.
  template <class F>
  void run(F&& fn) {
    using Fn = std::remove_reference_t<F>;
    dispatch(const_cast<void*>(static_cast<const void*>(&fn)),
             [](void* f, int tid) { (*static_cast<Fn*>(f))(tid); });
  }

  // Number of threads that resolves "0 = all allowed CPUs".
  static int resolve(int requested);

 private:
  using Trampoline = void (*)(void*, int);
  void dispatch(void* fn, Trampoline call);
  void worker(int tid);
  void call_guarded(int tid);
  // Stops and joins the workers and gives a pinned caller its CPU mask back.
  void shut_down();

  int n_threads_;
  std::vector<std::thread> threads_;
  void* fn_ = nullptr;
  Trampoline call_ = nullptr;
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
};

}  // namespace shoal
