// The series norm of iTransformer's use_norm (layers/series_norm.h): each (window, series)
// normalised by its own mean and biased deviation over the input steps, the forecast rows scaled
// back; denormalize's gradient by central differences in double.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "shoal/layers/series_norm.h"
#include "support/gradcheck.h"

namespace shoal {
namespace series_norm_test {

using layers::SeriesNorm;

constexpr Index kWindows = 2, kSteps = 6, kSeries = 3, kRows = 4;

TEST(SeriesNorm, NormalizesEachSeriesOfEachWindowAndScalesBack) {
  SeriesNorm<double> norm({.n_series = kSeries, .input_size = kSteps, .rows = kRows});
  Planner planner;
  norm.plan(planner, kWindows * kSteps);
  Arena arena(std::move(planner));
  std::vector<double> x(size_t(kWindows * kSteps * kSeries)), y(x.size());
  testing::fill_uniform(x.data(), Index(x.size()), 3, -2, 5);
  norm.normalize(ConstMat<double>(x.data(), kWindows * kSteps, kSeries),
                 MatView<double>(y.data(), kWindows * kSteps, kSeries));
  for (Index b = 0; b < kWindows; ++b)
    for (Index n = 0; n < kSeries; ++n) {
      double m = 0, v = 0;
      for (Index t = 0; t < kSteps; ++t) m += x[size_t((b * kSteps + t) * kSeries + n)];
      m /= kSteps;
      for (Index t = 0; t < kSteps; ++t) {
        const double d = x[size_t((b * kSteps + t) * kSeries + n)] - m;
        v += d * d;
      }
      const double s = std::sqrt(v / kSteps + 1e-5);
      for (Index t = 0; t < kSteps; ++t) {
        const size_t i = size_t((b * kSteps + t) * kSeries + n);
        EXPECT_NEAR(y[i], (x[i] - m) / s, 1e-13);
      }
      // Back: z · σ + μ, row by row of the R forecast rows.
      std::vector<double> z(size_t(kWindows * kRows * kSeries), 0.5), back(z.size());
      norm.denormalize(ConstMat<double>(z.data(), kWindows * kRows, kSeries),
                       MatView<double>(back.data(), kWindows * kRows, kSeries));
      for (Index r = 0; r < kRows; ++r)
        EXPECT_NEAR(back[size_t((b * kRows + r) * kSeries + n)], 0.5 * s + m, 1e-13);
    }
}

TEST(SeriesNorm, DenormalizeGradientMatchesCentralDifferences) {
  SeriesNorm<double> norm({.n_series = kSeries, .input_size = kSteps, .rows = kRows});
  Planner planner;
  norm.plan(planner, kWindows * kSteps);
  Arena arena(std::move(planner));
  std::vector<double> x(size_t(kWindows * kSteps * kSeries)), xn(x.size());
  testing::fill_uniform(x.data(), Index(x.size()), 3, -2, 5);
  norm.normalize(ConstMat<double>(x.data(), kWindows * kSteps, kSeries),
                 MatView<double>(xn.data(), kWindows * kSteps, kSeries));
  const Index n = kWindows * kRows * kSeries;
  std::vector<double> z(static_cast<size_t>(n)), y(z.size()), dy(z.size()), dz(z.size());
  testing::fill_uniform(z.data(), n, 4, -1, 1);
  const auto res = testing::gradcheck(
      {{"z", z.data(), dz.data(), n, false}}, {{y.data(), dy.data(), n}},
      [&] {
        norm.denormalize(ConstMat<double>(z.data(), kWindows * kRows, kSeries),
                         MatView<double>(y.data(), kWindows * kRows, kSeries));
      },
      [&] {
        norm.denormalize_backward(ConstMat<double>(dy.data(), kWindows * kRows, kSeries),
                                  MatView<double>(dz.data(), kWindows * kRows, kSeries));
      });
  EXPECT_LE(res.max_rel_error, 1e-8) << res.worst;
}

}  // namespace series_norm_test
}  // namespace shoal
