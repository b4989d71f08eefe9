// The inverted embedding (layers/inverted_embedding.h): each (series, channel) sequence of a
// window is one token, in neuralforecast's order; gradient checks in double of the Linear and
// the input (with dropout in training); a batch in chunks of windows draws the whole batch's
// dropout mask.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shoal/layers/inverted_embedding.h"
#include "support/gradcheck.h"

namespace shoal {
namespace inverted_embedding_test {

using layers::InvertedEmbedding;

struct Fixture {
  static constexpr Index kWindows = 3, kChannels = 2, kSteps = 5, kSeries = 3, kHidden = 4;
  static constexpr Index kRows = kWindows * kChannels * kSteps;
  static constexpr Index kTokens = kWindows * kSeries * kChannels;
  InvertedEmbedding<double> layer;
  Arena arena;
  std::vector<double> x, y, dy, dx;
  explicit Fixture(double dropout)
      : layer({.steps = kSteps,
               .channels = kChannels,
               .n_series = kSeries,
               .hidden_size = kHidden,
               .dropout = dropout,
               .stream = 3}),
        x(size_t(kRows * kSeries)),
        y(size_t(kTokens * kHidden)),
        dy(y.size()),
        dx(x.size()) {
    Planner planner;
    layer.plan(planner, kRows);
    arena = Arena(std::move(planner));
    RngStream init(4, 1);
    layer.init(init);
    testing::fill_uniform(x.data(), Index(x.size()), 5, -1, 1);
  }
};

// Token (b·N + n)·C + c is x[b, c, :, n] times the weights: with the identity-like weight
// picking step s, its output is x[b, c, s, n].
TEST(InvertedEmbedding, TokensAreEachSeriesChannelSequence) {
  Fixture f(0.0);
  constexpr Index N = Fixture::kSeries, C = Fixture::kChannels, S = Fixture::kSteps,
                  E = Fixture::kHidden;
  std::fill(f.layer.linear.p.weight.value.begin(), f.layer.linear.p.weight.value.end(), 0.0);
  std::fill(f.layer.linear.p.bias.value.begin(), f.layer.linear.p.bias.value.end(), 0.0);
  for (Index e = 0; e < E; ++e) f.layer.linear.p.weight.value.data[e * S + e] = 1.0;
  f.layer.forward(Ctx{}, ConstMat<double>(f.x.data(), Fixture::kRows, N),
                  MatView<double>(f.y.data(), Fixture::kTokens, E));
  for (Index b = 0; b < Fixture::kWindows; ++b)
    for (Index n = 0; n < N; ++n)
      for (Index c = 0; c < C; ++c)
        for (Index e = 0; e < E; ++e)
          EXPECT_EQ(f.y[size_t((((b * N + n) * C + c) * E) + e)],
                    f.x[size_t(((b * C + c) * S + e) * N + n)]);
}

TEST(InvertedEmbedding, GradientsMatchCentralDifferences) {
  for (const double dropout : {0.0, 0.3}) {
    Fixture f(dropout);
    std::vector<testing::GradVar> vars;
    f.layer.for_each_param([&](std::string_view name, Param<double>& p) {
      vars.push_back({std::string(name), p.value.data, p.grad.data, p.value.numel(), true});
    });
    vars.push_back({"x", f.x.data(), f.dx.data(), Index(f.x.size()), false});
    const Ctx ctx{.training = true, .seed = 5, .step = 2};
    const ConstMat<double> xv(f.x.data(), Fixture::kRows, Fixture::kSeries);
    const auto res = testing::gradcheck(
        vars, {{f.y.data(), f.dy.data(), Index(f.y.size())}},
        [&] {
          f.layer.forward(ctx, xv, MatView<double>(f.y.data(), Fixture::kTokens, Fixture::kHidden));
        },
        [&] {
          f.layer.backward(ctx, ConstMat<double>(f.dy.data(), Fixture::kTokens, Fixture::kHidden),
                           MatView<double>(f.dx.data(), Fixture::kRows, Fixture::kSeries));
        });
    EXPECT_LE(res.max_rel_error, 1e-6) << "dropout " << dropout << ": " << res.worst;
  }
}

TEST(InvertedEmbedding, ChunksOfWindowsDrawTheWholeBatchsMask) {
  Fixture f(0.4);
  constexpr Index N = Fixture::kSeries, E = Fixture::kHidden,
                  per = Fixture::kChannels * Fixture::kSteps, tok = N * Fixture::kChannels;
  const Ctx ctx{.training = true, .seed = 5, .step = 2};
  f.layer.forward(ctx, ConstMat<double>(f.x.data(), Fixture::kRows, N),
                  MatView<double>(f.y.data(), Fixture::kTokens, E));
  const std::vector<double> whole = f.y;
  for (const auto& [w0, count] : {std::pair<Index, Index>{0, 1}, {1, 2}})
    f.layer.forward(ctx, ConstMat<double>(f.x.data() + w0 * per * N, count * per, N),
                    MatView<double>(f.y.data() + w0 * tok * E, count * tok, E), w0);
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(f.y[i], whole[i]) << i;
}

}  // namespace inverted_embedding_test
}  // namespace shoal
