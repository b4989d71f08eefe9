// Gradient checks (double, central differences) of the transformer encoder layer
// (layers/transformer_encoder_layer.h): ReLU and GELU, dropout and attention dropout in
// training, causal or not; every parameter and the input. And its parameters in
// neuralforecast's order. A batch run in chunks of windows (row0) draws the whole batch's
// dropout masks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shoal/layers/transformer_encoder_layer.h"
#include "support/gradcheck.h"

namespace shoal {
namespace transformer_encoder_layer_test {

using layers::TransformerEncoderLayer;

void check(bool gelu, bool causal, double dropout) {
  const Index windows = 2, tokens = 4, hidden = 6, rows = windows * tokens;
  TransformerEncoderLayer<double> layer({.hidden_size = hidden,
                                         .n_heads = 2,
                                         .conv_hidden_size = 10,
                                         .tokens = tokens,
                                         .dropout = dropout,
                                         .attention_dropout = dropout / 2,
                                         .gelu = gelu,
                                         .causal = causal,
                                         .stream = 8});
  Planner planner;
  layer.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(4, 1);
  layer.init(init);
  // LayerNorm starts at weight 1, bias 0: move them so their gradients are exercised too.
  layer.for_each_param([&](const std::string& name, Param<double>& p) {
    if (name.rfind("norm", 0) == 0)
      testing::fill_uniform(p.value.data, p.value.numel(), 9, 0.5, 1.5);
  });
  std::vector<double> x(size_t(rows * hidden)), y(x.size()), dy(x.size()), dx(x.size());
  testing::fill_uniform(x.data(), rows * hidden, 5, -1, 1);
  std::vector<testing::GradVar> vars;
  layer.for_each_param([&](const std::string& name, Param<double>& p) {
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  vars.push_back({"x", x.data(), dx.data(), rows * hidden, false});
  const Ctx ctx{.training = true, .seed = 5, .step = 3};
  const MatView<double> xv(x.data(), rows, hidden), yv(y.data(), rows, hidden),
      dyv(dy.data(), rows, hidden), dxv(dx.data(), rows, hidden);
  const auto res = testing::gradcheck(
      vars, {{y.data(), dy.data(), rows * hidden}}, [&] { layer.forward(ctx, xv, yv); },
      [&] { layer.backward(ctx, xv, yv, dyv, dxv); });
  EXPECT_LE(res.max_rel_error, 1e-6) << (gelu ? "gelu" : "relu") << (causal ? " causal" : "")
                                     << " dropout " << dropout << ": " << res.worst;
}

TEST(TransformerEncoderLayer, GradientsMatchCentralDifferences) {
  check(false, false, 0.0);
  check(true, false, 0.0);
  check(false, true, 0.3);
  check(true, true, 0.2);
}

TEST(TransformerEncoderLayer, ChunksOfWindowsDrawTheWholeBatchsMasks) {
  const Index windows = 3, tokens = 4, hidden = 6, rows = windows * tokens;
  TransformerEncoderLayer<double> layer({.hidden_size = hidden,
                                         .n_heads = 2,
                                         .conv_hidden_size = 10,
                                         .tokens = tokens,
                                         .dropout = 0.3,
                                         .attention_dropout = 0.25,
                                         .gelu = true,
                                         .stream = 8});
  Planner planner;
  layer.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(4, 1);
  layer.init(init);
  std::vector<double> x(size_t(rows * hidden)), dy(x.size()), whole(x.size()), dwhole(x.size());
  testing::fill_uniform(x.data(), rows * hidden, 5, -1, 1);
  testing::fill_uniform(dy.data(), rows * hidden, 6, -1, 1);
  auto grads = [&] {
    std::vector<double> g;
    layer.for_each_param([&](const std::string&, Param<double>& p) {
      g.insert(g.end(), p.grad.begin(), p.grad.end());
      std::fill(p.grad.begin(), p.grad.end(), 0.0);
    });
    return g;
  };
  const Ctx ctx{.training = true, .seed = 5, .step = 3};
  auto run = [&](Index r0, Index n, double* y, double* dx) {
    const ConstMat<double> xv(x.data() + r0 * hidden, n, hidden);
    const MatView<double> yv(y + r0 * hidden, n, hidden), dxv(dx + r0 * hidden, n, hidden);
    layer.forward(ctx, xv, yv, r0);
    layer.backward(ctx, xv, yv, ConstMat<double>(dy.data() + r0 * hidden, n, hidden), dxv, r0);
  };
  grads();
  run(0, rows, whole.data(), dwhole.data());
  const std::vector<double> gwhole = grads();
  std::vector<double> y(x.size()), dx(x.size());
  run(0, tokens, y.data(), dx.data());
  run(tokens, rows - tokens, y.data(), dx.data());
  const std::vector<double> g = grads();
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(y[i], whole[i], 1e-12) << i;
    EXPECT_NEAR(dx[i], dwhole[i], 1e-12) << i;
  }
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], gwhole[i], 1e-12) << i;
}

TEST(TransformerEncoderLayer, ParametersAreNeuralforecastsInItsOrder) {
  TransformerEncoderLayer<float> layer({.hidden_size = 8, .n_heads = 2, .tokens = 3});
  Planner planner;
  layer.plan(planner, 6);
  Arena arena(std::move(planner));
  std::vector<std::string> names;
  layer.for_each_param([&](const std::string& name, Param<float>&) { names.push_back(name); });
  ASSERT_EQ(names.size(), 16u);
  EXPECT_EQ(names[0], "attention.query_projection.weight");
  EXPECT_EQ(names[8], "conv1.weight");
  EXPECT_EQ(names[10], "conv2.weight");
  EXPECT_EQ(names[12], "norm1.weight");
  EXPECT_EQ(names[15], "norm2.bias");
}

}  // namespace transformer_encoder_layer_test
}  // namespace shoal
