// Parity with neuralforecast 3.3.0: goldens written by bench/peers/tsmixer_golden.py (float64
// forward + all parameter gradients; float32 losses of 20 Adam steps on stored windows).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/models/forecast.h"
#include "shoal/models/tsmixer.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/train/forecast_trainer.h"
#include "support/golden.h"
#include "support/with_options.h"

namespace shoal {
namespace tsmixer_golden_test {

using models::ForecastInputs;
using models::TSMixer;
using models::TSMixerx;

using golden::fill;
using golden::Golden;
using golden::rel_error;

// Sets every parameter (and BatchNorm running statistic) from "weights/<name>" and checks that
// the golden holds no weight the model lacks.
template <class Model, class T>
void load_weights(Model& m, const Arena& arena, const Golden& g) {
  size_t loaded = 0;
  m.for_each_param([&](const std::string& name, Param<T>& p) {
    ASSERT_TRUE(g.has("weights/" + name)) << name;
    fill(p.value, g.get("weights/" + name), name);
    ++loaded;
  });
  for (const auto& name : g.names_with_prefix("weights/")) {
    if (name.find("running_") == std::string::npos) continue;
    fill(arena.find<T>(name), g.get("weights/" + name), name);
    ++loaded;
  }
  EXPECT_EQ(loaded, g.names_with_prefix("weights/").size());
}

models::TSMixerxConfig tsmixerx_config(const nlohmann::json& m) {
  return testing::with_options(
      models::TSMixerxConfig::shaped({.h = m.at("h"),
                                      .input_size = m.at("input_size"),
                                      .n_series = m.at("n_series"),
                                      .hist_exog = m.at("hist_exog_size"),
                                      .futr_exog = m.at("futr_exog_size"),
                                      .stat_exog = m.at("stat_exog_size")}),
      [&](auto& o) {
        o.n_block = m.at("n_block");
        o.ff_dim = m.at("ff_dim");
        o.dropout = m.at("dropout");
        o.revin = m.at("revin");
      });
}
models::TSMixerConfig tsmixer_config(const nlohmann::json& m) {
  return testing::with_options(
      models::TSMixerConfig::shaped(
          {.h = m.at("h"), .input_size = m.at("input_size"), .n_series = m.at("n_series")}),
      [&](auto& o) {
        o.n_block = m.at("n_block");
        o.ff_dim = m.at("ff_dim");
        o.dropout = m.at("dropout");
        o.revin = m.at("revin");
      });
}

template <class Model>
void check_gradient_golden(Model& m, const Golden& g) {
  const std::vector<double> y = g.get("inputs/insample_y");
  std::vector<double> hist, futr, stat;
  if (g.has("inputs/hist_exog")) hist = g.get("inputs/hist_exog");
  if (g.has("inputs/futr_exog")) futr = g.get("inputs/futr_exog");
  if (g.has("inputs/stat_exog")) stat = g.get("inputs/stat_exog");
  const Index h = m.horizon(), n = m.n_series();
  const Index b = static_cast<Index>(y.size()) / (m.config().input_size * n);
  Planner planner;
  m.plan(planner, b);
  Arena arena(std::move(planner));
  RngStream rng(1, models::kInitStream);
  m.init(rng);
  load_weights<Model, double>(m, arena, g);
  const ForecastInputs<double> in{.batch = b,
                                  .insample_y = y.data(),
                                  .hist_exog = hist.empty() ? nullptr : hist.data(),
                                  .futr_exog = futr.empty() ? nullptr : futr.data(),
                                  .stat_exog = stat.empty() ? nullptr : stat.data()};
  const Ctx ctx{.training = true, .seed = 1, .step = 0};
  MatView<double> out = m.forward(ctx, in);
  const double out_err = rel_error(out.data, g.get("output"));
  EXPECT_LE(out_err, 1e-10);
  std::memset(arena.region_base(Region::kGrads), 0, arena.region_bytes(Region::kGrads));
  const std::vector<double> r = g.get("r");
  m.backward(ctx, in, ConstMat<double>(r.data(), b * h, n));
  double worst = 0;
  std::string worst_name;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    const double e = rel_error(p.grad.data, g.get("grads/" + name));
    EXPECT_LE(e, 1e-10) << name;
    if (e > worst) worst = e, worst_name = name;
  });
  for (const auto& name : g.names_with_prefix("buffers/")) {
    const double e = rel_error(arena.find<double>(name).data, g.get("buffers/" + name));
    EXPECT_LE(e, 1e-12) << name;
  }
  if (g.has("eval_output")) {
    MatView<double> ev = m.forward(Ctx{.training = false}, in);
    EXPECT_LE(rel_error(ev.data, g.get("eval_output")), 1e-10);
  }
  std::cout << "[golden] output rel err " << out_err << ", worst grad rel err " << worst << " ("
            << worst_name << ")\n";
}

TEST(TSMixerxGolden, ForwardAndGradientsMatchNeuralforecast) {
  const Golden g("tsmixerx_grad");
  TSMixerx<double> m(tsmixerx_config(g.meta()));
  check_gradient_golden(m, g);
}

TEST(TSMixerGolden, ForwardGradientsAndRunningStatsMatchNeuralforecast) {
  const Golden g("tsmixer_grad");
  TSMixer<double> m(tsmixer_config(g.meta()));
  check_gradient_golden(m, g);
}

