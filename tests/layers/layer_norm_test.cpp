#include <gtest/gtest.h>

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

  LayerNormRig(typename LayerNorm<T>::Config cfg, Index n) : layer(cfg) {
    const Index f = layer.features();
    Planner planner;
    layer.plan(planner, n);
    planner.buffer(x, Region::kActivations, "x", {n, f});
    planner.buffer(y, Region::kActivations, "y", {n, f});
    planner.buffer(dy, Region::kActivationGrads, "dy", {n, f});
    planner.buffer(dx, Region::kActivationGrads, "dx", {n, f});
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
};

void PrintTo(const LayerNormCase& c, std::ostream* os) {
  *os << "n=" << c.n << " shape=" << c.shape.str() << (c.affine ? " affine" : " no-affine")
      << (c.bias ? " bias" : " no-bias");
}

class LayerNormGrad : public ::testing::TestWithParam<LayerNormCase> {};

TEST_P(LayerNormGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  LayerNormRig<double> rig(
      {.normalized_shape = c.shape, .elementwise_affine = c.affine, .bias = c.bias}, c.n);
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
                      LayerNormCase{2, {2, 3}, true, true}));

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

}  // namespace layer_norm_test
}  // namespace shoal
