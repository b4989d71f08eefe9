// The checks of a forecasting model against neuralforecast's goldens of bench/peers/
// forecast_golden.py (tests/golden/<model>_grad and <model>_train, .json + .bin): the torch
// generator with neuralforecast's random_seed draws its initial weights bit for bit; from those
// weights the float64 forward and every parameter gradient match; and 20 float32 Adam steps on
// all windows of a stored series give its losses. One recipe for every model, its Config read
// from the golden's keys (tests/models/registry_models_test.cpp runs it for each registered
// model that has such goldens).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/models/forecast.h"
#include "shoal/train/forecast_trainer.h"
#include "support/golden.h"

namespace shoal::golden {

// Whether forecast_golden.py wrote `<name>` (tsmixer_golden.py's goldens, which name their
// exogenous counts hist_exog_size, are tests/models/tsmixer_golden_test.cpp's).
inline bool has_forecast_golden(const std::string& name) {
  if (!std::filesystem::exists(golden_dir() / (name + ".json"))) return false;
  return Golden(name).meta().contains("hist");
}

using models::ForecastInputs;
using nlohmann::json;

template <class Model>
typename Model::Config config_of(const json& m) {
  typename Model::Config c;
  c.h = m.at("h");
  c.input_size = m.at("input_size");
  if constexpr (requires { c.moving_avg_window; }) c.moving_avg_window = m.at("moving_avg_window");
  c.n_series = m.value("n_series", Index{1});
  c.hist_exog = m.value("hist", Index{0});
  c.futr_exog = m.value("futr", Index{0});
  c.stat_exog = m.value("stat", Index{0});
  if constexpr (requires { c.num_layers; }) {
    c.num_layers = m.at("num_layers");
    c.hidden_size = m.at("hidden_size");
  }
  if constexpr (requires { c.mlp_units; }) {  // neuralforecast's [[in, out], ...], flattened
    c.mlp_units.clear();
    for (const json& pair : m.at("mlp_units"))
      for (const json& u : pair) c.mlp_units.push_back(u.get<int64_t>());
  }
  if constexpr (requires { c.decoder_output_dim; }) {
    c.hidden_size = m.at("hidden_size");
    c.decoder_output_dim = m.at("decoder_output_dim");
    c.temporal_decoder_dim = m.at("temporal_decoder_dim");
    c.dropout = m.at("dropout");
  }
  if constexpr (requires { c.encoder_n_layers; }) c.encoder_n_layers = m.at("encoder_n_layers");
  if constexpr (requires { c.cell_type; }) {  // neuralforecast's groups, as JSON text
    c.cell_type = m.at("cell_type");
    c.dilations = m.at("dilations").dump();
  } else if constexpr (requires { c.dilations; }) {
    c.kernel_size = m.at("kernel_size");
    c.dilations = m.at("dilations").get<std::vector<int64_t>>();
    c.encoder_activation = m.at("encoder_activation");
  }
  if constexpr (requires { c.encoder_hidden_size; }) {
    c.encoder_hidden_size = m.at("encoder_hidden_size");
    c.decoder_hidden_size = m.at("decoder_hidden_size");
    c.decoder_layers = m.at("decoder_layers");
  }
  return c;
}

template <class Model, class T>
void load_weights(Model& m, const Golden& g) {
  size_t loaded = 0;
  m.for_each_param([&](const std::string& name, Param<T>& p) {
    ASSERT_TRUE(g.has("weights/" + name)) << name;
    fill(p.value, g.get("weights/" + name), name);
    ++loaded;
  });
  EXPECT_EQ(loaded, g.names_with_prefix("weights/").size());
}

// Every parameter equals the golden's initial weight exactly (same words, transform, bounds
// and module order as torch's).
template <class Model, class T>
void expect_torch_weights(Model& m, const Golden& g) {
  size_t compared = 0;
  m.for_each_param([&](const std::string& name, Param<T>& p) {
    ASSERT_TRUE(g.has("weights/" + name)) << name;
    const std::vector<double> want = g.get("weights/" + name);
    ASSERT_EQ(static_cast<size_t>(p.value.numel()), want.size()) << name;
    Index differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += double(p.value.data[i]) != want[i];
    EXPECT_EQ(differ, 0) << name << ": elements that differ from torch's draw";
    ++compared;
  });
  EXPECT_EQ(compared, g.names_with_prefix("weights/").size());
}

template <class Model>
void check_gradients(const std::string& kind) {
  const Golden g(kind + "_grad");
  Model m(config_of<Model>(g.meta()));
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
  RngStream rng(1, models::kInitStream, Generator::kTorchCpu);
  m.init(rng);
  expect_torch_weights<Model, double>(m, g);
  load_weights<Model, double>(m, g);
  const ForecastInputs<double> in{.batch = b,
                                  .insample_y = y.data(),
                                  .hist_exog = hist.empty() ? nullptr : hist.data(),
                                  .futr_exog = futr.empty() ? nullptr : futr.data(),
                                  .stat_exog = stat.empty() ? nullptr : stat.data()};
  const Ctx ctx{.training = true, .seed = 1, .step = 0};
  MatView<double> out = m.forward(ctx, in);
  ASSERT_EQ(out.rows * out.cols, b * h * n);
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
  std::cout << "[golden] " << kind << " output rel err " << out_err << ", worst grad rel err "
            << worst << " (" << worst_name << ")\n";
}

// 20 steps of ForecastTrainer from its own torch-generator init (random_seed 1), every step on
// all windows of the stored series, cut as the script cuts them.
template <class Model>
void check_training(const std::string& kind) {
  const Golden g(kind + "_train");
  const json& meta = g.meta();
  Model m(config_of<Model>(meta));
  const Index h = meta.at("h"), l = meta.at("input_size"), n = meta.at("n_series");
  const Index b = meta.at("batch"), steps = meta.at("steps"), tlen = meta.at("series_length");
  const Index nx = meta.at("hist"), nf = meta.at("futr");
  const std::vector<double> y = g.get("series/y"), avail = g.get("series/avail");
  std::vector<double> hist, futr, statd;
  if (nx > 0) hist = g.get("series/hist");
  if (nf > 0) futr = g.get("series/futr");
  if (g.has("series/stat")) statd = g.get("series/stat");
  const std::vector<float> stat(statd.begin(), statd.end());

  train::ForecastTrainer<Model, float> trainer(
      m, {.max_batch = b, .seed = 1, .adam = {.lr = meta.at("lr").get<double>()}});
  expect_torch_weights<Model, float>(m, g);

  auto at = [](Index i) { return static_cast<size_t>(i); };
  std::vector<float> ins(at(b * l * n)), hx(at(b * nx * l * n)), fx(at(b * nf * (l + h) * n)),
      tgt(at(b * h * n)), mask(tgt.size()), imask(ins.size());
  std::vector<double> losses;
  for (Index s = 0; s < steps; ++s) {
    for (Index w = 0; w < b; ++w) {
      const Index st = meta.at("starts")[at(s)][at(w)].template get<Index>();
      for (Index t = 0; t < l + h; ++t)
        for (Index j = 0; j < n; ++j) {
          const auto v = static_cast<float>(y[at((st + t) * n + j)]);
          if (t < l) {
            ins[at((w * l + t) * n + j)] = v;
            imask[at((w * l + t) * n + j)] = static_cast<float>(avail[at((st + t) * n + j)]);
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
                                   .stat_exog = stat.empty() ? nullptr : stat.data(),
                                   .insample_mask = imask.data()};
    losses.push_back(trainer.train_step(in, ConstMat<float>(tgt.data(), b * h, n),
                                        ConstMat<float>(mask.data(), b * h, n)));
  }
  // float32 against float32, as the TSMixer goldens bound it: rounding differs op by op and
  // Adam's first steps turn a gradient difference into lr-sized moves.
  const json& want = meta.at("losses");
  ASSERT_EQ(losses.size(), want.size());
  double worst = 0;
  for (size_t s = 0; s < losses.size(); ++s) {
    const double ref = want[s].get<double>();
    const double rel = std::abs(losses[s] - ref) / std::abs(ref);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 2e-6 * (1.0 + static_cast<double>(s)))
        << kind << " step " << s << ": shoal " << losses[s] << ", neuralforecast " << ref;
  }
  std::cout << "[golden] " << kind << " 20-step loss max rel err " << worst << " (first "
            << losses.front() << ", last " << losses.back() << ")\n";
}

}  // namespace shoal::golden
