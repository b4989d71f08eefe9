// The profiler's clock: the CPU's time-stamp counter where it is invariant (constant_tsc and
// nonstop_tsc, x86-64 Linux), else std::chrono::steady_clock in ns. Ticks are converted to ns
// with a rate calibrated against steady_clock (CLOCK_MONOTONIC): once per process over ~2 ms,
// then refined over each profiling session (start to stop) when that is long enough.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace shoal::profile {

class Clock {
 public:
  Clock();

  uint64_t now() const {
#if defined(__x86_64__)
    if (tsc_) [[likely]]
      return __rdtsc();
#endif
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  bool uses_tsc() const {
    return tsc_;
  }
  double ns_per_tick() const {
    return ns_per_tick_;
  }
  double to_ns(uint64_t ticks) const {
    return static_cast<double>(ticks) * ns_per_tick_;
  }

  // Marks the start and end of a session; end() refines ns_per_tick from the pair when the
  // session lasted at least 50 ms.
  void begin_session();
  void end_session();

 private:
  bool tsc_ = false;
  double ns_per_tick_ = 1.0;
  uint64_t session_ticks_ = 0;
  std::chrono::steady_clock::time_point session_wall_;
};

// True when /proc/cpuinfo lists constant_tsc and nonstop_tsc (cached).
bool invariant_tsc();

}  // namespace shoal::profile
