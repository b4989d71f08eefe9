#include "shoal/kernels/peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/core/thread_pool.h"

namespace shoal::kernels {

namespace {

using Clock = std::chrono::steady_clock;

volatile float g_sink;  // keeps the peak loop's results observable

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The widest FMA the build targets: the peak of the code shoal compiles to (x86-64-v3: ymm;
// a -march with AVX-512: zmm).
#if defined(__AVX512F__)
using PeakVec = __m512;
inline PeakVec peak_set1(float x) {
  return _mm512_set1_ps(x);
}
inline PeakVec peak_fma(PeakVec a, PeakVec b, PeakVec c) {
  return _mm512_fmadd_ps(a, b, c);
}
inline float peak_sum(PeakVec v) {
  // Not _mm512_reduce_add_ps: GCC 12 reports its "undefined" temporaries as uninitialized
  // (GCC bug 105593). The sum only keeps the loop observable.
  alignas(64) float out[16];
  _mm512_store_ps(out, v);
  return out[0] + out[15];
}
#else
using PeakVec = __m256;
inline PeakVec peak_set1(float x) {
  return _mm256_set1_ps(x);
}
inline PeakVec peak_fma(PeakVec a, PeakVec b, PeakVec c) {
  return _mm256_fmadd_ps(a, b, c);
}
inline float peak_sum(PeakVec v) {
  alignas(32) float out[8];
  _mm256_store_ps(out, v);
  return out[0] + out[7];
}
#endif
constexpr int kPeakLanes = sizeof(PeakVec) / sizeof(float);

// 12 chains of dependent FMAs: with 4-cycle latency and 2 FMA pipes, 8 chains saturate the
// core, 12 leave margin. The multiplier and addend come from memory at run time and the sums
// are stored to a volatile, so the compiler can neither fold nor drop the loop. The rate is
// taken per chunk of ~60 µs and the best chunk kept: on a shared machine a time slice lost to
// another process must not read as a slower core.
double fma_gflops_best_chunk(double seconds) {
  static volatile float seed[2] = {0.999999f, 1e-7f};
  const PeakVec mul = peak_set1(seed[0]), add = peak_set1(seed[1]);
  PeakVec acc[12];
  for (int c = 0; c < 12; ++c) acc[c] = peak_set1(static_cast<float>(c));
  constexpr long kInner = 1 << 15;
  double best = 0;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    for (long it = 0; it < kInner; ++it) {
      for (int c = 0; c < 12; ++c) acc[c] = peak_fma(acc[c], mul, add);
    }
    best = std::max(best,
                    static_cast<double>(kInner) * 12 * kPeakLanes * 2 / seconds_since(t0) * 1e-9);
  } while (seconds_since(start) < seconds);
  float sum = 0;
  for (int c = 0; c < 12; ++c) sum += peak_sum(acc[c]);
  g_sink = sum;
  return best;
}

}  // namespace

double measure_core_round_trip_ns(int cpu_a, int cpu_b, int round_trips) {
  SHOAL_CHECK(round_trips > 0, "round trips must be > 0, got {}", round_trips);
  struct alignas(64) Line {
    std::atomic<int> v{0};
  };
  Line ping, pong;
  std::atomic<bool> pinned_b{true};
  constexpr int kRounds = 9;
  std::thread partner([&] {
    if (!pin_current_thread(cpu_b)) pinned_b.store(false);
    for (int k = 1; k <= kRounds * round_trips; ++k) {
      while (ping.v.load(std::memory_order_acquire) != k) _mm_pause();
      pong.v.store(k, std::memory_order_release);
    }
  });
  std::vector<double> ns;
  {
    ScopedPin pin(cpu_a);
    int k = 0;
    for (int round = 0; round < kRounds; ++round) {
      const auto t0 = Clock::now();
      for (int i = 0; i < round_trips; ++i) {
        ping.v.store(++k, std::memory_order_release);
        while (pong.v.load(std::memory_order_acquire) != k) _mm_pause();
      }
      ns.push_back(seconds_since(t0) * 1e9 / round_trips);
    }
  }
  partner.join();
  SHOAL_CHECK(pinned_b.load(), "cannot pin a thread to CPU {}", cpu_b);
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

double measure_peak_gflops() {
  double best = 0;
  fma_gflops_best_chunk(0.05);  // let the clock ramp up
  for (int t = 0; t < 5; ++t) best = std::max(best, fma_gflops_best_chunk(0.2));
  return best;
}

}  // namespace shoal::kernels