// Initialised from torch's CPU generator with neuralforecast's random_seed (1 in the script),
// every parameter the script leaves as drawn (all but the jittered "norm" affines) is torch's
// weight bit for bit: same words, same transform, same bounds, same module order.
template <class Model>
void check_torch_init(Model& m, const Golden& g) {
  Planner planner;
  m.plan(planner, 1);
  Arena arena(std::move(planner));
  RngStream rng(1, models::kInitStream, Generator::kTorchCpu);
  m.init(rng);
  int compared = 0;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    if (name.find("norm") != std::string::npos) return;
    const std::vector<double> want = g.get("weights/" + name);
    ASSERT_EQ(static_cast<size_t>(p.value.numel()), want.size()) << name;
    Index differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += p.value.data[i] != want[i];
    EXPECT_EQ(differ, 0) << name << ": elements that differ from torch's draw";
    ++compared;
  });
  EXPECT_GE(compared, 10);
}

TEST(TSMixerxGolden, TorchGeneratorDrawsNeuralforecastsInitialWeights) {
  const Golden g("tsmixerx_grad");
  TSMixerx<double> m(tsmixerx_config(g.meta()));
  check_torch_init(m, g);
}

TEST(TSMixerGolden, TorchGeneratorDrawsNeuralforecastsInitialWeights) {
  const Golden g("tsmixer_grad");
  TSMixer<double> m(tsmixer_config(g.meta()));
  check_torch_init(m, g);
}

// Windows cut from the stored series exactly as the script does, fed to ForecastTrainer.
template <class Model>
std::vector<double> run_training_golden(Model& m, const Golden& g) {
  const auto& meta = g.meta();
  const Index h = meta.at("h"), l = meta.at("input_size"), n = meta.at("n_series");
  const Index b = meta.at("batch"), steps = meta.at("steps");
  const Index tlen = meta.at("series_length");
  const Index nx = meta.value("hist_exog_size", 0), nf = meta.value("futr_exog_size", 0);
  const std::vector<double> y = g.get("series/y"), avail = g.get("series/avail");
  std::vector<double> hist, futr, statd;
  if (nx > 0) hist = g.get("series/hist");
  if (nf > 0) futr = g.get("series/futr");
  std::vector<float> stat;
  if (g.has("series/stat")) statd = g.get("series/stat");
  stat.assign(statd.begin(), statd.end());

  train::ForecastTrainer<Model, float> trainer(
      m, {.max_batch = b, .seed = 1, .adam = {.lr = meta.at("lr").get<double>()}});
  load_weights<Model, float>(m, trainer.arena(), g);

  std::vector<float> ins(static_cast<size_t>(b * l * n)), hx(static_cast<size_t>(b * nx * l * n)),
      fx(static_cast<size_t>(b * nf * (l + h) * n)), tgt(static_cast<size_t>(b * h * n)),
      mask(tgt.size());
  auto at = [](Index i) { return static_cast<size_t>(i); };
  std::vector<double> losses;
  for (Index s = 0; s < steps; ++s) {
    for (Index w = 0; w < b; ++w) {
      const Index st = meta.at("starts")[at(s)][at(w)].template get<Index>();
      for (Index t = 0; t < l + h; ++t)
        for (Index j = 0; j < n; ++j) {
          const auto v = static_cast<float>(y[at((st + t) * n + j)]);
          if (t < l) {
            ins[at((w * l + t) * n + j)] = v;
            for (Index x = 0; x < nx; ++x)
              hx[at(((w * nx + x) * l + t) * n + j)] =
                  static_cast<float>(hist[at((x * tlen + st + t) * n + j)]);
          } else {
            tgt[at((w * h + t - l) * n + j)] = v;
            mask[at((w * h + t - l) * n + j)] = static_cast<float>(avail[at((st + t) * n + j)]);
          }
          for (Index f = 0; f < nf; ++f)
            fx[at(((w * nf + f) * (l + h) + t) * n + j)] =
                static_cast<float>(futr[at((f * tlen + st + t) * n + j)]);
        }
    }
    const ForecastInputs<float> in{.batch = b,
                                   .insample_y = ins.data(),
                                   .hist_exog = nx > 0 ? hx.data() : nullptr,
                                   .futr_exog = nf > 0 ? fx.data() : nullptr,
                                   .stat_exog = stat.empty() ? nullptr : stat.data()};
    losses.push_back(trainer.train_step(in, ConstMat<float>(tgt.data(), b * h, n),
                                        ConstMat<float>(mask.data(), b * h, n)));
  }
  return losses;
}

// float32 against float32: rounding differs op by op, and Adam's first steps amplify a gradient
// difference into lr-sized parameter moves, so the bound grows mildly with the step.
void compare_losses(const std::vector<double>& got, const nlohmann::json& want) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t s = 0; s < got.size(); ++s) {
    const double ref = want[s].get<double>();
    const double rel = std::abs(got[s] - ref) / std::abs(ref);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 2e-6 * (1.0 + static_cast<double>(s)))
        << "step " << s << ": shoal " << got[s] << ", neuralforecast " << ref;
  }
  std::cout << "[golden] 20-step loss max rel err " << worst << " (first " << got.front()
            << ", last " << got.back() << ")\n";
}

TEST(TSMixerxGolden, First20TrainingLossesMatchNeuralforecast) {
  const Golden g("tsmixerx_train");
  auto cfg = tsmixerx_config(g.meta());
  TSMixerx<float> m(cfg);
  compare_losses(run_training_golden(m, g), g.meta().at("losses"));
}

TEST(TSMixerGolden, First20TrainingLossesMatchNeuralforecast) {
  const Golden g("tsmixer_train");
  auto cfg = tsmixer_config(g.meta());
  TSMixer<float> m(cfg);
  compare_losses(run_training_golden(m, g), g.meta().at("losses"));
}

}  // namespace tsmixer_golden_test
}  // namespace shoal
