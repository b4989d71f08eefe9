// Gradient checks (double, central differences) of the multi-head attention layer
// (layers/attention_layer.h): self- and cross-attention, causal, with attention dropout in
// training, heads of unequal key and value widths; every parameter and both inputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shoal/layers/attention_layer.h"
#include "support/gradcheck.h"

namespace shoal {
namespace attention_layer_test {

using layers::AttentionLayer;

struct Case {
  Index lq, lk, hidden, heads, d_keys, d_values;
  bool causal, self;
  double dropout;
};

void check(const Case& k) {
  const Index windows = 2, rows = windows * k.lq, kv_rows = windows * k.lk;
  AttentionLayer<double> layer({.hidden_size = k.hidden,
                                .n_heads = k.heads,
                                .d_keys = k.d_keys,
                                .d_values = k.d_values,
                                .lq = k.lq,
                                .lk = k.lk,
                                .causal = k.causal,
                                .attention_dropout = k.dropout,
                                .stream = 4});
  Planner planner;
  layer.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(3, 1);
  layer.init(init);
  std::vector<double> xq(size_t(rows * k.hidden)), xkv(size_t(kv_rows * k.hidden)),
      y(size_t(rows * k.hidden)), dy(y.size()), dxq(xq.size()), dxkv(xkv.size());
  testing::fill_uniform(xq.data(), rows * k.hidden, 5, -1, 1);
  testing::fill_uniform(xkv.data(), kv_rows * k.hidden, 6, -1, 1);
  std::vector<testing::GradVar> vars;
  layer.for_each_param([&](const std::string& name, Param<double>& p) {
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  vars.push_back({"xq", xq.data(), dxq.data(), rows * k.hidden, false});
  if (!k.self) vars.push_back({"xkv", xkv.data(), dxkv.data(), kv_rows * k.hidden, false});
  const Ctx ctx{.training = true, .seed = 3, .step = 2};
  const MatView<double> xqv(xq.data(), rows, k.hidden), yv(y.data(), rows, k.hidden),
      dyv(dy.data(), rows, k.hidden), dxqv(dxq.data(), rows, k.hidden);
  const MatView<double> xkvv = k.self ? xqv : MatView<double>(xkv.data(), kv_rows, k.hidden);
  const MatView<double> dxkvv = k.self ? dxqv : MatView<double>(dxkv.data(), kv_rows, k.hidden);
  const auto res = testing::gradcheck(
      vars, {{y.data(), dy.data(), rows * k.hidden}}, [&] { layer.forward(ctx, xqv, xkvv, yv); },
      [&] { layer.backward(ctx, xqv, xkvv, dyv, dxqv, dxkvv); });
  EXPECT_LE(res.max_rel_error, 1e-6)
      << "lq " << k.lq << " lk " << k.lk << " heads " << k.heads << (k.causal ? " causal" : "")
      << (k.self ? " self" : " cross") << " dropout " << k.dropout << ": " << res.worst;
}

TEST(AttentionLayer, GradientsMatchCentralDifferences) {
  check({4, 4, 8, 2, 0, 0, false, true, 0.0});
  check({5, 5, 6, 3, 0, 0, true, true, 0.0});
  check({3, 6, 8, 2, 3, 5, false, false, 0.0});
  check({4, 4, 8, 4, 0, 0, true, true, 0.3});
  check({3, 7, 4, 1, 0, 0, true, false, 0.2});
}

// Parameters in neuralforecast's order and names, PyTorch's Linear shapes.
TEST(AttentionLayer, ParametersAreNeuralforecastsInItsOrder) {
  AttentionLayer<float> layer({.hidden_size = 16, .n_heads = 4, .d_values = 3, .lq = 2, .lk = 2});
  Planner planner;
  layer.plan(planner, 4);
  Arena arena(std::move(planner));
  std::vector<std::string> names;
  std::vector<Shape> shapes;
  layer.for_each_param([&](const std::string& name, Param<float>& p) {
    names.push_back(name);
    shapes.push_back(p.shape);
  });
  const std::vector<std::string> want = {"query_projection.weight", "query_projection.bias",
                                         "key_projection.weight",   "key_projection.bias",
                                         "value_projection.weight", "value_projection.bias",
                                         "out_projection.weight",   "out_projection.bias"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(shapes[4], (Shape{12, 16}));  // 4 heads of 3 values
  EXPECT_EQ(shapes[6], (Shape{16, 12}));
}

}  // namespace attention_layer_test
}  // namespace shoal
