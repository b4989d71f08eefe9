#include "shoal/layers/categorical_embedding.h"

#include <gtest/gtest.h>

#include <vector>

#include "support/gradcheck.h"

namespace shoal {
namespace categorical_embedding_test {

using layers::CategoricalEmbedding;

// A stream of 4 channels over P = 3 positions: channels 1 and 3 are categorical (listed 3 first,
// so the embeddings' order is the columns', not the channels'), 0 and 2 continuous.
struct Fixture {
  static constexpr Index kRows = 2, kPositions = 3;
  CategoricalEmbedding<double> layer{{.channels = 4,
                                      .columns = {{.channel = 3, .cardinality = 2, .dim = 3},
                                                  {.channel = 1, .cardinality = 4, .dim = 2}}}};
  Buffer<double> y, dy;
  Arena arena;
  std::vector<double> x;

  Fixture() {
    Planner planner;
    layer.plan(planner);
    planner.buffer(y, Region::kActivations, "y", {kRows, layer.out_channels() * kPositions});
    planner.buffer(dy, Region::kActivationGrads, "dy", {kRows, layer.out_channels() * kPositions});
    arena = Arena(std::move(planner));
    RngStream rng(3, 4);
    layer.init(rng);
    // [rows, C, P]; code 0 (unseen) appears in both categorical channels.
    x = {0.5, -1.0, 2.0,  // row 0, channel 0
         1,   4,    0,    // channel 1: codes
         7.0, 8.0,  9.0,  // channel 2
         2,   0,    1,    // channel 3: codes
         -3., 0.25, 1.5,  // row 1
         3,   3,    2,   10., 11., 12., 1, 1, 2};
  }
};

TEST(CategoricalEmbedding, LaysOutContinuousThenEmbeddingsWithTheMeanForUnseen) {
  Fixture f;
  ASSERT_EQ(f.layer.out_channels(), 2 + 3 + 2);
  f.layer.forward(f.x.data(), Fixture::kRows, Fixture::kPositions, f.y.view.data);
  const Index p = Fixture::kPositions, co = f.layer.out_channels();
  auto y = [&](Index r, Index c, Index t) { return f.y.view.data[(r * co + c) * p + t]; };
  auto x = [&](Index r, Index c, Index t) { return f.x[size_t((r * 4 + c) * p + t)]; };
  const double* w3 = f.layer.tables[0].value.data;  // channel 3's table [3, 3]
  const double* w1 = f.layer.tables[1].value.data;  // channel 1's table [5, 2]
  for (Index r = 0; r < Fixture::kRows; ++r)
    for (Index t = 0; t < p; ++t) {
      EXPECT_EQ(y(r, 0, t), x(r, 0, t));
      EXPECT_EQ(y(r, 1, t), x(r, 2, t));
      const auto c3 = Index(x(r, 3, t)), c1 = Index(x(r, 1, t));
      for (Index d = 0; d < 3; ++d) {
        const double want = c3 == 0 ? (w3[3 + d] + w3[6 + d]) / 2 : w3[c3 * 3 + d];
        EXPECT_DOUBLE_EQ(y(r, 2 + d, t), want) << r << " " << t << " " << d;
      }
      for (Index d = 0; d < 2; ++d) {
        double mean = 0;
        for (Index i = 1; i <= 4; ++i) mean += w1[i * 2 + d];
        const double want = c1 == 0 ? mean / 4 : w1[c1 * 2 + d];
        EXPECT_DOUBLE_EQ(y(r, 5 + d, t), want) << r << " " << t << " " << d;
      }
    }
}

// The tables' gradients, the unseen code's spread over rows 1..U included, by central
// differences.
TEST(CategoricalEmbedding, TableGradientsMatchCentralDifferences) {
  Fixture f;
  std::vector<testing::GradVar> vars;
  for (size_t k = 0; k < f.layer.tables.size(); ++k) {
    Param<double>& w = f.layer.tables[k];
    vars.push_back({"table" + std::to_string(k), w.value.data, w.grad.data, w.value.numel(), true});
  }
  const auto res = testing::gradcheck(
      vars, {{f.y.view.data, f.dy.view.data, f.y.view.numel()}},
      [&] { f.layer.forward(f.x.data(), Fixture::kRows, Fixture::kPositions, f.y.view.data); },
      [&] { f.layer.backward(f.x.data(), Fixture::kRows, Fixture::kPositions, f.dy.view.data); });
  EXPECT_LE(res.max_rel_error, 1e-7) << res.worst;
}

TEST(CategoricalEmbedding, RejectsCodesOutsideTheCardinality) {
  for (double bad : {5.0, -1.0, 1.5}) {
    Fixture f;
    f.x[3] = bad;  // row 0, channel 1 (cardinality 4), position 0
    EXPECT_THROW(f.layer.forward(f.x.data(), Fixture::kRows, Fixture::kPositions, f.y.view.data),
                 Error)
        << bad;
  }
}

TEST(CategoricalEmbedding, RejectsAColumnOutsideTheStream) {
  using Emb = CategoricalEmbedding<float>;
  EXPECT_THROW(Emb({.channels = 2, .columns = {{.channel = 2, .cardinality = 3, .dim = 1}}}),
               Error);
  EXPECT_THROW(Emb({.channels = 2,
                    .columns = {{.channel = 1, .cardinality = 3, .dim = 1},
                                {.channel = 1, .cardinality = 3, .dim = 1}}}),
               Error);
  EXPECT_THROW(Emb({.channels = 2, .columns = {{.channel = 0, .cardinality = 0, .dim = 1}}}),
               Error);
}

// neuralforecast's _resolve_cat_emb_dim.
TEST(CategoricalEmbeddingDim, FollowsNeuralforecastsRules) {
  using layers::categorical_embedding_dim;
  EXPECT_EQ(categorical_embedding_dim("fastai", 2), 3);      // ⌈1.6 · 2^0.56⌉ = ⌈2.36⌉
  EXPECT_EQ(categorical_embedding_dim("fastai", 10), 6);     // ⌈5.81⌉
  EXPECT_EQ(categorical_embedding_dim("fastai", 1000), 50);  // capped
  EXPECT_EQ(categorical_embedding_dim("sqrt", 10), 4);
  EXPECT_EQ(categorical_embedding_dim("sqrt", 9), 3);
  EXPECT_EQ(categorical_embedding_dim("half", 10), 5);
  EXPECT_EQ(categorical_embedding_dim("half", 7), 4);
  EXPECT_EQ(categorical_embedding_dim("half", 500), 50);
  EXPECT_EQ(categorical_embedding_dim("8", 1000), 8);
  EXPECT_THROW(categorical_embedding_dim("wide", 3), Error);
  EXPECT_THROW(categorical_embedding_dim("0", 3), Error);
}

}  // namespace categorical_embedding_test
}  // namespace shoal
