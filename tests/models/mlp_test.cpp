#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shoal/models/mlp.h"
#include "support/gradcheck.h"

namespace shoal {
namespace mlp_test {

using models::Mlp;

TEST(Mlp, GradientsMatchCentralDifferences) {
  for (auto act : {kernels::Act::kRelu, kernels::Act::kGelu}) {
    const Index n = 3;
    Mlp<double> mlp({.in = 5, .hidden = {9, 7}, .out = 2, .act = act});
    Buffer<double> x, dout;
    Planner planner;
    mlp.plan(planner, n);
    planner.buffer(x, Region::kActivations, "x", {n, 5});
    planner.buffer(dout, Region::kActivationGrads, "dout", {n, 2});
    Arena arena(std::move(planner));
    RngStream rng(4, 1);
    mlp.init(rng);
    testing::fill_uniform(x.view.data, x.view.numel(), 8);
    Ctx ctx;
    std::vector<testing::GradVar> vars;
    mlp.for_each_param([&](const std::string& name, Param<double>& p) {
      vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
    });
    ASSERT_EQ(vars.size(), 6u);
    EXPECT_EQ(vars[2].name, "layers.1.weight");
    MatView<double> out;
    auto res = testing::gradcheck(
        vars, {{arena.find<double>("layers.2.out").data, dout.view.data, n * 2}},
        [&] { out = mlp.forward(ctx, x.mat()); }, [&] { mlp.backward(ctx, x.mat(), dout.mat()); });
    EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  }
}

TEST(Mlp, RejectsBadConfig) {
  EXPECT_THROW(Mlp<float>({.in = 0, .hidden = {4}, .out = 1}), Error);
  EXPECT_THROW(Mlp<float>({.in = 3, .hidden = {0}, .out = 1}), Error);
}

}  // namespace mlp_test
}  // namespace shoal
