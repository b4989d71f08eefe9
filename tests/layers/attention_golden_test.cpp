// The attention layers against neuralforecast 3.3.0's own modules in float64, on the same
// weights: AttentionLayer(FullAttention) as self-attention, causal or not, and
// TransEncoderLayer with ReLU and GELU; the forward and every gradient. From
// tests/golden/attention.json (bench/peers/attention_golden.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/core/error.h"
#include "shoal/layers/attention_layer.h"
#include "shoal/layers/transformer_encoder_layer.h"

namespace shoal {
namespace attention_golden_test {

using Vec = std::vector<double>;

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    const auto path = std::filesystem::path(SHOAL_GOLDEN_DIR) / "attention.json";
    std::ifstream in(path);
    if (!in) throw Error("cannot open golden " + path.string());
    return nlohmann::json::parse(in);
  }();
  return j;
}

void expect_near(const double* got, const Vec& want, double tol, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
}

// Runs `layer` (planned for B·L rows, its weights loaded from the case) forward on x and
// backward on dy; checks y, dx and every parameter's gradient.
template <class Layer, class Forward, class Backward>
void check(const std::string& name, Layer& layer, Forward forward, Backward backward) {
  const nlohmann::json& c = golden().at(name);
  const Index rows = c.at("B").get<Index>() * c.at("L").get<Index>();
  const Index hidden = c.at("hidden").get<Index>();
  Planner planner;
  layer.plan(planner, rows);
  Arena arena(std::move(planner));
  int loaded = 0;
  layer.for_each_param([&](const std::string& key, Param<double>& p) {
    const Vec w = c.at("weights/" + key).get<Vec>();
    ASSERT_EQ(Index(w.size()), p.value.numel()) << key;
    std::copy(w.begin(), w.end(), p.value.data);
    std::fill_n(p.grad.data, p.grad.numel(), 0.0);
    ++loaded;
  });
  Vec x = c.at("x").get<Vec>(), dy = c.at("dy").get<Vec>(), y(x.size()), dx(x.size());
  const Ctx ctx{.training = false};
  const MatView<double> xv(x.data(), rows, hidden), yv(y.data(), rows, hidden),
      dyv(dy.data(), rows, hidden), dxv(dx.data(), rows, hidden);
  forward(ctx, xv, yv);
  backward(ctx, xv, yv, dyv, dxv);
  expect_near(y.data(), c.at("y").get<Vec>(), 1e-12, name + " y");
  expect_near(dx.data(), c.at("dx").get<Vec>(), 1e-11, name + " dx");
  int checked = 0;
  layer.for_each_param([&](const std::string& key, Param<double>& p) {
    expect_near(p.grad.data, c.at("grads/" + key).get<Vec>(), 1e-11, name + " grad " + key);
    ++checked;
  });
  EXPECT_EQ(checked, loaded);
}

std::vector<std::string> cases(const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& [k, v] : golden().items())
    if (k.rfind(prefix, 0) == 0) names.push_back(k);
  return names;
}

TEST(AttentionGolden, SelfAttentionMatchesNeuralforecast) {
  const auto names = cases("attention/");
  ASSERT_EQ(names.size(), 3u);
  for (const std::string& name : names) {
    const nlohmann::json& c = golden().at(name);
    const Index tokens = c.at("L").get<Index>();
    layers::AttentionLayer<double> layer({.hidden_size = c.at("hidden").get<Index>(),
                                          .n_heads = c.at("heads").get<Index>(),
                                          .lq = tokens,
                                          .lk = tokens,
                                          .causal = c.at("causal").get<bool>()});
    check(
        name, layer, [&](const Ctx& ctx, auto x, auto y) { layer.forward(ctx, x, x, y); },
        [&](const Ctx& ctx, auto x, auto, auto dy, auto dx) {
          layer.backward(ctx, x, x, dy, dx, dx);
        });
  }
}

TEST(AttentionGolden, EncoderLayerMatchesNeuralforecast) {
  const auto names = cases("encoder/");
  ASSERT_EQ(names.size(), 2u);
  for (const std::string& name : names) {
    const nlohmann::json& c = golden().at(name);
    layers::TransformerEncoderLayer<double> layer({.hidden_size = c.at("hidden").get<Index>(),
                                                   .n_heads = c.at("heads").get<Index>(),
                                                   .conv_hidden_size = c.at("ff").get<Index>(),
                                                   .tokens = c.at("L").get<Index>(),
                                                   .dropout = 0,
                                                   .attention_dropout = 0,
                                                   .gelu = c.at("gelu").get<bool>()});
    check(
        name, layer, [&](const Ctx& ctx, auto x, auto y) { layer.forward(ctx, x, y); },
        [&](const Ctx& ctx, auto x, auto y, auto dy, auto dx) {
          layer.backward(ctx, x, y, dy, dx);
        });
  }
}

}  // namespace attention_golden_test
}  // namespace shoal
