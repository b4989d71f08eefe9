// NLinear: the forward against its formula, parameter gradients by central differences on
// awkward shapes, and a fit through the registry that learns a trend naive forecasts cannot.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/models/nlinear.h"
#include "shoal/train/forecast_job.h"
#include "support/gradcheck.h"

namespace shoal::nlinear_test {

using models::ForecastInputs;
using models::NLinear;

TEST(NLinear, ForwardIsTheLinearMapOfTheWindowRelativeToItsLastValue) {
  const Index h = 3, l = 5, b = 2;
  NLinear<double> m(NLinear<double>::Config::shaped({.h = h, .input_size = l}));
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
  const double* w = nullptr;
  const double* bias = nullptr;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    (name == "linear.weight" ? w : bias) = p.value.data;
  });
  ASSERT_NE(w, nullptr);
  ASSERT_NE(bias, nullptr);
  for (Index k = 0; k < b; ++k) {
    const double last = y[size_t(k * l + l - 1)];
    for (Index t = 0; t < h; ++t) {
      double want = bias[t] + last;
      for (Index j = 0; j < l; ++j) want += w[t * l + j] * (y[size_t(k * l + j)] - last);
      EXPECT_NEAR(out(k * h + t, 0), want, 1e-12) << "window " << k << " step " << t;
    }
  }
}

TEST(NLinear, GradientsMatchCentralDifferences) {
  // Batch 1, odd widths, and the AVX2 width ± 1.
  for (const auto& [h, l, b] :
       {std::tuple<Index, Index, Index>{1, 2, 1}, {3, 5, 3}, {7, 9, 2}, {9, 7, 4}, {8, 16, 5}}) {
    SCOPED_TRACE(::testing::Message() << "h=" << h << " L=" << l << " B=" << b);
    NLinear<double> m(NLinear<double>::Config::shaped({.h = h, .input_size = l}));
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

TEST(NLinear, RejectsExogenousInputsAndJointPanels) {
  NLinear<float>::Config c;
  EXPECT_THROW(c.set_shape({.h = 2, .input_size = 4, .n_series = 1, .hist_exog = 1}), Error);
  EXPECT_THROW(c.set_shape({.h = 2, .input_size = 4, .n_series = 3}), Error);
}

TEST(NLinear, FitsATrendThroughTheRegistry) {
  // A steady trend: the last value lags it by h steps, which NLinear learns to add back.
  std::string csv = "unique_id,ds,y\n";
  for (int t = 0; t < 120; ++t) csv += fmt::format("s,{},{}\n", t, 10.0 + 0.5 * t + std::sin(t));
  const data::SeriesSet set = data::parse_series(csv, "trend.csv");
  const data::Panel panel(set, {0}, {});
  const train::ForecastJob job = train::forecast_job(
      "nlinear", {{"h", 6}, {"input_size", 12}, {"max_steps", 300}, {"learning_rate", 1e-2}});
  EXPECT_EQ(job.windows.windows_batch_size, 1024);  // NLinear's own default
  const train::FitResult r = train::fit_forecast(panel, job);
  ASSERT_EQ(r.forecasts.size(), 6u);
  double err = 0, naive = 0;
  for (int t = 0; t < 6; ++t) {
    const double truth = 10.0 + 0.5 * (120 + t) + std::sin(120 + t);
    err += std::abs(r.forecasts[size_t(t)] - truth);
    naive += std::abs(set.y.back() - truth);
  }
  EXPECT_LT(err, 0.5 * naive) << "model " << err / 6 << " vs naive " << naive / 6;
}

}  // namespace shoal::nlinear_test
