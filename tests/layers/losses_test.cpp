#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <vector>

#include "shoal/layers/losses.h"
#include "support/gradcheck.h"

namespace shoal {
namespace losses_test {

using layers::BceWithLogitsLoss;
using layers::HuberLoss;
using layers::LossKind;
using layers::LossWeights;
using layers::MaeLoss;
using layers::MseLoss;
using layers::PointLoss;

using Vec = std::vector<double>;

MatView<double> mat(Vec& v, Index rows) {
  return {v.data(), rows, static_cast<Index>(v.size()) / rows};
}

// ---- gradient checks -------------------------------------------------------------------

struct PointCase {
  LossKind kind;
  Index n, f;
  bool mask, weight, col;
};

void PrintTo(const PointCase& c, std::ostream* os) {
  const char* names[] = {"mae", "mse", "rmse", "mape", "smape", "mase", "huber", "quantile"};
  *os << names[static_cast<int>(c.kind)] << " n=" << c.n << " f=" << c.f << (c.mask ? " mask" : "")
      << (c.weight ? " weight" : "") << (c.col ? " col_weight" : "");
}

class PointLossGrad : public ::testing::TestWithParam<PointCase> {};

TEST_P(PointLossGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  const double delta = 1.0;
  const size_t size = static_cast<size_t>(c.n * c.f);
  Vec pred(size), target(size), dpred(size), mask(size), weight(size),
      col(static_cast<size_t>(c.f));
  testing::fill_uniform(pred.data(), c.n * c.f, 3, -2, 2);
  // Errors with |e| in [0.05, 2.95], never within 0.02 of 0 or of delta: away from the kinks
  // of MAE and Huber, so central differences are exact up to rounding.
  Vec u(size);
  testing::fill_uniform(u.data(), c.n * c.f, 4, 0, 1);
  for (size_t i = 0; i < size; ++i) {
    double e = 0.05 + 2.9 * u[i];
    if (std::abs(e - delta) < 0.02) e += 0.05;
    target[i] = pred[i] - (i % 3 == 1 ? -e : e);
  }
  testing::fill_uniform(mask.data(), c.n * c.f, 5, 0, 1);
  for (double& m : mask) m = m < 0.3 ? 0 : 1;
  mask[0] = 1;  // never all masked
  testing::fill_uniform(weight.data(), c.n * c.f, 6, 0.5, 2);
  testing::fill_uniform(col.data(), c.f, 7, 0.5, 2);

  LossWeights<double> w;
  if (c.mask) w.mask = mat(mask, c.n);
  if (c.weight) w.weight = mat(weight, c.n);
  if (c.col) w.col_weight = col.data();
  PointLoss<double> loss({.kind = c.kind, .delta = delta});
  double value = 0, dloss = 0;
  auto res = testing::gradcheck(
      {{"pred", pred.data(), dpred.data(), c.n * c.f, false}}, {{&value, &dloss, 1}},
      [&] { value = loss.forward(mat(pred, c.n), mat(target, c.n), w); },
      [&] { loss.backward(mat(pred, c.n), mat(target, c.n), mat(dpred, c.n), w, dloss); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  EXPECT_GT(value, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, PointLossGrad,
                         ::testing::Values(PointCase{LossKind::kMae, 1, 7, false, false, false},
                                           PointCase{LossKind::kMae, 3, 9, true, true, false},
                                           PointCase{LossKind::kMae, 2, 16, true, false, true},
                                           PointCase{LossKind::kMse, 1, 8, false, false, false},
                                           PointCase{LossKind::kMse, 3, 15, true, true, true},
                                           PointCase{LossKind::kMse, 2, 17, false, true, false},
                                           PointCase{LossKind::kHuber, 1, 17, false, false, false},
                                           PointCase{LossKind::kHuber, 2, 9, true, false, false},
                                           PointCase{LossKind::kHuber, 3, 16, true, true, true},
                                           PointCase{LossKind::kHuber, 4, 7, false, false, true}));

// Every point loss with a mask and a horizon weight on [B·H, N] (rows b·H + t), MASE with its
// insample factor, through forward / backward and through the trainers' chunk path.
struct FullCase {
  LossKind kind;
  Index b, h, n;
  bool mask, hw;
};

void PrintTo(const FullCase& c, std::ostream* os) {
  PrintTo(PointCase{c.kind, c.b * c.h, c.n, c.mask, false, false}, os);
  *os << " h=" << c.h << (c.hw ? " horizon_weight" : "");
}

class PointLossFullGrad : public ::testing::TestWithParam<FullCase> {};

TEST_P(PointLossFullGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  const Index rows = c.b * c.h;
  const size_t size = static_cast<size_t>(rows * c.n);
  Vec pred(size), target(size), dpred(size), mask(size), u(size), insample(size_t(c.b * 7 * c.n));
  // |ŷ| ≥ 0.2 (SMAPE's sign(ŷ)), |e| in [0.05, 2.95] and not within 0.02 of Huber's delta 1
  // or of 0 (the kinks of MAE, MAPE, MASE, Huber and the quantile loss).
  testing::fill_uniform(u.data(), Index(size), 3, 0, 1);
  for (size_t i = 0; i < size; ++i) pred[i] = (i % 2 == 0 ? 1 : -1) * (0.2 + 1.8 * u[i]);
  testing::fill_uniform(u.data(), Index(size), 4, 0, 1);
  for (size_t i = 0; i < size; ++i) {
    double e = 0.05 + 2.9 * u[i];
    if (std::abs(e - 1.0) < 0.02) e += 0.05;
    target[i] = pred[i] - (i % 3 == 1 ? -e : e);
  }
  testing::fill_uniform(mask.data(), Index(size), 5, 0, 1);
  for (double& m : mask) m = m < 0.3 ? 0 : 1;
  mask[0] = 1;
  testing::fill_uniform(insample.data(), Index(insample.size()), 6, -2, 2);
  Vec hw(size_t(c.h));
  testing::fill_uniform(hw.data(), c.h, 7, 0.25, 2);

  PointLoss<double> loss(
      {.kind = c.kind, .q = 0.3, .seasonality = 2, .horizon_weight = c.hw ? hw : Vec{}});
  loss.set_insample(insample.data(), c.b, 7, c.n);
  LossWeights<double> w;
  if (c.mask) w.mask = mat(mask, rows);
  double value = 0, dloss = 0;
  auto res = testing::gradcheck(
      {{"pred", pred.data(), dpred.data(), Index(size), false}}, {{&value, &dloss, 1}},
      [&] { value = loss.forward(mat(pred, rows), mat(target, rows), w); },
      [&] { loss.backward(mat(pred, rows), mat(target, rows), mat(dpred, rows), w, dloss); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  EXPECT_GT(value, 0.0);

  // The chunk path (one window at a time) gives the same value and gradient.
  value = loss.forward(mat(pred, rows), mat(target, rows), w);
  loss.backward(mat(pred, rows), mat(target, rows), mat(dpred, rows), w, 1.0);
  const double den = loss.denominator(w.mask, rows, c.n);
  Vec dc(size);
  double num = 0;
  for (Index b0 = 0; b0 < c.b; ++b0) {
    const ConstMat<double> m = c.mask ? w.mask.rows_block(b0 * c.h, c.h) : ConstMat<double>{};
    num += loss.chunk(ConstMat<double>(mat(pred, rows)).rows_block(b0 * c.h, c.h),
                      ConstMat<double>(mat(target, rows)).rows_block(b0 * c.h, c.h), m,
                      mat(dc, rows).rows_block(b0 * c.h, c.h), 1.0 / den);
  }
  EXPECT_NEAR(loss.finish(num / den), value, 1e-12 * std::max(1.0, value));
  const double g = loss.finish_grad(num / den);
  for (size_t i = 0; i < size; ++i) EXPECT_NEAR(g * dc[i], dpred[i], 1e-12) << i;
}

INSTANTIATE_TEST_SUITE_P(Kinds, PointLossFullGrad,
                         ::testing::Values(FullCase{LossKind::kMae, 3, 4, 2, true, true},
                                           FullCase{LossKind::kMse, 2, 5, 1, true, true},
                                           FullCase{LossKind::kRmse, 1, 7, 1, false, false},
                                           FullCase{LossKind::kRmse, 3, 4, 3, true, true},
                                           FullCase{LossKind::kMape, 2, 3, 5, false, true},
                                           FullCase{LossKind::kMape, 4, 4, 1, true, false},
                                           FullCase{LossKind::kSmape, 1, 9, 1, false, false},
                                           FullCase{LossKind::kSmape, 3, 4, 2, true, true},
                                           FullCase{LossKind::kMase, 2, 4, 1, false, false},
                                           FullCase{LossKind::kMase, 3, 5, 3, true, true},
                                           FullCase{LossKind::kHuber, 2, 6, 2, true, true},
                                           FullCase{LossKind::kQuantile, 1, 8, 1, false, false},
                                           FullCase{LossKind::kQuantile, 3, 4, 2, true, true}));

// A horizon weight is normalised by Σ W, as the mask: a constant weight changes nothing, and
// rows of one horizon step share theirs.
TEST(Losses, HorizonWeightIsNormalisedPerStep) {
  Vec pred = {1, 2, 3, 4}, target = {0, 0, 0, 0};  // [B = 2 · H = 2, 1]
  PointLoss<double> flat({.kind = LossKind::kMae});
  PointLoss<double> constant({.kind = LossKind::kMae, .horizon_weight = {3, 3}});
  PointLoss<double> steps({.kind = LossKind::kMae, .horizon_weight = {1, 3}});
  EXPECT_NEAR(flat.forward(mat(pred, 4), mat(target, 4)), 2.5, 1e-15);
  EXPECT_NEAR(constant.forward(mat(pred, 4), mat(target, 4)), 2.5, 1e-15);
  // (1·1 + 2·3 + 3·1 + 4·3) / (1 + 3 + 1 + 3) = 22 / 8
  EXPECT_NEAR(steps.forward(mat(pred, 4), mat(target, 4)), 22.0 / 8, 1e-15);
}

// e = ŷ − y = [2, −2, 0]: ℓ = [(1 − q)·2, q·2, 0], ℓ' = [1 − q, −q, ½ − q] (a tie splits).
TEST(Losses, QuantileByHand) {
  Vec pred = {2, -2, 1}, target = {0, 0, 1}, d(3);
  PointLoss<double> ql({.kind = LossKind::kQuantile, .q = 0.9});
  EXPECT_NEAR(ql.forward(mat(pred, 1), mat(target, 1)), (0.2 + 1.8) / 3, 1e-15);
  ql.backward(mat(pred, 1), mat(target, 1), mat(d, 1));
  EXPECT_NEAR(d[0], 0.1 / 3, 1e-15);
  EXPECT_NEAR(d[1], -0.9 / 3, 1e-15);
  EXPECT_NEAR(d[2], -0.4 / 3, 1e-15);
}

// y = 0 gives MAPE's 1/|y| = 0 (_divide_no_nan), ŷ = y = 0 gives SMAPE's 0/0 = 0.
TEST(Losses, PercentageLossesDropZeroDenominators) {
  Vec pred = {1, 0}, target = {0, 0}, d(2, 7.0);
  for (auto kind : {LossKind::kMape, LossKind::kSmape}) {
    PointLoss<double> loss({.kind = kind});
    const double v = loss.forward(mat(pred, 1), mat(target, 1));
    loss.backward(mat(pred, 1), mat(target, 1), mat(d, 1));
    EXPECT_EQ(v, kind == LossKind::kMape ? 0.0 : 1.0);  // SMAPE: 2·1/1 over 2 elements
    EXPECT_EQ(d[1], 0.0);
  }
}

TEST(Losses, RejectsBadParameters) {
  EXPECT_THROW(PointLoss<float>({.kind = LossKind::kQuantile, .q = 1.0}), Error);
  EXPECT_THROW(PointLoss<float>({.kind = LossKind::kQuantile, .q = 0.0}), Error);
  EXPECT_THROW(PointLoss<float>({.kind = LossKind::kMase, .seasonality = 0}), Error);
}

struct BceCase {
  Index n, f;
  bool weight;
};

void PrintTo(const BceCase& c, std::ostream* os) {
  *os << "n=" << c.n << " f=" << c.f << (c.weight ? " weight" : "");
}

class BceGrad : public ::testing::TestWithParam<BceCase> {};

TEST_P(BceGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  const size_t size = static_cast<size_t>(c.n * c.f);
  Vec z(size), y(size), dz(size), w(size);
  testing::fill_uniform(z.data(), c.n * c.f, 3, -4, 4);
  testing::fill_uniform(y.data(), c.n * c.f, 4, 0, 1);  // soft targets are legal
  testing::fill_uniform(w.data(), c.n * c.f, 5, 0.5, 2);
  ConstMat<double> wv = c.weight ? ConstMat<double>(mat(w, c.n)) : ConstMat<double>{};
  BceWithLogitsLoss<double> loss;
  double value = 0, dloss = 0;
  auto res = testing::gradcheck(
      {{"logits", z.data(), dz.data(), c.n * c.f, false}}, {{&value, &dloss, 1}},
      [&] { value = loss.forward(mat(z, c.n), mat(y, c.n), wv); },
      [&] { loss.backward(mat(z, c.n), mat(y, c.n), mat(dz, c.n), wv, dloss); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BceGrad,
                         ::testing::Values(BceCase{1, 7, false}, BceCase{1, 8, true},
                                           BceCase{3, 9, false}, BceCase{2, 15, true},
                                           BceCase{2, 16, false}, BceCase{3, 17, true}));

// ---- values ------------------------------------------------------------------------------

// e = ŷ − y = [[-0.5, 0, 3], [0, -2, -0.5]], W = mask·weight = [[2, 1, 0], [1, 0.5, 1]]:
// Σ|e|W = 1 + 1 + 0.5 = 2.5, ΣW = 5.5.
TEST(Losses, MaskedWeightedMaeByHand) {
  Vec pred = {1, 2, 3, 4, 5, 6}, target = {1.5, 2, 0, 4, 7, 6.5};
  Vec mask = {1, 1, 0, 1, 1, 1}, weight = {2, 1, 1, 1, 0.5, 1}, d(6, 7.0);
  MaeLoss<double> mae;
  const LossWeights<double> w{.mask = mat(mask, 2), .weight = mat(weight, 2)};
  EXPECT_NEAR(mae.forward(mat(pred, 2), mat(target, 2), w), 2.5 / 5.5, 1e-15);
  mae.backward(mat(pred, 2), mat(target, 2), mat(d, 2), w);
  // Zero error gives gradient 0 (sign(0) = 0); a masked element gives 0.
  const Vec expected = {-2 / 5.5, 0, 0, 0, -0.5 / 5.5, -1 / 5.5};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(d[i], expected[i], 1e-15) << i;
}

TEST(Losses, MaeGradientIsZeroAtExactlyZeroError) {
  Vec pred = {0.25, -1}, target = {0.25, -1}, d = {9, 9};
  MaeLoss<double> mae;
  EXPECT_EQ(mae.forward(mat(pred, 1), mat(target, 1)), 0.0);
  mae.backward(mat(pred, 1), mat(target, 1), mat(d, 1));
  EXPECT_EQ(d[0], 0.0);
  EXPECT_EQ(d[1], 0.0);
}

// Column weights [1, 3] broadcast over rows: ΣW = 8, Σe²W = 1 + 12 + 9 + 48 = 70.
TEST(Losses, MseWithColumnWeightByHand) {
  Vec pred = {1, 2, 3, 4}, target = {0, 0, 0, 0}, col = {1, 3}, d(4);
  MseLoss<double> mse;
  const LossWeights<double> w{.col_weight = col.data()};
  EXPECT_NEAR(mse.forward(mat(pred, 2), mat(target, 2), w), 70.0 / 8, 1e-15);
  mse.backward(mat(pred, 2), mat(target, 2), mat(d, 2), w, 2.0);
  const Vec expected = {0.5, 3, 1.5, 6};  // dloss · 2e·W / 8
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(d[i], expected[i], 1e-15) << i;
}

// e = [0.5, -2, 1 (= delta: both branches give 0.5)] → ℓ = [0.125, 1.5, 0.5].
TEST(Losses, HuberByHand) {
  Vec pred = {0.5, -2, 1}, target = {0, 0, 0}, d(3);
  HuberLoss<double> huber;
  EXPECT_NEAR(huber.forward(mat(pred, 1), mat(target, 1)), 2.125 / 3, 1e-15);
  huber.backward(mat(pred, 1), mat(target, 1), mat(d, 1));
  EXPECT_NEAR(d[0], 0.5 / 3, 1e-15);
  EXPECT_NEAR(d[1], -1.0 / 3, 1e-15);
  EXPECT_NEAR(d[2], 1.0 / 3, 1e-15);
  HuberLoss<double> wide(2.0);  // |e| = 3 > delta 2: 2·(3 − 1) = 4
  Vec p3 = {3}, t3 = {0};
  EXPECT_NEAR(wide.forward(mat(p3, 1), mat(t3, 1)), 4.0, 1e-15);
}

TEST(Losses, ZeroDenominatorGivesZeroLossAndGradient) {
  Vec pred = {1, 2, 3}, target = {0, 0, 0}, mask = {0, 0, 0}, d = {7, 7, 7};
  for (auto kind : {LossKind::kMae, LossKind::kMse, LossKind::kHuber}) {
    PointLoss<double> loss({.kind = kind});
    const LossWeights<double> w{.mask = mat(mask, 1)};
    EXPECT_EQ(loss.forward(mat(pred, 1), mat(target, 1), w), 0.0);
    loss.backward(mat(pred, 1), mat(target, 1), mat(d, 1), w);
    for (double v : d) EXPECT_EQ(v, 0.0);
  }
}

TEST(Losses, NanInTheRatioGivesZeroLossAndGradient) {
  Vec pred = {1, std::numeric_limits<double>::quiet_NaN()}, target = {0, 0}, d = {7, 7};
  MseLoss<double> mse;
  EXPECT_EQ(mse.forward(mat(pred, 1), mat(target, 1)), 0.0);
  mse.backward(mat(pred, 1), mat(target, 1), mat(d, 1));
  EXPECT_EQ(d[0], 0.0);
  EXPECT_EQ(d[1], 0.0);
}

TEST(Losses, FloatMatchesDouble) {
  std::vector<float> pf = {0.1f, -0.7f, 2.5f, 1.0f}, tf = {0.3f, 0.2f, -1.0f, 1.5f},
                     mf = {1, 0, 1, 1};
  Vec pd(pf.begin(), pf.end()), td(tf.begin(), tf.end()), md(mf.begin(), mf.end());
  MseLoss<float> lf;
  MseLoss<double> ld;
  const double a = lf.forward({pf.data(), 2, 2}, {tf.data(), 2, 2}, {.mask = {mf.data(), 2, 2}});
  const double b = ld.forward(mat(pd, 2), mat(td, 2), {.mask = mat(md, 2)});
  EXPECT_NEAR(a, b, 1e-6);
}

// z = [0, 2, −3], y = [1, 0, 1]: mean of log 2, 2 + log(1 + e⁻²), 3 + log(1 + e⁻³).
TEST(Losses, BceWithLogitsKnownValues) {
  Vec z = {0, 2, -3}, y = {1, 0, 1}, d(3);
  BceWithLogitsLoss<double> bce;
  EXPECT_NEAR(bce.forward(mat(z, 1), mat(y, 1)), 1.9562208477255532, 1e-14);
  bce.backward(mat(z, 1), mat(y, 1), mat(d, 1));
  const Vec expected = {-1.0 / 6, 0.29359902599262744, -0.3175247089408111};
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(d[i], expected[i], 1e-14) << i;
  Vec w = {2, 0, 1};  // per-element weight, still divided by N·F
  EXPECT_NEAR(bce.forward(mat(z, 1), mat(y, 1), mat(w, 1)),
              (2 * std::log(2.0) + 3 + std::log1p(std::exp(-3.0))) / 3, 1e-14);
}

TEST(Losses, BceWithLogitsIsStableForHugeLogits) {
  std::vector<float> z = {1000, -1000, 1000, -1000}, y = {1, 0, 0, 1}, d(4);
  BceWithLogitsLoss<float> bce;
  EXPECT_NEAR(bce.forward({z.data(), 2, 2}, {y.data(), 2, 2}), 500.0, 1e-3);
  bce.backward({z.data(), 2, 2}, {y.data(), 2, 2}, {d.data(), 2, 2});
  EXPECT_EQ(d[0], 0.0f);
  EXPECT_EQ(d[1], 0.0f);
  EXPECT_FLOAT_EQ(d[2], 0.25f);
  EXPECT_FLOAT_EQ(d[3], -0.25f);
}

TEST(Losses, HuberRejectsNonPositiveDelta) {
  EXPECT_THROW(HuberLoss<float>(0.0), Error);
}

}  // namespace losses_test
}  // namespace shoal
