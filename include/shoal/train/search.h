// A hyper-parameter search of one forecasting model on one panel, its trials run one after
// another on the calling thread, then the best configuration refitted: what a jobs file's
// `tune` line runs as each of its fleet jobs (a search per series, side by side across the
// fleet's workers, or one over all series). `shoal tune` and Python's shoal.auto run the
// trials of one search as fleet jobs of their own instead; all of them draw a search's
// configurations with search_rng and make a trial's options with trial_options.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/data/windows.h"
#include "shoal/train/forecast_job.h"

namespace shoal::train {

// A search's own draws: seeded by the run's seed and the search's label (a series' id, or
// "all"), so a series' trials do not depend on which other series are in the table.
std::mt19937_64 search_rng(uint64_t seed, const std::string& label);

// A trial's options: the draw, with the options the user fixed over it, validated on the
// last val_size rows of each series.
nlohmann::json trial_options(const nlohmann::json& draw, const nlohmann::json& fixed,
                             Index val_size);

struct SearchSettings {
  Index samples = 10;           // trials
  Index val_size = 0;           // validation rows at the end of each series (0: h)
  Index prune_factor = 0;       // successive halving on the validation checks (0: off, else ≥ 2)
  bool refit_with_val = false;  // refit the best with the validation rows held out
  uint64_t seed = 1;            // seeds the draws (with the search's label)

  // From a jobs line's "tune" object: samples, val_size, prune_factor, refit_with_val; an
  // unknown key or a value out of range is refused, naming the allowed ones.
  static SearchSettings from_json(const nlohmann::json& j);
};

struct SearchTrial {
  nlohmann::json config;  // the draw (the fixed options left out)
  double val_loss = std::numeric_limits<double>::quiet_NaN();  // the last validation check's
  Index steps = 0;
  double fit_s = 0;
  bool pruned = false;
  std::string error;  // non-empty: the trial failed (refused settings, diverged, no check)
};

struct SearchResult {
  std::vector<SearchTrial> trials;
  Index best = -1;  // the trial refitted (-1: every trial failed, and so did the search)
  FitResult fit;    // the best configuration's refit: its forecasts after the panel's end
  // Trials, their outcomes and the best configuration, as a fleet job's metrics report them.
  nlohmann::json summary() const;
};

// Searches `model`'s default space for horizon fixed["h"], less the keys `fixed` sets, on
// `panel`, then refits the best trial's configuration on all of it. Every trial and the refit
// take `base`'s threads, stop flag and seasonality, and its seed unless the draw sets
// random_seed. Throws when the space is empty or every trial failed (naming the first error).
SearchResult search_and_refit(const data::Panel& panel, std::string_view model,
                              const nlohmann::json& fixed, const SearchSettings& settings,
                              const std::string& label, const ForecastJob& base);

}  // namespace shoal::train
