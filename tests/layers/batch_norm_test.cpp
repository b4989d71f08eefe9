#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "shoal/layers/batch_norm.h"
#include "support/gradcheck.h"

namespace shoal {
namespace batch_norm_test {

using layers::BatchNorm1d;

template <class T>
struct BatchNormRig {
  BatchNorm1d<T> layer;
  Buffer<T> x, y, dy, dx;
  Arena arena;

  BatchNormRig(typename BatchNorm1d<T>::Config cfg, Index n) : layer(cfg) {
    const Index f = cfg.num_features;
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

struct BatchNormCase {
  Index n, f;
  bool training;
  bool affine;
};

void PrintTo(const BatchNormCase& c, std::ostream* os) {
  *os << "n=" << c.n << " f=" << c.f << (c.training ? " training" : " eval")
      << (c.affine ? " affine" : " no-affine");
}

std::string case_name(const ::testing::TestParamInfo<BatchNormCase>& info) {
  const auto& c = info.param;
  return std::string(c.training ? "train" : "eval") + "_n" + std::to_string(c.n) + "_f" +
         std::to_string(c.f) + (c.affine ? "" : "_noaffine");
}

class BatchNormGrad : public ::testing::TestWithParam<BatchNormCase> {};

// Training mode: each forward of the check also moves the running stats, but training output
// depends only on the batch statistics, so the repeated forwards see the same function.
TEST_P(BatchNormGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  BatchNormRig<double> rig({.num_features = c.f, .eps = 1e-3, .momentum = 0.01, .affine = c.affine},
                           c.n);
  auto& layer = rig.layer;
  testing::fill_uniform(rig.x.view.data, c.n * c.f, 3, -2, 3);
  if (c.affine) {
    testing::fill_uniform(layer.p.weight.value.data, c.f, 4, 0.5, 1.5);
    testing::fill_uniform(layer.p.bias.value.data, c.f, 5);
  }
  // Eval mode reads the running stats: make them non-trivial.
  testing::fill_uniform(layer.running_mean.view.data, c.f, 6);
  testing::fill_uniform(layer.running_var.view.data, c.f, 7, 0.5, 2);

  Ctx ctx;
  ctx.training = c.training;
  std::vector<testing::GradVar> vars = {{"x", rig.x.view.data, rig.dx.view.data, c.n * c.f, false}};
  if (c.affine) {
    vars.push_back({"weight", layer.p.weight.value.data, layer.p.weight.grad.data, c.f, true});
    vars.push_back({"bias", layer.p.bias.value.data, layer.p.bias.grad.data, c.f, true});
  }
  auto res = testing::gradcheck(
      vars, {{rig.y.view.data, rig.dy.view.data, c.n * c.f}},
      [&] { layer.forward(ctx, rig.x.mat(), rig.y.mat()); },
      [&] { layer.backward(ctx, rig.x.mat(), rig.y.mat(), rig.dy.mat(), rig.dx.mat()); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BatchNormGrad,
    ::testing::Values(BatchNormCase{2, 7, true, true}, BatchNormCase{3, 8, true, true},
                      BatchNormCase{5, 9, true, false}, BatchNormCase{4, 15, true, true},
                      BatchNormCase{3, 16, true, true}, BatchNormCase{2, 17, true, true},
                      BatchNormCase{1, 7, false, true}, BatchNormCase{3, 9, false, true},
                      BatchNormCase{2, 17, false, false}),
    case_name);

// Column 0 sees batches {1, 3} then {0, 4, 8}; momentum 0.1.
//   step 1: mean 2, unbiased var 2   → running_mean 0.2,  running_var 0.9·1 + 0.1·2 = 1.1
//   step 2: mean 4, unbiased var 16  → running_mean 0.58, running_var 0.99 + 1.6 = 2.59
TEST(BatchNorm, RunningStatsAfterTwoSteps) {
  BatchNormRig<double> rig({.num_features = 2}, 3);
  Ctx ctx;
  MatView<double> x = rig.x.mat(), y = rig.y.mat();
  x(0, 0) = 1, x(1, 0) = 3;
  x(0, 1) = 5, x(1, 1) = 5;  // constant column: variance 0
  rig.layer.forward(ctx, x.rows_block(0, 2), y.rows_block(0, 2));
  EXPECT_NEAR(y(0, 0), -1 / std::sqrt(1 + 1e-5), 1e-12);
  EXPECT_NEAR(y(1, 0), 1 / std::sqrt(1 + 1e-5), 1e-12);
  EXPECT_DOUBLE_EQ(y(0, 1), 0.0);
  EXPECT_NEAR(rig.layer.running_mean.view.data[0], 0.2, 1e-15);
  EXPECT_NEAR(rig.layer.running_var.view.data[0], 1.1, 1e-15);
  EXPECT_NEAR(rig.layer.running_mean.view.data[1], 0.5, 1e-15);
  EXPECT_NEAR(rig.layer.running_var.view.data[1], 0.9, 1e-15);

  x(0, 0) = 0, x(1, 0) = 4, x(2, 0) = 8;
  x(2, 1) = 5;
  rig.layer.forward(ctx, x, y);
  EXPECT_NEAR(rig.layer.running_mean.view.data[0], 0.58, 1e-14);
  EXPECT_NEAR(rig.layer.running_var.view.data[0], 2.59, 1e-14);

  // Eval uses the running stats, and does not move them.
  ctx.training = false;
  x(0, 0) = 1;
  rig.layer.forward(ctx, x.rows_block(0, 1), y.rows_block(0, 1));
  EXPECT_NEAR(y(0, 0), 0.2609747979086392, 1e-12);
  EXPECT_NEAR(rig.layer.running_mean.view.data[0], 0.58, 1e-14);
}

TEST(BatchNorm, TsmixerEpsAndMomentum) {
  BatchNormRig<float> rig({.num_features = 1, .eps = 1e-3, .momentum = 0.01}, 2);
  rig.x.view.data[0] = -1, rig.x.view.data[1] = 1;
  rig.layer.forward(Ctx{}, rig.x.mat(), rig.y.mat());
  EXPECT_NEAR(rig.y.view.data[1], 1 / std::sqrt(1 + 1e-3), 1e-6);
  EXPECT_NEAR(rig.layer.running_var.view.data[0], 0.99 + 0.01 * 2, 1e-6);
}

TEST(BatchNorm, SingleRowInTrainingThrowsLikePyTorch) {
  BatchNormRig<float> rig({.num_features = 3}, 2);
  Ctx ctx;
  try {
    rig.layer.forward(ctx, rig.x.mat().rows_block(0, 1), rig.y.mat().rows_block(0, 1));
    FAIL() << "expected shoal::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Expected more than 1 value per channel when training"),
              std::string::npos)
        << e.what();
  }
  ctx.training = false;  // eval with one row is fine
  EXPECT_NO_THROW(
      rig.layer.forward(ctx, rig.x.mat().rows_block(0, 1), rig.y.mat().rows_block(0, 1)));
}

TEST(BatchNorm, RunningStatsAreNamedBuffersNotParams) {
  BatchNorm1d<float> layer({.num_features = 4});
  Planner planner;
  planner.push_scope("bn.");
  layer.plan(planner, 8);
  planner.pop_scope();
  Arena arena(std::move(planner));
  RngStream rng(1, 2);
  layer.init(rng);
  for (float v : arena.find<float>("bn.running_mean")) EXPECT_EQ(v, 0.0f);
  for (float v : arena.find<float>("bn.running_var")) EXPECT_EQ(v, 1.0f);
  EXPECT_EQ(arena.entry("bn.running_var")->region, Region::kState);
  std::vector<std::string> names;
  layer.for_each_param([&](std::string_view n, auto&) { names.emplace_back(n); });
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias"}));
}

TEST(BatchNorm, PlanRejectsBadConfig) {
  Planner planner;
  BatchNorm1d<float> zero({.num_features = 0});
  EXPECT_THROW(zero.plan(planner, 4), Error);
  BatchNorm1d<float> bad_momentum({.num_features = 2, .momentum = 1.5});
  EXPECT_THROW(bad_momentum.plan(planner, 4), Error);
}

}  // namespace batch_norm_test
}  // namespace shoal
