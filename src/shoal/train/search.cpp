#include "shoal/train/search.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "shoal/core/error.h"
#include "shoal/train/pruner.h"
#include "shoal/train/search_space.h"

namespace shoal::train {

std::mt19937_64 search_rng(uint64_t seed, const std::string& label) {
  std::seed_seq seq{seed, uint64_t(std::hash<std::string>{}(label))};
  return std::mt19937_64(seq);
}

nlohmann::json trial_options(const nlohmann::json& draw, const nlohmann::json& fixed,
                             Index val_size) {
  nlohmann::json o = draw;
  o.update(fixed);
  o["val_size"] = val_size;
  return o;
}

SearchSettings SearchSettings::from_json(const nlohmann::json& j) {
  SHOAL_CHECK(j.is_object(), "'tune' must be an object, e.g. {{\"samples\": 20}}, got {}",
              j.dump());
  SearchSettings s;
  for (const auto& [key, v] : j.items()) {
    auto integer = [&, &key = key, &v = v](Index lo) {
      SHOAL_CHECK(v.is_number_integer() && v.get<int64_t>() >= lo,
                  "tune '{}' must be an integer ≥ {}, got {}", key, lo, v.dump());
      return Index(v.get<int64_t>());
    };
    if (key == "samples") {
      s.samples = integer(1);
    } else if (key == "val_size") {
      s.val_size = integer(0);
    } else if (key == "prune_factor") {
      s.prune_factor = integer(0);
      SHOAL_CHECK(s.prune_factor != 1, "tune 'prune_factor' must be 0 (off) or ≥ 2, got 1");
    } else if (key == "refit_with_val") {
      SHOAL_CHECK(v.is_boolean(), "tune 'refit_with_val' must be true or false, got {}", v.dump());
      s.refit_with_val = v.get<bool>();
    } else {
      throw Error(
          fmt::format("unknown tune setting '{}' (expected samples, val_size, "
                      "prune_factor, refit_with_val)",
                      key));
    }
  }
  return s;
}

nlohmann::json SearchResult::summary() const {
  int64_t failed = 0, pruned = 0;
  double seconds = 0;
  for (const SearchTrial& t : trials) {
    failed += !t.error.empty();
    pruned += t.pruned;
    seconds += t.fit_s;
  }
  nlohmann::json out = {
      {"trials", trials.size()}, {"failed", failed}, {"pruned", pruned}, {"trials_fit_s", seconds}};
  if (best >= 0) {
    out["best_config"] = trials[size_t(best)].config;
    out["best_val_loss"] = trials[size_t(best)].val_loss;
  }
  return out;
}

namespace {

// A trial's (or the refit's) job: its options, with what the caller's base job sets for every
// fit of the run.
ForecastJob job_of(std::string_view model, const nlohmann::json& options,
                   const nlohmann::json& draw, const ForecastJob& base) {
  ForecastJob job = forecast_job(model, options);
  job.train.threads = base.train.threads;
  job.train.stop = base.train.stop;
  if (!draw.contains("random_seed")) job.train.seed = base.train.seed;
  if (job.seasonality == 0) job.seasonality = base.seasonality;
  return job;
}

}  // namespace

SearchResult search_and_refit(const data::Panel& panel, std::string_view model,
                              const nlohmann::json& fixed, const SearchSettings& settings,
                              const std::string& label, const ForecastJob& base) {
  SHOAL_CHECK(fixed.contains("h") && fixed.at("h").is_number_integer(),
              "config 'h' (the forecast horizon) is required");
  SHOAL_CHECK(!fixed.contains("val_size"),
              "a search validates on tune 'val_size' rows, not on config 'val_size'");
  const Index h = fixed.at("h").get<Index>();
  SearchSpace space = default_search_space(model, h);
  std::erase_if(space, [&](const SearchDimension& d) { return fixed.contains(d.key); });
  SHOAL_CHECK(!space.empty(), "model '{}' has no hyper-parameters left to search", model);
  const Index val_size = settings.val_size > 0 ? settings.val_size : h;
  std::mt19937_64 rng = search_rng(settings.seed, label);
  std::optional<SuccessiveHalving> pruner;
  std::function<bool(Index, double)> keep;
  if (settings.prune_factor > 0) {
    pruner.emplace(1, settings.prune_factor);
    keep = [&](Index check, double loss) { return pruner->keep(check, loss); };
  }
  SearchResult r;
  for (Index k = 0; k < settings.samples; ++k) {
    SearchTrial& t = r.trials.emplace_back();
    t.config = draw(space, rng);
    try {
      ForecastJob job = job_of(model, trial_options(t.config, fixed, val_size), t.config, base);
      if (keep) job.train.keep_training = &keep;
      const FitResult fit = fit_forecast(panel, job);
      t.steps = fit.steps;
      t.fit_s = fit.fit_seconds;
      t.pruned = fit.pruned;
      if (fit.val_losses.empty())
        t.error = "no validation check ran (val_check_steps > max_steps)";
      else if (!std::isfinite(t.val_loss = fit.val_losses.back()))
        t.error = fmt::format("validation loss {}", t.val_loss);
    } catch (const std::exception& e) {
      if (base.train.stop != nullptr && base.train.stop->load()) throw;  // interrupted
      t.error = e.what();
    }
    if (t.error.empty() && !t.pruned &&
        (r.best < 0 || t.val_loss < r.trials[size_t(r.best)].val_loss))
      r.best = k;
  }
  if (r.best < 0)
    throw Error(fmt::format("every one of {} trials failed; the first: {}", r.trials.size(),
                            r.trials.front().error));
  const nlohmann::json& best = r.trials[size_t(r.best)].config;
  r.fit = fit_forecast(
      panel, job_of(model, trial_options(best, fixed, settings.refit_with_val ? val_size : 0), best,
                    base));
  return r;
}

}  // namespace shoal::train
