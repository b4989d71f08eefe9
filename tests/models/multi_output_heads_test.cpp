// Multi-output heads (M forecasts per value, models/forecast.h): the profiler counts the larger
// output layers of DLinear, MLP, MLPMultivariate, TSMixer and TSMixerx at M times their FLOPs
// and every other zone as with one output. Their parity with neuralforecast's MQLoss heads and
// their gradients with M = 3: the registry's typed suite (tests/models/registry_models_test.cpp).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "shoal/models/dlinear.h"
#include "shoal/models/forecast.h"
#include "shoal/models/mlp_forecast.h"
#include "shoal/models/mlp_multivariate.h"
#include "shoal/models/tsmixer.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/profile/report.h"
#include "support/with_options.h"

namespace shoal::multi_output_heads_test {

using models::DLinear;
using models::ForecastInputs;
using models::MlpForecast;
using models::MlpMultivariate;
using models::TSMixer;
using models::TSMixerx;
using models::WindowShape;

// FLOPs per zone ("<zone>.forward" / ".backward") of one profiled training step.
template <class Model>
std::map<std::string, double> zone_flops(typename Model::Config c, const WindowShape& s) {
  c.set_shape(s);
  Model m(c);
  const Index b = 3, l = s.input_size, h = s.h, n = s.n_series;
  Planner planner;
  m.plan(planner, b);
  Arena arena(std::move(planner));
  RngStream rng(1, models::kInitStream);
  m.init(rng);
  profile::RecorderConfig rc;
  rc.max_threads = 4;
  profile::Recorder rec(rc);
  m.register_zones(rec);
  std::vector<double> y(size_t(b * l * n), 0.5), hist(size_t(b * s.hist_exog * l * n), 0.1),
      futr(size_t(b * s.futr_exog * (l + h) * n), 0.2), stat(size_t(n * s.stat_exog), 0.3),
      dy(size_t(b * h * n * s.outputs), 0.1);
  const ForecastInputs<double> in{.batch = b,
                                  .insample_y = y.data(),
                                  .hist_exog = s.hist_exog > 0 ? hist.data() : nullptr,
                                  .futr_exog = s.futr_exog > 0 ? futr.data() : nullptr,
                                  .stat_exog = s.stat_exog > 0 ? stat.data() : nullptr};
  const Ctx ctx{.training = true, .seed = 1, .profiler = &rec};
  rec.start();
  m.forward(ctx, in);
  m.backward(ctx, in, ConstMat<double>(dy.data(), b * h, n * s.outputs));
  rec.stop();
  std::map<std::string, double> flops;
  for (const auto& row : profile::summarize(rec, {}).zones) flops[row.name] = row.cost.flops;
  return flops;
}

// With M = 3 the zones of the output layer (and of what runs on its output) count 3× the
// FLOPs of M = 1; every other zone counts the same.
template <class Model>
void expect_output_zones_scale(const typename Model::Config& c, WindowShape s,
                               const std::set<std::string>& scaled) {
  s.outputs = 1;
  const auto one = zone_flops<Model>(c, s);
  s.outputs = 3;
  const auto three = zone_flops<Model>(c, s);
  ASSERT_EQ(one.size(), three.size());
  size_t seen = 0;
  for (const auto& [name, f1] : one) {
    ASSERT_TRUE(three.count(name)) << name;
    const std::string zone = name.substr(0, name.rfind('.'));
    const double want = scaled.count(zone) ? 3 * f1 : f1;
    EXPECT_NEAR(three.at(name), want, 1e-9 * want) << name;
    if (scaled.count(zone) == 0) continue;
    EXPECT_GT(f1, 0.0) << name;
    ++seen;
  }
  EXPECT_EQ(seen, 2 * scaled.size());  // forward and backward of each
}

TEST(MultiOutputHeads, ProfilerCountsTheLargerOutputLayers) {
  const WindowShape uni{.h = 3, .input_size = 6, .n_series = 1},
      multi{.h = 3, .input_size = 6, .n_series = 2};
  expect_output_zones_scale<DLinear<double>>({.moving_avg_window = 3}, uni,
                                             {"linear_trend", "linear_season"});
  expect_output_zones_scale<MlpForecast<double>>({.num_layers = 2, .hidden_size = 5}, uni, {"out"});
  expect_output_zones_scale<MlpMultivariate<double>>({.num_layers = 2, .hidden_size = 5}, multi,
                                                     {"out"});
  expect_output_zones_scale<TSMixer<double>>(testing::with_options(TSMixer<double>::Config{},
                                                                   [](auto& o) {
                                                                     o.n_block = 1;
                                                                     o.ff_dim = 3;
                                                                     o.dropout = 0;
                                                                   }),
                                             multi, {"out", "norm.inverse"});
  WindowShape x = multi;
  x.hist_exog = 1;
  x.futr_exog = 1;
  expect_output_zones_scale<TSMixerx<double>>(testing::with_options(TSMixerx<double>::Config{},
                                                                    [](auto& o) {
                                                                      o.n_block = 1;
                                                                      o.ff_dim = 3;
                                                                    }),
                                              x, {"out", "norm.inverse"});
}

}  // namespace shoal::multi_output_heads_test
