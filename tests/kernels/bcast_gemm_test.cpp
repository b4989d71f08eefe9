// The broadcast kernel behind the float Linear (src/shoal/kernels/linear_simd.cpp, on the
// path the process runs: see the kernels.isa_* ctest entries) against gemm_ref: both A layouts
// (row-major and transposed, as dx and dW use it), every tile height and panel width around
// 8/16/24, masked column tails, long k, load_c on and off, the bias/ReLU epilogues, and C's padding
// left untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../../src/shoal/kernels/linear_simd.h"
#include "kernel_test_util.h"
#include "shoal/kernels/gemm.h"

namespace shoal::kernels {
namespace bcast_gemm_test {

using testing::TestMat;

void check(Index m, Index n, Index k, bool a_transposed, bool load_c, Index pad, Index offset,
           RngStream& rng) {
  // A is [m, k] (a_rs = ld, a_ks = 1) or stored as Aᵀ [k, m] (a_rs = 1, a_ks = ld).
  TestMat<float> a(a_transposed ? k : m, a_transposed ? m : k, pad, offset);
  TestMat<float> b(k, n, pad, offset), c(m, n, pad, offset);
  a.fill_random(rng);
  b.fill_random(rng);
  if (load_c)
    c.fill_random(rng);
  else
    c.fill(std::numeric_limits<float>::quiet_NaN());  // must never be read
  const float kGuard = 12345.0f;
  for (Index i = 0; i < m; ++i)
    for (Index j = n; j < c.view.ld; ++j) c.view.data[i * c.view.ld + j] = kGuard;
  TestMat<float> want = c;
  want.view.data = want.storage.data() + offset;
  gemm_ref<float>(a_transposed ? Trans::kYes : Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.view.data,
                  a.view.ld, b.view.data, b.view.ld, load_c ? 1.0f : 0.0f, want.view.data,
                  want.view.ld);
  const Index a_rs = a_transposed ? 1 : a.view.ld, a_ks = a_transposed ? a.view.ld : 1;
  detail::bcast_gemm(m, n, k, a.view.data, a_rs, a_ks, b.view.data, b.view.ld, c.view.data,
                     c.view.ld, load_c);
  const float tol = 8.0f * static_cast<float>(k + 2) * testing::eps<float>() *
                    (std::sqrt(static_cast<float>(k)) + 1.0f);
  for (Index i = 0; i < m; ++i) {
    for (Index j = 0; j < n; ++j)
      ASSERT_NEAR(c.view(i, j), want.view(i, j), tol * (1.0f + std::abs(want.view(i, j))))
          << "at (" << i << "," << j << ") m=" << m << " n=" << n << " k=" << k
          << " aT=" << a_transposed << " load_c=" << load_c << " pad=" << pad;
    for (Index j = n; j < c.view.ld; ++j)
      ASSERT_EQ(c.view.data[i * c.view.ld + j], kGuard)
          << "padding written at (" << i << "," << j << ") m=" << m << " n=" << n;
  }
}

TEST(BcastGemm, MatchesReference) {
  RngStream rng(5, 6);
  for (bool a_t : {false, true})
    for (bool load_c : {false, true})
      for (Index pad : {0, 3})
        for (Index m : {1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 32, 33})
          for (Index n : {1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 33, 40, 41, 85})
            for (Index k : {0, 1, 5, 96}) check(m, n, k, a_t, load_c, pad, pad == 0 ? 0 : 1, rng);
}

// The fused epilogues: C = bias + A·B, and through ReLU, against gemm_ref plus the same
// epilogue; C is never read (NaN), its padding never written. Sizes 0, 1, odd, SIMD ± 1, strided.
TEST(BcastGemm, BiasAndReluEpilogues) {
  RngStream rng(9, 10);
  for (bool relu : {false, true})
    for (Index pad : {0, 3})
      for (Index m : {0, 1, 2, 5, 6, 7, 12, 13, 96})
        for (Index n : {0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 32, 85})
          for (Index k : {0, 1, 7, 16, 85}) {
            TestMat<float> a(m, k, pad, pad == 0 ? 0 : 1), b(k, n, pad, 0), c(m, n, pad, 1);
            a.fill_random(rng);
            b.fill_random(rng);
            std::vector<float> bias(static_cast<size_t>(n));
            for (auto& v : bias) v = rng.uniform(-1, 1);
            c.fill(std::numeric_limits<float>::quiet_NaN());
            const float kGuard = 777.0f;
            for (Index i = 0; i < m; ++i)
              for (Index j = n; j < n + pad; ++j) c.view.data[i * c.view.ld + j] = kGuard;
            TestMat<float> want(m, n, 0, 0);
            gemm_ref<float>(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.view.data, a.view.ld,
                            b.view.data, b.view.ld, 0.0f, want.view.data, want.view.ld);
            detail::bcast_gemm(m, n, k, a.view.data, a.view.ld, 1, b.view.data, b.view.ld,
                               c.view.data, c.view.ld,
                               relu ? detail::Epi::kBiasRelu : detail::Epi::kBias, bias.data());
            const float tol = 8.0f * static_cast<float>(k + 2) * testing::eps<float>() *
                              (std::sqrt(static_cast<float>(k)) + 1.0f);
            for (Index i = 0; i < m; ++i) {
              for (Index j = 0; j < n; ++j) {
                float e = want.view(i, j) + bias[static_cast<size_t>(j)];
                if (relu) e = e > 0.0f ? e : 0.0f;
                ASSERT_NEAR(c.view(i, j), e, tol * (2.0f + std::abs(e)))
                    << "at (" << i << "," << j << ") m=" << m << " n=" << n << " k=" << k
                    << " relu=" << relu << " pad=" << pad;
                if (relu) {
                  ASSERT_FALSE(std::signbit(c.view(i, j))) << "relu gave -0";
                }
              }
              for (Index j = n; j < n + pad; ++j)
                ASSERT_EQ(c.view.data[i * c.view.ld + j], kGuard) << "padding written";
            }
          }
}

TEST(BcastGemm, LongKAcrossPackChunks) {
  RngStream rng(7, 8);
  for (bool load_c : {false, true})
    for (Index n : {5, 13, 21, 24, 85})
      for (Index k : {127, 128, 129, 300}) check(7, n, k, true, load_c, 3, 1, rng);
}

}  // namespace bcast_gemm_test
}  // namespace shoal::kernels
