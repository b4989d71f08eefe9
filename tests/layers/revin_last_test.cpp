// Gradient checks (double, central differences) of RevIN (layers/revin_last.h) and the
// position table (layers/position_table.h), PatchTST's blocks around its encoder: the affine's
// gradients through normalize and denormalize, the denormalised input's, and W_pos's summed
// over the windows. And their values: the last value (or the mean) and σ per window.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "shoal/layers/position_table.h"
#include "shoal/layers/revin_last.h"
#include "support/gradcheck.h"

namespace shoal {
namespace revin_last_test {

using layers::PositionTable;
using layers::RevInLast;

// L = Σ normalize(x) ⊙ r1 + Σ denormalize(z) ⊙ r2 over the affine and z.
void check_revin(bool subtract_last) {
  const Index b = 3, l = 5, r = 4;
  RevInLast<double> revin({.input_size = l, .affine = true, .subtract_last = subtract_last});
  Planner planner;
  revin.plan(planner, b);
  Arena arena(std::move(planner));
  RngStream init(1, 1);
  revin.init(init);
  revin.affine_weight.value.data[0] = 1.3;
  revin.affine_bias.value.data[0] = -0.4;
  std::vector<double> x(size_t(b * l)), xn(x.size()), dxn(x.size()), z(size_t(b * r)), y(z.size()),
      dy(z.size()), dz(z.size());
  testing::fill_uniform(x.data(), b * l, 3, -2, 2);
  testing::fill_uniform(z.data(), b * r, 4, -1, 1);
  std::vector<testing::GradVar> vars;
  revin.for_each_param([&](std::string_view name, Param<double>& p) {
    vars.push_back({std::string(name), p.value.data, p.grad.data, 1, true});
  });
  vars.push_back({"z", z.data(), dz.data(), b * r, false});
  const ConstMat<double> xv(x.data(), b, l), zv(z.data(), b, r);
  const auto res = testing::gradcheck(
      vars, {{xn.data(), dxn.data(), b * l}, {y.data(), dy.data(), b * r}},
      [&] {
        revin.normalize(xv, MatView<double>(xn.data(), b, l));
        revin.denormalize(zv, MatView<double>(y.data(), b, r));
      },
      [&] {
        revin.normalize_backward(xv, ConstMat<double>(dxn.data(), b, l));
        revin.denormalize_backward(zv, ConstMat<double>(dy.data(), b, r),
                                   MatView<double>(dz.data(), b, r));
      });
  EXPECT_LE(res.max_rel_error, 1e-6) << (subtract_last ? "last" : "mean") << ": " << res.worst;
}

TEST(RevInLast, GradientsMatchCentralDifferences) {
  check_revin(true);
  check_revin(false);
}

TEST(RevInLast, CentresOnTheLastValueOrTheMeanAndScalesByTheDeviation) {
  for (const bool last : {true, false}) {
    RevInLast<double> revin({.input_size = 4, .subtract_last = last});
    Planner planner;
    revin.plan(planner, 1);
    Arena arena(std::move(planner));
    const std::vector<double> x = {1, 2, 4, 9};  // mean 4, biased variance 9.5
    std::vector<double> y(4), back(4);
    revin.normalize(ConstMat<double>(x.data(), 1, 4), MatView<double>(y.data(), 1, 4));
    const double c = last ? 9.0 : 4.0, sd = std::sqrt(9.5 + 1e-5);
    for (size_t t = 0; t < 4; ++t) EXPECT_NEAR(y[t], (x[t] - c) / sd, 1e-15);
    revin.denormalize(ConstMat<double>(y.data(), 1, 4), MatView<double>(back.data(), 1, 4));
    for (size_t t = 0; t < 4; ++t) EXPECT_NEAR(back[t], x[t], 1e-14);
  }
}

TEST(PositionTable, GradientsMatchCentralDifferences) {
  const Index tokens = 3, width = 5, rows = 4 * tokens;
  PositionTable<double> pos({.tokens = tokens, .width = width});
  Planner planner;
  pos.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(2, 1);
  pos.init(init);
  std::vector<double> x(size_t(rows * width)), y(x.size()), dy(x.size());
  testing::fill_uniform(x.data(), rows * width, 3, -1, 1);
  std::vector<testing::GradVar> vars;
  pos.for_each_param([&](std::string_view name, Param<double>& p) {
    vars.push_back({std::string(name), p.value.data, p.grad.data, p.value.numel(), true});
  });
  ASSERT_EQ(vars.size(), 1u);
  const auto res = testing::gradcheck(
      vars, {{y.data(), dy.data(), rows * width}},
      [&] {
        pos.forward(ConstMat<double>(x.data(), rows, width),
                    MatView<double>(y.data(), rows, width));
      },
      [&] { pos.backward(ConstMat<double>(dy.data(), rows, width)); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

TEST(PositionTable, FixedTableIsStateNotAParameter) {
  PositionTable<float> pos({.tokens = 2, .width = 3, .learn = false});
  Planner planner;
  pos.plan(planner, 4);
  Arena arena(std::move(planner));
  int params = 0;
  pos.for_each_param([&](std::string_view, Param<float>&) { ++params; });
  EXPECT_EQ(params, 0);
  EXPECT_EQ(arena.find<float>("W_pos").numel(), 6);
}

}  // namespace revin_last_test
}  // namespace shoal
