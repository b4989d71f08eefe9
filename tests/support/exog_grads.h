// The gradients of a forecasting model's exogenous inputs (WindowShape::exog_grads,
// models/forecast.h), one recipe for every model that returns them: central differences in double
// with the exogenous inputs as the variables (statics a row per window and shared, M = 1 and 2
// outputs), a batch in two chunks against the whole batch, and the switch changing nothing else
// (forward output and parameter gradients bit for bit, in float).
// tests/models/registry_models_test.cpp runs it for each registered model with exog_grads().
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/rng.h"
#include "shoal/models/forecast.h"
#include "support/gradcheck.h"

namespace shoal::testing::exog {

using models::ExogGrads;
using models::ForecastInputs;

// The data's side of a model's shape, and whether the statics are a row per window (the global
// fit's univariate windows) or the panel's [N, S] shared by every window.
struct Dims {
  Index h, l, n, x, f, s, m;
  bool per_window;
  Index stat_count(Index b) const { return per_window ? b * s : n * s; }
};

template <class Config>
Config shaped(Config c, const Dims& d, bool exog_grads) {
  c.set_shape({.h = d.h,
               .input_size = d.l,
               .n_series = d.n,
               .hist_exog = d.x,
               .futr_exog = d.f,
               .stat_exog = d.s,
               .outputs = d.m,
               .exog_grads = exog_grads});
  return c;
}

// Random windows in ForecastInputs' layouts; window 1 starts with two padded steps.
template <class T>
struct Data {
  std::vector<T> y, hist, futr, stat, mask, dout;
  ForecastInputs<T> in;

  Data(const Dims& d, Index b, uint64_t seed) {
    RngStream rng(seed, 1);
    auto fill = [&](std::vector<T>& v, Index count) {
      v.resize(size_t(count));
      for (T& e : v) e = T(rng.uniform(-2.f, 2.f));
    };
    fill(y, b * d.l * d.n);
    fill(hist, b * d.x * d.l * d.n);
    fill(futr, b * d.f * (d.l + d.h) * d.n);
    fill(stat, d.stat_count(b));
    fill(dout, b * d.h * d.n * d.m);
    mask.assign(size_t(b * d.l * d.n), T(1));
    if (b > 1)
      for (Index t = 0; t < 2 * d.n; ++t) mask[size_t(d.l * d.n + t)] = T(0);
    in.batch = b;
    in.insample_y = y.data();
    in.hist_exog = d.x > 0 ? hist.data() : nullptr;
    in.futr_exog = d.f > 0 ? futr.data() : nullptr;
    in.stat_exog = d.s > 0 ? stat.data() : nullptr;
    in.insample_mask = mask.data();
    in.stat_window_stride = d.per_window ? d.s : 0;
  }
  Data(const Data&) = delete;
  Data& operator=(const Data&) = delete;
};

// A model planned for `b` windows in its own arena, initialised as torch would for seed 2, then
// every parameter moved off its init (LayerNorm and RevIN at 1/0 would leave terms of the
// gradients unexercised).
template <class Model>
struct Planned {
  Model model;
  std::unique_ptr<Arena> arena;

