// Gradient checks (double, central differences) of the dilated causal convolution stack
// (layers/temporal_conv.h): one layer and three, kernel sizes 2 and 3, dilations whose taps reach
// past the window, ReLU, Tanh and no activation, channels on and off the SIMD width, input
// gradient included. And torch's Conv1d init bounds: every weight within U(±1/√(I·K)).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "shoal/layers/temporal_conv.h"
#include "support/gradcheck.h"

namespace shoal {
namespace temporal_conv_test {

using layers::ConvAct;
using layers::TemporalConv;

struct Case {
  std::vector<int64_t> dilations;
  Index kernel, out;
  ConvAct act;
};

void check(const Case& k) {
  const Index steps = 6, batch = 3, in = 3, rows = steps * batch;
  TemporalConv<double> conv({.in = in,
                             .out = k.out,
                             .kernel = k.kernel,
                             .dilations = k.dilations,
                             .act = k.act,
                             .steps = steps});
  Planner planner;
  conv.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(2, 1);
  conv.init(init);
  std::vector<double> x(size_t(rows * in)), y(size_t(rows * k.out)), dy(y.size()), dx(x.size());
  testing::fill_uniform(x.data(), rows * in, 4, -2, 2);
  std::vector<testing::GradVar> vars;
  conv.for_each_param([&](const std::string& name, Param<double>& p) {
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  vars.push_back({"x", x.data(), dx.data(), rows * in, false});
  const Ctx ctx{.training = true, .seed = 3, .step = 1};
  const MatView<double> xv(x.data(), rows, in), yv(y.data(), rows, k.out),
      dyv(dy.data(), rows, k.out), dxv(dx.data(), rows, in);
  const auto res = testing::gradcheck(
      vars, {{y.data(), dy.data(), rows * k.out}}, [&] { conv.forward(ctx, xv, yv); },
      [&] { conv.backward(ctx, xv, yv, dyv, dxv); });
  EXPECT_LE(res.max_rel_error, 1e-6)
      << "layers " << k.dilations.size() << " K " << k.kernel << " out " << k.out << " act "
      << int(k.act) << ": " << res.worst;
}

TEST(TemporalConv, GradientsMatchCentralDifferences) {
  for (ConvAct act : {ConvAct::kRelu, ConvAct::kTanh, ConvAct::kIdentity})
    for (Index out : {4, 9})
      for (Index kernel : {2, 3}) {
        check({{2}, kernel, out, act});
        check({{1, 2, 4}, kernel, out, act});
      }
}

TEST(TemporalConv, InitWithinTorchConv1dBounds) {
  TemporalConv<float> conv(
      {.in = 3, .out = 5, .kernel = 2, .dilations = {1, 2}, .act = ConvAct::kRelu, .steps = 4});
  Planner planner;
  conv.plan(planner, 8);
  Arena arena(std::move(planner));
  RngStream init(1, 1);
  conv.init(init);
  conv.for_each_param([&](const std::string& name, Param<float>& p) {
    const double fan_in = name.starts_with("tcn.0.") ? 3 * 2 : 5 * 2;
    for (float v : p.value) EXPECT_LE(std::abs(v), 1 / std::sqrt(fan_in) + 1e-7) << name;
  });
}

}  // namespace temporal_conv_test
}  // namespace shoal
