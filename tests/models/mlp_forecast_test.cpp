// MLP and MLPMultivariate: the forward against neuralforecast's formula (its concatenation
// order of the exogenous windows), parameter gradients by central differences on awkward shapes
// (one to three layers, odd widths, exogenous inputs of every kind), the input checks, and fits
// through the registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/models/mlp_forecast.h"
#include "shoal/models/mlp_multivariate.h"
#include "shoal/train/forecast_job.h"
#include "support/gradcheck.h"

namespace shoal::mlp_forecast_test {

using models::ForecastInputs;
using models::MlpForecast;
using models::MlpMultivariate;

struct Shape {
  Index h, l, n, x, f, s, layers, hidden, b;
};

// Random windows in shoal's layouts (models/forecast.h).
struct Data {
  std::vector<double> y, hist, futr, stat;
  Data(const Shape& s, uint64_t seed) {
    RngStream rng(seed, 1);
    auto fill = [&](std::vector<double>& v, Index count) {
      v.resize(size_t(count));
      for (double& e : v) e = rng.uniform(-2.f, 2.f);
    };
    fill(y, s.b * s.l * s.n);
    fill(hist, s.b * s.x * s.l * s.n);
    fill(futr, s.b * s.f * (s.l + s.h) * s.n);
    fill(stat, s.n * s.s);
  }
  ForecastInputs<double> inputs(Index b) const {
    return {.batch = b,
            .insample_y = y.data(),
            .hist_exog = hist.empty() ? nullptr : hist.data(),
            .futr_exog = futr.empty() ? nullptr : futr.data(),
            .stat_exog = stat.empty() ? nullptr : stat.data()};
  }
};

// ReLU layers then the output layer, from the model's parameters by name.
template <class Model>
std::vector<double> reference_forward(Model& m, const std::vector<double>& x, Index b, Index d) {
  std::map<std::string, const double*> p;
  std::map<std::string, Index> rows;
  m.for_each_param([&](const std::string& name, Param<double>& q) {
    p[name] = q.value.data;
    rows[name] = q.value.shape[0];
  });
  const Index layers = m.config().num_layers, k = m.config().hidden_size;
  std::vector<double> out;
  for (Index w = 0; w < b; ++w) {
    std::vector<double> in(x.begin() + w * d, x.begin() + (w + 1) * d);
    for (Index i = 0; i <= layers; ++i) {
      const std::string name = i < layers ? "mlp." + std::to_string(i) : "out";
      const double* wt = p.at(name + ".weight");
      const double* bias = p.at(name + ".bias");
      const Index o = rows.at(name + ".weight"), width = Index(in.size());
      EXPECT_TRUE(i == layers || o == k);
      std::vector<double> z(static_cast<size_t>(o));
      for (Index r = 0; r < o; ++r) {
        double s = bias[r];
        for (Index c = 0; c < width; ++c) s += wt[r * width + c] * in[size_t(c)];
        z[size_t(r)] = i < layers ? std::max(s, 0.0) : s;
      }
      in = z;
    }
    out.insert(out.end(), in.begin(), in.end());
  }
  return out;
}

template <class Model>
void init_model(Model& m, Index b, uint64_t seed) {
  Planner planner;
  m.plan(planner, b);
  static thread_local std::vector<Arena> arenas;  // keeps the model's storage alive
  arenas.emplace_back(std::move(planner));
  RngStream rng(seed, models::kInitStream);
  m.init(rng);
}

TEST(MlpForecast, ForwardConcatenatesTheExogenousWindowsTimeMajor) {
  const Shape s{.h = 3, .l = 4, .n = 1, .x = 2, .f = 2, .s = 3, .layers = 2, .hidden = 5, .b = 2};
  MlpForecast<double> m(MlpForecast<double>::Config::shaped(
      {.h = s.h, .input_size = s.l, .hist_exog = s.x, .futr_exog = s.f, .stat_exog = s.s},
      {.num_layers = s.layers, .hidden_size = s.hidden}));
  init_model(m, s.b, 3);
  const Data data(s, 4);
  const ConstMat<double> out = m.forward({}, data.inputs(s.b));
  // neuralforecast: cat(insample_y [B, L], hist [B, L, X].reshape, futr [B, L+H, F].reshape,
  // stat [B, S]).
  std::vector<double> x;
  const Index d = m.config().input_width();
  for (Index w = 0; w < s.b; ++w) {
    for (Index t = 0; t < s.l; ++t) x.push_back(data.y[size_t(w * s.l + t)]);
    for (Index t = 0; t < s.l; ++t)
      for (Index c = 0; c < s.x; ++c) x.push_back(data.hist[size_t((w * s.x + c) * s.l + t)]);
    for (Index t = 0; t < s.l + s.h; ++t)
      for (Index c = 0; c < s.f; ++c)
        x.push_back(data.futr[size_t((w * s.f + c) * (s.l + s.h) + t)]);
    for (Index c = 0; c < s.s; ++c) x.push_back(data.stat[size_t(c)]);
  }
  ASSERT_EQ(Index(x.size()), s.b * d);
  const std::vector<double> want = reference_forward(m, x, s.b, d);
  ASSERT_EQ(out.rows * out.cols, Index(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out.data[i], want[i], 1e-12) << i;
}

TEST(MlpMultivariate, ForwardFlattensEveryInputPerWindow) {
  const Shape s{.h = 2, .l = 3, .n = 3, .x = 1, .f = 2, .s = 2, .layers = 3, .hidden = 4, .b = 3};
  MlpMultivariate<double> m(
      MlpMultivariate<double>::Config::shaped({.h = s.h,
                                               .input_size = s.l,
                                               .n_series = s.n,
                                               .hist_exog = s.x,
                                               .futr_exog = s.f,
                                               .stat_exog = s.s},
                                              {.num_layers = s.layers, .hidden_size = s.hidden}));
  init_model(m, s.b, 5);
  const Data data(s, 6);
  const ConstMat<double> out = m.forward({}, data.inputs(s.b));
  ASSERT_EQ(out.rows, s.b * s.h);
  ASSERT_EQ(out.cols, s.n);
  // neuralforecast: cat(y [B, L, N], hist [B, X, L, N], futr [B, F, L+H, N] reshaped per
  // window, stat [N, S] flattened and repeated).
  std::vector<double> x;
  const Index d = m.config().input_width();
  const Index ny = s.l * s.n, nx = s.x * s.l * s.n, nf = s.f * (s.l + s.h) * s.n;
  for (Index w = 0; w < s.b; ++w) {
    x.insert(x.end(), data.y.begin() + w * ny, data.y.begin() + (w + 1) * ny);
    x.insert(x.end(), data.hist.begin() + w * nx, data.hist.begin() + (w + 1) * nx);
    x.insert(x.end(), data.futr.begin() + w * nf, data.futr.begin() + (w + 1) * nf);
    x.insert(x.end(), data.stat.begin(), data.stat.end());
  }
  ASSERT_EQ(Index(x.size()), s.b * d);
  // out [B, H·N] read as [B, H, N]: the trainer's [B·H, N] row-major.
  const std::vector<double> want = reference_forward(m, x, s.b, d);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out.data[i], want[i], 1e-12) << i;
}

template <class Model>
void check_gradients(Model& m, const Shape& s) {
  init_model(m, s.b, 7);
  const Data data(s, 8);
  std::vector<testing::GradVar> vars;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  const ForecastInputs<double> in = data.inputs(s.b);
  const Index rows = s.b * s.h;
  std::vector<double> dy(size_t(rows * s.n));
  double* out = m.forward({}, in).data;
  const auto res = testing::gradcheck(
      vars, {{out, dy.data(), rows * s.n}}, [&] { m.forward({}, in); },
      [&] { m.backward({}, in, ConstMat<double>(dy.data(), rows, s.n)); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

TEST(MlpForecast, GradientsMatchCentralDifferences) {
  for (const Shape& s : {Shape{1, 2, 1, 0, 0, 0, 1, 3, 1}, Shape{3, 5, 1, 0, 0, 0, 2, 9, 3},
                         Shape{2, 4, 1, 2, 1, 3, 2, 7, 2}, Shape{4, 3, 1, 1, 2, 0, 3, 8, 4},
                         Shape{5, 9, 1, 0, 1, 1, 1, 17, 5}}) {
    SCOPED_TRACE(::testing::Message()
                 << "h=" << s.h << " L=" << s.l << " X=" << s.x << " F=" << s.f << " S=" << s.s
                 << " layers=" << s.layers << " K=" << s.hidden << " B=" << s.b);
    MlpForecast<double> m(MlpForecast<double>::Config::shaped(
        {.h = s.h, .input_size = s.l, .hist_exog = s.x, .futr_exog = s.f, .stat_exog = s.s},
        {.num_layers = s.layers, .hidden_size = s.hidden}));
    check_gradients(m, s);
  }
}

TEST(MlpMultivariate, GradientsMatchCentralDifferences) {
  for (const Shape& s : {Shape{1, 2, 1, 0, 0, 0, 1, 3, 1}, Shape{3, 4, 2, 0, 0, 0, 2, 9, 3},
                         Shape{2, 3, 3, 1, 2, 2, 2, 7, 2}, Shape{2, 5, 2, 2, 0, 1, 3, 8, 4}}) {
    SCOPED_TRACE(::testing::Message()
                 << "h=" << s.h << " L=" << s.l << " N=" << s.n << " X=" << s.x << " F=" << s.f
                 << " S=" << s.s << " layers=" << s.layers << " K=" << s.hidden << " B=" << s.b);
    MlpMultivariate<double> m(
        MlpMultivariate<double>::Config::shaped({.h = s.h,
                                                 .input_size = s.l,
                                                 .n_series = s.n,
                                                 .hist_exog = s.x,
                                                 .futr_exog = s.f,
                                                 .stat_exog = s.s},
                                                {.num_layers = s.layers, .hidden_size = s.hidden}));
    check_gradients(m, s);
  }
}

TEST(MlpForecast, RejectsJointPanelsAndBadOptions) {
  MlpForecast<float>::Config c;
  EXPECT_THROW(c.set_shape({.h = 2, .input_size = 4, .n_series = 3}), Error);
  c.num_layers = 0;
  EXPECT_THROW(c.validate(), Error);
  MlpMultivariate<float>::Config mc;
  mc.hidden_size = 0;
  EXPECT_THROW(mc.validate(), Error);
  EXPECT_THROW(train::forecast_job("mlp", {{"h", 2}, {"input_size", 4}, {"num_layers", 0}}), Error);
}

// A trend with a covariate: the fits through the registry beat the naive forecast.
std::string trend_csv(int series) {
  std::string csv = "unique_id,ds,y,f\n";
  for (int s = 0; s < series; ++s)
    for (int t = 0; t < 130; ++t)
      csv += fmt::format("s{},{},{},{}\n", s, t, 10.0 + (0.5 + 0.1 * s) * t + 2 * std::sin(t),
                         std::sin(t));
  return csv;
}

TEST(MlpForecast, FitsATrendThroughTheRegistry) {
  const data::SeriesSet set = data::parse_series(trend_csv(1), "trend.csv");
  const data::Panel panel(set, {0}, {.hist = {"f"}});
  const train::ForecastJob job =
      train::forecast_job("mlp", {{"h", 4},
                                  {"input_size", 12},
                                  {"hidden_size", 32},
                                  {"max_steps", 300},
                                  {"scaler_type", "standard"},
                                  {"hist_exog_list", nlohmann::json::array({"f"})}});
  EXPECT_EQ(job.windows.windows_batch_size, 1024);  // MLP's own default
  EXPECT_EQ(job.train.max_steps, 300);
  const train::FitResult r = train::fit_forecast(panel, job);
  ASSERT_EQ(r.forecasts.size(), 4u);
  double err = 0, naive = 0;
  for (int t = 0; t < 4; ++t) {
    const double truth = 10.0 + 0.5 * (130 + t) + 2 * std::sin(130 + t);
    err += std::abs(r.forecasts[size_t(t)] - truth);
    naive += std::abs(set.y.back() - truth);
  }
  EXPECT_LT(err, 0.5 * naive) << "model " << err / 4 << " vs naive " << naive / 4;
}

TEST(MlpMultivariate, FitsTwoSeriesJointlyThroughTheRegistry) {
  const data::SeriesSet set = data::parse_series(trend_csv(2), "trend.csv");
  const data::Panel panel(set, {0, 1}, {});
  const train::ForecastJob job =
      train::forecast_job("mlp_multivariate", {{"h", 4},
                                               {"input_size", 12},
                                               {"hidden_size", 32},
                                               {"max_steps", 300},
                                               {"scaler_type", "standard"}});
  EXPECT_EQ(job.windows.windows_batch_size, 32);
  const train::FitResult r = train::fit_forecast(panel, job);
  ASSERT_EQ(r.forecasts.size(), 8u);
  for (int s = 0; s < 2; ++s) {
    double err = 0;
    for (int t = 0; t < 4; ++t)
      err += std::abs(r.forecasts[size_t(s * 4 + t)] -
                      (10.0 + (0.5 + 0.1 * s) * (130 + t) + 2 * std::sin(130 + t)));
    EXPECT_LT(err / 4, 3.0) << "series " << s;
  }
}

}  // namespace shoal::mlp_forecast_test
