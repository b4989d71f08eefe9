// Gradient checks (double, central differences) of BiTCN's cell stack (layers/tcn_cells.h):
// causal and anti-causal, one cell and three (dilations 1, 2, 4, the last reaching past the
// window), kernel sizes 2 and 3, input gradient included; with dropout in training (the mask
// fixed by the step, so both differences see the same one). And CustomConv1d's init bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "shoal/layers/tcn_cells.h"
#include "support/gradcheck.h"

namespace shoal {
namespace tcn_cells_test {

using layers::ConvDir;
using layers::TCNCells;

void check(ConvDir dir, Index cells, Index kernel, Index channels, double dropout) {
  const Index steps = 7, batch = 3, rows = steps * batch;
  TCNCells<double> net({.channels = channels,
                        .kernel = kernel,
                        .cells = cells,
                        .dir = dir,
                        .dropout = dropout,
                        .stream = 5,
                        .steps = steps});
  Planner planner;
  net.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(2, 1);
  net.init(init);
  std::vector<double> x(size_t(rows * channels)), y(x.size()), dy(x.size()), dx(x.size());
  testing::fill_uniform(x.data(), rows * channels, 4, -2, 2);
  std::vector<testing::GradVar> vars;
  net.for_each_param([&](const std::string& name, Param<double>& p) {
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  vars.push_back({"x", x.data(), dx.data(), rows * channels, false});
  const Ctx ctx{.training = true, .seed = 3, .step = 1};
  const MatView<double> xv(x.data(), rows, channels), yv(y.data(), rows, channels),
      dyv(dy.data(), rows, channels), dxv(dx.data(), rows, channels);
  const auto res = testing::gradcheck(
      vars, {{y.data(), dy.data(), rows * channels}}, [&] { net.forward(ctx, xv, yv); },
      [&] { net.backward(ctx, xv, dyv, dxv); });
  EXPECT_LE(res.max_rel_error, 1e-6)
      << "dir " << int(dir) << " cells " << cells << " K " << kernel << " C " << channels
      << " dropout " << dropout << ": " << res.worst;
}

TEST(TCNCells, GradientsMatchCentralDifferences) {
  for (ConvDir dir : {ConvDir::kCausal, ConvDir::kAnticausal})
    for (Index kernel : {2, 3}) {
      check(dir, 1, kernel, 4, 0.0);
      check(dir, 3, kernel, 5, 0.0);
      check(dir, 3, kernel, 9, 0.3);
    }
}

// The anti-causal stack reads no earlier step: changing step s changes no output after s.
TEST(TCNCells, AnticausalOutputsSeeNoEarlierStep) {
  const Index steps = 9, batch = 2, c = 4, rows = steps * batch;
  TCNCells<double> net(
      {.channels = c, .kernel = 2, .cells = 3, .dir = ConvDir::kAnticausal, .steps = steps});
  Planner planner;
  net.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(2, 1);
  net.init(init);
  std::vector<double> x(size_t(rows * c)), y0(x.size()), y1(x.size());
  testing::fill_uniform(x.data(), rows * c, 4, -2, 2);
  const Ctx ctx{.training = false};
  net.forward(ctx, ConstMat<double>(x.data(), rows, c), MatView<double>(y0.data(), rows, c));
  const Index s = 4;
  for (Index i = 0; i < batch * c; ++i) x[size_t(s * batch * c + i)] += 1.0;
  net.forward(ctx, ConstMat<double>(x.data(), rows, c), MatView<double>(y1.data(), rows, c));
  for (Index r = (s + 1) * batch * c; r < rows * c; ++r) EXPECT_EQ(y0[size_t(r)], y1[size_t(r)]);
  EXPECT_NE(y0[size_t(s * batch * c)], y1[size_t(s * batch * c)]);
}

TEST(TCNCells, InitWithinCustomConv1dBounds) {
  TCNCells<float> net({.channels = 5, .kernel = 2, .cells = 2, .steps = 4});
  Planner planner;
  net.plan(planner, 8);
  Arena arena(std::move(planner));
  RngStream init(1, 1);
  net.init(init);
  net.for_each_param([&](const std::string& name, Param<float>& p) {
    const double fan_in = name.find("conv1") != std::string::npos ? 5 * 2 : 5;
    for (float v : p.value) EXPECT_LE(std::abs(v), 1 / std::sqrt(fan_in) + 1e-7) << name;
  });
}

}  // namespace tcn_cells_test
}  // namespace shoal
