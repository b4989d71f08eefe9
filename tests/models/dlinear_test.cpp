// DLinear: the forward against its formula (replicate-padded moving average, two linear maps),
// parameter gradients by central differences on awkward shapes (windows wider than the input
// too), its checks, and a fit through the registry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/models/dlinear.h"
#include "shoal/train/forecast_job.h"
#include "support/gradcheck.h"

namespace shoal::dlinear_test {

using models::DLinear;
using models::ForecastInputs;

TEST(DLinear, ForwardIsTrendMapPlusSeasonMap) {
  for (const Index k : {3, 5, 9}) {
    const Index h = 3, l = 6, b = 2;
    DLinear<double> m(
        DLinear<double>::Config::shaped({.h = h, .input_size = l}, {.moving_avg_window = k}));
    Planner planner;
    m.plan(planner, b);
    Arena arena(std::move(planner));
    RngStream rng(3, models::kInitStream);
    m.init(rng);
    std::vector<double> y(size_t(b * l));
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::sin(double(i)) * 4 + double(i);
    const ConstMat<double> out =
        m.forward({}, ForecastInputs<double>{.batch = b, .insample_y = y.data()});
    ASSERT_EQ(out.rows, b * h);
    std::map<std::string, const double*> p;
    m.for_each_param([&](const std::string& name, Param<double>& q) { p[name] = q.value.data; });
    ASSERT_EQ(p.size(), 4u);
    for (Index w = 0; w < b; ++w) {
      std::vector<double> trend(static_cast<size_t>(l));
      for (Index t = 0; t < l; ++t) {
        double s = 0;
        for (Index j = t - (k - 1) / 2; j <= t + (k - 1) / 2; ++j)
          s += y[size_t(w * l + std::clamp<Index>(j, 0, l - 1))];
        trend[size_t(t)] = s / double(k);
      }
      for (Index o = 0; o < h; ++o) {
        double want = p["linear_trend.bias"][o] + p["linear_season.bias"][o];
        for (Index t = 0; t < l; ++t)
          want += p["linear_trend.weight"][o * l + t] * trend[size_t(t)] +
                  p["linear_season.weight"][o * l + t] * (y[size_t(w * l + t)] - trend[size_t(t)]);
        EXPECT_NEAR(out(w * h + o, 0), want, 1e-12)
            << "k " << k << " window " << w << " step " << o;
      }
    }
  }
}

TEST(DLinear, GradientsMatchCentralDifferences) {
  for (const auto& [h, l, k, b] : {std::tuple<Index, Index, Index, Index>{1, 2, 1, 1},
                                   {3, 5, 3, 3},
                                   {7, 9, 25, 2},
                                   {9, 7, 5, 4},
                                   {8, 16, 7, 5}}) {
    SCOPED_TRACE(::testing::Message() << "h=" << h << " L=" << l << " k=" << k << " B=" << b);
    DLinear<double> m(
        DLinear<double>::Config::shaped({.h = h, .input_size = l}, {.moving_avg_window = k}));
    Planner planner;
    m.plan(planner, b);
    Arena arena(std::move(planner));
    RngStream rng(5, models::kInitStream);
    m.init(rng);
    std::vector<double> y(size_t(b * l));
    RngStream data(11, 1);
    for (double& v : y) v = data.uniform(-2.f, 2.f);
    std::vector<testing::GradVar> vars;
    m.for_each_param([&](const std::string& name, Param<double>& p) {
      vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
    });
    const ForecastInputs<double> in{.batch = b, .insample_y = y.data()};
    std::vector<double> dy(size_t(b * h));
    double* out = m.forward({}, in).data;
    const auto res = testing::gradcheck(
        vars, {{out, dy.data(), b * h}}, [&] { m.forward({}, in); },
        [&] { m.backward({}, in, ConstMat<double>(dy.data(), b * h, 1)); });
    EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
  }
}

TEST(DLinear, RejectsEvenWindowsExogenousInputsAndJointPanels) {
  DLinear<float>::Config c;
  EXPECT_EQ(c.moving_avg_window, 25);
  EXPECT_THROW(c.set_shape({.h = 2, .input_size = 4, .n_series = 1, .futr_exog = 1}), Error);
  EXPECT_THROW(c.set_shape({.h = 2, .input_size = 4, .n_series = 2}), Error);
  c.moving_avg_window = 4;
  EXPECT_THROW(c.validate(), Error);
  EXPECT_THROW(
      train::forecast_job("dlinear", {{"h", 2}, {"input_size", 4}, {"moving_avg_window", 24}}),
      Error);
}

TEST(DLinear, FitsASeasonalTrendThroughTheRegistry) {
  std::string csv = "unique_id,ds,y\n";
  for (int t = 0; t < 160; ++t)
    csv += fmt::format("s,{},{}\n", t, 10.0 + 0.3 * t + 3 * std::sin(2 * M_PI * t / 8));
  const data::SeriesSet set = data::parse_series(csv, "seasonal.csv");
  const data::Panel panel(set, {0}, {});
  const train::ForecastJob job = train::forecast_job("dlinear", {{"h", 8},
                                                                 {"input_size", 24},
                                                                 {"max_steps", 400},
                                                                 {"learning_rate", 1e-2},
                                                                 {"moving_avg_window", 9}});
  EXPECT_EQ(job.windows.windows_batch_size, 1024);  // DLinear's own default
  const train::FitResult r = train::fit_forecast(panel, job);
  ASSERT_EQ(r.forecasts.size(), 8u);
  double err = 0, naive = 0;
  for (int t = 0; t < 8; ++t) {
    const double truth = 10.0 + 0.3 * (160 + t) + 3 * std::sin(2 * M_PI * (160 + t) / 8);
    err += std::abs(r.forecasts[size_t(t)] - truth);
    naive += std::abs(set.y.back() - truth);
  }
  EXPECT_LT(err, 0.5 * naive) << "model " << err / 8 << " vs naive " << naive / 8;
}

}  // namespace shoal::dlinear_test
