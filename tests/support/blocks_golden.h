// The checks of a forecasting model against neuralforecast's goldens of bench/peers/
// blocks_golden.py (tests/golden/<model>.json: per case its keyword arguments, torch's initial
// weights for its random_seed, and a float64 forward and backward on 4 windows): one recipe
// for every model the script covers, run by tests/models/registry_models_test.cpp for each
// registered model that has such a golden.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/core/arena.h"
#include "shoal/core/error.h"
#include "shoal/core/options.h"
#include "shoal/core/rng.h"
#include "shoal/models/forecast.h"

namespace shoal::golden {

using Vec = std::vector<double>;

// tests/golden/<model>.json, parsed once.
inline const nlohmann::json& blocks_golden(const std::string& model) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(model);
  if (it == cache.end()) {
    const auto path = std::filesystem::path(SHOAL_GOLDEN_DIR) / (model + ".json");
    std::ifstream in(path);
    if (!in) throw Error("cannot open golden " + path.string());
    it = cache.emplace(model, nlohmann::json::parse(in)).first;
  }
  return it->second;
}

// Whether blocks_golden.py wrote tests/golden/<model>.json.
inline bool has_blocks_golden(const std::string& model) {
  return std::filesystem::exists(std::filesystem::path(SHOAL_GOLDEN_DIR) / (model + ".json"));
}

// The options of `c` that `kw` gives, each key read as a jobs file's (OptionReader), but for
// neuralforecast's mlp_units, [in, out] pairs, flattened. Returns the reader, which knows the keys
// the options asked for.
template <class Config>
OptionReader read_options(Config& c, nlohmann::json kw) {
  if (kw.contains("mlp_units")) {
    std::vector<int64_t> units;
    for (const auto& pair : kw["mlp_units"])
      for (const auto& u : pair) units.push_back(u.template get<int64_t>());
    kw["mlp_units"] = units;
  }
  OptionReader reader(std::move(kw), std::string(Config::kKind.name));
  c.visit(reader);
  return reader;
}

// neuralforecast's keyword arguments as a model's Config: the shape from h, input_size and the
// exogenous lists, every other key (random_seed aside) the model's option of that name
// (read_options), neuralforecast's defaults for the ones a case leaves out.
template <class Config>
Config config_of_kwargs(nlohmann::json kw) {
  Config c;
  models::WindowShape s = c;
  s.h = kw.at("h");
  s.input_size = kw.at("input_size");
  for (auto [key, field] : {std::pair{"hist_exog_list", &s.hist_exog},
                            {"futr_exog_list", &s.futr_exog},
                            {"stat_exog_list", &s.stat_exog}})
    if (kw.contains(key)) *field = Index(kw[key].size());
  c.set_shape(s);
  for (const char* key :
       {"h", "input_size", "hist_exog_list", "futr_exog_list", "stat_exog_list", "random_seed"})
    kw.erase(key);
  read_options(c, std::move(kw)).check_all_used();
  return c;
}

inline void expect_near(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << what << "[" << i << "]";
}

template <class T>
Vec values(const TensorView<T>& v) {
  return {v.begin(), v.end()};
}

// [B, steps, C] (torch, time-major) → [B, C, steps] (shoal's ForecastInputs).
inline Vec channel_major(const Vec& v, Index b, Index steps, Index c) {
  Vec out(v.size());
  for (Index w = 0; w < b; ++w)
    for (Index t = 0; t < steps; ++t)
      for (Index k = 0; k < c; ++k)
        out[size_t((w * c + k) * steps + t)] = v[size_t((w * steps + t) * c + k)];
  return out;
}

// Every parameter of every case equals torch's initial weight for the case's random_seed
// exactly; the golden holds one `<prefix><name>` per parameter shoal lists.
template <template <class> class M, class ConfigOf>
void expect_init(const nlohmann::json& golden, ConfigOf&& config_of,
                 const std::string& prefix = "weights/") {
  for (const auto& [name, c] : golden.items()) {
    M<float> model(config_of(c.at("config")));
    Planner planner;
    model.plan(planner, 4);
    Arena arena(std::move(planner));
    RngStream rng(c.at("config").at("random_seed").template get<uint64_t>(), models::kInitStream,
                  Generator::kTorchCpu);
    model.init(rng);
    size_t n = 0;
    model.for_each_param([&](const std::string& key, Param<float>& p) {
      ASSERT_TRUE(c.contains("init/" + key)) << name << " has no " << key;
      expect_near(values(p.value), c.at("init/" + key).template get<Vec>(), 0, name + " " + key);
      ++n;
    });
    size_t keys = 0;
    for (const auto& [k, v] : c.items()) keys += k.rfind(prefix, 0) == 0;
    EXPECT_EQ(n, keys) << name;
  }
}

// Every case's forecast and parameter gradients, in double from the golden's weights, equal
// torch's float64 ones.
template <template <class> class M, class ConfigOf>
void expect_forward_and_grads(const nlohmann::json& golden, ConfigOf&& config_of) {
  for (const auto& [name, c] : golden.items()) {
    const auto cfg = config_of(c.at("config"));
    M<double> model(cfg);
    const Index B = 4, L = cfg.input_size, H = cfg.h;
    Planner planner;
    model.plan(planner, B);
    Arena arena(std::move(planner));
    RngStream rng(1, models::kInitStream);
    model.init(rng);  // the fixed state (bases); the weights come from the golden
    model.for_each_param([&](const std::string& key, Param<double>& p) {
      const Vec w = c.at("weights/" + key).template get<Vec>();
      ASSERT_EQ(static_cast<Index>(w.size()), p.value.numel()) << key;
      std::copy(w.begin(), w.end(), p.value.data);
      std::fill(p.grad.begin(), p.grad.end(), 0.0);
    });
    const Vec y = c.at("insample_y").template get<Vec>();
    const Vec hist = cfg.hist_exog > 0
                         ? channel_major(c.at("hist_exog").template get<Vec>(), B, L, cfg.hist_exog)
                         : Vec{};
    const Vec futr = cfg.futr_exog > 0 ? channel_major(c.at("futr_exog").template get<Vec>(), B,
                                                       L + H, cfg.futr_exog)
                                       : Vec{};
    const Vec stat = cfg.stat_exog > 0 ? c.at("stat_exog").template get<Vec>() : Vec{};
    const Vec dy = c.at("dy").template get<Vec>();
    models::ForecastInputs<double> in;
    in.batch = B;
    in.insample_y = y.data();
    in.hist_exog = hist.empty() ? nullptr : hist.data();
    in.futr_exog = futr.empty() ? nullptr : futr.data();
    in.stat_exog = stat.empty() ? nullptr : stat.data();
    const Ctx ctx;
    const ConstMat<double> out = model.forward(ctx, in);
    ASSERT_EQ(out.rows, B * H);
    expect_near(Vec(out.data, out.data + out.rows), c.at("forecast").template get<Vec>(), 1e-12,
                name + " forecast");
    model.backward(ctx, in, ConstMat<double>(dy.data(), B * H, 1));
    model.for_each_param([&](const std::string& key, Param<double>& p) {
      expect_near(values(p.grad), c.at("grads/" + key).template get<Vec>(), 1e-11,
                  name + " grad " + key);
    });
  }
}

}  // namespace shoal::golden
