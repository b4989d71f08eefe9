// Every SIMD path against the plain twins, in one process: the SSE4, AVX2 and AVX-512 builds of
// the kernels (Highway's per-target code; NEON on aarch64) forced in turn with ScopedIsa, each
// compared with its _ref twin. A path this CPU cannot run is reported as skipped, not passed. (The
// kernels.isa_* ctest entries run the whole kernel suite once per path through SHOAL_ISA as well.)
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../../src/shoal/kernels/linear_simd.h"
#include "kernel_test_util.h"
#include "shoal/kernels/elementwise.h"
#include "shoal/kernels/gemm.h"
#include "shoal/kernels/isa.h"
#include "shoal/kernels/optim_update.h"
#include "shoal/kernels/philox.h"
#include "shoal/kernels/select.h"

namespace shoal::kernels {
namespace isa_paths_test {

using testing::TestMat;

void bcast_gemm_matches_ref(RngStream& rng) {
  for (Index m : {1, 5, 6, 13, 96})
    for (Index n : {1, 4, 7, 8, 9, 15, 16, 17, 24, 33, 48, 85})
      for (Index k : {0, 1, 7, 32, 85})
        for (const detail::Epi epi : {detail::Epi::kStore, detail::Epi::kAccumulate,
                                      detail::Epi::kBias, detail::Epi::kBiasRelu}) {
          TestMat<float> a(m, k, 1, 1), b(k, n, 3, 0), c(m, n, 2, 1);
          a.fill_random(rng);
          b.fill_random(rng);
          c.fill_random(rng);
          std::vector<float> bias(static_cast<size_t>(n));
          for (auto& v : bias) v = rng.uniform(-1, 1);
          const float kGuard = 4321.0f;
          for (Index i = 0; i < m; ++i)
            for (Index j = n; j < c.view.ld; ++j) c.view.data[i * c.view.ld + j] = kGuard;
          TestMat<float> want = c;
          want.view.data = want.storage.data() + 1;
          const bool acc = epi == detail::Epi::kAccumulate;
          gemm_ref<float>(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.view.data, a.view.ld,
                          b.view.data, b.view.ld, acc ? 1.0f : 0.0f, want.view.data, want.view.ld);
          detail::bcast_gemm(m, n, k, a.view.data, a.view.ld, 1, b.view.data, b.view.ld,
                             c.view.data, c.view.ld, epi, bias.data());
          const float tol = 8.0f * static_cast<float>(k + 2) * testing::eps<float>() *
                            (std::sqrt(static_cast<float>(k)) + 1.0f);
          for (Index i = 0; i < m; ++i) {
            for (Index j = 0; j < n; ++j) {
              float e = want.view(i, j);
              if (epi == detail::Epi::kBias || epi == detail::Epi::kBiasRelu)
                e += bias[static_cast<size_t>(j)];
              if (epi == detail::Epi::kBiasRelu) e = e > 0.0f ? e : 0.0f;
              ASSERT_NEAR(c.view(i, j), e, tol * (2.0f + std::abs(e)))
                  << "m=" << m << " n=" << n << " k=" << k << " epi=" << int(epi);
            }
            for (Index j = n; j < c.view.ld; ++j)
              ASSERT_EQ(c.view.data[i * c.view.ld + j], kGuard) << "padding written";
          }
        }
}

void philox_matches_ref_bitwise(RngStream& rng) {
  for (int rep = 0; rep < 16; ++rep) {
    const uint64_t seed = (static_cast<uint64_t>(rng.next_u32()) << 32) | rng.next_u32();
    uint32_t ctr[4][kPhiloxLanes], out[4][kPhiloxLanes], ref[4][kPhiloxLanes];
    for (auto& word : ctr)
      for (auto& x : word) x = rng.next_u32();
    philox4x32_lanes(seed, ctr, out);
    philox4x32_lanes_ref(seed, ctr, ref);
    for (size_t w = 0; w < 4; ++w)
      for (size_t l = 0; l < kPhiloxLanes; ++l) ASSERT_EQ(out[w][l], ref[w][l]);
  }
}

void select_matches_ref(RngStream& rng) {
  for (Index n : {0, 1, 3, 4, 8, 15, 16, 17, 33, 100}) {
    std::vector<int32_t> keys(n), others(n), ctx(n);
    std::vector<float> labels(n);
    for (Index i = 0; i < n; ++i) {
      keys[i] = static_cast<int32_t>(rng.next_u32() % 20);
      others[i] = static_cast<int32_t>(rng.next_u32());
      ctx[i] = static_cast<int32_t>(rng.next_u32());
      labels[i] = rng.uniform(0, 1);
    }
    std::vector<int32_t> k1(n + 1), o1(n + 1), c1(n + 1), k2(n + 1), o2(n + 1), c2(n + 1);
    std::vector<float> l1(n + 1), l2(n + 1);
    const Index m1 = select_range(n, 5, 12, keys.data(), others.data(), ctx.data(), labels.data(),
                                  k1.data(), o1.data(), c1.data(), l1.data());
    const Index m2 = select_range_ref(n, 5, 12, keys.data(), others.data(), ctx.data(),
                                      labels.data(), k2.data(), o2.data(), c2.data(), l2.data());
    ASSERT_EQ(m1, m2) << "n=" << n;
    for (Index i = 0; i < m1; ++i) {
      ASSERT_EQ(k1[i], k2[i]);
      ASSERT_EQ(o1[i], o2[i]);
      ASSERT_EQ(c1[i], c2[i]);
      ASSERT_EQ(l1[i], l2[i]);
    }
  }
}

// The vector updates may contract a multiply and an add into an FMA where the twin rounds
// twice: a few ulps per step.
template <class T>
void optim_updates_match_ref(RngStream& rng) {
  const T tol = T(64) * testing::eps<T>();
  for (Index n : {1, 3, 7, 8, 9, 16, 17, 100}) {
    const auto fill = [&](std::vector<T>& v, float lo, float hi) {
      v.resize(static_cast<size_t>(n));
      for (auto& x : v) x = static_cast<T>(rng.uniform(lo, hi));
    };
    std::vector<T> p, g, m, v, w;
    fill(p, -1, 1);
    fill(g, -1, 1);
    fill(m, -0.1f, 0.1f);
    fill(v, 0, 0.01f);
    fill(w, 0, 0.01f);
    const AdamScalars<T> s{T(0.1),   T(0.999), T(0.001), T(0.01),
                           T(0.999), T(-0.01), T(1.2),   T(1e-8)};
    for (const AdamDecay decay : {AdamDecay::kNone, AdamDecay::kL2, AdamDecay::kDecoupled})
      for (bool ams : {false, true}) {
        auto p1 = p, m1 = m, v1 = v, w1 = w, p2 = p, m2 = m, v2 = v, w2 = w;
        adam_update<T>(decay, ams, n, p1.data(), g.data(), m1.data(), v1.data(), w1.data(), s);
        adam_update_ref<T>(decay, ams, n, p2.data(), g.data(), m2.data(), v2.data(), w2.data(), s);
        for (Index i = 0; i < n; ++i) {
          ASSERT_NEAR(p1[i], p2[i], tol) << "adam n=" << n << " i=" << i;
          ASSERT_NEAR(m1[i], m2[i], tol);
          ASSERT_NEAR(v1[i], v2[i], tol);
        }
      }
    for (int variant = 0; variant < 4; ++variant) {
      const SgdScalars<T> sgd{T(-0.1),          T(0.01),      T(0.9),      T(0.8),
                              variant % 2 == 1, variant == 2, variant == 3};
      auto p1 = p, b1 = m, p2 = p, b2 = m;
      sgd_update<T>(n, p1.data(), g.data(), b1.data(), sgd);
      sgd_update_ref<T>(n, p2.data(), g.data(), b2.data(), sgd);
      for (Index i = 0; i < n; ++i) ASSERT_NEAR(p1[i], p2[i], tol) << "sgd n=" << n;
    }
    auto p1 = p, m1 = m, v1 = v, p2 = p, m2 = m, v2 = v;
    sparse_adam_update<T>(n, p1.data(), g.data(), m1.data(), v1.data(), T(0.1), T(0.001), T(-0.01),
                          T(1e-8));
    sparse_adam_update_ref<T>(n, p2.data(), g.data(), m2.data(), v2.data(), T(0.1), T(0.001),
                              T(-0.01), T(1e-8));
    for (Index i = 0; i < n; ++i) ASSERT_NEAR(p1[i], p2[i], tol) << "sparse adam n=" << n;
  }
  // A whole sparse step: two tables of rows 9 and 3 wide, rows out of order, one table's
  // gradients by pointer; both formulas.
  const std::vector<int32_t> rows = {4, 0, 6, 2, 5, 1, 3};
  for (const bool dense : {false, true}) {
    std::vector<T> tabs[2][3], grads[2];
    const Index widths[2] = {9, 3};
    for (int j = 0; j < 2; ++j) {
      for (auto& t : tabs[j]) {
        t.resize(static_cast<size_t>(7 * widths[j]));
        for (auto& x : t) x = static_cast<T>(rng.uniform(0.001f, 0.1f));
      }
      grads[j].resize(static_cast<size_t>(7 * widths[j]));
      for (auto& x : grads[j]) x = static_cast<T>(rng.uniform(-1, 1));
    }
    std::vector<const T*> ptrs;
    for (Index k = 0; k < 7; ++k) ptrs.push_back(grads[1].data() + k * widths[1]);
    std::vector<T> want[2][3] = {{tabs[0][0], tabs[0][1], tabs[0][2]},
                                 {tabs[1][0], tabs[1][1], tabs[1][2]}};
    const auto tables = [&](std::vector<T>(&t)[2][3]) {
      return std::vector<SparseTable<T>>{
          {t[0][0].data(), t[0][1].data(), t[0][2].data(), grads[0].data(), nullptr, widths[0],
           widths[0]},
          {t[1][0].data(), t[1][1].data(), t[1][2].data(), nullptr, ptrs.data(), widths[1], 0}};
    };
    SparseStep<T> step;
    step.dense_eps = dense;
    step.adam = {T(0.1), T(0.999), T(0.001), T(0), T(1), T(-0.01), T(1.2), T(1e-8)};
    step.sparse = {T(0.1), T(0.001), T(-0.01), T(1e-8)};
    step.prefetch = !dense;
    const auto got_t = tables(tabs), want_t = tables(want);
    sparse_rows_update<T>(rows, got_t, step);
    sparse_rows_update_ref<T>(rows, want_t, step);
    for (int j = 0; j < 2; ++j)
      for (int q = 0; q < 3; ++q)
        for (size_t i = 0; i < tabs[j][q].size(); ++i)
          ASSERT_NEAR(tabs[j][q][i], want[j][q][i], tol) << "sparse rows " << j << " " << q;
  }
}

// Adds and selects only: the same bits on every path.
template <class T>
void elementwise_matches_ref_bitwise(RngStream& rng) {
  for (Index n : {0, 1, 3, 7, 8, 9, 16, 17, 31, 100}) {
    std::vector<T> y(static_cast<size_t>(n) + 1), dy(y.size()), a(y.size()), b(y.size());
    for (size_t i = 0; i < y.size(); ++i) {
      y[i] = static_cast<T>(rng.uniform(-1, 1));
      dy[i] = static_cast<T>(rng.uniform(-1, 1));
    }
    relu_mask<T>(n, y.data() + 1, dy.data() + 1, a.data() + 1);
    relu_mask_ref<T>(n, y.data() + 1, dy.data() + 1, b.data() + 1);
    for (Index i = 0; i < n; ++i) ASSERT_EQ(a[i + 1], b[i + 1]) << "relu_mask n=" << n;
    ASSERT_EQ(sum_lanes<T>(n, dy.data() + 1), sum_lanes_ref<T>(n, dy.data() + 1)) << n;
    for (bool relu : {false, true}) {
      TestMat<T> m1(3, n, 2, 1);
      m1.fill_random(rng);
      TestMat<T> m2 = m1;
      m2.view.data = m2.storage.data() + 1;
      bias_act_rows<T>(m1.view, n % 2 ? y.data() : nullptr, relu);
      bias_act_rows_ref<T>(m2.view, n % 2 ? y.data() : nullptr, relu);
      ASSERT_EQ(m1.storage, m2.storage) << "bias_act_rows n=" << n << " relu=" << relu;
    }
  }
}

void check_path(Isa isa) {
  if (!isa_supported(isa)) GTEST_SKIP() << "skipped: this CPU does not run " << isa_name(isa);
  ScopedIsa path(isa);
  ASSERT_EQ(active_isa(), isa);
  RngStream rng(48, static_cast<uint64_t>(isa));
  bcast_gemm_matches_ref(rng);
  philox_matches_ref_bitwise(rng);
  select_matches_ref(rng);
  optim_updates_match_ref<float>(rng);
  optim_updates_match_ref<double>(rng);
  elementwise_matches_ref_bitwise<float>(rng);
  elementwise_matches_ref_bitwise<double>(rng);
}

TEST(KernelPaths, Sse4MatchesRef) {
  check_path(Isa::kSse4);
}

TEST(KernelPaths, Avx2MatchesRef) {
  check_path(Isa::kAvx2);
}

TEST(KernelPaths, Avx512MatchesRef) {
  check_path(Isa::kAvx512);
}

TEST(KernelPaths, NeonMatchesRef) {
  check_path(Isa::kNeon);
}

}  // namespace isa_paths_test
}  // namespace shoal::kernels
