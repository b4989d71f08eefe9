#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shoal/layers/linear.h"
#include "support/gradcheck.h"

namespace shoal {
namespace linear_test {

using layers::Act;
using layers::Linear;

struct LinearCase {
  Index n, in, out;
  Act act;
  bool bias;
};

class LinearGrad : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  Linear<double> layer({.in = c.in, .out = c.out, .bias = c.bias, .act = c.act});
  Buffer<double> x, y, dy, dx;
  Planner planner;
  layer.plan(planner, c.n);
  planner.buffer(x, Region::kActivations, "x", {c.n, c.in});
  planner.buffer(y, Region::kActivations, "y", {c.n, c.out});
  planner.buffer(dy, Region::kActivationGrads, "dy", {c.n, c.out});
  planner.buffer(dx, Region::kActivationGrads, "dx", {c.n, c.in});
  Arena arena(std::move(planner));
  RngStream rng(1, 2);
  layer.init(rng);
  testing::fill_uniform(x.view.data, x.view.numel(), 3);

  Ctx ctx;
  std::vector<testing::GradVar> vars = {
      {"x", x.view.data, dx.view.data, x.view.numel(), false},
      {"weight", layer.p.weight.value.data, layer.p.weight.grad.data, layer.p.weight.value.numel(),
       true}};
  if (c.bias)
    vars.push_back({"bias", layer.p.bias.value.data, layer.p.bias.grad.data, c.out, true});
  auto res = testing::gradcheck(
      vars, {{y.view.data, dy.view.data, y.view.numel()}},
      [&] { layer.forward(ctx, x.mat(), y.mat()); },
      [&] { layer.backward(ctx, x.mat(), y.mat(), dy.mat(), dx.mat()); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearGrad,
    ::testing::Values(LinearCase{1, 1, 1, Act::kNone, true}, LinearCase{1, 7, 9, Act::kRelu, true},
                      LinearCase{3, 8, 7, Act::kGelu, true},
                      LinearCase{5, 9, 17, Act::kNone, false},
                      LinearCase{4, 15, 16, Act::kRelu, false},
                      LinearCase{2, 17, 3, Act::kGelu, false}),
    [](const ::testing::TestParamInfo<LinearCase>& param_info) {
      const auto& c = param_info.param;
      const char* act = c.act == Act::kNone ? "none" : c.act == Act::kRelu ? "relu" : "gelu";
      return "N" + std::to_string(c.n) + "_I" + std::to_string(c.in) + "_O" +
             std::to_string(c.out) + "_" + act + (c.bias ? "_bias" : "_nobias");
    });

TEST(Linear, ParamGradsAccumulate) {
  Linear<double> layer({.in = 3, .out = 2});
  Buffer<double> x, y, dy, dx;
  Planner planner;
  layer.plan(planner, 4);
  planner.buffer(x, Region::kActivations, "x", {4, 3});
  planner.buffer(y, Region::kActivations, "y", {4, 2});
  planner.buffer(dy, Region::kActivationGrads, "dy", {4, 2});
  planner.buffer(dx, Region::kActivationGrads, "dx", {4, 3});
  Arena arena(std::move(planner));
  RngStream rng(1, 2);
  layer.init(rng);
  testing::fill_uniform(x.view.data, 12, 5);
  testing::fill_uniform(dy.view.data, 8, 6);
  Ctx ctx;
  layer.forward(ctx, x.mat(), y.mat());
  layer.backward(ctx, x.mat(), y.mat(), dy.mat(), dx.mat());
  std::vector<double> once(layer.p.weight.grad.begin(), layer.p.weight.grad.end());
  layer.backward(ctx, x.mat(), y.mat(), dy.mat(), dx.mat());
  for (size_t i = 0; i < once.size(); ++i)
    EXPECT_DOUBLE_EQ(layer.p.weight.grad.data[i], 2 * once[i]);
}

}  // namespace linear_test
}  // namespace shoal
