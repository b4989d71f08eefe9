#include "shoal/profile/clock.h"

#include <fstream>
#include <string>

namespace shoal::profile {

bool invariant_tsc() {
  static const bool ok = [] {
#if defined(__x86_64__)
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
      if (line.rfind("flags", 0) != 0) continue;
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
#endif
    return false;
  }();
  return ok;
}

namespace {

// Ticks per ns of the TSC against steady_clock over ~2 ms of spinning (once per process).
double calibrate_tsc() {
#if defined(__x86_64__)
  static const double ns_per_tick = [] {
    using C = std::chrono::steady_clock;
    const auto w0 = C::now();
    const uint64_t t0 = __rdtsc();
    auto w1 = w0;
    while (w1 - w0 < std::chrono::milliseconds(2)) w1 = C::now();
    const uint64_t t1 = __rdtsc();
    const double ns = std::chrono::duration<double, std::nano>(w1 - w0).count();
    return ns / static_cast<double>(t1 - t0);
  }();
  return ns_per_tick;
#else
  return 1.0;
#endif
}

}  // namespace

Clock::Clock() : tsc_(invariant_tsc()) {
  if (tsc_) ns_per_tick_ = calibrate_tsc();
}

void Clock::begin_session() {
  session_wall_ = std::chrono::steady_clock::now();
  session_ticks_ = now();
}

void Clock::end_session() {
  if (!tsc_) return;
  const auto w = std::chrono::steady_clock::now();
  const uint64_t t = now();
  const double ns = std::chrono::duration<double, std::nano>(w - session_wall_).count();
  if (ns >= 50e6 && t > session_ticks_) ns_per_tick_ = ns / static_cast<double>(t - session_ticks_);
}

}  // namespace shoal::profile
