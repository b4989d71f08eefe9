// Hyper-parameter search spaces: neuralforecast's default space of each model (its auto.py,
// range for range), kept once here for `shoal tune`, jobs files and Python's shoal.auto, and
// random draws from a space.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/core/tensor.h"

namespace shoal::train {

enum class SpaceKind : uint8_t {
  kChoice,      // one of `choices` (any JSON values: NHITS's pool sizes are lists)
  kRandInt,     // an integer in [lower, upper) (Ray Tune's randint)
  kUniform,     // a number in [lower, upper]
  kLogUniform,  // a number whose log is uniform in [log lower, log upper]
  kQUniform,    // uniform, rounded to a multiple of q
};

struct SearchDimension {
  std::string key;  // the option it sets (neuralforecast's name)
  SpaceKind kind = SpaceKind::kChoice;
  nlohmann::json choices = nlohmann::json::array();  // kChoice
  double lower = 0, upper = 0, q = 0;
};

using SearchSpace = std::vector<SearchDimension>;

// The name of a kind as Ray Tune spells its constructor ("choice", "randint", "uniform",
// "loguniform", "quniform").
std::string_view space_kind_name(SpaceKind kind);

// neuralforecast's default space of the registered model `model` for horizon h: input_size
// among its multiples of h, step_size 1 or h, then the model's own; n_series is not part of
// it. Empty for a model without one (the baselines).
SearchSpace default_search_space(std::string_view model, Index h);

// One draw of every dimension, as option values (a JSON object; quniform draws of integral
// steps such as max_steps are integers).
nlohmann::json draw(const SearchSpace& space, std::mt19937_64& rng);

}  // namespace shoal::train
