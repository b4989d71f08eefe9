// Elementwise and reduction kernels against their *_ref twins: sizes around the SIMD widths,
// misaligned pointers, strided matrices, float and double.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <cmath>

#include "kernel_test_util.h"
#include "shoal/kernels/elementwise.h"
#include "shoal/kernels/reduce.h"

namespace shoal::kernels {
namespace elementwise_reduce_test {

using testing::TestMat;

constexpr Index kLengths[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 257, 1000};

struct EwCase {
  bool dbl;
  Index offset;
};

std::string ew_name(const ::testing::TestParamInfo<EwCase>& info) {
  return fmt::format("{}_off{}", testing::type_name(info.param.dbl), info.param.offset);
}

template <class T>
std::vector<T> random_vec(RngStream& rng, Index n, Index offset) {
  std::vector<T> v(static_cast<size_t>(n + offset + 1));
  for (auto& e : v) e = static_cast<T>(rng.uniform(-3, 3));
  return v;
}

template <class T>
void expect_vec_near(const std::vector<T>& got, const std::vector<T>& want, T rel, const char* what,
                     Index n) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (T(1) + std::abs(want[i])))
        << what << " n=" << n << " at " << i;
}

template <class T>
void check_elementwise(Index off) {
  RngStream rng(5, 6);
  const T rel = 4 * testing::eps<T>();
  for (Index n : kLengths) {
    auto a = random_vec<T>(rng, n, off), b = random_vec<T>(rng, n, off);
    auto y = random_vec<T>(rng, n, off);
    auto run2 = [&](const char* what, auto fast, auto ref) {
      auto y1 = y, y2 = y;
      fast(n, a.data() + off, b.data() + off, y1.data() + off);
      ref(n, a.data() + off, b.data() + off, y2.data() + off);
      expect_vec_near(y1, y2, rel, what, n);
    };
    run2("add", add<T>, add_ref<T>);
    run2("mul", mul<T>, mul_ref<T>);
    run2("relu_backward", relu_backward<T>, relu_backward_ref<T>);
    run2("gelu_backward", gelu_backward<T>, gelu_backward_ref<T>);
    auto run1 = [&](const char* what, auto fast, auto ref) {
      auto y1 = y, y2 = y;
      fast(n, a.data() + off, y1.data() + off);
      ref(n, a.data() + off, y2.data() + off);
      expect_vec_near(y1, y2, rel, what, n);
    };
    run1("relu_forward", relu_forward<T>, relu_forward_ref<T>);
    run1("gelu_forward", gelu_forward<T>, gelu_forward_ref<T>);
    auto y1 = y, y2 = y;
    axpy<T>(n, T(0.7), a.data() + off, y1.data() + off);
    axpy_ref<T>(n, T(0.7), a.data() + off, y2.data() + off);
    expect_vec_near(y1, y2, rel, "axpy", n);
    scale<T>(n, T(-1.3), a.data() + off, y1.data() + off);
    scale_ref<T>(n, T(-1.3), a.data() + off, y2.data() + off);
    expect_vec_near(y1, y2, rel, "scale", n);
    // In place (y aliases a) is allowed.
    auto a1 = a, a2 = a;
    add<T>(n, a1.data() + off, b.data() + off, a1.data() + off);
    add_ref<T>(n, a2.data() + off, b.data() + off, a2.data() + off);
    expect_vec_near(a1, a2, rel, "add in place", n);
  }
}

template <class T>
void check_reduce(Index off) {
  RngStream rng(7, 8);
  for (Index n : kLengths) {
    auto a = random_vec<T>(rng, n, off), b = random_vec<T>(rng, n, off);
    // Sums of n terms of size ≤ 9 in different orders differ by at most ~n·eps·Σ|terms|.
    const T tol = T(2) * static_cast<T>(n + 2) * testing::eps<T>() * T(9) * static_cast<T>(n + 1);
    EXPECT_NEAR(sum<T>(n, a.data() + off), sum_ref<T>(n, a.data() + off), tol) << "sum n=" << n;
    EXPECT_NEAR(dot<T>(n, a.data() + off, b.data() + off),
                dot_ref<T>(n, a.data() + off, b.data() + off), tol)
        << "dot n=" << n;
  }
  for (Index rows : {0, 1, 7, 8, 9, 33})
    for (Index cols : {0, 1, 7, 8, 9, 15, 16, 17, 65})
      for (Index pad : {0, 3}) {
        TestMat<T> x(rows, cols, pad, off);
        x.fill_random(rng, T(-2), T(5));
        const T tol = T(4) * static_cast<T>(rows + cols + 2) * testing::eps<T>() * T(5) *
                      static_cast<T>(rows + cols + 1);
        for (bool acc : {false, true}) {
          std::vector<T> s1(static_cast<size_t>(cols), T(0.5)), s2 = s1;
          col_sums<T>(x.view, s1.data(), acc);
          col_sums_ref<T>(x.view, s2.data(), acc);
          for (Index c = 0; c < cols; ++c)
            ASSERT_NEAR(s1[size_t(c)], s2[size_t(c)], tol) << rows << "x" << cols << " col " << c;
        }
        const auto nr = static_cast<size_t>(rows);
        std::vector<T> m1(nr), v1(nr), m2(nr), v2(nr);
        row_mean_var<T>(x.view, m1.data(), v1.data());
        row_mean_var_ref<T>(x.view, m2.data(), v2.data());
        for (Index r = 0; r < rows; ++r) {
          ASSERT_NEAR(m1[size_t(r)], m2[size_t(r)], tol) << rows << "x" << cols << " mean " << r;
          ASSERT_NEAR(v1[size_t(r)], v2[size_t(r)], tol) << rows << "x" << cols << " var " << r;
        }
      }
}

class ElementwiseTest : public ::testing::TestWithParam<EwCase> {};

TEST_P(ElementwiseTest, MatchesReference) {
  if (GetParam().dbl)
    check_elementwise<double>(GetParam().offset);
  else
    check_elementwise<float>(GetParam().offset);
}

TEST_P(ElementwiseTest, ReductionsMatchReference) {
  if (GetParam().dbl)
    check_reduce<double>(GetParam().offset);
  else
    check_reduce<float>(GetParam().offset);
}

INSTANTIATE_TEST_SUITE_P(Types, ElementwiseTest,
                         ::testing::Values(EwCase{false, 0}, EwCase{false, 1}, EwCase{true, 0},
                                           EwCase{true, 1}),
                         ew_name);

TEST(ReduceKnownValues, MeanVarAndSums) {
  const float x[] = {1, 2, 3, 4, 10, 10, 10, 10};
  float mean[2], var[2];
  row_mean_var<float>(ConstMat<float>(x, 2, 4), mean, var);
  EXPECT_FLOAT_EQ(mean[0], 2.5f);
  EXPECT_FLOAT_EQ(var[0], 1.25f);
  EXPECT_FLOAT_EQ(mean[1], 10.0f);
  EXPECT_FLOAT_EQ(var[1], 0.0f);
  float s[4];
  col_sums<float>(ConstMat<float>(x, 2, 4), s, false);
  EXPECT_FLOAT_EQ(s[0], 11.0f);
  EXPECT_FLOAT_EQ(s[3], 14.0f);
  EXPECT_FLOAT_EQ(sum<float>(8, x), 50.0f);
  EXPECT_FLOAT_EQ(dot<float>(4, x, x + 4), 100.0f);
}

}  // namespace elementwise_reduce_test
}  // namespace shoal::kernels
