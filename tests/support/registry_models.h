// The registry's neural forecasting models, for tests that run every one of them: their names,
// and options that shrink their widths where a model has them (quick fits).
#pragma once

#include <any>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/core/options.h"
#include "shoal/train/forecast_registry.h"

namespace shoal::testing {

// The names of the registry's neural models; `univariate`: only those that train globally.
inline std::vector<std::string> registered_models(bool univariate = false) {
  std::vector<std::string> out;
  for (const train::ForecastModel& m : train::forecast_models())
    if (m.neural && !(univariate && m.multivariate)) out.emplace_back(m.name);
  return out;
}

// The keys of a model's own options.
inline std::set<std::string> option_keys(std::string_view model) {
  struct Keys final : OptionVisitor {
    std::set<std::string> keys;
    void add(std::string_view k) { keys.emplace(k); }
    void operator()(std::string_view k, int64_t&, std::string_view) override { add(k); }
    void operator()(std::string_view k, uint64_t&, std::string_view) override { add(k); }
    void operator()(std::string_view k, double&, std::string_view) override { add(k); }
    void operator()(std::string_view k, bool&, std::string_view) override { add(k); }
    void operator()(std::string_view k, std::string&, std::string_view) override { add(k); }
    void operator()(std::string_view k, std::vector<std::string>&, std::string_view) override {
      add(k);
    }
    void operator()(std::string_view k, std::vector<int64_t>&, std::string_view) override {
      add(k);
    }
    void operator()(std::string_view k, std::vector<double>&, std::string_view) override { add(k); }
    void choice(std::string_view k, std::string&, std::span<const std::string_view>,
                std::string_view) override {
      add(k);
    }
  } keys;
  const train::ForecastModel& m = train::forecast_model(model);
  std::any options = m.default_options();
  m.visit_options(options, keys);
  return keys.keys;
}

// `options` with the widths of `model` cut to `width` where it has such options.
inline nlohmann::json small_widths(std::string_view model, nlohmann::json options,
                                   int64_t width = 32) {
  const std::set<std::string> keys = option_keys(model);
  if (keys.contains("hidden_size")) options["hidden_size"] = width;
  if (keys.contains("encoder_hidden_size")) options["encoder_hidden_size"] = width;
  if (keys.contains("decoder_hidden_size")) options["decoder_hidden_size"] = width;
  if (keys.contains("ff_dim")) options["ff_dim"] = width;
  if (keys.contains("linear_hidden_size")) {  // PatchTST: its 16 heads do not divide `width`
    options["linear_hidden_size"] = width;
    options["n_heads"] = 2;
  }
  if (keys.contains("mlp_units")) options["mlp_units"] = std::vector<int64_t>(6, width);
  return options;
}

}  // namespace shoal::testing
