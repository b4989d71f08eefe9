// Gradient checks (double, central differences) of DilatedRNN's encoder (layers/
// dilated_recurrent.h): every cell, one group and two (the residual link), dilations that divide
// the window and dilations that pad it. And the dilated layer is the plain recurrence on every
// r-th step: a one-layer group with rate r gives, per phase j, a Recurrent run over steps
// j, j + r, … of the window alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shoal/layers/dilated_recurrent.h"
#include "support/gradcheck.h"

namespace shoal {
namespace dilated_recurrent_test {

using layers::DilatedRecurrent;
using layers::Recurrent;
using layers::RnnCell;

void check(RnnCell cell, const std::vector<std::vector<int64_t>>& groups, Index hidden) {
  const Index steps = 7, batch = 2, in = 3, rows = steps * batch;
  DilatedRecurrent<double> enc(
      {.cell = cell, .in = in, .hidden = hidden, .groups = groups, .steps = steps});
  Planner planner;
  enc.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(2, 1);
  enc.init(init);
  std::vector<double> x(size_t(rows * in)), y(size_t(rows * hidden)), dy(y.size());
  testing::fill_uniform(x.data(), rows * in, 4, -2, 2);
  std::vector<testing::GradVar> vars;
  enc.for_each_param([&](const std::string& name, Param<double>& p) {
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  const Ctx ctx{.training = true, .seed = 3, .step = 1};
  const MatView<double> xv(x.data(), rows, in), yv(y.data(), rows, hidden),
      dyv(dy.data(), rows, hidden);
  const auto res = testing::gradcheck(
      vars, {{y.data(), dy.data(), rows * hidden}}, [&] { enc.forward(ctx, xv, yv); },
      [&] { enc.backward(ctx, xv, yv, dyv, MatView<double>{}); });
  EXPECT_LE(res.max_rel_error, 1e-6)
      << "cell " << int(cell) << " groups " << groups.size() << ": " << res.worst;
}

TEST(DilatedRecurrent, GradientsMatchCentralDifferences) {
  for (RnnCell cell : {RnnCell::kRnnTanh, RnnCell::kGru, RnnCell::kLstm}) {
    check(cell, {{2}}, 4);
    check(cell, {{1, 2}, {3}}, 5);
    check(cell, {{1}, {2, 4}, {8}}, 4);
  }
}

TEST(DilatedRecurrent, ALayerIsTheRecurrenceOnEveryRthStep) {
  const Index steps = 7, batch = 2, in = 2, hd = 3, r = 3;
  DilatedRecurrent<double> enc(
      {.cell = RnnCell::kGru, .in = in, .hidden = hd, .groups = {{r}}, .steps = steps});
  Planner planner;
  enc.plan(planner, steps * batch);
  Arena arena(std::move(planner));
  RngStream init(5, 1);
  enc.init(init);
  std::vector<double> x(size_t(steps * batch * in)), y(size_t(steps * batch * hd));
  testing::fill_uniform(x.data(), Index(x.size()), 1, -1, 1);
  const Ctx ctx{.training = false};
  enc.forward(ctx, MatView<double>(x.data(), steps * batch, in),
              MatView<double>(y.data(), steps * batch, hd));
  for (Index j = 0; j < r; ++j) {
    const Index n = (steps - j + r - 1) / r;  // steps j, j + r, … inside the window
    Recurrent<double> one({.cell = RnnCell::kGru, .in = in, .hidden = hd, .steps = n});
    Planner p1;
    one.plan(p1, n * batch);
    Arena a1(std::move(p1));
    size_t k = 0;
    std::vector<Param<double>*> mine;
    enc.for_each_param([&](const std::string&, Param<double>& p) { mine.push_back(&p); });
    one.for_each_param([&](const std::string&, Param<double>& p) {
      std::copy(mine[k]->value.begin(), mine[k]->value.end(), p.value.begin());
      ++k;
    });
    std::vector<double> xs(size_t(n * batch * in)), ys(size_t(n * batch * hd));
    for (Index s = 0; s < n; ++s)
      std::copy_n(&x[size_t((j + s * r) * batch * in)], batch * in, &xs[size_t(s * batch * in)]);
    one.forward(ctx, MatView<double>(xs.data(), n * batch, in),
                MatView<double>(ys.data(), n * batch, hd));
    for (Index s = 0; s < n; ++s)
      for (Index e = 0; e < batch * hd; ++e)
        EXPECT_NEAR(y[size_t((j + s * r) * batch * hd + e)], ys[size_t(s * batch * hd + e)], 1e-14)
            << "phase " << j << " step " << s;
  }
}

}  // namespace dilated_recurrent_test
}  // namespace shoal
