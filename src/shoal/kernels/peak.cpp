#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/peak.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/core/thread_pool.h"
#include "shoal/kernels/isa.h"
#include "shoal/kernels/peak.h"

#if HWY_ONCE
namespace shoal::kernels {
namespace {

// The spin-wait hint: PAUSE (SSE2, in every x86-64 baseline) or Arm's YIELD.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace
}  // namespace shoal::kernels
#endif  // HWY_ONCE

// The FMA loop is compiled per target: xmm on SSE4 (which has no FMA: a multiply and an add,
// counted as 2 FLOPs as an FMA is), ymm on AVX2, zmm on AVX-512.
HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// 12 chains of dependent FMAs: with 4-cycle latency and 2 FMA pipes, 8 chains saturate the
// core, 12 leave margin. The multiplier and addend come from memory at run time and the sums
// are stored to a volatile, so the compiler can neither fold nor drop the loop. The rate is
// taken per chunk of ~60 µs and the best chunk kept: on a shared machine a time slice lost to
// another process must not read as a slower core.
double fma_gflops_best_chunk_impl(double seconds) {
  using Clock = std::chrono::steady_clock;
  static volatile float seed[2] = {0.999999f, 1e-7f};
  static volatile float sink;
  const hn::ScalableTag<float> d;
  const auto mul = hn::Set(d, seed[0]), add = hn::Set(d, seed[1]);
  hn::Vec<decltype(d)> acc[12];
  for (int c = 0; c < 12; ++c) acc[c] = hn::Set(d, static_cast<float>(c));
  constexpr long kInner = 1 << 15;
  const double lanes = static_cast<double>(hn::Lanes(d));
  const auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  double best = 0;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    for (long it = 0; it < kInner; ++it) {
#pragma GCC unroll 12
      for (int c = 0; c < 12; ++c) acc[c] = hn::MulAdd(acc[c], mul, add);
    }
    best = std::max(best, static_cast<double>(kInner) * 12 * lanes * 2 / since(t0) * 1e-9);
  } while (since(start) < seconds);
  float sum = 0;
  for (int c = 0; c < 12; ++c) sum += hn::GetLane(acc[c]);
  sink = sum;
  static_cast<void>(sink);  // a volatile read: the store above counts as used
  return best;
}

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The loop of a given path, called directly (not through the dispatch table): the roof is the
// widest path's whatever SHOAL_ISA narrowed the kernels to.
double fma_gflops_best_chunk(Isa isa, double seconds) {
  SHOAL_CHECK(isa_supported(isa), "this CPU does not run {}", isa_name(isa));
  switch (isa) {
#if HWY_TARGETS & HWY_AVX3
    case Isa::kAvx512:
      return N_AVX3::fma_gflops_best_chunk_impl(seconds);
#endif
#if HWY_TARGETS & HWY_AVX2
    case Isa::kAvx2:
      return N_AVX2::fma_gflops_best_chunk_impl(seconds);
#endif
#if HWY_TARGETS & HWY_NEON
    case Isa::kNeon:
      return N_NEON::fma_gflops_best_chunk_impl(seconds);
#endif
    default:
#if HWY_TARGETS & HWY_SSSE3
      return N_SSSE3::fma_gflops_best_chunk_impl(seconds);
#else
      return HWY_STATIC_DISPATCH(fma_gflops_best_chunk_impl)(seconds);
#endif
  }
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
      while (ping.v.load(std::memory_order_acquire) != k) spin_pause();
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
        while (pong.v.load(std::memory_order_acquire) != k) spin_pause();
      }
      ns.push_back(seconds_since(t0) * 1e9 / round_trips);
    }
  }
  partner.join();
  SHOAL_CHECK(pinned_b.load(), "cannot pin a thread to CPU {}", cpu_b);
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

double measure_peak_gflops(Isa isa) {
  double best = 0;
  fma_gflops_best_chunk(isa, 0.05);  // let the clock ramp up
  for (int t = 0; t < 5; ++t) best = std::max(best, fma_gflops_best_chunk(isa, 0.2));
  return best;
}

double measure_peak_gflops() {
  return measure_peak_gflops(widest_isa());
}

}  // namespace shoal::kernels
#endif  // HWY_ONCE
