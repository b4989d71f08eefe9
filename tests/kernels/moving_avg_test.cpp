// The series decomposition against its _ref twin (bit for bit: both sum each window in the same
// order) over row lengths around the vector widths, windows shorter and longer than the row,
// padded and misaligned rows; and against hand-computed values with replicate padding.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <vector>

#include "kernel_test_util.h"
#include "shoal/kernels/moving_avg.h"

namespace shoal::kernels {
namespace moving_avg_test {

using testing::TestMat;

template <class T>
void check_against_ref() {
  RngStream rng(9, 2);
  for (Index l : {1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 96})
    for (Index k : {1, 3, 5, 25, 51})
      for (Index rows : {1, 3, 8, 11, 17})
        for (Index pad : {0, 5})
          for (Index offset : {0, 1}) {
            TestMat<T> x(rows, l, pad, offset), trend(rows, l, pad, offset + 1),
                season(rows, l, pad, 0), trend_ref(rows, l, 0, 0), season_ref(rows, l, 0, 0);
            x.fill_random(rng, T(-3), T(3));
            trend.fill(T(7));
            season.fill(T(7));
            series_decomp<T>(x.cview(), k, trend.view, season.view);
            series_decomp_ref<T>(x.cview(), k, trend_ref.view, season_ref.view);
            for (Index r = 0; r < rows; ++r)
              for (Index t = 0; t < l; ++t) {
                ASSERT_EQ(trend.view(r, t), trend_ref.view(r, t)) << fmt::format(
                    "{} L={} k={} rows={} pad={} off={} at ({}, {})",
                    testing::type_name(sizeof(T) == 8), l, k, rows, pad, offset, r, t);
                ASSERT_EQ(season.view(r, t), season_ref.view(r, t));
              }
            // Padding columns untouched.
            for (Index r = 0; r < rows; ++r)
              for (Index t = l; t < l + pad; ++t) ASSERT_EQ(trend.view.row(r)[t], T(7));
          }
}

TEST(MovingAvgKernels, DecompMatchesRefFloat) {
  check_against_ref<float>();
}
TEST(MovingAvgKernels, DecompMatchesRefDouble) {
  check_against_ref<double>();
}

TEST(MovingAvgKernels, ReplicatePaddingByHand) {
  // x = [1, 2, 4, 8], k = 3: padded [1, 1, 2, 4, 8, 8]; k = 7 > L: [1, 1, 1, 1, 2, 4, 8, 8, 8, 8].
  const std::vector<double> x = {1, 2, 4, 8};
  std::vector<double> trend(4), season(4);
  series_decomp<double>({x.data(), 1, 4, 4}, 3, {trend.data(), 1, 4, 4}, {season.data(), 1, 4, 4});
  const std::vector<double> want3 = {4.0 / 3, 7.0 / 3, 14.0 / 3, 20.0 / 3};
  for (size_t t = 0; t < 4; ++t) {
    EXPECT_DOUBLE_EQ(trend[t], want3[t]) << t;
    EXPECT_DOUBLE_EQ(season[t], x[t] - want3[t]) << t;
  }
  series_decomp<double>({x.data(), 1, 4, 4}, 7, {trend.data(), 1, 4, 4}, {season.data(), 1, 4, 4});
  const std::vector<double> want7 = {(4 + 2 + 4 + 8) / 7.0, (3 + 2 + 4 + 16) / 7.0,
                                     (2 + 2 + 4 + 24) / 7.0, (1 + 2 + 4 + 32) / 7.0};
  for (size_t t = 0; t < 4; ++t) EXPECT_DOUBLE_EQ(trend[t], want7[t]) << t;
}

}  // namespace moving_avg_test
}  // namespace shoal::kernels
