// OpenBLAS as shoal loads it: the core type comes from the CPU's features (or the user's
// OPENBLAS_CORETYPE), never from OpenBLAS's table of CPU models alone, it runs on one thread,
// and a large GEMM through it runs at a fair fraction of the core's peak.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <strings.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "shoal/kernels/blas.h"
#include "shoal/kernels/gemm.h"
#include "shoal/kernels/peak.h"

namespace shoal::kernels {
namespace blas_test {

BlasCpuFeatures avx512(bool bf16) {
  BlasCpuFeatures f;
  f.avx2 = f.fma = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
  f.avx512_bf16 = bf16;
  return f;
}

TEST(BlasGemm, CoreTypeChosenFromFeatures) {
  EXPECT_STREQ(openblas_coretype_for(avx512(true)), "Cooperlake");
  EXPECT_STREQ(openblas_coretype_for(avx512(false)), "SkylakeX");
  BlasCpuFeatures no_dq = avx512(false);
  no_dq.avx512dq = false;  // Xeon Phi has F but not BW/VL/DQ, which SkylakeX's kernels use
  EXPECT_STREQ(openblas_coretype_for(no_dq), "Haswell");
  BlasCpuFeatures avx2;
  avx2.avx2 = avx2.fma = true;
  EXPECT_STREQ(openblas_coretype_for(avx2), "Haswell");
  avx2.fma = false;
  EXPECT_EQ(openblas_coretype_for(avx2), nullptr);
  EXPECT_EQ(openblas_coretype_for(BlasCpuFeatures{}), nullptr);
}

TEST(BlasGemm, CoreTypeAppliedAndReported) {
  const char* user = std::getenv("OPENBLAS_CORETYPE");
  const std::string user_value = user ? user : "";
  const BlasInfo& info = blas_info();
  ASSERT_TRUE(info.loaded) << info.error;
  EXPECT_EQ(info.threads, 1);
  // Loading puts the environment back as it was: children of this process see what it saw.
  const char* after = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(after != nullptr, user != nullptr);
  if (after != nullptr) {
    EXPECT_EQ(user_value, after);
  }
  const std::string line = describe_blas(info);
  EXPECT_NE(line.find("core " + info.core), std::string::npos) << line;
  if (info.source == BlasCoreSource::kPreloaded) GTEST_SKIP() << line;
  if (!user_value.empty()) {
    EXPECT_EQ(info.source, BlasCoreSource::kUser) << line;
    EXPECT_EQ(info.requested, user_value);
    return;
  }
  const char* want = openblas_coretype_wanted();
  if (want == nullptr) {
    EXPECT_EQ(info.source, BlasCoreSource::kOpenBlas) << line;
    return;
  }
  EXPECT_EQ(info.source, BlasCoreSource::kShoal) << line;
  EXPECT_EQ(info.requested, want);
  // What runs is what shoal asked for, so never one of OpenBLAS's generic fallbacks.
  EXPECT_EQ(strcasecmp(info.core.c_str(), want), 0) << line;
  EXPECT_NE(line.find("chosen by shoal"), std::string::npos) << line;
}

double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// A 1024³ float GEMM through the OpenBLAS backend must reach half of the core's measured FP32
// peak: OpenBLAS's generic SSE3 kernels, what a CPU missing from its table gets, reach about a
// quarter. Timed in this thread's CPU time, so that time slices lost to other work on a shared
// machine do not count, and the best of up to 40 runs.
TEST(BlasGemm, LargeGemmAtHalfOfPeak) {
  const BlasInfo& info = blas_info();
  ASSERT_TRUE(info.loaded) << info.error;
  // What is guarded is shoal's choice of kernels; a core type the user forces (the generic one
  // in tools/test_kernel_paths.sh) may be as slow as it is.
  if (info.source == BlasCoreSource::kUser)
    GTEST_SKIP() << "OPENBLAS_CORETYPE=" << info.requested << " set by the user";
  // After the load, so that OpenBLAS's idle workers have stopped spinning before the peak runs.
  // The peak of the path that runs: SHOAL_ISA=sse4 gives OpenBLAS SSE kernels too.
  const double peak = measure_peak_gflops(active_isa());
  constexpr Index kN = 1024;
  std::vector<float> a(kN * kN), b(kN * kN), c(kN * kN);
  for (Index i = 0; i < kN * kN; ++i) {
    a[static_cast<size_t>(i)] = static_cast<float>(i % 7) * 0.125f - 0.375f;
    b[static_cast<size_t>(i)] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  }
  const auto run = [&] {
    gemm<float>(GemmBackend::kBlas, Trans::kNo, Trans::kNo, kN, kN, kN, 1.0f, a.data(), kN,
                b.data(), kN, 0.0f, c.data(), kN);
  };
  run();  // warm-up: pages of c, OpenBLAS's buffers
  const double flops = 2.0 * kN * kN * kN;
  double best = 0, thread_total = 0, process_total = 0;
  int runs = 0;
  for (; runs < 40 && best < 0.5 * peak; ++runs) {
    const double p0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
    const double t0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    run();
    const double t = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
    process_total += cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - p0;
    thread_total += t;
    best = std::max(best, flops / t / 1e9);
  }
  const std::string what = fmt::format("{}: best {:.1f} GFLOP/s of {} runs, peak {:.1f} ({:.0f}%)",
                                       describe_blas(info), best, runs, peak, 100.0 * best / peak);
  RecordProperty("gemm_1024_gflops", fmt::format("{:.1f}", best));
  std::printf("%s\n", what.c_str());
  EXPECT_GE(best, 0.5 * peak) << what;
  // One thread: OpenBLAS's own workers would add their CPU time to the process's.
  EXPECT_LT(process_total, 1.25 * thread_total + 0.005) << what;
}

}  // namespace blas_test
}  // namespace shoal::kernels
