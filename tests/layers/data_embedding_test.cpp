// Gradient checks (double, central differences) of the data embedding
// (layers/data_embedding.h): the circular token convolution's weight, the temporal embedding's
// and the exogenous inputs, with and without the dropout in training; its parameters'
// names; the position table's values against the closed form; the init's statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "shoal/layers/data_embedding.h"
#include "support/gradcheck.h"

namespace shoal {
namespace data_embedding_test {

using layers::DataEmbedding;

void check(Index c_in, Index exog, bool pos, double dropout) {
  const Index windows = 2, tokens = 5, hidden = 6, steps = 9, t0 = 3, rows = windows * tokens;
  DataEmbedding<double> layer({.c_in = c_in,
                               .exog = exog,
                               .tokens = tokens,
                               .hidden_size = hidden,
                               .pos_embedding = pos,
                               .dropout = dropout,
                               .stream = 3});
  Planner planner;
  layer.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(4, 1);
  layer.init(init);
  std::vector<double> x(size_t(rows * c_in)), mark(size_t(windows * exog * steps) + 1),
      dmark(mark.size()), y(size_t(rows * hidden)), dy(y.size());
  testing::fill_uniform(x.data(), Index(x.size()), 5, -1, 1);
  testing::fill_uniform(mark.data(), Index(mark.size()), 6, -1, 1);
  std::vector<testing::GradVar> vars;
  layer.for_each_param([&](std::string_view name, Param<double>& p) {
    vars.push_back({std::string(name), p.value.data, p.grad.data, p.value.numel(), true});
  });
  if (exog > 0) vars.push_back({"mark", mark.data(), dmark.data(), Index(mark.size()), true});
  const Ctx ctx{.training = true, .seed = 5, .step = 2};
  const typename DataEmbedding<double>::Mark m{.data = mark.data(), .steps = steps, .t0 = t0};
  const ConstMat<double> xv(x.data(), rows, c_in);
  const MatView<double> yv(y.data(), rows, hidden);
  const auto res = testing::gradcheck(
      vars, {{y.data(), dy.data(), rows * hidden}}, [&] { layer.forward(ctx, xv, m, yv); },
      [&] {
        layer.backward(ctx, xv, m, ConstMat<double>(dy.data(), rows, hidden),
                       exog > 0 ? dmark.data() : nullptr);
      });
  EXPECT_LE(res.max_rel_error, 1e-7)
      << "c_in " << c_in << " exog " << exog << " dropout " << dropout << ": " << res.worst;
}

TEST(DataEmbedding, GradientsMatchCentralDifferences) {
  check(1, 0, true, 0.0);
  check(1, 2, true, 0.0);
  check(2, 3, false, 0.3);
  check(1, 1, true, 0.25);
}

TEST(DataEmbedding, ConvolutionWrapsAroundTheWindow) {
  // One channel, one output, no positions: y[t] = w0·x[t−1] + w1·x[t] + w2·x[t+1], indices mod T.
  DataEmbedding<double> layer(
      {.tokens = 4, .hidden_size = 2, .pos_embedding = false, .dropout = 0.0});
  Planner planner;
  layer.plan(planner, 4);
  Arena arena(std::move(planner));
  const double w[] = {1, 10, 100, 0, 0, 0};
  std::copy(w, w + 6, layer.p.conv.value.data);
  const std::vector<double> x = {1, 2, 3, 4};
  std::vector<double> y(8);
  layer.forward(Ctx{}, ConstMat<double>(x.data(), 4, 1), {}, MatView<double>(y.data(), 4, 2));
  EXPECT_EQ(y[0], 4 + 10 * 1 + 100 * 2);
  EXPECT_EQ(y[2], 1 + 10 * 2 + 100 * 3);
  EXPECT_EQ(y[6], 3 + 10 * 4 + 100 * 1);
  EXPECT_EQ(y[1], 0.0);
}

TEST(DataEmbedding, PositionTableIsSinesAndCosines) {
  const Index tokens = 7, width = 8;
  const std::vector<double> pe = layers::sinusoid_positions(tokens, width);
  for (Index t = 0; t < tokens; ++t)
    for (Index i = 0; i < width / 2; ++i) {
      const double omega = std::exp(-double(2 * i) * std::log(10000.0) / double(width));
      EXPECT_NEAR(pe[size_t(t * width + 2 * i)], std::sin(double(t) * omega), 1e-6);
      EXPECT_NEAR(pe[size_t(t * width + 2 * i + 1)], std::cos(double(t) * omega), 1e-6);
    }
  EXPECT_THROW(layers::sinusoid_positions(3, 5), std::exception);
}

TEST(DataEmbedding, ParametersAreNeuralforecasts) {
  DataEmbedding<float> layer({.exog = 2, .tokens = 3, .hidden_size = 4});
  Planner planner;
  layer.plan(planner, 6);
  Arena arena(std::move(planner));
  std::vector<std::string> names;
  layer.for_each_param([&](std::string_view name, Param<float>&) { names.emplace_back(name); });
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], "value_embedding.tokenConv.weight");
  EXPECT_EQ(names[1], "temporal_embedding.embed.weight");
  EXPECT_EQ(layer.p.conv.value.numel(), 12);
}

TEST(DataEmbedding, TokenConvolutionStartsAtKaimingNormal) {
  const Index hidden = 4000;
  DataEmbedding<float> layer({.tokens = 3, .hidden_size = hidden});
  Planner planner;
  layer.plan(planner, 3);
  Arena arena(std::move(planner));
  RngStream rng(1, 0, Generator::kTorchCpu);
  layer.init(rng);
  double sum = 0, sq = 0;
  const Index n = layer.p.conv.value.numel();
  for (Index i = 0; i < n; ++i) {
    sum += layer.p.conv.value.data[i];
    sq += double(layer.p.conv.value.data[i]) * layer.p.conv.value.data[i];
  }
  EXPECT_NEAR(sum / double(n), 0.0, 0.03);
  EXPECT_NEAR(std::sqrt(sq / double(n)), std::sqrt(2.0 / 3.0), 0.03);
}

}  // namespace data_embedding_test
}  // namespace shoal
