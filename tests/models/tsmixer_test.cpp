// TSMixer / TSMixerx: parameter counts (as neuralforecast counts them), gradient checks on awkward
// shapes, the training helper, and zero allocations per step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "shoal/models/forecast.h"
#include "shoal/models/tsmixer.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/train/forecast_trainer.h"
#include "support/alloc_counter.h"
#include "support/gradcheck.h"
#include "support/with_options.h"

namespace shoal {
namespace tsmixer_test {

using models::ForecastInputs;
using models::TSMixer;
using models::TSMixerx;

template <class Model>
Index count_params(Model& m) {
  Planner planner;
  m.plan(planner, 1);
  Arena arena(std::move(planner));
  return m.num_params();
}

TEST(TSMixerx, ParameterCountMatchesSpecFormula) {
  using C = TSMixerx<float>::Config;
  TSMixerx<float> a(C::shaped({.h = 12, .input_size = 24, .n_series = 1}));
  EXPECT_EQ(count_params(a), 40963);
  TSMixerx<float> b(C::shaped({.h = 12, .input_size = 24, .n_series = 10}));
  EXPECT_EQ(count_params(b), 42718);
  TSMixerx<float> c(
      C::shaped({.h = 12, .input_size = 24, .n_series = 10, .hist_exog = 2, .futr_exog = 3}));
  EXPECT_EQ(count_params(c), 72670);
  // With statics: FM(N·S, K) extra at the top and per block, blocks take 2K.
  const Index h = 12, l = 24, n = 3, s = 2, k = 64;
  auto fm = [&](Index in, Index out) {
    return in * k + k + k * out + out + (in != out ? in * out + out : 0) + 2 * h * out;
  };
  auto tm = [&](Index cols) { return h * h + h + 2 * h * cols; };
  const Index expect = 2 * n + (l * h + h) + fm(n, k) + fm(n * s, k) + tm(2 * k) + fm(2 * k, k) +
                       2 * (fm(n * s, k) + tm(2 * k) + fm(2 * k, k)) + (k * n + n);
  TSMixerx<float> d(C::shaped({.h = h, .input_size = l, .n_series = n, .stat_exog = s}));
  EXPECT_EQ(count_params(d), expect);
}

TEST(TSMixer, ParameterCountMatchesSpecFormula) {
  using C = TSMixer<float>::Config;
  TSMixer<float> a(C::shaped({.h = 12, .input_size = 24, .n_series = 1}));
  EXPECT_EQ(count_params(a), 2080);
  TSMixer<float> b(C::shaped({.h = 12, .input_size = 24, .n_series = 10}));
  EXPECT_EQ(count_params(b), 6148);
}

TEST(TSMixerx, ParameterNamesMirrorNeuralforecast) {
  TSMixerx<float> m(testing::with_options(
      TSMixerx<float>::Config::shaped(
          {.h = 3, .input_size = 5, .n_series = 2, .futr_exog = 1, .stat_exog = 1}),
      [&](auto& o) {
        o.n_block = 1;
        o.ff_dim = 5;
      }));
  Planner planner;
  m.plan(planner, 2);
  Arena arena(std::move(planner));
  std::vector<std::string> names;
  m.for_each_param([&](const std::string& n, Param<float>&) { names.push_back(n); });
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names.front(), "norm.affine_weight");
  EXPECT_EQ(names[2], "temporal_projection.weight");
  EXPECT_EQ(names.back(), "out.bias");
  for (const char* want :
       {"feature_mixer_hist.project_residual.weight", "feature_mixer_futr.feature_norm.bias",
        "feature_mixer_stat.feature_lin_1.weight", "first_mixing.temporal_mixer.temporal_lin.bias",
        "mixing_block.0.feature_mixer_stat.feature_lin_2.weight",
        "mixing_block.0.feature_mixer.project_residual.bias"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
    EXPECT_NE(arena.entry(want), nullptr) << want;
  }
}

// Inputs for a gradient check, with params perturbed away from their init (LayerNorm 1/0,
// RevIN 1/0) so every term of every gradient is exercised.
struct Data {
  std::vector<double> y, hist, futr, stat;
  ForecastInputs<double> in(Index b) const {
    return {.batch = b,
            .insample_y = y.data(),
            .hist_exog = hist.empty() ? nullptr : hist.data(),
            .futr_exog = futr.empty() ? nullptr : futr.data(),
            .stat_exog = stat.empty() ? nullptr : stat.data()};
  }
};

Data make_data(Index b, Index l, Index h, Index n, Index x, Index f, Index s, uint64_t seed) {
  Data d;
  auto fill = [&](std::vector<double>& v, Index count, uint64_t k) {
    v.resize(static_cast<size_t>(count));
    testing::fill_uniform(v.data(), count, seed * 10 + k, -2, 2);
  };
  fill(d.y, b * l * n, 1);
  if (x > 0) fill(d.hist, b * x * l * n, 2);
  if (f > 0) fill(d.futr, b * f * (l + h) * n, 3);
  if (s > 0) fill(d.stat, n * s, 4);
  return d;
}

template <class Model>
double model_gradcheck(Model& m, const Data& d, Index batch, const Ctx& ctx, uint64_t seed) {
  const Index h = m.horizon(), n = m.n_series();
  Planner planner;
  m.plan(planner, batch);
  Arena arena(std::move(planner));
  RngStream rng(seed, models::kInitStream);
  m.init(rng);
  std::vector<testing::GradVar> vars;
  RngStream jitter(seed, 5);
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    const bool affine_w = name.find("affine_weight") != std::string::npos;
    for (double& v : p.value)
      v += affine_w ? jitter.uniform(-0.3f, 0.3f) : jitter.uniform(-0.2f, 0.2f);
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  const ForecastInputs<double> in = d.in(batch);
  std::vector<double> dy(static_cast<size_t>(batch * h * n));
  double* out = m.forward(ctx, in).data;
  auto res = testing::gradcheck(
      vars, {{out, dy.data(), batch * h * n}}, [&] { m.forward(ctx, in); },
      [&] { m.backward(ctx, in, ConstMat<double>(dy.data(), batch * h, n)); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  std::cout << "[gradcheck] " << vars.size() << " tensors, max rel err " << res.max_rel_error
            << "\n";
  return res.max_rel_error;
}

struct XCase {
  Index n, x, f, s, batch;
  bool revin;
  double dropout;
};

TEST(TSMixerx, GradientsMatchCentralDifferences) {
  const Index h = 3, l = 5;
  for (const XCase c : {XCase{1, 0, 0, 0, 1, true, 0.0}, XCase{3, 0, 0, 0, 2, false, 0.0},
                        XCase{1, 1, 0, 0, 2, true, 0.3}, XCase{3, 0, 2, 0, 1, true, 0.0},
                        XCase{1, 0, 0, 2, 2, true, 0.0}, XCase{3, 2, 1, 1, 2, true, 0.25},
                        XCase{3, 1, 1, 2, 1, false, 0.0}}) {
    SCOPED_TRACE(::testing::Message()
                 << "N=" << c.n << " X=" << c.x << " F=" << c.f << " S=" << c.s << " B=" << c.batch
                 << " revin=" << c.revin << " p=" << c.dropout);
    TSMixerx<double> m(testing::with_options(TSMixerx<double>::Config::shaped({.h = h,
                                                                               .input_size = l,
                                                                               .n_series = c.n,
                                                                               .hist_exog = c.x,
                                                                               .futr_exog = c.f,
                                                                               .stat_exog = c.s}),
                                             [&](auto& o) {
                                               o.n_block = c.s > 0 ? 1 : 2;
                                               o.ff_dim = 3;
                                               o.dropout = c.dropout;
                                               o.revin = c.revin;
                                             }));
    const Data d = make_data(c.batch, l, h, c.n, c.x, c.f, c.s, 11);
    model_gradcheck(m, d, c.batch, Ctx{.training = true, .seed = 9, .step = 4}, 3);
  }
}

TEST(TSMixer, GradientsMatchCentralDifferences) {
  const Index h = 3, l = 5;
  struct Case {
    Index n, batch;
    bool revin, training;
    double dropout;
  };
  for (const Case c :
       {Case{1, 2, true, true, 0.0}, Case{3, 3, true, true, 0.4}, Case{3, 2, false, true, 0.0},
        Case{1, 1, true, false, 0.9}, Case{3, 1, true, false, 0.0}}) {
    SCOPED_TRACE(::testing::Message() << "N=" << c.n << " B=" << c.batch << " revin=" << c.revin
                                      << " training=" << c.training << " p=" << c.dropout);
    TSMixer<double> m(testing::with_options(
        TSMixer<double>::Config::shaped({.h = h, .input_size = l, .n_series = c.n}), [&](auto& o) {
          o.n_block = 2;
          o.ff_dim = 3;
          o.dropout = c.dropout;
          o.revin = c.revin;
        }));
    const Data d = make_data(c.batch, l, h, c.n, 0, 0, 0, 12);
    model_gradcheck(m, d, c.batch, Ctx{.training = c.training, .seed = 9, .step = 2}, 4);
  }
}

TEST(TSMixer, RejectsExogenousAndTrainingBatchOfOne) {
  TSMixer<float> m(testing::with_options(
      TSMixer<float>::Config::shaped({.h = 2, .input_size = 4, .n_series = 1}),
      [&](auto& o) { o.ff_dim = 2; }));
  Planner planner;
  m.plan(planner, 2);
  Arena arena(std::move(planner));
  std::vector<float> y(8, 1.f), futr(12, 0.f);
  Ctx ctx;
  EXPECT_THROW(m.forward(ctx, {.batch = 1, .insample_y = y.data()}), Error);
  EXPECT_THROW(m.forward(ctx, {.batch = 2, .insample_y = y.data(), .futr_exog = futr.data()}),
               Error);
  EXPECT_THROW(m.forward(ctx, {.batch = 3, .insample_y = y.data()}), Error);
}

TEST(TSMixerx, RejectsMissingExogenous) {
  TSMixerx<float> m(testing::with_options(
      TSMixerx<float>::Config::shaped({.h = 2, .input_size = 4, .n_series = 1, .hist_exog = 1}),
      [&](auto& o) { o.ff_dim = 2; }));
  Planner planner;
  m.plan(planner, 2);
  Arena arena(std::move(planner));
  std::vector<float> y(8, 1.f);
  EXPECT_THROW(m.forward(Ctx{}, {.batch = 2, .insample_y = y.data()}), Error);
  EXPECT_THROW(
      TSMixerx<float>(TSMixerx<float>::Config::shaped({.h = 0, .input_size = 4, .n_series = 1})),
      Error);
}

// A sine per series, windows cut at random offsets: the trainer's loss must fall clearly, and
// steps after warm-up must not touch the heap.
template <class Model>
void fit_sine(Model& model, Index n_steps, double* first, double* last, int64_t* allocs) {
  const Index b = 8, l = 16, h = 4, n = model.n_series();
  // Chunks of 3 windows (TSMixerx; TSMixer's BatchNorm ignores it): the chunked step must not
  // allocate either.
  train::ForecastTrainer<Model, float> trainer(model,
                                               {.max_batch = b, .seed = 3, .chunk_windows = 3});
  std::vector<float> y(static_cast<size_t>(b * l * n)), target(static_cast<size_t>(b * h * n)),
      mask(target.size(), 1.f);
  RngStream rng(1, 2);
  auto sample = [&] {
    for (Index w = 0; w < b; ++w) {
      const float off = rng.uniform(0.f, 6.28f);
      for (Index t = 0; t < l + h; ++t)
        for (Index s = 0; s < n; ++s) {
          const float v = std::sin(off + 0.4f * static_cast<float>(t) + static_cast<float>(s));
          if (t < l)
            y[static_cast<size_t>((w * l + t) * n + s)] = v;
          else
            target[static_cast<size_t>((w * h + t - l) * n + s)] = v;
        }
    }
  };
  const ForecastInputs<float> in{.batch = b, .insample_y = y.data()};
  ConstMat<float> tgt(target.data(), b * h, n), msk(mask.data(), b * h, n);
  double avg_first = 0, avg_last = 0;
  for (Index step = 0; step < n_steps; ++step) {
    sample();
    std::optional<testing::AllocCounter> counter;
    if (step == n_steps - 1) counter.emplace();
    const double loss = trainer.train_step(in, tgt, msk);
    if (counter) *allocs = counter->count();
    if (step < 10) avg_first += loss / 10;
    if (step >= n_steps - 10) avg_last += loss / 10;
  }
  *first = avg_first;
  *last = avg_last;
  EXPECT_EQ(trainer.steps(), n_steps);
  ConstMat<float> p = trainer.predict(in);
  EXPECT_EQ(p.rows, b * h);
}

void expect_no_allocs(int64_t allocs) {
  EXPECT_EQ(allocs, 0);
}

TEST(TSMixerx, TrainerLossFallsWithoutAllocating) {
  TSMixerx<float> m(testing::with_options(
      TSMixerx<float>::Config::shaped({.h = 4, .input_size = 16, .n_series = 2}), [&](auto& o) {
        o.ff_dim = 16;
        o.dropout = 0.1;
      }));
  double first = 0, last = 0;
  int64_t allocs = -1;
  fit_sine(m, 300, &first, &last, &allocs);
  EXPECT_LT(last, 0.5 * first) << "first " << first << " last " << last;
  expect_no_allocs(allocs);
}

// A step in chunks of windows must equal the step on the whole batch: the same loss, the same
// updated weights (up to the order of float sums) and the same dropout masks, with exogenous
// inputs, a mask with holes and a last chunk shorter than the others. Also the arena shrinks.
// With dropout each window draws its own masks; without, the static mixers run once per chunk.
void check_chunked_against_whole(double dropout) {
  SCOPED_TRACE(::testing::Message() << "dropout " << dropout);
  const Index b = 7, l = 6, h = 3, n = 2, x = 1, f = 2, s = 1;
  auto config = [&] {
    return testing::with_options(TSMixerx<float>::Config::shaped({.h = h,
                                                                  .input_size = l,
                                                                  .n_series = n,
                                                                  .hist_exog = x,
                                                                  .futr_exog = f,
                                                                  .stat_exog = s}),
                                 [&](auto& o) {
                                   o.n_block = 2;
                                   o.ff_dim = 8;
                                   o.dropout = dropout;
                                 });
  };
  TSMixerx<float> whole_m(config()), chunk_m(config());
  using Trainer = train::ForecastTrainer<TSMixerx<float>, float>;
  Trainer whole(whole_m, {.max_batch = b, .seed = 5, .chunk_windows = 0});
  Trainer chunked(chunk_m, {.max_batch = b, .seed = 5, .chunk_windows = 3});
  EXPECT_EQ(whole.chunk_windows(), b);
  EXPECT_EQ(chunked.chunk_windows(), 3);
  EXPECT_LT(chunked.arena().bytes(), whole.arena().bytes());

  std::vector<float> y(size_t(b * l * n)), hist(size_t(b * x * l * n)),
      futr(size_t(b * f * (l + h) * n)), stat(size_t(n * s)), target(size_t(b * h * n)),
      mask(target.size());
  RngStream rng(4, 1);
  for (int step = 0; step < 6; ++step) {
    for (auto* v : {&y, &hist, &futr, &stat, &target})
      for (float& e : *v) e = rng.uniform(-1.5f, 1.5f);
    for (float& e : mask) e = rng.uniform(0.f, 1.f) < 0.25f ? 0.f : 1.f;
    const ForecastInputs<float> in{.batch = b,
                                   .insample_y = y.data(),
                                   .hist_exog = hist.data(),
                                   .futr_exog = futr.data(),
                                   .stat_exog = stat.data()};
    const ConstMat<float> tgt(target.data(), b * h, n), msk(mask.data(), b * h, n);
    const double lw = whole.train_step(in, tgt, msk);
    const double lc = chunked.train_step(in, tgt, msk);
    EXPECT_NEAR(lc, lw, 1e-5 * std::abs(lw)) << "step " << step;
    const ConstMat<float> pw = whole.predict(in);
    std::vector<float> pw_copy(pw.data, pw.data + b * h * n);
    const ConstMat<float> pc = chunked.predict(in);
    for (Index i = 0; i < b * h * n; ++i)
      ASSERT_NEAR(pc.data[i], pw_copy[size_t(i)], 1e-4f * (1.f + std::abs(pw_copy[size_t(i)])))
          << "step " << step << " output " << i;
  }
  std::vector<float> pw;
  whole_m.for_each_param([&](const std::string&, Param<float>& p) {
    pw.insert(pw.end(), p.value.begin(), p.value.end());
  });
  size_t k = 0;
  double worst = 0;
  chunk_m.for_each_param([&](const std::string&, Param<float>& p) {
    for (float v : p.value) worst = std::max(worst, double(std::abs(v - pw[k++])));
  });
  EXPECT_LT(worst, 1e-4) << "largest weight difference after 6 steps";
}

TEST(TSMixerx, ChunkedStepsMatchWholeBatchSteps) {
  check_chunked_against_whole(0.2);
  check_chunked_against_whole(0.0);
}

// An all-masked batch has no loss: zero, with zero gradients, chunked or not (neuralforecast's
// _divide_no_nan).
TEST(TSMixerx, ChunkedStepOfAFullyMaskedBatchIsZero) {
  TSMixerx<float> m(testing::with_options(
      TSMixerx<float>::Config::shaped({.h = 2, .input_size = 4, .n_series = 1}),
      [&](auto& o) { o.ff_dim = 4; }));
  train::ForecastTrainer<TSMixerx<float>, float> t(m, {.max_batch = 5, .chunk_windows = 2});
  std::vector<float> y(20, 0.5f), target(10, 1.f), mask(10, 0.f);
  const double loss =
      t.train_step({.batch = 5, .insample_y = y.data()}, ConstMat<float>(target.data(), 10, 1),
                   ConstMat<float>(mask.data(), 10, 1));
  EXPECT_EQ(loss, 0.0);
  const float* g = t.arena().grads<float>();
  const Index count = t.arena().dense_param_elems();
  EXPECT_EQ(std::count(g, g + count, 0.f), count);
}

TEST(TSMixer, TrainerLossFallsWithoutAllocating) {
  TSMixer<float> m(testing::with_options(
      TSMixer<float>::Config::shaped({.h = 4, .input_size = 16, .n_series = 2}), [&](auto& o) {
        o.ff_dim = 16;
        o.dropout = 0.1;
      }));
  double first = 0, last = 0;
  int64_t allocs = -1;
  fit_sine(m, 300, &first, &last, &allocs);
  EXPECT_LT(last, 0.5 * first) << "first " << first << " last " << last;
  expect_no_allocs(allocs);
}

}  // namespace tsmixer_test
}  // namespace shoal
