// Gradient checks (double, central differences) of the recurrent layer stack (layers/
// recurrent.h) through time: every cell, one and two layers, with and without biases, with
// dropout between layers in training, an LSTM's projection (proj_size), input gradient included;
// hidden sizes on and off the SIMD width. And the saved-activation free chunking: two chunks of
// sequences give the whole batch.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "shoal/layers/recurrent.h"
#include "support/gradcheck.h"

namespace shoal {
namespace recurrent_test {

using layers::Recurrent;
using layers::RnnCell;

struct Case {
  RnnCell cell;
  Index layers, hidden;
  bool bias;
  double dropout;
  Index proj = 0;
};

void check(const Case& k) {
  const Index steps = 5, batch = 3, in = 3, rows = steps * batch,
              out = k.proj > 0 ? k.proj : k.hidden;
  Recurrent<double> rnn({.cell = k.cell,
                         .in = in,
                         .hidden = k.hidden,
                         .num_layers = k.layers,
                         .proj = k.proj,
                         .steps = steps,
                         .bias = k.bias,
                         .dropout = k.dropout,
                         .stream = 5});
  Planner planner;
  rnn.plan(planner, rows);
  Arena arena(std::move(planner));
  RngStream init(2, 1);
  rnn.init(init);
  std::vector<double> x(size_t(rows * in)), y(size_t(rows * out)), dy(y.size()), dx(x.size());
  testing::fill_uniform(x.data(), rows * in, 4, -2, 2);
  std::vector<testing::GradVar> vars;
  rnn.for_each_param([&](const std::string& name, Param<double>& p) {
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  vars.push_back({"x", x.data(), dx.data(), rows * in, false});
  const Ctx ctx{.training = true, .seed = 3, .step = 1};
  const MatView<double> xv(x.data(), rows, in), yv(y.data(), rows, out), dyv(dy.data(), rows, out),
      dxv(dx.data(), rows, in);
  const auto res = testing::gradcheck(
      vars, {{y.data(), dy.data(), rows * out}}, [&] { rnn.forward(ctx, xv, yv); },
      [&] { rnn.backward(ctx, xv, yv, dyv, dxv); });
  EXPECT_LE(res.max_rel_error, 1e-6)
      << "cell " << int(k.cell) << " layers " << k.layers << " hidden " << k.hidden << " proj "
      << k.proj << ": " << res.worst;
}

TEST(Recurrent, GradientsMatchCentralDifferences) {
  for (RnnCell cell : {RnnCell::kRnnTanh, RnnCell::kGru, RnnCell::kLstm})
    for (Index layers : {1, 2})
      for (Index hidden : {4, 9})
        for (bool bias : {true, false})
          check({cell, layers, hidden, bias, layers > 1 && hidden == 9 ? 0.3 : 0.0});
}

// An LSTM's projection: one output (a point loss's recurrent forecast) and a wider one, one and
// two layers (layer 1 reads the projected state), dropout between layers.
TEST(Recurrent, ProjectedLstmGradientsMatchCentralDifferences) {
  for (Index layers : {1, 2})
    for (Index proj : {1, 3})
      for (bool bias : {true, false})
        check({RnnCell::kLstm, layers, 9, bias, layers > 1 && proj == 3 ? 0.3 : 0.0, proj});
}

// Sequences are independent, dropout masks included: chunks of sequences (row0 the first one's
// index) give the whole batch's outputs and parameter gradients.
TEST(Recurrent, ChunksOfSequencesGiveTheWholeBatch) {
  for (RnnCell cell : {RnnCell::kRnnTanh, RnnCell::kGru, RnnCell::kLstm}) {
    const Index steps = 4, batch = 5, in = 2, hd = 6;
    Recurrent<double> rnn({.cell = cell,
                           .in = in,
                           .hidden = hd,
                           .num_layers = 2,
                           .steps = steps,
                           .dropout = 0.25,
                           .stream = 9});
    Planner planner;
    rnn.plan(planner, steps * batch);
    Arena arena(std::move(planner));
    RngStream init(4, 1);
    rnn.init(init);
    // Time-major: sequence w at step t is row t·B + w.
    std::vector<double> x(size_t(steps * batch * in)), dy(size_t(steps * batch * hd));
    testing::fill_uniform(x.data(), Index(x.size()), 1, -1, 1);
    testing::fill_uniform(dy.data(), Index(dy.size()), 2, -1, 1);
    const Ctx ctx{.training = true, .seed = 6, .step = 3};
    auto grads = [&] {
      std::vector<double> g;
      rnn.for_each_param([&](const std::string&, Param<double>& p) {
        g.insert(g.end(), p.grad.begin(), p.grad.end());
        std::fill(p.grad.begin(), p.grad.end(), 0.0);
      });
      return g;
    };
    std::vector<double> y(dy.size());
    rnn.forward(ctx, MatView<double>(x.data(), steps * batch, in),
                MatView<double>(y.data(), steps * batch, hd));
    rnn.backward(ctx, MatView<double>(x.data(), steps * batch, in),
                 MatView<double>(y.data(), steps * batch, hd),
                 MatView<double>(dy.data(), steps * batch, hd), MatView<double>{});
    const std::vector<double> whole = grads();
    std::vector<double> ychunks(y.size());
    for (Index b0 : {Index(0), Index(3)}) {
      const Index nb = b0 == 0 ? 3 : 2;
      std::vector<double> xc(size_t(steps * nb * in)), dyc(size_t(steps * nb * hd)), yc(dyc.size());
      for (Index t = 0; t < steps; ++t) {
        std::memcpy(&xc[size_t(t * nb * in)], &x[size_t((t * batch + b0) * in)],
                    sizeof(double) * size_t(nb * in));
        std::memcpy(&dyc[size_t(t * nb * hd)], &dy[size_t((t * batch + b0) * hd)],
                    sizeof(double) * size_t(nb * hd));
      }
      rnn.forward(ctx, MatView<double>(xc.data(), steps * nb, in),
                  MatView<double>(yc.data(), steps * nb, hd), b0);
      rnn.backward(ctx, MatView<double>(xc.data(), steps * nb, in),
                   MatView<double>(yc.data(), steps * nb, hd),
                   MatView<double>(dyc.data(), steps * nb, hd), MatView<double>{}, b0);
      for (Index t = 0; t < steps; ++t)
        std::memcpy(&ychunks[size_t((t * batch + b0) * hd)], &yc[size_t(t * nb * hd)],
                    sizeof(double) * size_t(nb * hd));
    }
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(ychunks[i], y[i], 1e-13) << i;
    const std::vector<double> chunked = grads();
    for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(chunked[i], whole[i], 1e-12) << i;
  }
}

// Inference step by step: a sequence run as 3 steps, then 1, then 1 (each call continuing from
// the state the last left, forward_carry) gives the whole 5-step forward's outputs.
TEST(Recurrent, CarriedStepsContinueTheSequence) {
  for (RnnCell cell : {RnnCell::kRnnTanh, RnnCell::kGru, RnnCell::kLstm})
    for (Index proj : {0, 2}) {
      if (proj > 0 && cell != RnnCell::kLstm) continue;
      const Index steps = 5, batch = 3, in = 2, hd = 6, rw = proj > 0 ? proj : hd;
      Recurrent<double> rnn({.cell = cell,
                             .in = in,
                             .hidden = hd,
                             .num_layers = 2,
                             .proj = proj,
                             .steps = steps,
                             .dropout = 0.25});
      Planner planner;
      rnn.plan(planner, steps * batch);
      Arena arena(std::move(planner));
      RngStream init(5, 1);
      rnn.init(init);
      std::vector<double> x(size_t(steps * batch * in)), y(size_t(steps * batch * rw)),
          yc(y.size());
      testing::fill_uniform(x.data(), Index(x.size()), 3, -1, 1);
      const Ctx ctx{.training = false};
      rnn.forward(ctx, MatView<double>(x.data(), steps * batch, in),
                  MatView<double>(y.data(), steps * batch, rw));
      rnn.reset_carry();
      for (const auto& [t0, t1] : {std::pair<Index, Index>{0, 3}, {3, 4}, {4, 5}}) {
        rnn.set_steps(t1 - t0);
        rnn.forward_carry(ctx, MatView<double>(x.data() + t0 * batch * in, (t1 - t0) * batch, in),
                          MatView<double>(yc.data() + t0 * batch * rw, (t1 - t0) * batch, rw));
      }
      for (size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(yc[i], y[i], 1e-13) << "cell " << int(cell) << " proj " << proj << " " << i;
    }
}

}  // namespace recurrent_test
}  // namespace shoal
