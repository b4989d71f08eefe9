// Clocks, the load average and a median: what benchmarks, the fleet's summaries and the CLI's
// reports measure with (one copy for all of them).
#pragma once

#include <stdlib.h>  // getloadavg (glibc)
#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace shoal {

// Seconds on the monotonic clock (only differences mean anything).
inline double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of the calling thread: time slices given to other processes on a shared machine do
// not count (they still evict caches, which does count).
inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// CPU time of the whole process (all threads).
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The 1-minute load average, or -1 where the system does not say.
inline double load_average_1m() {
  double l[3] = {0, 0, 0};
  return getloadavg(l, 3) > 0 ? l[0] : -1;
}

// The middle value (the mean of the two middle ones for an even count); T{} when empty.
template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : static_cast<T>((v[m - 1] + v[m]) / 2);
}

}  // namespace shoal
