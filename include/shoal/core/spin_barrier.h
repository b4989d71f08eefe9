// Waiting inside one parallel region (ThreadPool::run) for the other threads of a step: a few
// microseconds apart, so a thread spins first, then yields the core (on a loaded machine the
// thread it waits for may be waiting for this very core).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace shoal {

// Returns once done() holds.
template <class Done>
void spin_until(Done done) {
  for (int spin = 0; !done(); ++spin) {
    if (spin < 4096) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
}

// A barrier for the `n` threads of a region, reusable region after region: each of them calls
// arrive_and_wait(n), which returns once all have.
class SpinBarrier {
 public:
  void arrive_and_wait(int n) {
    if (n == 1) return;
    const uint32_t phase = phase_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
      count_.store(0, std::memory_order_relaxed);
      phase_.store(phase + 1, std::memory_order_release);
      return;
    }
    spin_until([&] { return phase_.load(std::memory_order_acquire) != phase; });
  }

 private:
  alignas(64) std::atomic<int> count_{0};
  alignas(64) std::atomic<uint32_t> phase_{0};
};

}  // namespace shoal
