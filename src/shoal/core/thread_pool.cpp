#include "shoal/core/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <vector>

namespace shoal {
namespace {

// Waiting is spin, then yield, then sleep: spinning covers the gap between back-to-back
// training steps; yielding hands the core over when threads outnumber cores; sleeping on the
// futex keeps an idle pool free.
constexpr int kSpinPolls = 2048;
constexpr int kYieldPolls = kSpinPolls + 64;

inline void backoff(int polls) {
#if defined(__x86_64__)
  if (polls < kSpinPolls) {
    __builtin_ia32_pause();
    return;
  }
#endif
  (void)polls;
  sched_yield();
}

// A pool with Pinning::kAll pins the thread that builds it (that thread is worker 0). The
// caller's own mask comes back when the last such pool it built is destroyed, so a library
// caller (a Python interpreter, a Dask worker) is not left pinned to one CPU after a fit.
struct CallerPin {
  std::vector<const void*> pools;  // pinned pools built on this thread, still alive
  cpu_set_t mask;
  bool saved = false;
};
thread_local CallerPin t_caller_pin;

}  // namespace

Range split_range(Index n, int tid, int nthreads, Index grain) {
  const Index chunks = (n + grain - 1) / grain;
  const Index base = chunks / nthreads;
  const Index extra = chunks % nthreads;
  const Index first = tid * base + std::min<Index>(tid, extra);
  const Index count = base + (tid < extra ? 1 : 0);
  return {std::min(n, first * grain), std::min(n, (first + count) * grain)};
}

std::vector<int> allowed_cpus() {
  // Read once: a pool with Pinning::kAll pins its calling thread, and sched_getaffinity(0)
  // reads the calling thread's mask, so a later read would see one CPU (a second fleet run in
  // the same process then put every worker on it).
  static const std::vector<int> cpus = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> c;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) c.push_back(i);
    }
    if (c.empty()) c.push_back(0);
    return c;
  }();
  return cpus;
}

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

ScopedPin::ScopedPin(int cpu) {
  saved_ = pthread_getaffinity_np(pthread_self(), sizeof(mask_), &mask_) == 0;
  pin_current_thread(cpu);
}

ScopedPin::~ScopedPin() {
  if (saved_) pthread_setaffinity_np(pthread_self(), sizeof(mask_), &mask_);
}

int checked_thread_count(int64_t requested, std::string_view option) {
  const int64_t cpus = static_cast<int64_t>(allowed_cpus().size());
  if (requested < 0 || requested > cpus)
    throw Error(fmt::format("{} {} is not a thread count for this process, which may use {} CPUs",
                            option, requested, cpus),
                ErrorContext{.field = std::string(option),
                             .expected = fmt::format("0 (every CPU) to {}", cpus),
                             .actual = std::to_string(requested)});
  return requested == 0 ? static_cast<int>(cpus) : static_cast<int>(requested);
}

int ThreadPool::resolve(int requested) {
  SHOAL_CHECK(requested >= 0, "thread count must be >= 0 (0 = all cores), got {}", requested);
  return requested == 0 ? static_cast<int>(allowed_cpus().size()) : requested;
}

ThreadPool::ThreadPool(int n_threads, Pinning pinning) : n_threads_(resolve(n_threads)) {
  const std::vector<int> cpus = allowed_cpus();
  if (pinning == Pinning::kAll) {
    CallerPin& cp = t_caller_pin;
    if (cp.pools.empty())
      cp.saved = pthread_getaffinity_np(pthread_self(), sizeof(cp.mask), &cp.mask) == 0;
    cp.pools.push_back(this);
    pin_current_thread(cpus[0]);
  }
  threads_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int tid = 1; tid < n_threads_; ++tid) {
    try {
      threads_.emplace_back([this, tid, pinning, &cpus] {
        if (pinning != Pinning::kNone)
          pin_current_thread(cpus[static_cast<size_t>(tid) % cpus.size()]);
        worker(tid);
      });
    } catch (const std::system_error& e) {
      // The threads started so far are stopped and joined, so the error reaches the caller
      // instead of std::terminate from a joinable thread's destructor.
      const size_t started = threads_.size() + 1;
      shut_down();
      throw Error(
          fmt::format("cannot start {} threads (started {}): {}", n_threads_, started, e.what()));
    }
  }
  // Workers read `cpus` only before their first wait; make sure they are past it.
  run([](int) {});
}

ThreadPool::~ThreadPool() {
  shut_down();
}

void ThreadPool::shut_down() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
  CallerPin& cp = t_caller_pin;
  const auto it = std::find(cp.pools.begin(), cp.pools.end(), this);
  if (it == cp.pools.end()) return;  // not pinned, or destroyed on another thread
  cp.pools.erase(it);
  if (cp.pools.empty() && cp.saved)
    pthread_setaffinity_np(pthread_self(), sizeof(cp.mask), &cp.mask);
}

void ThreadPool::call_guarded(int tid) {
  try {
    call_(fn_, tid);
  } catch (...) {
    if (!failed_.exchange(true)) error_ = std::current_exception();
  }
}

void ThreadPool::dispatch(void* fn, Trampoline call) {
  fn_ = fn;
  call_ = call;
  failed_.store(false, std::memory_order_relaxed);
  if (n_threads_ > 1) {
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
  }
  call_guarded(0);
  if (n_threads_ > 1) {
    int spins = 0;
    int left;
    while ((left = pending_.load(std::memory_order_acquire)) != 0) {
      if (++spins < kYieldPolls)
        backoff(spins);
      else
        pending_.wait(left, std::memory_order_acquire);
    }
  }
  if (failed_.load(std::memory_order_acquire)) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void ThreadPool::worker(int tid) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    uint64_t g;
    while ((g = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kYieldPolls)
        backoff(spins);
      else
        generation_.wait(seen, std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    call_guarded(tid);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace shoal
