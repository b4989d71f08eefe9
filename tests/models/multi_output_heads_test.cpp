// Multi-output heads (M forecasts per value, models/forecast.h) of DLinear, MLP,
// MLPMultivariate, TSMixer and TSMixerx. Parity with neuralforecast 3.3.0 built for
// MQLoss(quantiles=[0.1, 0.5, 0.9]) (M = 3; goldens of bench/peers/multi_output_golden.py): from
// its weights, the float64 forward [B, H, N·M] and every parameter gradient of Σ out·r match.
// And double-precision gradient checks of the same models with M = 2 and 3, and the profiler's
// cost of the larger output layers.
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/models/dlinear.h"
#include "shoal/models/forecast.h"
#include "shoal/models/mlp_forecast.h"
#include "shoal/models/mlp_multivariate.h"
#include "shoal/models/tsmixer.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/profile/report.h"
#include "support/golden.h"
#include "support/gradcheck.h"
#include "support/with_options.h"

namespace shoal::multi_output_heads_test {

using golden::fill;
using golden::Golden;
using golden::rel_error;
using models::DLinear;
using models::ForecastInputs;
using models::MlpForecast;
using models::MlpMultivariate;
using models::TSMixer;
using models::TSMixerx;
using models::WindowShape;
using nlohmann::json;

Index get_or(const json& m, const char* key, Index fallback) {
  return m.contains(key) ? m.at(key).get<Index>() : fallback;
}

// The user's options from the golden's config; the shape (outputs included) through set_shape,
// as the trainer sets it. Goldens without "outputs" are single-output.
template <class Model>
typename Model::Config config_of(const json& m) {
  typename Model::Config c;
  if constexpr (requires { c.moving_avg_window; }) c.moving_avg_window = m.at("moving_avg_window");
  if constexpr (requires { c.num_layers; }) {
    c.num_layers = m.at("num_layers");
    c.hidden_size = m.at("hidden_size");
  }
  if constexpr (requires { c.ff_dim; }) {
    c.n_block = m.at("n_block");
    c.ff_dim = m.at("ff_dim");
    c.dropout = m.at("dropout");
    c.revin = m.at("revin");
  }
  const bool mixer = m.contains("hist_exog_size");  // tsmixer_golden.py's names
  c.set_shape(WindowShape{.h = m.at("h"),
                          .input_size = m.at("input_size"),
                          .n_series = get_or(m, "n_series", 1),
                          .hist_exog = get_or(m, mixer ? "hist_exog_size" : "hist", 0),
                          .futr_exog = get_or(m, mixer ? "futr_exog_size" : "futr", 0),
                          .stat_exog = get_or(m, mixer ? "stat_exog_size" : "stat", 0),
                          .outputs = get_or(m, "outputs", 1)});
  return c;
}

// Every parameter (and BatchNorm running statistic) from "weights/<name>"; the golden holds no
// weight the model lacks.
template <class Model>
void load_weights(Model& m, const Arena& arena, const Golden& g) {
  size_t loaded = 0;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    ASSERT_TRUE(g.has("weights/" + name)) << name;
    fill(p.value, g.get("weights/" + name), name);
    ++loaded;
  });
  for (const auto& name : g.names_with_prefix("weights/")) {
    if (name.find("running_") == std::string::npos) continue;
    fill(arena.find<double>(name), g.get("weights/" + name), name);
    ++loaded;
  }
  EXPECT_EQ(loaded, g.names_with_prefix("weights/").size());
}

template <template <class> class M>
void check_golden(const std::string& kind) {
  const Golden g(kind + "_mq3_grad");
  ASSERT_EQ(g.meta().at("outputs").get<Index>(), 3);
  M<double> m(config_of<M<double>>(g.meta()));
  ASSERT_EQ(m.config().outputs, 3);
  const std::vector<double> y = g.get("inputs/insample_y");
  std::vector<double> hist, futr, stat;
  if (g.has("inputs/hist_exog")) hist = g.get("inputs/hist_exog");
  if (g.has("inputs/futr_exog")) futr = g.get("inputs/futr_exog");
  if (g.has("inputs/stat_exog")) stat = g.get("inputs/stat_exog");
  const Index h = m.horizon(), n = m.n_series(), outs = 3;
  const Index b = static_cast<Index>(y.size()) / (m.config().input_size * n);
  Planner planner;
  m.plan(planner, b);
  Arena arena(std::move(planner));
  RngStream rng(1, models::kInitStream);
  m.init(rng);
  load_weights(m, arena, g);
  const ForecastInputs<double> in{.batch = b,
                                  .insample_y = y.data(),
                                  .hist_exog = hist.empty() ? nullptr : hist.data(),
                                  .futr_exog = futr.empty() ? nullptr : futr.data(),
                                  .stat_exog = stat.empty() ? nullptr : stat.data()};
  const Ctx ctx{.training = true, .seed = 1, .step = 0};
  MatView<double> out = m.forward(ctx, in);
  ASSERT_EQ(out.rows, b * h);
  ASSERT_EQ(out.cols, n * outs);
  ASSERT_TRUE(out.contiguous());
  const std::vector<double> want = g.get("output");
  ASSERT_EQ(want.size(), static_cast<size_t>(b * h * n * outs));
  const double out_err = rel_error(out.data, want);
  EXPECT_LE(out_err, 1e-10);
  std::memset(arena.region_base(Region::kGrads), 0, arena.region_bytes(Region::kGrads));
  const std::vector<double> r = g.get("r");
  m.backward(ctx, in, ConstMat<double>(r.data(), b * h, n * outs));
  double worst = 0;
  std::string worst_name;
  size_t compared = 0;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    const double e = rel_error(p.grad.data, g.get("grads/" + name));
    EXPECT_LE(e, 1e-10) << name;
    if (e > worst) worst = e, worst_name = name;
    ++compared;
  });
  EXPECT_EQ(compared, g.names_with_prefix("grads/").size());
  for (const auto& name : g.names_with_prefix("buffers/")) {
    const double e = rel_error(arena.find<double>(name).data, g.get("buffers/" + name));
    EXPECT_LE(e, 1e-12) << name;
  }
  if (g.has("eval_output")) {
    MatView<double> ev = m.forward(Ctx{.training = false}, in);
    EXPECT_LE(rel_error(ev.data, g.get("eval_output")), 1e-10);
  }
  std::cout << "[golden] " << kind << " M=3 output rel err " << out_err << ", worst grad rel err "
            << worst << " (" << worst_name << ")\n";
}

