#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "shoal/layers/activation.h"
#include "support/gradcheck.h"

namespace shoal {
namespace activation_test {

using kernels::Act;
using layers::GELU;
using layers::ReLU;

struct ActCase {
  Act act;
  Index n, f;
};

std::string act_name(const ::testing::TestParamInfo<ActCase>& info) {
  const auto& c = info.param;
  return std::string(c.act == Act::kRelu ? "relu" : "gelu") + "_n" + std::to_string(c.n) + "_f" +
         std::to_string(c.f);
}

// Gradient check on column-block views (ld = F + 1). ReLU inputs are kept at least 0.05 away
// from the kink, where central differences are meaningless.
template <class Layer>
testing::GradcheckResult check(Index n, Index f) {
  const Index ld = f + 1;
  Layer layer;
  Buffer<double> x, y, dy, dx;
  Planner planner;
  layer.plan(planner, n);
  planner.buffer(x, Region::kActivations, "x", {n, ld});
  planner.buffer(y, Region::kActivations, "y", {n, ld});
  planner.buffer(dy, Region::kActivationGrads, "dy", {n, ld});
  planner.buffer(dx, Region::kActivationGrads, "dx", {n, ld});
  Arena arena(std::move(planner));
  auto blk = [&](Buffer<double>& b) { return b.mat().cols_block(0, f); };
  for (Index r = 0; r < n; ++r) {
    double* row = blk(x).row(r);
    testing::fill_uniform(row, f, 30 + static_cast<uint64_t>(r), -3, 3);
    for (Index c = 0; c < f; ++c)
      if (std::abs(row[c]) < 0.05) row[c] = 0.05;
  }
  const Ctx ctx;
  return testing::gradcheck(
      {{"x", x.view.data, dx.view.data, x.view.numel(), false}},
      {{y.view.data, dy.view.data, y.view.numel()}}, [&] { layer.forward(ctx, blk(x), blk(y)); },
      [&] { layer.backward(ctx, blk(x), blk(y), blk(dy), blk(dx)); });
}

class ActivationGrad : public ::testing::TestWithParam<ActCase> {};

TEST_P(ActivationGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  const auto res =
      c.act == Act::kRelu ? check<ReLU<double>>(c.n, c.f) : check<GELU<double>>(c.n, c.f);
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

std::vector<ActCase> act_cases() {
  std::vector<ActCase> cases;
  for (Act act : {Act::kRelu, Act::kGelu})
    for (auto [n, f] :
         {std::pair<Index, Index>{1, 1}, {1, 7}, {3, 8}, {2, 9}, {5, 15}, {4, 16}, {3, 17}})
      cases.push_back({act, n, f});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ActivationGrad, ::testing::ValuesIn(act_cases()), act_name);

TEST(Activation, KnownValues) {
  const std::vector<double> x = {-2.0, -0.5, 0.0, 0.5, 1.0, 3.0};
  std::vector<double> y(x.size()), dy(x.size(), 1.0), dx(x.size());
  const auto n = static_cast<Index>(x.size());
  const MatView<const double> xv(x.data(), 1, n), dyv(dy.data(), 1, n);
  const MatView<double> yv(y.data(), 1, n), dxv(dx.data(), 1, n);
  ReLU<double> relu;
  relu.forward(Ctx{}, xv, yv);
  relu.backward(Ctx{}, xv, yv, dyv, dxv);
  const std::vector<double> relu_y = {0, 0, 0, 0.5, 1, 3}, relu_d = {0, 0, 0, 1, 1, 1};
  EXPECT_EQ(y, relu_y);
  EXPECT_EQ(dx, relu_d) << "ReLU'(0) must be 0, as in PyTorch";
  GELU<double> gelu;
  gelu.forward(Ctx{}, xv, yv);
  gelu.backward(Ctx{}, xv, yv, dyv, dxv);
  // x·Φ(x) and Φ(x) + x·φ(x) evaluated with Python's math.erf (the formula PyTorch uses for
  // approximate='none'), independently of this code.
  const std::vector<double> gelu_y = {-0.04550026389635842, -0.15426876936299344, 0.0,
                                      0.34573123063700656,  0.8413447460685429,   2.99595030590511};
  const std::vector<double> gelu_d = {-0.08523180107819692, 0.13250487534383712, 0.5,
                                      0.8674951246561629,   1.0833154705876864,  1.011945647204184};
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(y[i], gelu_y[i], 1e-12) << "x = " << x[i];
    EXPECT_NEAR(dx[i], gelu_d[i], 1e-12) << "x = " << x[i];
  }
}

TEST(Activation, ReluInPlaceMatchesOutOfPlace) {
  std::vector<float> x(17), y(17);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 8.0f;
  ReLU<float> relu;
  relu.forward(Ctx{}, MatView<const float>(x.data(), 1, 17), MatView<float>(y.data(), 1, 17));
  relu.forward(Ctx{}, MatView<const float>(x.data(), 1, 17), MatView<float>(x.data(), 1, 17));
  EXPECT_EQ(x, y);
}

}  // namespace activation_test
}  // namespace shoal
