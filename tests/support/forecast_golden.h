// The checks of a forecasting model against neuralforecast's goldens of bench/peers/
// forecast_golden.py and tsmixer_golden.py (tests/golden/<model>_grad and <model>_train, .json +
// .bin) and multi_output_golden.py (<model>_mq3_grad): the torch generator with neuralforecast's
// random_seed draws its initial weights bit for bit; from the golden's weights the float64
// forward and every parameter gradient match; and 20 float32 Adam steps on all windows of a
// stored series give its losses. One recipe for every model, its Config read from the golden's
// keys (tests/models/registry_models_test.cpp runs it for each registered model that has such
// goldens).
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

// Whether forecast_golden.py (or tsmixer_golden.py, for TSMixer and TSMixerx) wrote `<name>`.
inline bool has_forecast_golden(const std::string& name) {
  return std::filesystem::exists(golden_dir() / (name + ".json"));
}

using models::ForecastInputs;
using nlohmann::json;

// The golden's options and shape (tsmixer_golden.py names the exogenous counts
// hist_exog_size, …; goldens without "outputs" are single-output).
template <class Model>
typename Model::Config config_of(const json& m) {
  typename Model::Config c;
  if constexpr (requires { c.moving_avg_window; }) c.moving_avg_window = m.at("moving_avg_window");
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
  if constexpr (
      requires {
        c.hidden_size;
        c.dropout;
      } &&
      !requires { c.decoder_output_dim; }) {  // BiTCN
    c.hidden_size = m.at("hidden_size");
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
  if constexpr (requires { c.patch_len; }) {  // PatchTST
    c.encoder_layers = m.at("encoder_layers");
    c.n_heads = m.at("n_heads");
    c.linear_hidden_size = m.at("linear_hidden_size");
    c.head_dropout = m.at("head_dropout");
    c.attn_dropout = m.at("attn_dropout");
    c.patch_len = m.at("patch_len");
    c.stride = m.at("stride");
    c.revin = m.at("revin");
    c.revin_affine = m.at("revin_affine");
    c.revin_subtract_last = m.at("revin_subtract_last");
    c.activation = m.at("activation");
    c.res_attention = m.at("res_attention");
    c.batch_normalization = m.at("batch_normalization");
    c.learn_pos_embed = m.at("learn_pos_embed");
  }
  if constexpr (requires { c.e_layers; }) {  // iTransformer
    c.hidden_size = m.at("hidden_size");
    c.n_heads = m.at("n_heads");
    c.e_layers = m.at("e_layers");
    c.d_ff = m.at("d_ff");
    c.dropout = m.at("dropout");
    c.use_norm = m.at("use_norm");
  }
  if constexpr (requires { c.ff_dim; }) {
    c.n_block = m.at("n_block");
    c.ff_dim = m.at("ff_dim");
    c.dropout = m.at("dropout");
    c.revin = m.at("revin");
  }
  const bool mixer = m.contains("hist_exog_size");
  c.set_shape({.h = m.at("h"),
               .input_size = m.at("input_size"),
               .n_series = m.value("n_series", Index{1}),
               .hist_exog = m.value(mixer ? "hist_exog_size" : "hist", Index{0}),
               .futr_exog = m.value(mixer ? "futr_exog_size" : "futr", Index{0}),
               .stat_exog = m.value(mixer ? "stat_exog_size" : "stat", Index{0}),
               .outputs = m.value("outputs", Index{1})});
  return c;
}

// Whether a golden's "weights/<name>" is state, not a parameter: BatchNorm's running statistics
// (loaded into the model's arena) and NBEATS' fixed bases (computed by the model).
inline bool is_state(const std::string& name) {
  return name.find("running_") != std::string::npos || name.find(".basis.") != std::string::npos;
}

inline size_t golden_params(const Golden& g) {
  size_t n = 0;
  for (const std::string& k : g.names_with_prefix("weights/")) n += !is_state(k);
  return n;
}

// Every parameter from "weights/<name>", and the running statistics into the arena.
template <class Model, class T>
void load_weights(Model& m, const Arena& arena, const Golden& g) {
  size_t loaded = 0;
  m.for_each_param([&](const std::string& name, Param<T>& p) {
    ASSERT_TRUE(g.has("weights/" + name)) << name;
    fill(p.value, g.get("weights/" + name), name);
    ++loaded;
  });
  EXPECT_EQ(loaded, golden_params(g));
  for (const auto& name : g.names_with_prefix("weights/"))
    if (name.find("running_") != std::string::npos)
      fill(arena.find<T>(name), g.get("weights/" + name), name);
}

// Every parameter equals the golden's initial weight exactly (same words, transform, bounds
// and module order as torch's). The norms' affine weights and biases are no draw (torch sets them
// to 1 and 0) and tsmixer_golden.py and multi_output_golden.py move them off those values, so that
// their gradients count: they are not compared.
template <class Model, class T>
void expect_torch_weights(Model& m, const Golden& g) {
  size_t compared = 0;
  m.for_each_param([&](const std::string& name, Param<T>& p) {
    ASSERT_TRUE(g.has("weights/" + name)) << name;
    ++compared;
    if (name.find("norm.") != std::string::npos) return;
    const std::vector<double> want = g.get("weights/" + name);
    ASSERT_EQ(static_cast<size_t>(p.value.numel()), want.size()) << name;
    Index differ = 0;
    for (size_t i = 0; i < want.size(); ++i) differ += double(p.value.data[i]) != want[i];
    EXPECT_EQ(differ, 0) << name << ": elements that differ from torch's draw";
  });
  EXPECT_EQ(compared, golden_params(g));
}

// <kind>_grad (one output per value) or <kind>_mq3_grad (multi_output_golden.py: MQLoss's three
// quantiles, M = 3): torch's initial weights; from the golden's, the float64 forward [B·H, N·M]
// and every parameter gradient of Σ out · r, the state the forward leaves (BatchNorm's running
// statistics) and the eval-mode forward where the golden has them.
template <class Model>
void check_gradients(const std::string& kind, const std::string& golden_name) {
  const Golden g(golden_name);
  Model m(config_of<Model>(g.meta()));
  const std::vector<double> y = g.get("inputs/insample_y");
  std::vector<double> hist, futr, stat;
  if (g.has("inputs/hist_exog")) hist = g.get("inputs/hist_exog");
  if (g.has("inputs/futr_exog")) futr = g.get("inputs/futr_exog");
  if (g.has("inputs/stat_exog")) stat = g.get("inputs/stat_exog");
  const Index h = m.horizon(), cols = m.n_series() * m.config().outputs;
  const Index b = static_cast<Index>(y.size()) / (m.config().input_size * m.n_series());
  Planner planner;
  m.plan(planner, b);
  Arena arena(std::move(planner));
  RngStream rng(1, models::kInitStream, Generator::kTorchCpu);
  m.init(rng);
  expect_torch_weights<Model, double>(m, g);
  load_weights<Model, double>(m, arena, g);
  const ForecastInputs<double> in{.batch = b,
                                  .insample_y = y.data(),
                                  .hist_exog = hist.empty() ? nullptr : hist.data(),
                                  .futr_exog = futr.empty() ? nullptr : futr.data(),
                                  .stat_exog = stat.empty() ? nullptr : stat.data()};
  const Ctx ctx{.training = true, .seed = 1, .step = 0};
  MatView<double> out = m.forward(ctx, in);
  ASSERT_EQ(out.rows * out.cols, b * h * cols);
  const double out_err = rel_error(out.data, g.get("output"));
  EXPECT_LE(out_err, 1e-10);
  std::memset(arena.region_base(Region::kGrads), 0, arena.region_bytes(Region::kGrads));
  const std::vector<double> r = g.get("r");
  m.backward(ctx, in, ConstMat<double>(r.data(), b * h, cols));
  double worst = 0;
  std::string worst_name;
  m.for_each_param([&](const std::string& name, Param<double>& p) {
    const std::vector<double> want = g.get("grads/" + name);
    // A gradient that is zero in exact arithmetic holds only each tool's rounding (attention's
    // key bias: the row softmax cancels what it adds to every score): compared absolutely.
    double scale = 0;
    for (const double v : want) scale = std::max(scale, std::abs(v));
    if (scale < 1e-12) {
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_LE(std::abs(double(p.grad.data[i]) - want[i]), 1e-12) << name << "[" << i << "]";
      return;
    }
    const double e = rel_error(p.grad.data, want);
    EXPECT_LE(e, 1e-10) << name;
    if (e > worst) worst = e, worst_name = name;
  });
  for (const auto& name : g.names_with_prefix("buffers/")) {
    EXPECT_LE(rel_error(arena.find<double>(name).data, g.get("buffers/" + name)), 1e-12) << name;
  }
  if (g.has("eval_output")) {
    EXPECT_LE(rel_error(m.forward(Ctx{.training = false}, in).data, g.get("eval_output")), 1e-10);
  }
  std::cout << "[golden] " << kind << " M=" << m.config().outputs << " output rel err " << out_err
            << ", worst grad rel err " << worst << " (" << worst_name << ")\n";
}

// 20 steps of ForecastTrainer from the golden's weights (checked against its own torch-generator
// init, random_seed 1), every step on all windows of the stored series, cut as the script cuts
// them.
template <class Model>
void check_training(const std::string& kind) {
  const Golden g(kind + "_train");
  const json& meta = g.meta();
  Model m(config_of<Model>(meta));
  const Index h = meta.at("h"), l = meta.at("input_size"), n = meta.at("n_series");
  const Index b = meta.at("batch"), steps = meta.at("steps"), tlen = meta.at("series_length");
  const bool mixer = meta.contains("hist_exog_size");  // tsmixer_golden.py's names
  const Index nx = meta.value(mixer ? "hist_exog_size" : "hist", Index{0}),
              nf = meta.value(mixer ? "futr_exog_size" : "futr", Index{0});
  const std::vector<double> y = g.get("series/y"), avail = g.get("series/avail");
  std::vector<double> hist, futr, statd;
  if (nx > 0) hist = g.get("series/hist");
  if (nf > 0) futr = g.get("series/futr");
  if (g.has("series/stat")) statd = g.get("series/stat");
  const std::vector<float> stat(statd.begin(), statd.end());

  train::ForecastTrainer<Model, float> trainer(
      m, {.max_batch = b, .seed = 1, .adam = {.lr = meta.at("lr").get<double>()}});
  expect_torch_weights<Model, float>(m, g);
  // The golden's starting weights: torch's draw, but for the norms' affines the TSMixer script
  // moves off 1 and 0 (and BatchNorm's running statistics).
  load_weights<Model, float>(m, trainer.arena(), g);

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
