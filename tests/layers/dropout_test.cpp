#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "shoal/layers/dropout.h"
#include "support/gradcheck.h"

namespace shoal {
namespace dropout_test {

using layers::Dropout;

// The mask as the convention states it, written out independently of the layer.
bool spec_kept(uint64_t seed, uint64_t stream, uint64_t step, Index e, double p) {
  const auto ue = static_cast<uint64_t>(e);
  return static_cast<double>(u01(Philox(seed, stream).block(step, ue / 4)[ue % 4])) >= p;
}

Ctx train_ctx(uint64_t seed, uint64_t step) {
  Ctx ctx;
  ctx.training = true;
  ctx.seed = seed;
  ctx.step = step;
  return ctx;
}

struct DropCase {
  Index n, f;
  double p;
};

std::string drop_name(const ::testing::TestParamInfo<DropCase>& info) {
  const auto& c = info.param;
  return "n" + std::to_string(c.n) + "_f" + std::to_string(c.f) + "_p" +
         std::to_string(static_cast<int>(std::lround(c.p * 100)));
}

class DropoutGrad : public ::testing::TestWithParam<DropCase> {};

// x, y, dy, dx are column blocks of wider buffers (ld = F + 2): the padding stays 0 in the
// values and in dx, so the whole-buffer check still holds, and a mask that depended on ld or
// an access outside the block would show.
TEST_P(DropoutGrad, MatchesCentralDifferences) {
  const auto c = GetParam();
  const Index ld = c.f + 2;
  Dropout<double> layer({.p = c.p, .stream = 3});
  Buffer<double> x, y, dy, dx;
  Planner planner;
  layer.plan(planner, c.n);
  planner.buffer(x, Region::kActivations, "x", {c.n, ld});
  planner.buffer(y, Region::kActivations, "y", {c.n, ld});
  planner.buffer(dy, Region::kActivationGrads, "dy", {c.n, ld});
  planner.buffer(dx, Region::kActivationGrads, "dx", {c.n, ld});
  Arena arena(std::move(planner));
  auto blk = [&](Buffer<double>& b) { return b.mat().cols_block(1, c.f); };
  for (Index r = 0; r < c.n; ++r)
    testing::fill_uniform(blk(x).row(r), c.f, 20 + static_cast<uint64_t>(r));
  const Ctx ctx = train_ctx(42, 5);
  auto res = testing::gradcheck(
      {{"x", x.view.data, dx.view.data, x.view.numel(), false}},
      {{y.view.data, dy.view.data, y.view.numel()}}, [&] { layer.forward(ctx, blk(x), blk(y)); },
      [&] { layer.backward(ctx, blk(x), blk(y), blk(dy), blk(dx)); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  // The backward mask is the forward's: every dropped output has a zero input gradient.
  const double scale = 1.0 / (1.0 - c.p);
  for (Index r = 0; r < c.n; ++r)
    for (Index j = 0; j < c.f; ++j) {
      const bool keep = spec_kept(42, 3, 5, r * c.f + j, c.p);
      EXPECT_EQ(blk(y)(r, j), keep ? blk(x)(r, j) * scale : 0.0) << r << "," << j;
      EXPECT_EQ(blk(dx)(r, j), keep ? blk(dy)(r, j) * scale : 0.0) << r << "," << j;
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DropoutGrad,
                         ::testing::Values(DropCase{1, 1, 0.5}, DropCase{1, 7, 0.5},
                                           DropCase{3, 8, 0.1}, DropCase{5, 9, 0.3},
                                           DropCase{2, 15, 0.5}, DropCase{4, 16, 0.9},
                                           DropCase{3, 17, 0.0}, DropCase{6, 17, 0.25}),
                         drop_name);

// Runs forward on x = 1 everywhere ([n, f], contiguous) and returns y.
std::vector<float> run_ones(const Dropout<float>& proto, const Ctx& ctx, Index n, Index f) {
  Dropout<float> layer = proto;
  std::vector<float> x(static_cast<size_t>(n * f), 1.0f), y(x.size());
  layer.forward(ctx, MatView<const float>(x.data(), n, f), MatView<float>(y.data(), n, f));
  return y;
}

TEST(Dropout, KeptFractionIsOneMinusP) {
  constexpr Index kN = 1000, kF = 257;
  for (double p : {0.1, 0.5, 0.9}) {
    Dropout<float> layer({.p = p, .stream = 1});
    const auto y = run_ones(layer, train_ctx(7, 3), kN, kF);
    const auto scale = static_cast<float>(1.0 / (1.0 - p));
    double kept = 0;
    for (float v : y) {
      ASSERT_TRUE(v == 0.0f || v == scale) << "a kept value must be x / (1 - p), got " << v;
      kept += v != 0.0f ? 1 : 0;
    }
    const double n = static_cast<double>(kN * kF);
    const double sigma = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(kept / n, 1 - p, 5 * sigma) << "p = " << p;
  }
}

TEST(Dropout, MaskIsAFunctionOfSeedStreamStep) {
  constexpr Index kN = 13, kF = 11;
  Dropout<float> a({.p = 0.5, .stream = 1});
  Dropout<float> b({.p = 0.5, .stream = 2});
  const auto base = run_ones(a, train_ctx(9, 4), kN, kF);
  EXPECT_EQ(base, run_ones(a, train_ctx(9, 4), kN, kF)) << "same key must give the same mask";
  EXPECT_NE(base, run_ones(a, train_ctx(9, 5), kN, kF)) << "next step must change the mask";
  EXPECT_NE(base, run_ones(a, train_ctx(10, 4), kN, kF)) << "another seed must change it";
  EXPECT_NE(base, run_ones(b, train_ctx(9, 4), kN, kF)) << "another stream must change it";
  for (Index e = 0; e < kN * kF; ++e)
    EXPECT_EQ(base[static_cast<size_t>(e)] != 0.0f, spec_kept(9, 1, 4, e, 0.5)) << "e = " << e;
}

TEST(Dropout, MaskIndependentOfLd) {
  constexpr Index kN = 9, kF = 7, kLd = 12;
  Dropout<float> layer({.p = 0.4, .stream = 6});
  const Ctx ctx = train_ctx(1, 2);
  const auto dense = run_ones(layer, ctx, kN, kF);
  std::vector<float> x(static_cast<size_t>(kN * kLd), 1.0f), y(x.size(), -5.0f);
  MatView<float> yv = MatView<float>(y.data(), kN, kLd).cols_block(3, kF);
  layer.forward(ctx, MatView<const float>(x.data(), kN, kLd).cols_block(3, kF), yv);
  for (Index r = 0; r < kN; ++r)
    for (Index c = 0; c < kLd; ++c) {
      const float got = y[static_cast<size_t>(r * kLd + c)];
      if (c >= 3 && c < 3 + kF)
        EXPECT_EQ(got, dense[static_cast<size_t>(r * kF + c - 3)]) << r << "," << c;
      else
        EXPECT_EQ(got, -5.0f) << "wrote outside the view at " << r << "," << c;
    }
}

TEST(Dropout, RowBlocksWithRow0MatchTheWholeBatch) {
  constexpr Index kN = 10, kF = 9;
  Dropout<float> layer({.p = 0.3, .stream = 2});
  const Ctx ctx = train_ctx(5, 8);
  const auto whole = run_ones(layer, ctx, kN, kF);
  std::vector<float> x(static_cast<size_t>(kN * kF), 1.0f), y(x.size());
  const MatView<const float> xv(x.data(), kN, kF);
  const MatView<float> yv(y.data(), kN, kF);
  layer.forward(ctx, xv.rows_block(0, 3), yv.rows_block(0, 3), 0);
  layer.forward(ctx, xv.rows_block(3, 7), yv.rows_block(3, 7), 3);
  EXPECT_EQ(y, whole);
}

TEST(Dropout, EvalAndPZeroAreIdentity) {
  constexpr Index kN = 4, kF = 9;
  std::vector<double> x(kN * kF), y(kN * kF), dy(kN * kF), dx(kN * kF);
  testing::fill_uniform(x.data(), kN * kF, 1);
  testing::fill_uniform(dy.data(), kN * kF, 2);
  const MatView<const double> xv(x.data(), kN, kF), dyv(dy.data(), kN, kF);
  const MatView<double> yv(y.data(), kN, kF), dxv(dx.data(), kN, kF);
  Ctx eval = train_ctx(3, 3);
  eval.training = false;
  Dropout<double> half({.p = 0.5});
  half.forward(eval, xv, yv);
  half.backward(eval, xv, yv, dyv, dxv);
  EXPECT_EQ(y, x);
  EXPECT_EQ(dx, dy);
  Dropout<double> none({.p = 0.0});
  std::fill(y.begin(), y.end(), 0.0);
  std::fill(dx.begin(), dx.end(), 0.0);
  none.forward(train_ctx(3, 3), xv, yv);
  none.backward(train_ctx(3, 3), xv, yv, dyv, dxv);
  EXPECT_EQ(y, x);
  EXPECT_EQ(dx, dy);
  // And training with p > 0 is not the identity (the two checks above can fail).
  half.forward(train_ctx(3, 3), xv, yv);
  EXPECT_NE(y, x);
}

TEST(Dropout, InPlaceMatchesOutOfPlace) {
  constexpr Index kN = 3, kF = 15;
  std::vector<double> x(kN * kF), y(kN * kF);
  testing::fill_uniform(x.data(), kN * kF, 4);
  Dropout<double> layer({.p = 0.5, .stream = 9});
  const Ctx ctx = train_ctx(2, 1);
  layer.forward(ctx, MatView<const double>(x.data(), kN, kF), MatView<double>(y.data(), kN, kF));
  layer.forward(ctx, MatView<const double>(x.data(), kN, kF), MatView<double>(x.data(), kN, kF));
  EXPECT_EQ(x, y);
}

TEST(Dropout, PlanRejectsPOutsideZeroOne) {
  for (double p : {1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    Planner planner;
    Dropout<float> layer({.p = p});
    EXPECT_THROW(layer.plan(planner, 4), Error) << "p = " << p;
  }
  Planner planner;
  Dropout<float> ok({.p = 0.999});
  EXPECT_NO_THROW(ok.plan(planner, 4));
}

// Far into the flat index (large row0, large step with high bits set), over many generated
// chunks and with a width that is not a multiple of 4: every element matches the spec.
TEST(Dropout, MatchesSpecFarIntoTheIndexSpace) {
  constexpr Index kN = 40, kF = 37, kRow0 = 1'000'003;
  constexpr uint64_t kStep = (uint64_t{3} << 32) + 17;
  Dropout<float> layer({.p = 0.3, .stream = 77});
  Ctx ctx = train_ctx(0x123456789abcdefULL, kStep);
  std::vector<float> x(kN * kF, 1.0f), y(kN * kF);
  layer.forward(ctx, MatView<const float>(x.data(), kN, kF), MatView<float>(y.data(), kN, kF),
                kRow0);
  for (Index r = 0; r < kN; ++r)
    for (Index c = 0; c < kF; ++c)
      ASSERT_EQ(y[static_cast<size_t>(r * kF + c)] != 0.0f,
                spec_kept(ctx.seed, 77, kStep, (kRow0 + r) * kF + c, 0.3))
          << r << "," << c;
}

TEST(Dropout, KeptAgreesWithForward) {
  Dropout<float> layer({.p = 0.5, .stream = 4});
  const Ctx ctx = train_ctx(11, 2);
  const auto y = run_ones(layer, ctx, 5, 7);
  for (Index r = 0; r < 5; ++r)
    for (Index c = 0; c < 7; ++c)
      EXPECT_EQ(layer.kept(ctx, 7, r, c), y[static_cast<size_t>(r * 7 + c)] != 0.0f);
}

}  // namespace dropout_test
}  // namespace shoal