TEST(MultiOutputHeads, DLinearMatchesNeuralforecastMQLoss) {
  check_golden<DLinear>("dlinear");
}
TEST(MultiOutputHeads, MlpMatchesNeuralforecastMQLoss) {
  check_golden<MlpForecast>("mlp");
}
TEST(MultiOutputHeads, MlpMultivariateMatchesNeuralforecastMQLoss) {
  check_golden<MlpMultivariate>("mlp_multivariate");
}
TEST(MultiOutputHeads, TSMixerMatchesNeuralforecastMQLoss) {
  check_golden<TSMixer>("tsmixer");
}
TEST(MultiOutputHeads, TSMixerxMatchesNeuralforecastMQLoss) {
  check_golden<TSMixerx>("tsmixerx");
}

// Σ out·r over the whole [B·H, N·M] forecast, by central differences, from parameters jittered
// away from their init (RevIN's and the norms' 1/0) so that every term of every gradient counts.
template <class Model>
void check_gradients(Model& m, const WindowShape& s, Index b, const Ctx& ctx, uint64_t seed) {
  Planner planner;
  m.plan(planner, b);
  Arena arena(std::move(planner));
  RngStream rng(seed, models::kInitStream);
  m.init(rng);
  RngStream jitter(seed, 5);
  std::vector<testing::GradVar> vars;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    for (double& v : p.value) v += jitter.uniform(-0.25f, 0.25f);
    vars.push_back({name, p.value.data, p.grad.data, p.value.numel(), true});
  });
  const Index l = s.input_size, h = s.h, n = s.n_series;
  auto data = [&](Index count, uint64_t k) {
    std::vector<double> v(static_cast<size_t>(count));
    testing::fill_uniform(v.data(), count, seed * 10 + k, -2, 2);
    return v;
  };
  const std::vector<double> y = data(b * l * n, 1), hist = data(b * s.hist_exog * l * n, 2),
                            futr = data(b * s.futr_exog * (l + h) * n, 3),
                            stat = data(n * s.stat_exog, 4);
  const ForecastInputs<double> in{.batch = b,
                                  .insample_y = y.data(),
                                  .hist_exog = s.hist_exog > 0 ? hist.data() : nullptr,
                                  .futr_exog = s.futr_exog > 0 ? futr.data() : nullptr,
                                  .stat_exog = s.stat_exog > 0 ? stat.data() : nullptr};
  const MatView<double> out = m.forward(ctx, in);
  ASSERT_EQ(out.rows, b * h);
  ASSERT_EQ(out.cols, n * s.outputs);
  std::vector<double> dy(static_cast<size_t>(out.rows * out.cols));
  const auto res = testing::gradcheck(
      vars, {{out.data, dy.data(), out.rows * out.cols}}, [&] { m.forward(ctx, in); },
      [&] { m.backward(ctx, in, ConstMat<double>(dy.data(), out.rows, out.cols)); });
  EXPECT_LE(res.max_rel_error, 1e-6) << res.worst;
}

struct Case {
  WindowShape s;
  Index b;
};

TEST(MultiOutputHeads, DLinearGradientsMatchCentralDifferences) {
  for (const auto& [s, b] : {Case{{.h = 3, .input_size = 7, .n_series = 1, .outputs = 3}, 2},
                             Case{{.h = 1, .input_size = 4, .n_series = 1, .outputs = 2}, 3}}) {
    SCOPED_TRACE(::testing::Message() << "h=" << s.h << " M=" << s.outputs << " B=" << b);
    DLinear<double>::Config c{.moving_avg_window = 3};
    c.set_shape(s);
    DLinear<double> m(c);
    check_gradients(m, s, b, {}, 3);
  }
}

