// The mixing blocks of TSMixer / TSMixerx (models/mixing.h, and the TimeLinear and RevIN layers
// they are built on) on their own: double-precision gradient checks of every block on awkward
// shapes (one window, one column, one time step, widths around the SIMD width, in ≠ out), through
// strided views (ld > cols, a column block that starts one element in), with dropout drawn and a
// non-zero first row (row0).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "shoal/models/mixing.h"
#include "support/gradcheck.h"

namespace shoal {
namespace mixing_test {

using layers::RevIn;
using layers::TimeLinear;
using models::FeatureMixing;
using models::FeatureMixingX;
using models::TemporalMixing;
using models::TemporalMixingX;

constexpr Index kPad = 3;  // views are column blocks [1, 1 + cols) of [rows, cols + kPad]

// An activation and its gradient as strided views into the arena.
struct Act {
  Buffer<double> value, grad;
  Index rows = 0, cols = 0;
  void plan(Planner& p, const std::string& name, Index r, Index c) {
    rows = r, cols = c;
    p.buffer(value, Region::kActivations, name, {r, c + kPad});
    p.buffer(grad, Region::kActivationGrads, "d" + name, {r, c + kPad});
  }
  MatView<double> x() const { return value.mat().cols_block(1, cols); }
  MatView<double> dx() const { return grad.mat().cols_block(1, cols); }
  testing::GradVar var(const std::string& name) const {
    return {name, value.view.data, grad.view.data, value.view.numel(), false};
  }
  testing::GradOut out() const { return {value.view.data, grad.view.data, value.view.numel()}; }
};

// Params moved off their init (LayerNorm 1/0, RevIN 1/0) so every term of every gradient is
// exercised; all of them checked as accumulating gradients.
template <class Block>
void add_params(Block& block, std::vector<testing::GradVar>& vars, uint64_t seed) {
  RngStream jitter(seed, 5);
  block.for_each_param([&](auto name, Param<double>& p) {
    for (double& v : p.value) v += jitter.uniform(-0.3f, 0.3f);
    vars.push_back({std::string(name), p.value.data, p.grad.data, p.value.numel(), true});
  });
}

void expect_gradients(const std::vector<testing::GradVar>& vars,
                      const std::vector<testing::GradOut>& outs, const std::function<void()>& fwd,
                      const std::function<void()>& bwd) {
  const auto res = testing::gradcheck(vars, outs, fwd, bwd);
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

const Ctx kTrain{.training = true, .seed = 9, .step = 4};

TEST(TimeLinearBlock, GradientsMatchCentralDifferences) {
  struct Case {
    Index in, out, cols, batch;
    kernels::Act act;
    bool accumulate_dx;
  };
  for (const Case c :
       {Case{1, 1, 1, 1, kernels::Act::kNone, false}, Case{5, 3, 9, 2, kernels::Act::kRelu, false},
        Case{4, 7, 8, 3, kernels::Act::kNone, true},
        Case{3, 3, 17, 1, kernels::Act::kRelu, true}}) {
    SCOPED_TRACE(::testing::Message() << "I=" << c.in << " O=" << c.out << " C=" << c.cols
                                      << " B=" << c.batch << " acc=" << c.accumulate_dx);
    TimeLinear<double> lin({.in = c.in, .out = c.out, .cols = c.cols, .act = c.act});
    Act x, y;
    Planner planner;
    lin.plan(planner, c.batch * c.in);
    x.plan(planner, "x", c.batch * c.in, c.cols);
    y.plan(planner, "y", c.batch * c.out, c.cols);
    Arena arena(std::move(planner));
    RngStream rng(3, 1);
    lin.init(rng);
    testing::fill_uniform(x.value.view.data, x.value.view.numel(), 4, -2, 2);
    std::vector<testing::GradVar> vars = {x.var("x")};
    add_params(lin, vars, 6);
    // With accumulate_dx the block adds to dx: the check's "overwrite" expectation holds when
    // dx starts at zero.
    expect_gradients(
        vars, {y.out()}, [&] { lin.forward(kTrain, x.x(), y.x()); },
        [&] {
          if (c.accumulate_dx) std::fill(x.grad.view.begin(), x.grad.view.end(), 0.0);
          lin.backward(kTrain, x.x(), y.x(), y.dx(), x.dx(), c.accumulate_dx);
        });
  }
}

TEST(RevInBlock, GradientsMatchCentralDifferences) {
  for (const Index n : {1, 3, 9})
    for (const Index batch : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << "N=" << n << " B=" << batch);
      const Index l = 5, h = 3;
      RevIn<double> revin({.n_series = n, .input_size = l, .h = h});
      Buffer<double> x;  // the raw series [B·L, N], contiguous (data: no gradient)
      Act y, z, out;     // normalize output [B·L, N]; denormalize input and output [B·H, N]
      Planner planner;
      revin.plan(planner, batch * l);
      planner.buffer(x, Region::kActivations, "x", {batch * l, n});
      y.plan(planner, "y", batch * l, n);
      z.plan(planner, "z", batch * h, n);
      out.plan(planner, "out", batch * h, n);
      Arena arena(std::move(planner));
      RngStream rng(3, 1);
      revin.init(rng);
      testing::fill_uniform(x.view.data, x.view.numel(), 4, -2, 3);
      testing::fill_uniform(z.value.view.data, z.value.view.numel(), 5, -2, 2);
      std::vector<testing::GradVar> vars = {z.var("z")};
      add_params(revin, vars, 6);
      expect_gradients(
          vars, {y.out(), out.out()},
          [&] {
            revin.normalize(x.mat(), y.x());
            revin.denormalize(z.x(), out.x());
          },
          [&] {
            revin.normalize_backward(x.mat(), y.dx());
            revin.denormalize_backward(z.x(), out.dx(), z.dx());
          });
    }
}

TEST(FeatureMixingXBlock, GradientsMatchCentralDifferences) {
  struct Case {
    Index in, out, h, ff, batch, row0;
    double dropout;
  };
  for (const Case c :
       {Case{1, 1, 1, 1, 1, 0, 0.0}, Case{3, 3, 2, 5, 2, 0, 0.0}, Case{5, 4, 3, 2, 2, 3, 0.3},
        Case{9, 8, 2, 7, 3, 0, 0.25}, Case{8, 9, 1, 8, 1, 5, 0.0}}) {
    SCOPED_TRACE(::testing::Message()
                 << "in=" << c.in << " out=" << c.out << " H=" << c.h << " K=" << c.ff
                 << " B=" << c.batch << " row0=" << c.row0 << " p=" << c.dropout);
    FeatureMixingX<double> fm(
        {.in = c.in, .out = c.out, .h = c.h, .ff = c.ff, .dropout = c.dropout, .stream = 7});
    Act x, y;
    Planner planner;
    fm.plan(planner, c.batch * c.h);
    x.plan(planner, "x", c.batch * c.h, c.in);
    y.plan(planner, "y", c.batch * c.h, c.out);
    Arena arena(std::move(planner));
    RngStream rng(3, 1);
    fm.init(rng);
    testing::fill_uniform(x.value.view.data, x.value.view.numel(), 4, -2, 2);
    std::vector<testing::GradVar> vars = {x.var("x")};
    add_params(fm, vars, 6);
    // The transposed weights are packed by the chunk with row0 = 0 (a batch's first); a later
    // chunk reuses them, so a perturbed weight reaches a row0 > 0 forward through that chunk.
    expect_gradients(
        vars, {y.out()},
        [&] {
          if (c.row0 > 0) fm.forward(kTrain, x.x(), y.x(), 0);
          fm.forward(kTrain, x.x(), y.x(), c.row0);
        },
        [&] { fm.backward(kTrain, x.x(), y.dx(), x.dx(), c.row0); });
  }
}

TEST(TemporalMixingXBlock, GradientsMatchCentralDifferences) {
  struct Case {
    Index cols, h, batch, row0;
    double dropout;
  };
  for (const Case c : {Case{1, 1, 1, 0, 0.0}, Case{5, 3, 2, 0, 0.3}, Case{9, 4, 3, 2, 0.2},
                       Case{8, 2, 1, 0, 0.0}}) {
    SCOPED_TRACE(::testing::Message() << "C=" << c.cols << " H=" << c.h << " B=" << c.batch
                                      << " row0=" << c.row0 << " p=" << c.dropout);
    TemporalMixingX<double> tm({.cols = c.cols, .h = c.h, .dropout = c.dropout, .stream = 3});
    Act x, y;
    Planner planner;
    tm.plan(planner, c.batch * c.h);
    x.plan(planner, "x", c.batch * c.h, c.cols);
    y.plan(planner, "y", c.batch * c.h, c.cols);
    Arena arena(std::move(planner));
    RngStream rng(3, 1);
    tm.init(rng);
    testing::fill_uniform(x.value.view.data, x.value.view.numel(), 4, -2, 2);
    std::vector<testing::GradVar> vars = {x.var("x")};
    add_params(tm, vars, 6);
    expect_gradients(
        vars, {y.out()}, [&] { tm.forward(kTrain, x.x(), y.x(), c.row0); },
        [&] { tm.backward(kTrain, x.x(), y.dx(), x.dx(), c.row0); });
  }
}

// TSMixer's pre-norm blocks: BatchNorm's batch statistics need B ≥ 2 in training; eval
// (running statistics) takes one window. The feature half reads its input as contiguous
// windows (one BatchNorm row each), so its x is a plain [B·L, N] buffer.
struct PrenormCase {
  Index n, l, ff, batch;
  bool training;
  double dropout;
};
constexpr PrenormCase kPrenormCases[] = {{1, 1, 1, 2, true, 0.0},
                                         {3, 5, 2, 2, true, 0.4},
                                         {9, 4, 8, 3, true, 0.0},
                                         {2, 3, 5, 1, false, 0.9},
                                         {8, 2, 9, 2, false, 0.0}};

TEST(TemporalMixingBlock, GradientsMatchCentralDifferences) {
  for (const PrenormCase c : kPrenormCases) {
    SCOPED_TRACE(::testing::Message() << "N=" << c.n << " L=" << c.l << " B=" << c.batch
                                      << " training=" << c.training << " p=" << c.dropout);
    TemporalMixing<double> tm(
        {.n_series = c.n, .input_size = c.l, .dropout = c.dropout, .stream = 2});
    Act x, y;
    Planner planner;
    tm.plan(planner, c.batch * c.l);
    x.plan(planner, "x", c.batch * c.l, c.n);
    y.plan(planner, "y", c.batch * c.l, c.n);
    Arena arena(std::move(planner));
    RngStream rng(3, 1);
    tm.init(rng);
    testing::fill_uniform(x.value.view.data, x.value.view.numel(), 4, -2, 2);
    std::vector<testing::GradVar> vars = {x.var("x")};
    add_params(tm, vars, 6);
    const Ctx ctx{.training = c.training, .seed = 9, .step = 2};
    expect_gradients(
        vars, {y.out()}, [&] { tm.forward(ctx, x.x(), y.x()); },
        [&] { tm.backward(ctx, x.x(), y.dx(), x.dx()); });
  }
}

TEST(FeatureMixingBlock, GradientsMatchCentralDifferences) {
  for (const PrenormCase c : kPrenormCases) {
    SCOPED_TRACE(::testing::Message()
                 << "N=" << c.n << " L=" << c.l << " K=" << c.ff << " B=" << c.batch
                 << " training=" << c.training << " p=" << c.dropout);
    FeatureMixing<double> fm(
        {.n_series = c.n, .input_size = c.l, .ff = c.ff, .dropout = c.dropout, .stream = 2});
    Buffer<double> x, dx;
    Act y;
    Planner planner;
    fm.plan(planner, c.batch * c.l);
    planner.buffer(x, Region::kActivations, "x", {c.batch * c.l, c.n});
    planner.buffer(dx, Region::kActivationGrads, "dx", {c.batch * c.l, c.n});
    y.plan(planner, "y", c.batch * c.l, c.n);
    Arena arena(std::move(planner));
    RngStream rng(3, 1);
    fm.init(rng);
    testing::fill_uniform(x.view.data, x.view.numel(), 4, -2, 2);
    std::vector<testing::GradVar> vars = {{"x", x.view.data, dx.view.data, x.view.numel(), false}};
    add_params(fm, vars, 6);
    const Ctx ctx{.training = c.training, .seed = 9, .step = 2};
    expect_gradients(
        vars, {y.out()}, [&] { fm.forward(ctx, x.mat(), y.x()); },
        [&] { fm.backward(ctx, x.mat(), y.dx(), dx.mat()); });
  }
}

// Each block's analytic cost is affine in its rows (what the profiler's zones assume), and the
// blocks' parts add up: FeatureMixingX without dropout or projection is its two Linears, the
// residual add and its LayerNorm.
TEST(MixingBlockCosts, AffineInRowsAndSumOfTheirLayers) {
  FeatureMixingX<float> fm({.in = 6, .out = 6, .h = 3, .ff = 5});
  const auto at = [&](double rows) { return fm.forward_cost(rows); };
  EXPECT_EQ(at(7).flops - at(3).flops, 4 * (at(1).flops - at(0).flops));
  EXPECT_EQ(at(7).bytes - at(3).bytes, 4 * (at(1).bytes - at(0).bytes));
  const profile::Cost parts = fm.lin1.forward_cost(12) + fm.lin2.forward_cost(12) +
                              profile::elementwise(12, 6, 1, 2, 4) + fm.norm.forward_cost(12);
  EXPECT_EQ(fm.forward_cost(12), parts);
  FeatureMixingX<float> dropped({.in = 6, .out = 4, .h = 3, .ff = 5, .dropout = 0.5});
  EXPECT_EQ(dropped.forward_cost(12).flops,
            fm.lin1.forward_cost(12).flops + dropped.lin2.forward_cost(12).flops +
                dropped.proj.forward_cost(12).flops + 12 * 4 + dropped.norm.forward_cost(12).flops +
                12 * 5 + 12 * 4);
  EXPECT_LT(dropped.backward_cost(12, false).flops, dropped.backward_cost(12, true).flops);
  TimeLinear<float> lin({.in = 4, .out = 2, .cols = 3});
  // 2 windows of 4 rows: a Linear 4 → 2 on 2·3 columns.
  EXPECT_EQ(lin.forward_cost(8), profile::linear_forward(6, 4, 2, true, profile::ActKind::kNone));
}

}  // namespace mixing_test
}  // namespace shoal
