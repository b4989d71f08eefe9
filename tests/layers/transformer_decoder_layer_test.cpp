// Gradient checks (double, central differences) of the transformer decoder layer
// (layers/transformer_decoder_layer.h): ReLU and GELU, dropout and attention dropout in
// training, a masked self-attention or not; every parameter, the decoder input and the
// encoder output (whose gradient is added into). Its parameters in neuralforecast's order; a
// batch run in chunks of windows (row0) draws the whole batch's dropout masks.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shoal/layers/transformer_decoder_layer.h"
#include "support/gradcheck.h"

namespace shoal {
namespace transformer_decoder_layer_test {

using layers::TransformerDecoderLayer;

constexpr Index kWindows = 2, kTokens = 4, kCross = 5, kHidden = 6;

TransformerDecoderLayer<double>::Config config(bool gelu, bool causal, double dropout) {
  return {.hidden_size = kHidden,
          .n_heads = 2,
          .conv_hidden_size = 10,
          .tokens = kTokens,
          .cross_tokens = kCross,
          .dropout = dropout,
          .attention_dropout = dropout / 2,
          .gelu = gelu,
          .causal = causal,
          .stream = 8};
}

void check(bool gelu, bool causal, double dropout) {
  const Index rows = kWindows * kTokens, crows = kWindows * kCross;
  TransformerDecoderLayer<double> layer(config(gelu, causal, dropout));
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
  std::vector<double> x(size_t(rows * kHidden)), y(x.size()), dy(x.size()), dx(x.size());
  std::vector<double> cross(size_t(crows * kHidden)), dcross(cross.size());
  testing::fill_uniform(x.data(), rows * kHidden, 5, -1, 1);
  testing::fill_uniform(cross.data(), crows * kHidden, 6, -1, 1);
  std::vector<testing::GradVar> vars;
  layer.for_each_param([&](const std::string& name, Param<double>& p) {
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  vars.push_back({"x", x.data(), dx.data(), rows * kHidden, false});
  vars.push_back({"cross", cross.data(), dcross.data(), crows * kHidden, true});
  const Ctx ctx{.training = true, .seed = 5, .step = 3};
  const MatView<double> xv(x.data(), rows, kHidden), yv(y.data(), rows, kHidden),
      dyv(dy.data(), rows, kHidden), dxv(dx.data(), rows, kHidden),
      cv(cross.data(), crows, kHidden), dcv(dcross.data(), crows, kHidden);
  const auto res = testing::gradcheck(
      vars, {{y.data(), dy.data(), rows * kHidden}}, [&] { layer.forward(ctx, xv, cv, yv); },
      [&] { layer.backward(ctx, xv, cv, dyv, dxv, dcv); });
  EXPECT_LE(res.max_rel_error, 1e-6) << (gelu ? "gelu" : "relu") << (causal ? " causal" : "")
                                     << " dropout " << dropout << ": " << res.worst;
}

TEST(TransformerDecoderLayer, GradientsMatchCentralDifferences) {
  check(false, false, 0.0);
  check(true, false, 0.0);
  check(false, true, 0.3);
  check(true, true, 0.2);
}

TEST(TransformerDecoderLayer, ChunksOfWindowsDrawTheWholeBatchsMasks) {
  const Index windows = 3, rows = windows * kTokens, crows = windows * kCross;
  TransformerDecoderLayer<double> layer(config(true, false, 0.3));
  Planner planner;
  layer.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(4, 1);
  layer.init(init);
  std::vector<double> x(size_t(rows * kHidden)), dy(x.size()), whole(x.size()), dwhole(x.size());
  std::vector<double> cross(size_t(crows * kHidden)), dcwhole(cross.size()), dc(cross.size());
  testing::fill_uniform(x.data(), rows * kHidden, 5, -1, 1);
  testing::fill_uniform(dy.data(), rows * kHidden, 6, -1, 1);
  testing::fill_uniform(cross.data(), crows * kHidden, 7, -1, 1);
  auto grads = [&] {
    std::vector<double> g;
    layer.for_each_param([&](const std::string&, Param<double>& p) {
      g.insert(g.end(), p.grad.begin(), p.grad.end());
      std::fill(p.grad.begin(), p.grad.end(), 0.0);
    });
    return g;
  };
  const Ctx ctx{.training = true, .seed = 5, .step = 3};
  auto run = [&](Index w0, Index n, double* y, double* dx, double* dcr) {
    const Index r0 = w0 * kTokens, c0 = w0 * kCross;
    const ConstMat<double> xv(x.data() + r0 * kHidden, n * kTokens, kHidden),
        cv(cross.data() + c0 * kHidden, n * kCross, kHidden);
    const MatView<double> yv(y + r0 * kHidden, n * kTokens, kHidden),
        dxv(dx + r0 * kHidden, n * kTokens, kHidden), dcv(dcr + c0 * kHidden, n * kCross, kHidden);
    layer.forward(ctx, xv, cv, yv, r0);
    layer.backward(ctx, xv, cv, ConstMat<double>(dy.data() + r0 * kHidden, n * kTokens, kHidden),
                   dxv, dcv, r0);
  };
  grads();
  run(0, windows, whole.data(), dwhole.data(), dcwhole.data());
  const std::vector<double> gwhole = grads();
  std::vector<double> y(x.size()), dx(x.size());
  run(0, 1, y.data(), dx.data(), dc.data());
  run(1, windows - 1, y.data(), dx.data(), dc.data());
  const std::vector<double> g = grads();
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(y[i], whole[i], 1e-12) << i;
    EXPECT_NEAR(dx[i], dwhole[i], 1e-12) << i;
  }
  for (size_t i = 0; i < dc.size(); ++i) EXPECT_NEAR(dc[i], dcwhole[i], 1e-12) << i;
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], gwhole[i], 1e-12) << i;
}

TEST(TransformerDecoderLayer, ParametersAreNeuralforecastsInItsOrder) {
  TransformerDecoderLayer<float> layer(
      {.hidden_size = 8, .n_heads = 2, .tokens = 3, .cross_tokens = 4});
  Planner planner;
  layer.plan(planner, 6);
  Arena arena(std::move(planner));
  std::vector<std::string> names;
  layer.for_each_param([&](const std::string& name, Param<float>&) { names.push_back(name); });
  ASSERT_EQ(names.size(), 26u);
  EXPECT_EQ(names[0], "self_attention.query_projection.weight");
  EXPECT_EQ(names[8], "cross_attention.query_projection.weight");
  EXPECT_EQ(names[16], "conv1.weight");
  EXPECT_EQ(names[18], "conv2.weight");
  EXPECT_EQ(names[20], "norm1.weight");
  EXPECT_EQ(names[25], "norm3.bias");
}

}  // namespace transformer_decoder_layer_test
}  // namespace shoal
