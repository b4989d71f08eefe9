#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shoal/layers/elementwise.h"
#include "support/gradcheck.h"

namespace shoal {
namespace elementwise_test {

using layers::Add;
using layers::Mul;

struct EwCase {
  bool mul;
  Index n, f;
};

std::string ew_name(const ::testing::TestParamInfo<EwCase>& info) {
  const auto& c = info.param;
  return std::string(c.mul ? "mul" : "add") + "_n" + std::to_string(c.n) + "_f" +
         std::to_string(c.f);
}

// a, b, y and their gradients are different column blocks of wider buffers, so each view has
// its own ld and offset.
template <class Layer>
testing::GradcheckResult check(Index n, Index f) {
  Layer layer;
  Buffer<double> a, b, y, dy, da, db;
  Planner planner;
  layer.plan(planner, n);
  planner.buffer(a, Region::kActivations, "a", {n, f + 1});
  planner.buffer(b, Region::kActivations, "b", {n, f + 4});
  planner.buffer(y, Region::kActivations, "y", {n, f + 2});
  planner.buffer(dy, Region::kActivationGrads, "dy", {n, f + 2});
  planner.buffer(da, Region::kActivationGrads, "da", {n, f + 1});
  planner.buffer(db, Region::kActivationGrads, "db", {n, f + 4});
  Arena arena(std::move(planner));
  auto av = [&](Buffer<double>& buf) { return buf.mat().cols_block(1, f); };
  auto bv = [&](Buffer<double>& buf) { return buf.mat().cols_block(3, f); };
  auto yv = [&](Buffer<double>& buf) { return buf.mat().cols_block(0, f); };
  for (Index r = 0; r < n; ++r) {
    testing::fill_uniform(av(a).row(r), f, 40 + static_cast<uint64_t>(r));
    testing::fill_uniform(bv(b).row(r), f, 80 + static_cast<uint64_t>(r));
  }
  const Ctx ctx;
  return testing::gradcheck(
      {{"a", a.view.data, da.view.data, a.view.numel(), false},
       {"b", b.view.data, db.view.data, b.view.numel(), false}},
      {{y.view.data, dy.view.data, y.view.numel()}},
      [&] { layer.forward(ctx, av(a), bv(b), yv(y)); },
      [&] { layer.backward(ctx, av(a), bv(b), yv(y), yv(dy), av(da), bv(db)); });
}

class ElementwiseGrad : public ::testing::TestWithParam<EwCase> {};

TEST_P(ElementwiseGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  const auto res = c.mul ? check<Mul<double>>(c.n, c.f) : check<Add<double>>(c.n, c.f);
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

std::vector<EwCase> ew_cases() {
  std::vector<EwCase> cases;
  for (bool mul : {false, true})
    for (auto [n, f] :
         {std::pair<Index, Index>{1, 1}, {1, 7}, {3, 8}, {2, 9}, {5, 15}, {4, 16}, {3, 17}})
      cases.push_back({mul, n, f});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ElementwiseGrad, ::testing::ValuesIn(ew_cases()), ew_name);

// Gradients overwrite: stale values in da/db must not survive a backward.
TEST(Elementwise, InputGradientsOverwrite) {
  std::vector<double> a = {1, 2, 3}, b = {4, 5, 6}, y(3), dy = {1, 1, 1};
  std::vector<double> da(3, 100.0), db(3, 100.0);
  const MatView<const double> av(a.data(), 1, 3), bv(b.data(), 1, 3), dyv(dy.data(), 1, 3);
  Mul<double> mul;
  mul.forward(Ctx{}, av, bv, MatView<double>(y.data(), 1, 3));
  mul.backward(Ctx{}, av, bv, MatView<const double>(y.data(), 1, 3), dyv,
               MatView<double>(da.data(), 1, 3), MatView<double>(db.data(), 1, 3));
  EXPECT_EQ(y, (std::vector<double>{4, 10, 18}));
  EXPECT_EQ(da, b);
  EXPECT_EQ(db, a);
  std::fill(da.begin(), da.end(), 100.0);
  std::fill(db.begin(), db.end(), 100.0);
  Add<double> add;
  add.forward(Ctx{}, av, bv, MatView<double>(y.data(), 1, 3));
  add.backward(Ctx{}, av, bv, MatView<const double>(y.data(), 1, 3), dyv,
               MatView<double>(da.data(), 1, 3), MatView<double>(db.data(), 1, 3));
  EXPECT_EQ(y, (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(da, dy);
  EXPECT_EQ(db, dy);
}

// da may alias dy (a model reusing the incoming gradient buffer); an empty db is skipped.
TEST(Elementwise, MulBackwardWithAliasedAndMissingGradients) {
  std::vector<double> a(9), b(9), dy(9);
  testing::fill_uniform(a.data(), 9, 1);
  testing::fill_uniform(b.data(), 9, 2);
  testing::fill_uniform(dy.data(), 9, 3);
  std::vector<double> expect_da(9), expect_db(9);
  for (size_t i = 0; i < 9; ++i) {
    expect_da[i] = dy[i] * b[i];
    expect_db[i] = dy[i] * a[i];
  }
  const MatView<const double> av(a.data(), 3, 3), bv(b.data(), 3, 3);
  Mul<double> mul;
  std::vector<double> db(9);
  mul.backward(Ctx{}, av, bv, av, MatView<const double>(dy.data(), 3, 3),
               MatView<double>(dy.data(), 3, 3), MatView<double>(db.data(), 3, 3));
  EXPECT_EQ(dy, expect_da);
  EXPECT_EQ(db, expect_db) << "db must use dy read before da overwrote it";
  std::vector<double> dy2(9, 2.0), da2(9);
  mul.backward(Ctx{}, av, bv, av, MatView<const double>(dy2.data(), 3, 3),
               MatView<double>(da2.data(), 3, 3), MatView<double>{});
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(da2[i], 2.0 * b[i]);
}

}  // namespace elementwise_test
}  // namespace shoal
