// gemm (every backend, every form) against gemm_ref over many shapes, leading dims,
// alignments and beta, in float and double.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "kernel_test_util.h"
#include "shoal/kernels/gemm.h"

namespace shoal::kernels {
namespace gemm_test {

using testing::TestMat;

struct GemmCase {
  Trans ta;
  Trans tb;
  GemmBackend backend;
  bool dbl;
  float beta;  // 0 (C holds NaN before the call) or 1
  float alpha;
  Index pad;     // ld = cols + pad for A, B and C
  Index offset;  // every pointer offset by this many elements
};

std::string case_name(const ::testing::TestParamInfo<GemmCase>& info) {
  const GemmCase& c = info.param;
  const char* be = c.backend == GemmBackend::kAuto   ? "auto"
                   : c.backend == GemmBackend::kXsmm ? "xsmm"
                                                     : "blas";
  return fmt::format("{}{}_{}_{}_beta{}{}_pad{}_off{}", c.ta == Trans::kYes ? 'T' : 'N',
                     c.tb == Trans::kYes ? 'T' : 'N', be, testing::type_name(c.dbl),
                     static_cast<int>(c.beta), c.alpha == 1.0f ? "" : "_alpha", c.pad, c.offset);
}

constexpr Index kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 33};

template <class T>
void check_gemm(const GemmCase& p) {
  RngStream rng(42, 7);
  for (Index m : kSizes)
    for (Index n : kSizes)
      for (Index k : kSizes) {
        const Index ar = p.ta == Trans::kNo ? m : k, ac = p.ta == Trans::kNo ? k : m;
        const Index br = p.tb == Trans::kNo ? k : n, bc = p.tb == Trans::kNo ? n : k;
        TestMat<T> a(ar, ac, p.pad, p.offset), b(br, bc, p.pad, p.offset);
        TestMat<T> c(m, n, p.pad, p.offset), c_ref(m, n, p.pad, p.offset);
        a.fill_random(rng);
        b.fill_random(rng);
        const T beta = static_cast<T>(p.beta), alpha = static_cast<T>(p.alpha);
        if (beta == T(0)) {
          c.fill(std::numeric_limits<T>::quiet_NaN());  // beta = 0 must not read C
        } else {
          c.fill_random(rng);
        }
        c_ref.storage = c.storage;
        gemm<T>(p.backend, p.ta, p.tb, m, n, k, alpha, a.view.data, a.view.ld, b.view.data,
                b.view.ld, beta, c.view.data, c.view.ld);
        gemm_ref<T>(p.ta, p.tb, m, n, k, alpha, a.view.data, a.view.ld, b.view.data, b.view.ld,
                    beta, c_ref.view.data, c_ref.view.ld);
        // |A|·|B| bounds the rounding of each entry.
        std::vector<T> abs_a(a.storage.size()), abs_b(b.storage.size());
        for (size_t i = 0; i < abs_a.size(); ++i) abs_a[i] = std::abs(a.storage[i]);
        for (size_t i = 0; i < abs_b.size(); ++i) abs_b[i] = std::abs(b.storage[i]);
        TestMat<T> bound(m, n, p.pad, p.offset);
        gemm_ref<T>(p.ta, p.tb, m, n, k, T(1), abs_a.data() + p.offset, a.view.ld,
                    abs_b.data() + p.offset, b.view.ld, T(0), bound.view.data, bound.view.ld);
        for (Index i = 0; i < m; ++i)
          for (Index j = 0; j < n; ++j) {
            const T got = c.view(i, j), want = c_ref.view(i, j);
            const T tol = testing::dot_tolerance<T>(
                k, std::abs(alpha) * bound.view(i, j) + std::abs(beta * want));
            ASSERT_TRUE(std::isfinite(got) && std::abs(got - want) <= tol)
                << "m=" << m << " n=" << n << " k=" << k << " at (" << i << "," << j << "): got "
                << got << " want " << want << " tol " << tol;
          }
        // Padding between rows and the guard element after C are untouched.
        for (size_t s = 0; s < c.storage.size(); ++s) {
          const Index e = static_cast<Index>(s) - p.offset;
          const bool inside = e >= 0 && m > 0 && e / c.view.ld < m && e % c.view.ld < n;
          if (!inside && !(std::isnan(c.storage[s]) && std::isnan(c_ref.storage[s]))) {
            ASSERT_EQ(c.storage[s], c_ref.storage[s])
                << "m=" << m << " n=" << n << " k=" << k << " wrote outside C at " << s;
          }
        }
      }
}

class GemmTest : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmTest, MatchesReference) {
  if (GetParam().dbl)
    check_gemm<double>(GetParam());
  else
    check_gemm<float>(GetParam());
}

std::vector<GemmCase> all_cases() {
  std::vector<GemmCase> cases;
  for (Trans ta : {Trans::kNo, Trans::kYes})
    for (Trans tb : {Trans::kNo, Trans::kYes})
      for (GemmBackend be : {GemmBackend::kAuto, GemmBackend::kXsmm, GemmBackend::kBlas})
        for (bool dbl : {false, true})
          for (float beta : {0.0f, 1.0f}) {
            cases.push_back({ta, tb, be, dbl, beta, 1.0f, 0, 0});
            cases.push_back({ta, tb, be, dbl, beta, 1.0f, 3, 1});
          }
  // alpha and beta outside libxsmm's {1} × {0, 1}: the fallback path.
  for (bool dbl : {false, true})
    cases.push_back({Trans::kNo, Trans::kYes, GemmBackend::kXsmm, dbl, 1.0f, 0.5f, 2, 1});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Forms, GemmTest, ::testing::ValuesIn(all_cases()), case_name);

// A large shape that kAuto sends to OpenBLAS, checked at a few entries against the reference.
// libxsmm's constructor sets OMP_PROC_BIND=TRUE for the whole process (and every process it
// starts); the backend takes it back out unless the environment came with it.
TEST(GemmBackend, LeavesNoOmpProcBindInTheEnvironment) {
  std::ifstream in("/proc/self/environ", std::ios::binary);
  for (std::string entry; std::getline(in, entry, '\0');)
    if (entry.rfind("OMP_PROC_BIND=", 0) == 0) GTEST_SKIP() << "the test's environment sets it";
  TestMat<float> a(8, 8, 0, 0), c(8, 8, 0, 0);
  gemm<float>(Trans::kNo, Trans::kNo, 8, 8, 8, 1.0f, a.view.data, 8, a.view.data, 8, 0.0f,
              c.view.data, 8);
  EXPECT_EQ(std::getenv("OMP_PROC_BIND"), nullptr);
}

TEST(GemmLarge, AutoMatchesReferenceAtLargeShape) {
  const Index m = 300, n = 260, k = 270;
  RngStream rng(1, 2);
  TestMat<float> a(m, k, 0, 0), b(n, k, 0, 0), c(m, n, 0, 0), c_ref(m, n, 0, 0);
  a.fill_random(rng);
  b.fill_random(rng);
  c.fill(std::nanf(""));
  gemm<float>(Trans::kNo, Trans::kYes, m, n, k, 1.0f, a.view.data, k, b.view.data, k, 0.0f,
              c.view.data, n);
  gemm_ref<float>(Trans::kNo, Trans::kYes, m, n, k, 1.0f, a.view.data, k, b.view.data, k, 0.0f,
                  c_ref.view.data, n);
  for (size_t i = 0; i < c.storage.size() - 1; ++i)
    ASSERT_NEAR(c.storage[i], c_ref.storage[i], 1e-3f) << "at " << i;
}

}  // namespace gemm_test
}  // namespace shoal::kernels
