// ForecastLoss, the one loss interface of the forecasting trainer: a batch scored in chunks of
// windows (each chunk's Σ ℓ·W and gradient scaled by the whole batch's 1 / Σ W) gives the
// batch's loss and gradient exactly, for MQLoss and DistributionLoss as for the point losses;
// and the output and forecast-value counts of each kind.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/layers/forecast_loss.h"

namespace shoal::forecast_loss_test {

using layers::ForecastLoss;
using layers::LossConfig;
using layers::LossKind;

struct Batch {
  Index windows, h, n, m;
  std::vector<double> out, target, mask, loc, scale;
  Index rows() const { return windows * h; }
};

Batch make_batch(Index windows, Index h, Index n, Index m, uint64_t seed) {
  RngStream rng(seed, 3);
  Batch b{windows, h, n, m, {}, {}, {}, {}, {}};
  for (Index i = 0; i < b.rows() * n * m; ++i) b.out.push_back(rng.uniform(-1.5f, 1.5f));
  for (Index i = 0; i < b.rows() * n; ++i) {
    b.target.push_back(rng.uniform(-2.f, 4.f));
    b.mask.push_back(i % 7 == 3 ? 0.0 : 1.0);  // some padding
  }
  for (Index i = 0; i < windows * n; ++i) {
    b.loc.push_back(rng.uniform(-1.f, 1.f));
    b.scale.push_back(rng.uniform(0.5f, 2.f));
  }
  return b;
}

void check_chunks_equal_batch(const LossConfig& cfg, Index n) {
  ForecastLoss<double> loss(cfg);
  const Index h = 4, windows = 5, m = loss.outputs();
  const Batch b = make_batch(windows, h, n, m, 11);
  const ConstMat<double> out(b.out.data(), b.rows(), n * m), target(b.target.data(), b.rows(), n),
      mask(b.mask.data(), b.rows(), n), loc(b.loc.data(), windows, n),
      scale(b.scale.data(), windows, n);
  std::vector<double> whole(b.out.size()), chunked(b.out.size());
  const double l = loss.forward(out, target, mask, loc, scale);
  loss.backward(out, target, MatView<double>(whole.data(), b.rows(), n * m), mask, loc, scale);
  ASSERT_TRUE(std::isfinite(l) && l != 0);
  const double den = loss.denominator(mask, b.rows(), n);
  double num = 0;
  for (Index w0 = 0; w0 < windows; w0 += 2) {
    const Index k = std::min<Index>(2, windows - w0);
    num +=
        loss.chunk(out.rows_block(w0 * h, k * h), target.rows_block(w0 * h, k * h),
                   mask.rows_block(w0 * h, k * h), loc.rows_block(w0, k), scale.rows_block(w0, k),
                   MatView<double>(chunked.data() + w0 * h * n * m, k * h, n * m), 1.0 / den);
  }
  EXPECT_NEAR(loss.finish(num / den), l, 1e-12 * std::abs(l));
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(chunked[i], whole[i], 1e-14) << i;
}

TEST(ForecastLoss, ChunksOfWindowsGiveTheBatchsLossAndGradient) {
  const std::vector<double> hw = {1.0, 0.5, 2.0, 1.5};
  check_chunks_equal_batch({.kind = LossKind::kMultiQuantile, .quantiles = {0.5, 0.1, 0.9}}, 2);
  check_chunks_equal_batch(
      {.kind = LossKind::kMultiQuantile, .horizon_weight = hw, .quantiles = {0.5, 0.2}}, 1);
  check_chunks_equal_batch({.kind = LossKind::kNormal}, 3);
  check_chunks_equal_batch({.kind = LossKind::kStudentT, .horizon_weight = hw}, 2);
  check_chunks_equal_batch({.kind = LossKind::kHuber, .horizon_weight = hw}, 2);
}

TEST(ForecastLoss, OutputsAndForecastValuesPerKind) {
  EXPECT_EQ(layers::loss_outputs({.kind = LossKind::kMae}), 1);
  EXPECT_EQ(layers::forecast_values({.kind = LossKind::kQuantile}), 1);
  const LossConfig mq{.kind = LossKind::kMultiQuantile, .quantiles = {0.5, 0.05, 0.95}};
  EXPECT_EQ(layers::loss_outputs(mq), 3);
  EXPECT_EQ(layers::forecast_values(mq), 3);
  LossConfig t{.kind = LossKind::kStudentT, .quantiles = {0.5, 0.1, 0.9}};
  EXPECT_EQ(layers::loss_outputs(t), 3);
  EXPECT_EQ(layers::forecast_values(t), 4);  // the mean and three quantiles
  t.return_params = true;
  EXPECT_EQ(layers::forecast_values(t), 7);  // and (df, loc, scale)
  EXPECT_EQ(layers::loss_outputs({.kind = LossKind::kNormal}), 2);
  EXPECT_TRUE(ForecastLoss<float>(t).scores_raw_target());
  EXPECT_FALSE(ForecastLoss<float>(mq).scores_raw_target());
}

TEST(ForecastLoss, PoissonAndGmmChunksGiveTheBatchsLossAndGradient) {
  check_chunks_equal_batch({.kind = LossKind::kPoisson, .horizon_weight = {1.0, 0.5, 2.0, 1.5}}, 2);
  check_chunks_equal_batch({.kind = LossKind::kGmm, .n_components = 3}, 2);
  check_chunks_equal_batch({.kind = LossKind::kGmm, .n_components = 2, .weighted = true}, 3);
}

TEST(ForecastLoss, PoissonAndGmmOutputsAndForecastValues) {
  LossConfig p{.kind = LossKind::kPoisson, .quantiles = {0.5, 0.1, 0.9}, .return_params = true};
  EXPECT_EQ(layers::loss_outputs(p), 1);
  EXPECT_EQ(layers::forecast_values(p), 5);  // mean, three quantiles, rate
  LossConfig g{.kind = LossKind::kGmm, .quantiles = {0.5}, .n_components = 4};
  EXPECT_EQ(layers::loss_outputs(g), 8);
  EXPECT_EQ(layers::forecast_values(g), 2);
  g.weighted = g.return_params = true;
  EXPECT_EQ(layers::loss_outputs(g), 12);
  EXPECT_EQ(layers::forecast_values(g), 14);
  EXPECT_TRUE(ForecastLoss<float>(g).scores_raw_target());
  EXPECT_TRUE(ForecastLoss<float>(p).scores_raw_target());
}

TEST(ForecastLoss, NonFiniteLikelihoodIsReportedAndZeroesTheGradient) {
  ForecastLoss<double> loss({.kind = LossKind::kNormal});
  const std::vector<double> out = {0.0, std::nan("")}, y = {1.0}, loc = {0.0}, sc = {1.0};
  std::vector<double> d(2, 7.0);
  const ConstMat<double> o(out.data(), 1, 2), t(y.data(), 1, 1), l(loc.data(), 1, 1),
      s(sc.data(), 1, 1);
  EXPECT_EQ(loss.forward(o, t, {}, l, s), 0.0);
  EXPECT_FALSE(loss.numerator_finite());
  loss.backward(o, t, MatView<double>(d.data(), 1, 2), {}, l, s);
  EXPECT_EQ(d, (std::vector<double>{0.0, 0.0}));
}

}  // namespace shoal::forecast_loss_test
