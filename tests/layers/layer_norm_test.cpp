#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <vector>

#include "shoal/layers/layer_norm.h"
#include "support/gradcheck.h"

namespace shoal {
namespace layer_norm_test {

using layers::LayerNorm;

template <class T>
struct LayerNormRig {
  LayerNorm<T> layer;
  Buffer<T> x, y, dy, dx;
  Arena arena;

  // n samples: [n, F], or [n·R, C] when the config's cols is C (R rows per sample).
  LayerNormRig(typename LayerNorm<T>::Config cfg, Index n) : layer(cfg) {
    const Index rows = n * layer.rows_per_sample(), c = layer.cols();
    Planner planner;
    layer.plan(planner, rows);
    planner.buffer(x, Region::kActivations, "x", {rows, c});
    planner.buffer(y, Region::kActivations, "y", {rows, c});
    planner.buffer(dy, Region::kActivationGrads, "dy", {rows, c});
    planner.buffer(dx, Region::kActivationGrads, "dx", {rows, c});
    arena = Arena(std::move(planner));
    RngStream rng(1, 2);
    layer.init(rng);
  }
};

struct LayerNormCase {
  Index n;
  Shape shape;
  bool affine;
  bool bias;
  Index cols = 0;  // C: a sample is F / C rows of the view
};

void PrintTo(const LayerNormCase& c, std::ostream* os) {
  *os << "n=" << c.n << " shape=" << c.shape.str() << (c.affine ? " affine" : " no-affine")
      << (c.bias ? " bias" : " no-bias") << " cols=" << c.cols;
}

class LayerNormGrad : public ::testing::TestWithParam<LayerNormCase> {};

TEST_P(LayerNormGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  LayerNormRig<double> rig(
      {.normalized_shape = c.shape, .elementwise_affine = c.affine, .bias = c.bias, .cols = c.cols},
      c.n);
  auto& layer = rig.layer;
  const Index f = layer.features();
  testing::fill_uniform(rig.x.view.data, rig.x.view.numel(), 3, -2, 3);
  // Non-trivial affine values so the check exercises them (init gives 1 and 0).
  if (layer.has_weight()) testing::fill_uniform(layer.p.weight.value.data, f, 4, 0.5, 1.5);
  if (layer.has_bias()) testing::fill_uniform(layer.p.bias.value.data, f, 5);

  Ctx ctx;
  std::vector<testing::GradVar> vars = {{"x", rig.x.view.data, rig.dx.view.data, c.n * f, false}};
  if (layer.has_weight())
    vars.push_back({"weight", layer.p.weight.value.data, layer.p.weight.grad.data, f, true});
  if (layer.has_bias())
    vars.push_back({"bias", layer.p.bias.value.data, layer.p.bias.grad.data, f, true});
  auto res = testing::gradcheck(
      vars, {{rig.y.view.data, rig.dy.view.data, c.n * f}},
      [&] { layer.forward(ctx, rig.x.mat(), rig.y.mat()); },
      [&] { layer.backward(ctx, rig.x.mat(), rig.y.mat(), rig.dy.mat(), rig.dx.mat()); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LayerNormGrad,
    ::testing::Values(LayerNormCase{1, {7}, true, true}, LayerNormCase{1, {1, 8}, true, true},
                      LayerNormCase{3, {9}, true, true}, LayerNormCase{2, {3, 5}, true, false},
                      LayerNormCase{4, {16}, false, false}, LayerNormCase{3, {17}, true, true},
                      LayerNormCase{2, {2, 3}, true, true},
                      // Windows of rows (TSMixerx's norm over (H, C)): one row, C around the
                      // 8-wide vector, every affine variant.
                      LayerNormCase{1, {1, 8}, true, true, 8},
                      LayerNormCase{2, {3, 5}, true, true, 5},
                      LayerNormCase{3, {2, 8}, true, false, 8},
                      LayerNormCase{2, {4, 9}, false, false, 9},
                      LayerNormCase{1, {3, 16}, true, true, 16}));

TEST(LayerNorm, KnownRowWithAffine) {
  LayerNormRig<double> rig({.normalized_shape = {4}}, 1);
  const double x[] = {1, 2, 3, 4};
  const double w[] = {2, 1, 0.5, -1};
  const double b[] = {0.1, 0, 0, 1};
  std::copy(x, x + 4, rig.x.view.data);
  std::copy(w, w + 4, rig.layer.p.weight.value.data);
  std::copy(b, b + 4, rig.layer.p.bias.value.data);
  rig.layer.forward(Ctx{}, rig.x.mat(), rig.y.mat());
  // mean 2.5, biased variance 1.25, eps 1e-5.
  const double expected[] = {-2.5832708399378537, -0.447211806656309, 0.2236059033281545,
                             -0.3416354199689269};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(rig.y.view.data[j], expected[j], 1e-12) << j;
  EXPECT_DOUBLE_EQ(rig.layer.mean.view.data[0], 2.5);
  EXPECT_NEAR(rig.layer.rstd.view.data[0], 1 / std::sqrt(1.25 + 1e-5), 1e-15);
}

TEST(LayerNorm, InitIsOneAndZeroAndNoAffineHasNoParams) {
  LayerNormRig<float> rig({.normalized_shape = {2, 3}}, 2);
  EXPECT_EQ(rig.layer.p.weight.value.shape, (Shape{2, 3}));
  for (float v : rig.layer.p.weight.value) EXPECT_EQ(v, 1.0f);
  for (float v : rig.layer.p.bias.value) EXPECT_EQ(v, 0.0f);
  LayerNorm<float> plain({.normalized_shape = {5}, .elementwise_affine = false});
  int count = 0;
  plain.for_each_param([&](auto, auto&) { ++count; });
  EXPECT_EQ(count, 0);
}

// A large common offset: E[x²] − E[x]² in float would lose every digit of the variance.
TEST(LayerNorm, FloatStatisticsSurviveLargeOffset) {
  LayerNormRig<float> rig({.normalized_shape = {9}}, 1);
  std::vector<double> xd(9);
  for (int j = 0; j < 9; ++j) {
    rig.x.view.data[j] = 10000.0f + 0.25f * static_cast<float>(j);
    xd[static_cast<size_t>(j)] = rig.x.view.data[j];
  }
  rig.layer.forward(Ctx{}, rig.x.mat(), rig.y.mat());
  double mu = 0, var = 0;
  for (double v : xd) mu += v / 9;
  for (double v : xd) var += (v - mu) * (v - mu) / 9;
  for (int j = 0; j < 9; ++j)
    EXPECT_NEAR(rig.y.view.data[j], (xd[static_cast<size_t>(j)] - mu) / std::sqrt(var + 1e-5), 1e-3)
        << j;
}

TEST(LayerNorm, StridedViewsMatchContiguous) {
  const Index n = 3, f = 7, ld = 10;
  LayerNormRig<double> rig({.normalized_shape = {f}}, n);
  testing::fill_uniform(rig.x.view.data, n * f, 8);
  testing::fill_uniform(rig.dy.view.data, n * f, 9);
  testing::fill_uniform(rig.layer.p.weight.value.data, f, 10);
  Ctx ctx;
  rig.layer.forward(ctx, rig.x.mat(), rig.y.mat());
  rig.layer.backward(ctx, rig.x.mat(), rig.y.mat(), rig.dy.mat(), rig.dx.mat());
  std::vector<double> wide_x(n * ld, 99.0), wide_y(n * ld), wide_dy(n * ld, 99.0), wide_dx(n * ld);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < f; ++j) {
      wide_x[static_cast<size_t>(i * ld + j + 2)] = rig.x.mat()(i, j);
      wide_dy[static_cast<size_t>(i * ld + j + 2)] = rig.dy.mat()(i, j);
    }
  MatView<double> xs(wide_x.data() + 2, n, f, ld), ys(wide_y.data() + 2, n, f, ld),
      dys(wide_dy.data() + 2, n, f, ld), dxs(wide_dx.data() + 2, n, f, ld);
  rig.layer.forward(ctx, xs, ys);
  rig.layer.backward(ctx, xs, ys, dys, dxs);
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < f; ++j) {
      EXPECT_DOUBLE_EQ(ys(i, j), rig.y.mat()(i, j));
      EXPECT_DOUBLE_EQ(dxs(i, j), rig.dx.mat()(i, j));
    }
}

// A window of R rows of a column block (ld > C) is the same sample as one contiguous row of
// R·C: the same statistics, outputs and gradients up to the order of the sums.
TEST(LayerNorm, WindowsOfStridedRowsMatchFlattenedRows) {
  const Index n = 3, r = 4, c = 9, ld = 13;
  LayerNormRig<double> flat({.normalized_shape = {r, c}}, n);
  LayerNorm<double> win({.normalized_shape = {r, c}, .cols = c});
  Planner planner;
  win.plan(planner, n * r);
  Arena arena(std::move(planner));
  testing::fill_uniform(flat.x.view.data, n * r * c, 8, 5, 7);
  testing::fill_uniform(flat.dy.view.data, n * r * c, 9);
  testing::fill_uniform(flat.layer.p.weight.value.data, r * c, 10);
  testing::fill_uniform(flat.layer.p.bias.value.data, r * c, 11);
  std::copy(flat.layer.p.weight.value.begin(), flat.layer.p.weight.value.end(),
            win.p.weight.value.data);
  std::copy(flat.layer.p.bias.value.begin(), flat.layer.p.bias.value.end(), win.p.bias.value.data);
  Ctx ctx;
  flat.layer.forward(ctx, flat.x.mat(), flat.y.mat());
  flat.layer.backward(ctx, flat.x.mat(), flat.y.mat(), flat.dy.mat(), flat.dx.mat());
  std::vector<double> wx(n * r * ld, 99.0), wy(n * r * ld, 99.0), wdy(n * r * ld, 99.0),
      wdx(n * r * ld, 99.0);
  MatView<double> xs(wx.data() + 2, n * r, c, ld), ys(wy.data() + 2, n * r, c, ld),
      dys(wdy.data() + 2, n * r, c, ld), dxs(wdx.data() + 2, n * r, c, ld);
  for (Index i = 0; i < n * r; ++i)
    for (Index j = 0; j < c; ++j) {
      xs(i, j) = flat.x.view.data[i * c + j];
      dys(i, j) = flat.dy.view.data[i * c + j];
    }
  std::fill(win.p.weight.grad.begin(), win.p.weight.grad.end(), 0.0);
  std::fill(win.p.bias.grad.begin(), win.p.bias.grad.end(), 0.0);
  win.forward(ctx, xs, ys);
  win.backward(ctx, xs, ys, dys, dxs);
  for (Index s = 0; s < n; ++s) {
    EXPECT_NEAR(win.mean.view.data[s], flat.layer.mean.view.data[s], 1e-13);
    EXPECT_NEAR(win.rstd.view.data[s], flat.layer.rstd.view.data[s], 1e-12);
  }
  for (Index i = 0; i < n * r; ++i)
    for (Index j = 0; j < c; ++j) {
      EXPECT_NEAR(ys(i, j), flat.y.view.data[i * c + j], 1e-12);
      EXPECT_NEAR(dxs(i, j), flat.dx.view.data[i * c + j], 1e-12);
    }
  for (Index k = 0; k < r * c; ++k) {
    EXPECT_NEAR(win.p.weight.grad.data[k], flat.layer.p.weight.grad.data[k], 1e-12);
    EXPECT_NEAR(win.p.bias.grad.data[k], flat.layer.p.bias.grad.data[k], 1e-12);
  }
  for (Index i = 0; i < n * r; ++i)  // nothing outside the views
    for (Index j = 0; j < ld; ++j)
      if (j < 2 || j >= 2 + c) {
        const size_t e = static_cast<size_t>(i * ld + j);
        EXPECT_EQ(wy[e], 99.0);
        EXPECT_EQ(wdx[e], 99.0);
      }
}

// forward_residual is the add, then the plain forward on the sum.
TEST(LayerNorm, ResidualForwardIsAddThenNorm) {
  const Index n = 2, r = 3, c = 8;
  LayerNormRig<float> rig({.normalized_shape = {r, c}, .cols = c}, n);
  std::vector<float> a(n * r * c), res(n * r * c), s(n * r * c), y(n * r * c);
  testing::fill_uniform(a.data(), n * r * c, 1);
  testing::fill_uniform(res.data(), n * r * c, 2);
  testing::fill_uniform(rig.layer.p.weight.value.data, r * c, 3);
  Ctx ctx;
  rig.layer.forward_residual(
      ctx, ConstMat<float>(a.data(), n * r, c), ConstMat<float>(res.data(), n * r, c),
      MatView<float>(s.data(), n * r, c), MatView<float>(y.data(), n * r, c));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(s[i], a[i] + res[i]);
    rig.x.view.data[i] = a[i] + res[i];
  }
  rig.layer.forward(ctx, rig.x.mat(), rig.y.mat());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(y[i], rig.y.view.data[i]) << i;
}

TEST(LayerNorm, InputGradOverwritesParamGradsAccumulate) {
  LayerNormRig<double> rig({.normalized_shape = {8}}, 2);
  testing::fill_uniform(rig.x.view.data, 16, 11);
  testing::fill_uniform(rig.dy.view.data, 16, 12);
  Ctx ctx;
  rig.layer.forward(ctx, rig.x.mat(), rig.y.mat());
  rig.layer.backward(ctx, rig.x.mat(), rig.y.mat(), rig.dy.mat(), rig.dx.mat());
  std::vector<double> dx1(rig.dx.view.begin(), rig.dx.view.end());
  std::vector<double> dw1(rig.layer.p.weight.grad.begin(), rig.layer.p.weight.grad.end());
  std::vector<double> db1(rig.layer.p.bias.grad.begin(), rig.layer.p.bias.grad.end());
  rig.layer.backward(ctx, rig.x.mat(), rig.y.mat(), rig.dy.mat(), rig.dx.mat());
  for (size_t i = 0; i < dx1.size(); ++i) EXPECT_DOUBLE_EQ(rig.dx.view.data[i], dx1[i]);
  for (size_t i = 0; i < dw1.size(); ++i) {
    EXPECT_DOUBLE_EQ(rig.layer.p.weight.grad.data[i], 2 * dw1[i]);
    EXPECT_DOUBLE_EQ(rig.layer.p.bias.grad.data[i], 2 * db1[i]);
  }
}

TEST(LayerNorm, PlanRejectsEmptyShape) {
  LayerNorm<float> layer({.normalized_shape = {}});
  Planner planner;
  EXPECT_THROW(layer.plan(planner, 4), Error);
}

TEST(LayerNorm, PlanRejectsColsOtherThanFOrLastDimAndPartialWindows) {
  Planner planner;
  LayerNorm<float> odd_cols({.normalized_shape = {3, 4}, .cols = 6});
  EXPECT_THROW(odd_cols.plan(planner, 6), Error);
  LayerNorm<float> windows({.normalized_shape = {3, 4}, .cols = 4});
  EXPECT_THROW(windows.plan(planner, 7), Error);  // not a whole number of 3-row windows
}

}  // namespace layer_norm_test
}  // namespace shoal