  Planned(const typename Model::Config& cfg, Index b) : model(cfg) {
    Planner planner;
    model.plan(planner, b);
    arena = std::make_unique<Arena>(std::move(planner));
    RngStream rng(2, models::kInitStream, Generator::kTorchCpu);
    model.init(rng);
    RngStream jitter(2, 5);
    model.for_each_param([&](const std::string&, auto& p) {
      for (auto& v : p.value) v += std::decay_t<decltype(v)>(jitter.uniform(-0.2f, 0.2f));
    });
  }
};

template <class T>
std::vector<T> copy_of(const T* p, Index n) {
  return p == nullptr ? std::vector<T>{} : std::vector<T>(p, p + n);
}

// ∂L/∂(hist, futr, stat) of every window of d as the model reports them, by central differences.
template <template <class> class Model, class Options>
void check_exog_gradients(const Options& options, const Dims& d, const std::string& what) {
  SCOPED_TRACE(what);
  const Index b = 3;
  Planned<Model<double>> p(shaped(options(typename Model<double>::Config{}), d, true), b);
  Data<double> data(d, b, 11);
  const ExogGrads<double> g = p.model.exog_grads();
  ASSERT_EQ(g.hist != nullptr, d.x > 0);
  ASSERT_EQ(g.futr != nullptr, d.f > 0);
  ASSERT_EQ(g.stat != nullptr, d.s > 0);
  std::vector<GradVar> vars;
  auto var = [&](const char* name, std::vector<double>& v, const double* grad) {
    if (grad != nullptr)
      vars.push_back({name, v.data(), const_cast<double*>(grad), Index(v.size()), false});
  };
  var("hist_exog", data.hist, g.hist);
  var("futr_exog", data.futr, g.futr);
  var("stat_exog", data.stat, g.stat);
  std::vector<double> out(data.dout.size()), dout(out.size());
  Ctx ctx;
  ctx.seed = 9;
  ctx.step = 4;
  const auto res = gradcheck(
      vars, {{out.data(), dout.data(), Index(out.size())}},
      [&] {
        const ConstMat<double> o = p.model.forward(ctx, data.in);
        ASSERT_EQ(o.rows * o.cols, Index(out.size()));
        std::copy(o.data, o.data + out.size(), out.begin());
      },
      [&] { p.model.backward(ctx, data.in, ConstMat<double>(dout.data(), b * d.h, d.n * d.m)); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

// A batch in two chunks (ForecastInputs::windows, as a trainer splits it) gives each window the
// exogenous gradients the whole batch's backward gave it; shared statics' chunk sums add up to
// the whole batch's.
template <template <class> class Model, class Options>
void check_chunks(const Options& options, const Dims& d, const std::string& what) {
  SCOPED_TRACE(what);
  static_assert(Model<double>::kWindowsIndependent);
  const Index b = 5, b1 = 2;
  Planned<Model<double>> p(shaped(options(typename Model<double>::Config{}), d, true), b);
  Data<double> data(d, b, 23);
  const Ctx ctx{.training = true, .seed = 5, .step = 1};
  const Index nh = d.x * d.l * d.n, nf = d.f * (d.l + d.h) * d.n, nout = d.h * d.n * d.m;
  auto run = [&](const ForecastInputs<double>& in) {
    p.model.forward(ctx, in);
    const Index w0 = in.first_window;
    p.model.backward(ctx, in,
                     ConstMat<double>(data.dout.data() + w0 * nout, in.batch * d.h, d.n * d.m));
    return p.model.exog_grads();
  };
  const ExogGrads<double> whole = run(data.in);
  const auto hist = copy_of(whole.hist, b * nh), futr = copy_of(whole.futr, b * nf),
             stat = copy_of(whole.stat, d.stat_count(b));
  auto near = [](double got, double want, const char* name, Index i) {
    ASSERT_NEAR(got, want, 1e-12 * std::max(1.0, std::abs(want))) << name << "[" << i << "]";
  };
  std::vector<double> stat_sum(size_t(d.n * d.s), 0.0);
  for (const auto& [w0, count] : {std::pair<Index, Index>{0, b1}, {b1, b - b1}}) {
    const ExogGrads<double> g = run(data.in.windows(w0, count, d.l, d.h, d.n, d.x, d.f));
    for (Index i = 0; i < count * nh; ++i) near(g.hist[i], hist[size_t(w0 * nh + i)], "hist", i);
    for (Index i = 0; i < count * nf; ++i) near(g.futr[i], futr[size_t(w0 * nf + i)], "futr", i);
    if (d.per_window) {
      for (Index i = 0; i < count * d.s; ++i)
        near(g.stat[i], stat[size_t(w0 * d.s + i)], "stat", i);
    } else {
      for (Index i = 0; i < d.n * d.s; ++i) stat_sum[size_t(i)] += g.stat[i];
    }
  }
  if (!d.per_window)
    for (Index i = 0; i < d.n * d.s; ++i) near(stat_sum[size_t(i)], stat[size_t(i)], "stat sum", i);
}

// With exog_grads a model's forward output and parameter gradients are those without it, bit
// for bit.
template <template <class> class Model, class Options>
void check_switch_changes_nothing_else(const Options& options, const Dims& d,
                                       const std::string& what) {
  SCOPED_TRACE(what);
  const Index b = 4;
  const typename Model<float>::Config cfg = options(typename Model<float>::Config{});
  Planned<Model<float>> off(shaped(cfg, d, false), b), on(shaped(cfg, d, true), b);
  Data<float> data(d, b, 31);
  const Ctx ctx{.training = true, .seed = 3, .step = 2};
  std::vector<std::vector<float>> grads[2];
  std::vector<float> outs[2];
  Planned<Model<float>>* models[2] = {&off, &on};
  for (int k = 0; k < 2; ++k) {
    Model<float>& m = models[k]->model;
    m.for_each_param([](const std::string&, Param<float>& prm) {
      std::fill(prm.grad.begin(), prm.grad.end(), 0.f);
    });
    const ConstMat<float> o = m.forward(ctx, data.in);
    outs[k] = copy_of(o.data, o.rows * o.cols);
    m.backward(ctx, data.in, ConstMat<float>(data.dout.data(), b * d.h, d.n * d.m));
    m.for_each_param([&](const std::string&, Param<float>& prm) {
      grads[k].push_back(copy_of(prm.grad.data, prm.grad.numel()));
    });
  }
  ASSERT_EQ(outs[0].size(), outs[1].size());
  EXPECT_EQ(0, std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)));
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) {
    ASSERT_EQ(grads[0][i].size(), grads[1][i].size());
    EXPECT_EQ(
        0, std::memcmp(grads[0][i].data(), grads[1][i].data(), grads[0][i].size() * sizeof(float)))
        << "parameter " << i;
  }
}

// Every check on one model: M = 1 and 2 outputs, statics a row per window and shared.
// options(config, m): the model's options for a case with m outputs.
template <template <class> class Model, class Options>
void check_model(const Options& options, Dims d) {
  for (const Index m : {1, 2}) {
    d.m = m;
    const std::string tag = "M=" + std::to_string(m);
    const auto opts = [&](auto c) { return options(c, m); };
    for (const bool per_window : {true, false}) {
      if (per_window && d.n > 1) continue;  // a multivariate model's statics are its panel's
      d.per_window = per_window;
      const std::string what = tag + (per_window ? " statics per window" : " shared statics");
      check_exog_gradients<Model>(opts, d, what);
      check_chunks<Model>(opts, d, what);
    }
    check_switch_changes_nothing_else<Model>(opts, d, tag);
  }
}

}  // namespace shoal::testing::exog