TEST(MultiOutputHeads, MlpGradientsMatchCentralDifferences) {
  for (const auto& [s, b] : {Case{{.h = 2,
                            .input_size = 4,
                            .n_series = 1,
                            .hist_exog = 2,
                            .futr_exog = 1,
                            .stat_exog = 3,
                            .outputs = 3},
                                  2},
                             Case{{.h = 3, .input_size = 5, .n_series = 1, .outputs = 2}, 3}}) {
    SCOPED_TRACE(::testing::Message() << "h=" << s.h << " M=" << s.outputs << " B=" << b);
    MlpForecast<double>::Config c{.num_layers = 2, .hidden_size = 7};
    c.set_shape(s);
    MlpForecast<double> m(c);
    check_gradients(m, s, b, {}, 4);
  }
}

TEST(MultiOutputHeads, MlpMultivariateGradientsMatchCentralDifferences) {
  for (const auto& [s, b] : {Case{{.h = 2,
                            .input_size = 3,
                            .n_series = 2,
                            .hist_exog = 1,
                            .futr_exog = 2,
                            .stat_exog = 2,
                            .outputs = 3},
                                  2},
                             Case{{.h = 3, .input_size = 4, .n_series = 3, .outputs = 2}, 2}}) {
    SCOPED_TRACE(::testing::Message()
                 << "h=" << s.h << " N=" << s.n_series << " M=" << s.outputs << " B=" << b);
    MlpMultivariate<double>::Config c{.num_layers = 2, .hidden_size = 6};
    c.set_shape(s);
    MlpMultivariate<double> m(c);
    check_gradients(m, s, b, {}, 5);
  }
}

TEST(MultiOutputHeads, TSMixerGradientsMatchCentralDifferences) {
  struct MixerCase {
    Index n, m, b;
    bool revin, training;
    double dropout;
  };
  for (const MixerCase k : {MixerCase{3, 3, 3, true, true, 0.4}, MixerCase{2, 2, 2, false, true, 0},
                            MixerCase{3, 2, 1, true, false, 0}}) {
    SCOPED_TRACE(::testing::Message() << "N=" << k.n << " M=" << k.m << " B=" << k.b
                                      << " revin=" << k.revin << " training=" << k.training);
    const WindowShape s{.h = 3, .input_size = 5, .n_series = k.n, .outputs = k.m};
    TSMixer<double>::Config c;
    c.n_block = 2;
    c.ff_dim = 3;
    c.dropout = k.dropout;
    c.revin = k.revin;
    c.set_shape(s);
    TSMixer<double> m(c);
    check_gradients(m, s, k.b, Ctx{.training = k.training, .seed = 9, .step = 2}, 6);
  }
}

TEST(MultiOutputHeads, TSMixerxGradientsMatchCentralDifferences) {
  struct MixerCase {
    Index n, x, f, s, m, b;
    bool revin;
    double dropout;
  };
  for (const MixerCase k :
       {MixerCase{3, 2, 1, 1, 3, 2, true, 0.25}, MixerCase{2, 0, 0, 0, 2, 2, false, 0},
        MixerCase{1, 0, 0, 2, 3, 2, true, 0}, MixerCase{2, 1, 1, 0, 2, 1, true, 0}}) {
    SCOPED_TRACE(::testing::Message() << "N=" << k.n << " X=" << k.x << " F=" << k.f << " S=" << k.s
                                      << " M=" << k.m << " B=" << k.b);
    const WindowShape s{.h = 3,
                        .input_size = 5,
                        .n_series = k.n,
                        .hist_exog = k.x,
                        .futr_exog = k.f,
                        .stat_exog = k.s,
                        .outputs = k.m};
    TSMixerx<double>::Config c;
    c.n_block = k.s > 0 ? 1 : 2;
    c.ff_dim = 3;
    c.dropout = k.dropout;
    c.revin = k.revin;
    c.set_shape(s);
    TSMixerx<double> m(c);
    check_gradients(m, s, k.b, Ctx{.training = true, .seed = 9, .step = 4}, 7);
  }
}

TEST(MultiOutputHeads, RejectOutputsBelowOne) {
  EXPECT_ANY_THROW(
      DLinear<double>(DLinear<double>::Config::shaped({.h = 2, .input_size = 4, .outputs = 0})));
  EXPECT_ANY_THROW(MlpForecast<double>(
      MlpForecast<double>::Config::shaped({.h = 2, .input_size = 4, .outputs = 0})));
  EXPECT_ANY_THROW(MlpMultivariate<double>(MlpMultivariate<double>::Config::shaped(
      {.h = 2, .input_size = 4, .n_series = 2, .outputs = 0})));
  EXPECT_ANY_THROW(TSMixer<double>(
      TSMixer<double>::Config::shaped({.h = 2, .input_size = 4, .n_series = 2, .outputs = 0})));
  EXPECT_ANY_THROW(TSMixerx<double>(
      TSMixerx<double>::Config::shaped({.h = 2, .input_size = 4, .n_series = 2, .outputs = 0})));
}

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
