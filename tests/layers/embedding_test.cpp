#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "shoal/layers/embedding.h"
#include "support/gradcheck.h"

namespace shoal {
namespace embedding_test {

using layers::Embedding;
using Id = Embedding<double>::Id;

struct EmbCase {
  Index n, u, d;
};

std::string emb_name(const ::testing::TestParamInfo<EmbCase>& info) {
  const auto& c = info.param;
  return "n" + std::to_string(c.n) + "_u" + std::to_string(c.u) + "_d" + std::to_string(c.d);
}

// Ids with repeats: random in [0, U), and the last id repeats the first.
std::vector<Id> make_ids(Index n, Index u, uint64_t seed) {
  RngStream rng(seed, 5);
  std::vector<Id> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = static_cast<Id>(rng.below(static_cast<uint32_t>(u)));
  if (n > 1) ids.back() = ids.front();
  return ids;
}

class EmbeddingGrad : public ::testing::TestWithParam<EmbCase> {};

// y and dy are a column block of a wider buffer (ld = D + 3): the padding columns of y stay 0
// and the r weights on dy's padding must be ignored by backward, or the check fails.
TEST_P(EmbeddingGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  constexpr Index kPad = 3;
  Embedding<double> layer({.num_embeddings = c.u, .embedding_dim = c.d});
  Buffer<double> y, dy;
  Planner planner;
  layer.plan(planner, c.n);
  planner.buffer(y, Region::kActivations, "y", {c.n, c.d + kPad});
  planner.buffer(dy, Region::kActivationGrads, "dy", {c.n, c.d + kPad});
  Arena arena(std::move(planner));
  RngStream rng(1, 2);
  layer.init(rng);
  const std::vector<Id> ids = make_ids(c.n, c.u, 11);
  const MatView<double> yv = y.mat().cols_block(1, c.d);
  const MatView<double> dyv = dy.mat().cols_block(1, c.d);

  std::vector<double> dense(static_cast<size_t>(c.u * c.d));
  Ctx ctx;
  auto res = testing::gradcheck(
      {{"weight", layer.p.weight.value.data, dense.data(), c.u * c.d, false}},
      {{y.view.data, dy.view.data, y.view.numel()}}, [&] { layer.forward(ctx, ids, yv); },
      [&] {
        layer.backward(ctx, ids, dyv);
        // Densify the sparse row gradients into a full-table gradient.
        std::fill(dense.begin(), dense.end(), 0.0);
        const auto t = layer.touched_rows();
        for (size_t k = 0; k < t.ids.size(); ++k)
          for (Index j = 0; j < c.d; ++j)
            dense[static_cast<size_t>(t.ids[k] * c.d + j)] += t.grad(static_cast<Index>(k), j);
      });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  EXPECT_TRUE(layer.p.weight.grad.data == nullptr) << "a sparse table must have no dense grad";
}

INSTANTIATE_TEST_SUITE_P(Shapes, EmbeddingGrad,
                         ::testing::Values(EmbCase{1, 1, 1}, EmbCase{1, 5, 7}, EmbCase{6, 4, 8},
                                           EmbCase{9, 13, 9}, EmbCase{5, 3, 15}, EmbCase{12, 7, 16},
                                           EmbCase{3, 20, 17}),
                         emb_name);

struct Fixture {
  Embedding<double> layer;
  Buffer<double> y, dy;
  Arena arena;
  Fixture(Index u, Index d, Index max_rows, double init_std = 1.0)
      : layer({.num_embeddings = u, .embedding_dim = d, .init_std = init_std}) {
    Planner planner;
    layer.plan(planner, max_rows);
    planner.buffer(y, Region::kActivations, "y", {max_rows, d});
    planner.buffer(dy, Region::kActivationGrads, "dy", {max_rows, d});
    arena = Arena(std::move(planner));
  }
};

TEST(Embedding, ForwardGathersRowsIntoStridedView) {
  Fixture f(4, 3, 3);
  for (Index i = 0; i < 12; ++i) f.layer.p.weight.value.data[i] = static_cast<double>(i);
  std::vector<double> wide(3 * 7, -1.0);
  MatView<double> y = MatView<double>(wide.data(), 3, 7).cols_block(2, 3);
  const std::vector<Id> ids = {2, 0, 2};
  f.layer.forward(Ctx{}, ids, y);
  const double expect[3][3] = {{6, 7, 8}, {0, 1, 2}, {6, 7, 8}};
  for (Index r = 0; r < 3; ++r) {
    for (Index c = 0; c < 7; ++c) {
      const double got = wide[static_cast<size_t>(r * 7 + c)];
      if (c >= 2 && c < 5)
        EXPECT_EQ(got, expect[r][c - 2]) << r << "," << c;
      else
        EXPECT_EQ(got, -1.0) << "wrote outside the column block at " << r << "," << c;
    }
  }
}

TEST(Embedding, TouchedRowsAreSortedDistinctAndSummed) {
  Fixture f(6, 2, 6);
  const std::vector<Id> ids = {5, 2, 5, 0, 2, 5};
  MatView<double> dy = f.dy.mat();
  for (Index r = 0; r < 6; ++r) {
    dy(r, 0) = static_cast<double>(r + 1);
    dy(r, 1) = 10.0 * static_cast<double>(r + 1);
  }
  f.layer.backward(Ctx{}, ids, dy);
  const auto t = f.layer.touched_rows();
  ASSERT_EQ(t.ids.size(), 3u);
  EXPECT_EQ(t.ids[0], 0);
  EXPECT_EQ(t.ids[1], 2);
  EXPECT_EQ(t.ids[2], 5);
  ASSERT_EQ(t.grad.rows, 3);
  ASSERT_EQ(t.grad.cols, 2);
  // id 0: row 3 → 4; id 2: rows 1, 4 → 2 + 5; id 5: rows 0, 2, 5 → 1 + 3 + 6.
  EXPECT_EQ(t.grad(0, 0), 4.0);
  EXPECT_EQ(t.grad(1, 0), 7.0);
  EXPECT_EQ(t.grad(2, 0), 10.0);
  EXPECT_EQ(t.grad(0, 1), 40.0);
  EXPECT_EQ(t.grad(1, 1), 70.0);
  EXPECT_EQ(t.grad(2, 1), 100.0);
}

TEST(Embedding, EachBackwardReplacesTheTouchedSet) {
  Fixture f(5, 2, 4);
  std::fill(f.dy.view.begin(), f.dy.view.end(), 1.0);
  const std::vector<Id> first = {1, 1, 4, 3};
  const std::vector<Id> second = {3};
  f.layer.backward(Ctx{}, first, f.dy.mat());
  EXPECT_EQ(f.layer.touched_rows().ids.size(), 3u);
  f.layer.backward(Ctx{}, second, f.dy.mat().rows_block(0, 1));
  const auto t = f.layer.touched_rows();
  ASSERT_EQ(t.ids.size(), 1u);
  EXPECT_EQ(t.ids[0], 3);
  EXPECT_EQ(t.grad(0, 0), 1.0) << "the previous batch's sum leaked into this one";
}

TEST(Embedding, InitIsNormalWithConfiguredStd) {
  for (double std_dev : {1.0, 0.01}) {
    Fixture f(500, 40, 1, std_dev);
    RngStream rng(3, 4);
    f.layer.init(rng);
    double sum = 0, sq = 0;
    const auto n = static_cast<double>(f.layer.p.weight.value.numel());
    for (double w : f.layer.p.weight.value) {
      sum += w;
      sq += w * w;
    }
    const double mean = sum / n;
    const double sd = std::sqrt(sq / n - mean * mean);
    EXPECT_NEAR(mean, 0.0, 5 * std_dev / std::sqrt(n));
    EXPECT_NEAR(sd, std_dev, 0.03 * std_dev);
  }
}

TEST(Embedding, PlanRejectsBadConfig) {
  Planner p1;
  Embedding<double> no_rows({.num_embeddings = 0, .embedding_dim = 4});
  EXPECT_THROW(no_rows.plan(p1, 8), Error);
  Planner p2;
  Embedding<double> no_width({.num_embeddings = 4, .embedding_dim = 0});
  EXPECT_THROW(no_width.plan(p2, 8), Error);
  Planner p3;
  Embedding<double> too_big({.num_embeddings = Index{1} << 32, .embedding_dim = 1});
  EXPECT_THROW(too_big.plan(p3, 8), Error);
}

TEST(Embedding, RegistersASparseRowsParam) {
  Fixture f(7, 3, 2);
  const ArenaEntry* e = f.arena.entry("weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, ParamKind::kSparseRows);
  EXPECT_EQ(e->shape, (Shape{7, 3}));
  EXPECT_EQ(f.arena.region_bytes(Region::kGrads), 0u);
}

TEST(Embedding, FloatMatchesDouble) {
  Embedding<float> lf({.num_embeddings = 9, .embedding_dim = 17});
  Buffer<float> y, dy;
  Planner planner;
  lf.plan(planner, 10);
  planner.buffer(y, Region::kActivations, "y", {10, 17});
  planner.buffer(dy, Region::kActivationGrads, "dy", {10, 17});
  Arena arena(std::move(planner));
  RngStream rng(1, 2);
  lf.init(rng);
  const std::vector<Id> ids = make_ids(10, 9, 4);
  lf.forward(Ctx{}, ids, y.mat());
  for (Index r = 0; r < 10; ++r)
    for (Index c = 0; c < 17; ++c)
      EXPECT_EQ(y.mat()(r, c), lf.p.weight.value.mat()(ids[static_cast<size_t>(r)], c));
  std::fill(dy.view.begin(), dy.view.end(), 1.0f);
  lf.backward(Ctx{}, ids, dy.mat());
  float total = 0;
  const auto t = lf.touched_rows();
  for (size_t k = 0; k < t.ids.size(); ++k) total += t.grad(static_cast<Index>(k), 0);
  EXPECT_EQ(total, 10.0f);
}

}  // namespace embedding_test
}  // namespace shoal
