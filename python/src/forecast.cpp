// Forecasting bindings: long tables handed over as numpy arrays (the Python layer has sorted,
// validated and numbered the series), fits of one panel or of one model per series through the
// fleet, the trials of a hyper-parameter search side by side, and forecasts of given windows from
// saved weights.
//
// Series are named by their ordinal in the Python layer's sorted order, zero-padded so that the
// byte order shoal sorts ids in is that order; ds is each series' row number (Python maps rows
// to timestamps with pandas' offsets, as neuralforecast does).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>

#include "interrupt.h"
#include "options.h"
#include "profile.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/fleet/fleet.h"
#include "shoal/fleet/forecast_jobs.h"
#include "shoal/fleet/job_specs.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/pruner.h"
#include "shoal/train/search_space.h"

namespace nb = nanobind;

namespace shoal::py {
namespace {

using F64 = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I64 = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using F64Mat = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

std::string ordinal_id(size_t i) {
  return fmt::format("{:012d}", i);
}

// A SeriesSet built from arrays: offsets [n + 1] row ranges, y [rows], exog columns [rows] each.
struct SeriesData {
  data::SeriesSet set;
};

// first_ds: each series' first ds (empty: 0); a futr_df continues its series at their lengths.
// available: [rows] 1 where y was observed, 0 where missing (empty: every row observed).
// sample_weight: [rows] neuralforecast's sample_weight column (empty: none).
SeriesData make_series(I64 offsets, F64 y, const std::vector<F64>& exog,
                       const std::vector<std::string>& exog_names, I64 first_ds,
                       std::optional<F64> available, std::optional<F64> sample_weight) {
  SHOAL_CHECK(offsets.shape(0) >= 2, "at least one series is needed");
  SHOAL_CHECK(exog.size() == exog_names.size(), "{} exogenous columns but {} names", exog.size(),
              exog_names.size());
  const size_t n = offsets.shape(0) - 1, rows = y.shape(0);
  SeriesData d;
  data::SeriesSet& s = d.set;
  s.source = "df";
  s.time_kind = data::TimeKind::kInteger;
  s.ids.reserve(n);
  s.offsets.assign(offsets.data(), offsets.data() + n + 1);
  SHOAL_CHECK(s.offsets.front() == 0 && size_t(s.offsets.back()) == rows,
              "offsets must run from 0 to the {} rows", rows);
  SHOAL_CHECK(first_ds.shape(0) == 0 || first_ds.shape(0) == n,
              "first_ds has {} entries for {} series", first_ds.shape(0), n);
  s.ds.resize(rows);
  for (size_t i = 0; i < n; ++i) {
    s.ids.push_back(ordinal_id(i));
    SHOAL_CHECK(s.offsets[i + 1] > s.offsets[i], "series {} has no rows", i);
    const int64_t first = first_ds.shape(0) == 0 ? 0 : first_ds.data()[i];
    for (Index r = s.offsets[i]; r < s.offsets[i + 1]; ++r)
      s.ds[size_t(r)] = first + r - s.offsets[i];
  }
  s.freq.assign(n, data::Frequency{});
  s.y.assign(y.data(), y.data() + rows);
  s.exog_names = exog_names;
  for (const F64& c : exog) {
    SHOAL_CHECK(c.shape(0) == rows, "exogenous column of {} rows, y has {}", c.shape(0), rows);
    s.exog.emplace_back(c.data(), c.data() + rows);
  }
  if (available && available->shape(0) > 0) {
    SHOAL_CHECK(available->shape(0) == rows, "available has {} rows, y has {}", available->shape(0),
                rows);
    s.available.resize(rows);
    for (size_t r = 0; r < rows; ++r) s.available[r] = available->data()[r] != 0.0 ? 1 : 0;
  }
  if (sample_weight && sample_weight->shape(0) > 0) {
    SHOAL_CHECK(sample_weight->shape(0) == rows, "sample_weight has {} rows, y has {}",
                sample_weight->shape(0), rows);
    s.sample_weight.assign(sample_weight->data(), sample_weight->data() + rows);
  }
  return d;
}

struct StaticData {
  data::StaticTable table;
};

StaticData make_static(F64Mat values, const std::vector<std::string>& columns) {
  SHOAL_CHECK(values.shape(1) == columns.size(), "{} static columns but {} names", values.shape(1),
              columns.size());
  StaticData d;
  d.table.source = "static_df";
  d.table.columns = columns;
  for (size_t i = 0; i < values.shape(0); ++i) d.table.ids.push_back(ordinal_id(i));
  d.table.values.assign(values.data(), values.data() + values.size());
  return d;
}

// The job from the Python model's settings (neuralforecast names; "model" names the model).
train::ForecastJob make_job(const nb::dict& k) {
  nlohmann::json options = nlohmann::json::object();
  std::string model;
  for (auto [key, value] : k) {
    const std::string name = nb::cast<std::string>(key);
    if (name == "model")
      model = nb::cast<std::string>(value);
    else
      options[name] = to_json(value);
  }
  return train::forecast_job(model, options);
}

nb::ndarray<nb::numpy, double> to_numpy(std::vector<double> v, std::vector<size_t> shape) {
  auto* owned = new std::vector<double>(std::move(v));
  nb::capsule free(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return nb::ndarray<nb::numpy, double>(owned->data(), shape.size(), shape.data(), free);
}

nb::bytes to_bytes(const std::string& s) {
  return nb::bytes(s.data(), s.size());
}

struct PanelInputs {
  const SeriesData* data;
  const StaticData* statics;
  const SeriesData* futr;
  Index h_future;
  data::Panel panel(const train::ForecastJob& job, std::vector<Index> series) const {
    return data::Panel(data->set, std::move(series), job.exog, statics ? &statics->table : nullptr,
                       futr ? &futr->set : nullptr, h_future);
  }
};

// One model on the listed series (jointly).
// run_interruptible's wake-up hook for a Python progress callback: callback(step, total,
// loss) with the fit's latest values (none without a callback).
std::function<void()> report_progress(const nb::object& callback, const train::FitProgress& p) {
  if (callback.is_none()) return {};
  return [&callback, &p] {
    callback(p.step.load(std::memory_order_relaxed), p.total.load(std::memory_order_relaxed),
             p.loss.load(std::memory_order_relaxed));
  };
}

nb::dict fit_panel(const SeriesData& d, std::vector<Index> series, const nb::dict& settings,
                   const StaticData* statics, const SeriesData* futr, Index h_future,
                   bool keep_weights, const nb::object& profile_spec,
                   const std::optional<nb::bytes>& init_weights, const nb::object& progress) {
  train::ForecastJob job = make_job(settings);
  job.keep_weights = keep_weights;
  if (init_weights) job.init_weights.assign(init_weights->c_str(), init_weights->size());
  train::FitProgress fp;
  job.train.progress = &fp;
  std::optional<FitProfile> prof = FitProfile::from(profile_spec);
  const PanelInputs in{&d, statics, futr, h_future};
  train::FitResult r;
  run_interruptible(
      [&](const std::atomic<bool>& stop) {
        job.train.stop = &stop;
        const data::Panel panel = in.panel(job, series);
        if (prof) {
          job.profiler = prof->rec.get();
          prof->rec->start();
        }
        r = train::fit_forecast(panel, job);
        if (prof) prof->finish();
      },
      report_progress(progress, fp));
  const size_t n = series.size(), h = size_t(job.windows.h);
  const auto c = size_t(layers::forecast_values(job.train.loss));
  nb::dict out;
  out["forecasts"] = to_numpy(std::move(r.forecasts), {n, h, c});
  out["weights"] = to_bytes(r.weights);
  out["steps"] = r.steps;
  out["fit_seconds"] = r.fit_seconds;
  out["val_losses"] = r.val_losses;
  out["profile"] = profile_result(prof);
  return out;
}

// One model per series through the fleet. Returns forecasts [n, h, C] (NaN for failed series),
// per-series errors ("" when fine), weights (when kept) and the fleet summary.
nb::dict fit_fleet(const SeriesData& d, const nb::dict& settings, const StaticData* statics,
                   const SeriesData* futr, Index h_future, bool keep_weights, int workers, bool pin,
                   const nb::object& profile_spec,
                   const std::optional<std::vector<nb::bytes>>& init_weights,
                   const nb::object& progress) {
  train::ForecastJob job = make_job(settings);
  job.keep_weights = keep_weights;
  std::shared_ptr<std::vector<std::string>> series_init;
  if (init_weights) {
    series_init = std::make_shared<std::vector<std::string>>();
    for (const nb::bytes& b : *init_weights) series_init->emplace_back(b.c_str(), b.size());
  }
  std::optional<FitProfile> prof = FitProfile::from(profile_spec);
  std::optional<profile::FitProcesses> processes;
  if (prof) {
    job.profiler = prof->rec.get();
    prof->rec->set_model_name(0, "fleet");
    processes.emplace(*prof->rec, prof->models, job.model + " (other series)");
  }
  const Index n = d.set.n_series(), h = job.windows.h * layers::forecast_values(job.train.loss);
  std::vector<double> forecasts(size_t(n * h), std::numeric_limits<double>::quiet_NaN());
  std::vector<std::string> weights(keep_weights ? size_t(n) : 0);
  std::vector<int64_t> steps(static_cast<size_t>(n), 0);
  std::vector<std::string> errors(static_cast<size_t>(n));
  fleet::FleetSummary sum;
  train::FitProgress fits_done;  // step: fits finished, of total
  fits_done.total = n;
  fits_done.loss = std::numeric_limits<double>::quiet_NaN();
  run_interruptible(
      [&](const std::atomic<bool>& stop) {
        job.train.stop = &stop;
        fleet::ForecastJobsConfig jc;
        jc.series_init_weights = series_init;
        if (prof)
          jc.profile_process = [&](const std::string& id) {
            return processes->pick(fmt::format("{} series {}", job.model, id));
          };
        const std::vector<fleet::Job> jobs = fleet::forecast_jobs(
            {.set = &d.set,
             .statics = statics != nullptr ? &statics->table : nullptr,
             .futr = futr != nullptr ? &futr->set : nullptr,
             .h_future = h_future},
            job, fleet::forecast_panels(n, /*per_series=*/true), jc,
            [&](std::span<const Index> series, train::FitResult& r) {
              const Index s = series.front();
              std::copy(r.forecasts.begin(), r.forecasts.end(), forecasts.begin() + s * h);
              if (keep_weights) weights[size_t(s)] = std::move(r.weights);
              steps[size_t(s)] = r.steps;
              fits_done.step.fetch_add(1, std::memory_order_relaxed);
              return fleet::JobOutput{};
            });
        // The flag is const for the fits; the fleet's config takes a mutable pointer it only reads.
        auto* stop_flag = const_cast<std::atomic<bool>*>(&stop);
        if (prof) prof->rec->start();
        const auto records = fleet::run_fleet(jobs,
                                              {.workers = workers,
                                               .progress = false,
                                               .pin = pin,
                                               .stop = stop_flag,
                                               .profiler = prof ? prof->rec.get() : nullptr},
                                              &sum);
        if (prof) prof->finish();
        for (size_t s = 0; s < records.size(); ++s)
          if (!records[s].ok) errors[s] = records[s].error;
      },
      report_progress(progress, fits_done));
  nb::dict out;
  out["forecasts"] =
      to_numpy(std::move(forecasts),
               {size_t(n), size_t(job.windows.h), size_t(layers::forecast_values(job.train.loss))});
  nb::list w;
  for (const auto& s : weights) w.append(to_bytes(s));
  out["weights"] = w;
  out["steps"] = steps;
  out["errors"] = errors;
  out["wall_s"] = sum.wall_s;
  out["fits_per_s"] = sum.fits_per_s;
  out["workers"] = sum.workers;
  out["profile"] = profile_result(prof);
  return out;
}

// A trial's result as its journal record keeps it, and back.
nlohmann::json trial_metrics(const train::FitResult& r) {
  return {{"val_losses", r.val_losses},
          {"train_losses", r.train_losses},
          {"steps", r.steps},
          {"fit_seconds", r.fit_seconds},
          {"pruned", r.pruned}};
}
train::FitResult trial_result(const nlohmann::json& m) {
  train::FitResult r;
  // A non-finite loss is journalled as null (JSON has no NaN).
  auto losses = [&](const char* key) {
    std::vector<double> v;
    for (const auto& x : m.at(key))
      v.push_back(x.is_number() ? x.get<double>() : std::numeric_limits<double>::quiet_NaN());
    return v;
  };
  r.val_losses = losses("val_losses");
  r.train_losses = losses("train_losses");
  r.steps = m.at("steps").get<Index>();
  r.fit_seconds = m.at("fit_seconds").get<double>();
  r.pruned = m.at("pruned").get<bool>();
  return r;
}

// The trials of a hyper-parameter search: one fit per settings dict, of its list of series
// (jointly: all of them for a global search, one for a search per series), run side by side by
// the fleet, one trial per worker thread, pinned and under the memory
// budget, so a search uses every core however small each fit is. A trial that fails (settings
// the model refuses, a loss that diverged) comes back with its error and the others go on.
// With `pruners` (one per trial; a search's trials share its pruner), successive halving stops the
// trials whose validation loss falls behind (train/pruner.h). Returns per trial: val_losses,
// train_losses, steps, fit_seconds, error ("" when fine), pruned, and the weights (safetensors
// bytes, when keep_weights: the refits of the best configurations).
// With a `journal` path (and one id per trial, unique within the search), every finished trial
// is appended there as the fleet journals its jobs, keyed by a digest of its settings and the
// data; a trial the journal already holds under the same key is not run again but answered
// from it (its weights are not journalled: keep_weights takes no journal), and its validation
// checks are replayed into its pruner.
nb::list fit_trials(const SeriesData& d, const std::vector<std::vector<Index>>& series,
                    const std::vector<nb::dict>& settings, const StaticData* statics, int workers,
                    bool pin, size_t memory_limit, bool keep_weights,
                    const std::vector<train::SuccessiveHalving*>& pruners,
                    const nb::object& progress, const std::string& journal,
                    const std::vector<std::string>& ids) {
  SHOAL_CHECK(series.size() == settings.size(), "{} series lists for {} trials", series.size(),
              settings.size());
  SHOAL_CHECK(journal.empty() || (ids.size() == settings.size() && !keep_weights),
              "a journal needs one id per trial ({} for {}) and no weights kept", ids.size(),
              settings.size());
  // The data's part of every trial's journal key: the series and the static values.
  const std::string data_key =
      journal.empty() ? ""
                      : fleet::content_digest(d.set) +
                            (statics == nullptr
                                 ? std::string()
                                 : fleet::digest(nlohmann::json{{"columns", statics->table.columns},
                                                                {"ids", statics->table.ids},
                                                                {"values", statics->table.values}}
                                                     .dump()));
  const size_t n = settings.size();
  std::vector<train::ForecastJob> jobs(n);
  std::vector<std::string> errors(n), keys(n);
  for (size_t i = 0; i < n; ++i) {
    try {
      // Python objects are read here, under the GIL: the fleet's workers run without it.
      if (!journal.empty()) keys[i] = fleet::digest(to_json_object(settings[i]).dump() + data_key);
      jobs[i] = make_job(settings[i]);
      jobs[i].train.threads = 1;  // the trials, not one fit, share the cores
      jobs[i].keep_weights = keep_weights;
    } catch (const std::exception& e) {
      errors[i] = e.what();
    }
  }
  // Each trial's pruner (a search's, shared by its trials across calls), or none.
  SHOAL_CHECK(pruners.empty() || pruners.size() == n, "{} pruners for {} trials", pruners.size(),
              n);
  std::vector<std::function<bool(Index, double)>> keep(pruners.size());
  for (size_t i = 0; i < pruners.size(); ++i) {
    train::SuccessiveHalving* p = pruners[i];
    keep[i] = [p](Index check, double loss) { return p->keep(check, loss); };
    jobs[i].train.keep_training = &keep[i];
  }
  std::vector<train::FitResult> results(n);
  train::FitProgress trials_done;  // step: trials finished, of total
  trials_done.total = static_cast<int64_t>(n);
  trials_done.loss = std::numeric_limits<double>::quiet_NaN();
  const PanelInputs in{&d, statics, nullptr, 0};
  run_interruptible(
      [&](const std::atomic<bool>& stop) {
        std::vector<fleet::Job> fleet_jobs;
        std::vector<size_t> trial_of;
        for (size_t i = 0; i < n; ++i) {
          if (!errors[i].empty()) continue;
          jobs[i].train.stop = &stop;
          size_t bytes = 0;
          try {
            bytes = train::planned_arena_bytes(in.panel(jobs[i], series[i]), jobs[i]);
          } catch (const std::exception& e) {
            errors[i] = e.what();
            continue;
          }
          fleet_jobs.push_back(
              {.id = journal.empty() ? fmt::format("trial {}", i) : ids[i],
               .arena_bytes = bytes,
               .run =
                   [&, i] {
                     results[i] = train::fit_forecast(in.panel(jobs[i], series[i]), jobs[i]);
                     trials_done.step.fetch_add(1, std::memory_order_relaxed);
                     return journal.empty() ? fleet::JobOutput{}
                                            : fleet::JobOutput{"", trial_metrics(results[i])};
                   },
               .key = keys[i]});
          trial_of.push_back(i);
        }
        auto* stop_flag = const_cast<std::atomic<bool>*>(&stop);
        const auto records = fleet::run_fleet(fleet_jobs,
                                              {.workers = workers,
                                               .memory_limit = memory_limit,
                                               .journal = journal,
                                               .start_afresh = "delete the journal file to "
                                                               "start afresh",
                                               .progress = false,
                                               .pin = pin,
                                               .stop = stop_flag},
                                              nullptr);
        for (size_t k = 0; k < records.size(); ++k) {
          const size_t i = trial_of[k];
          if (!records[k].ok) errors[i] = records[k].error;
          if (records[k].from_journal && records[k].ok) {
            results[i] = trial_result(records[k].output.metrics);
            if (!pruners.empty())
              for (size_t c = 0; c < results[i].val_losses.size(); ++c)
                (void)pruners[i]->keep(Index(c) + 1, results[i].val_losses[c]);
          }
        }
      },
      report_progress(progress, trials_done));
  nb::list out;
  for (size_t i = 0; i < n; ++i) {
    nb::dict t;
    t["val_losses"] = results[i].val_losses;
    t["train_losses"] = results[i].train_losses;
    t["steps"] = results[i].steps;
    t["fit_seconds"] = results[i].fit_seconds;
    t["error"] = errors[i];
    t["weights"] = to_bytes(results[i].weights);
    t["pruned"] = results[i].pruned;
    out.append(t);
  }
  return out;
}

// Window starts of a panel: the predict window, or n_windows cross-validation windows cv_step
// apart, the last one ending at the panel's end (neuralforecast's cross_validation; cv_step is
// its step_size argument, independent of the model's training-window step_size).
std::vector<Index> starts_of(const data::Panel& p, const train::ForecastJob& job, Index n_windows,
                             Index cv_step) {
  if (n_windows <= 0) return {data::predict_window_start(p, job.windows)};
  const Index test = job.windows.h + cv_step * (n_windows - 1);
  std::vector<Index> out;
  for (Index k = 0; k < n_windows; ++k)
    out.push_back(p.length() - test - job.windows.input_size + k * cv_step);
  return out;
}

// Forecasts [n_series, W, h, C] from saved weights (C values per step: 1 for a point loss,
// layers::forecast_values), one weight blob per panel: `groups` lists the
// series of each panel (one group of all series for a joint model, one per series otherwise).
// n_windows ≤ 0: the window after the data's end (futr exog from futr); else the last
// n_windows cross-validation windows (see starts_of).
nb::ndarray<nb::numpy, double> predict(const SeriesData& d,
                                       const std::vector<std::vector<Index>>& groups,
                                       const nb::dict& settings, const std::vector<nb::bytes>& w,
                                       const StaticData* statics, const SeriesData* futr,
                                       Index h_future, Index n_windows, Index cv_step) {
  const train::ForecastJob job = make_job(settings);
  SHOAL_CHECK(groups.size() == w.size(), "{} panels but {} weight blobs", groups.size(), w.size());
  std::vector<std::string> blobs;
  for (const auto& b : w) blobs.emplace_back(b.c_str(), b.size());
  const PanelInputs in{&d, statics, futr, h_future};
  const Index c = layers::forecast_values(job.train.loss);
  const Index n = d.set.n_series(), h = job.windows.h * c, nw = std::max<Index>(n_windows, 1);
  std::vector<double> out(size_t(n * nw * h), std::numeric_limits<double>::quiet_NaN());
  run_interruptible([&](const std::atomic<bool>& stop) {
    for (size_t g = 0; g < groups.size() && !stop.load(); ++g) {
      const data::Panel panel = in.panel(job, groups[g]);
      const std::vector<Index> starts = starts_of(panel, job, n_windows, cv_step);
      const std::vector<double> f = train::predict_windows(
          panel, job, blobs[g], starts, panel.length(), /*future=*/n_windows <= 0);
      for (size_t k = 0; k < groups[g].size(); ++k)
        std::copy_n(f.begin() + std::ptrdiff_t(k) * nw * h, nw * h,
                    out.begin() + groups[g][k] * nw * h);
    }
  });
  return to_numpy(std::move(out), {size_t(n), size_t(nw), size_t(job.windows.h), size_t(c)});
}

// Forecasts of windows at explicit starts, one weight blob and one start list per panel:
// panel g's windows at starts[g], each reading data in [0, ends[g]) (positions outside read as
// zero with mask 0). Returns every panel's [len(groups[g]), len(starts[g]), h, C] forecasts
// concatenated in group order, flat (the windows of in-sample forecasts differ per series).
nb::ndarray<nb::numpy, double> predict_at(const SeriesData& d,
                                          const std::vector<std::vector<Index>>& groups,
                                          const nb::dict& settings, const std::vector<nb::bytes>& w,
                                          const StaticData* statics,
                                          const std::vector<std::vector<Index>>& starts,
                                          const std::vector<Index>& ends) {
  const train::ForecastJob job = make_job(settings);
  SHOAL_CHECK(
      groups.size() == w.size() && groups.size() == starts.size() && groups.size() == ends.size(),
      "{} panels but {} weight blobs, {} start lists and {} ends", groups.size(), w.size(),
      starts.size(), ends.size());
  std::vector<size_t> offset{0};
  for (size_t g = 0; g < groups.size(); ++g)
    offset.push_back(offset.back() +
                     groups[g].size() * starts[g].size() *
                         size_t(job.windows.h * layers::forecast_values(job.train.loss)));
  std::vector<double> out(offset.back(), std::numeric_limits<double>::quiet_NaN());
  const PanelInputs in{&d, statics, nullptr, 0};
  run_interruptible([&](const std::atomic<bool>& stop) {
    for (size_t g = 0; g < groups.size() && !stop.load(); ++g) {
      if (starts[g].empty()) continue;
      const std::string blob(w[g].c_str(), w[g].size());
      const data::Panel panel = in.panel(job, groups[g]);
      SHOAL_CHECK(ends[g] >= 0 && ends[g] <= panel.length(), "end {} outside the panel's {} steps",
                  ends[g], panel.length());
      const std::vector<double> f =
          train::predict_windows(panel, job, blob, starts[g], ends[g], /*future=*/false);
      std::copy(f.begin(), f.end(), out.begin() + std::ptrdiff_t(offset[g]));
    }
  });
  return to_numpy(std::move(out), {offset.back()});
}

}  // namespace

// The registry as Python sees it: [(name, neuralforecast class, neural)] and, per model, its
// options [(key, default as text, kind)] (the defaults the Python classes must show).
std::vector<std::tuple<std::string, std::string, bool>> forecast_models() {
  std::vector<std::tuple<std::string, std::string, bool>> out;
  for (const train::ForecastModel& m : train::forecast_models())
    out.emplace_back(std::string(m.name), std::string(m.class_name), m.neural);
  return out;
}

std::vector<std::tuple<std::string, std::string, std::string>> forecast_options(
    const std::string& model) {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const OptionInfo& o : train::forecast_options(model))
    out.emplace_back(o.key, o.default_text, o.kind);
  return out;
}

// The model's default search space for horizon h (train/search_space.h), as (key, kind,
// choices as JSON text, lower, upper, q) per dimension.
std::vector<std::tuple<std::string, std::string, std::string, double, double, double>>
default_search_space(const std::string& model, Index h) {
  std::vector<std::tuple<std::string, std::string, std::string, double, double, double>> out;
  for (const train::SearchDimension& d : train::default_search_space(model, h))
    out.emplace_back(d.key, std::string(train::space_kind_name(d.kind)), d.choices.dump(), d.lower,
                     d.upper, d.q);
  return out;
}

void bind_forecast(nb::module_& m) {
  m.def("forecast_models", &forecast_models);
  m.def("forecast_options", &forecast_options, nb::arg("model"));
  m.def("default_search_space", &default_search_space, nb::arg("model"), nb::arg("h"));
  nb::class_<SeriesData>(m, "SeriesData")
      .def_prop_ro("n_series", [](const SeriesData& d) { return d.set.n_series(); })
      .def_prop_ro("rows", [](const SeriesData& d) { return d.set.rows(); });
  m.def("make_series", &make_series, nb::arg("offsets"), nb::arg("y"), nb::arg("exog"),
        nb::arg("exog_names"), nb::arg("first_ds"), nb::arg("available").none() = nb::none(),
        nb::arg("sample_weight").none() = nb::none());
  nb::class_<StaticData>(m, "StaticData");
  m.def("make_static", &make_static, nb::arg("values"), nb::arg("columns"));
  m.def("fit_panel", &fit_panel, nb::arg("data"), nb::arg("series"), nb::arg("settings"),
        nb::arg("statics").none(), nb::arg("futr").none(), nb::arg("h_future"),
        nb::arg("keep_weights"), nb::arg("profile").none() = nb::none(),
        nb::arg("init_weights").none() = nb::none(), nb::arg("progress").none() = nb::none());
  m.def("fit_fleet", &fit_fleet, nb::arg("data"), nb::arg("settings"), nb::arg("statics").none(),
        nb::arg("futr").none(), nb::arg("h_future"), nb::arg("keep_weights"), nb::arg("workers"),
        nb::arg("pin"), nb::arg("profile").none() = nb::none(),
        nb::arg("init_weights").none() = nb::none(), nb::arg("progress").none() = nb::none());
  m.def("fit_trials", &fit_trials, nb::arg("data"), nb::arg("series"), nb::arg("settings"),
        nb::arg("statics").none(), nb::arg("workers"), nb::arg("pin"), nb::arg("memory_limit"),
        nb::arg("keep_weights"), nb::arg("pruners") = std::vector<train::SuccessiveHalving*>{},
        nb::arg("progress").none() = nb::none(), nb::arg("journal") = std::string(),
        nb::arg("ids") = std::vector<std::string>{});
  nb::class_<train::SuccessiveHalving>(m, "SuccessiveHalving")
      .def(nb::init<Index, Index>(), nb::arg("min_checks"), nb::arg("reduction_factor"));
  m.def("predict", &predict, nb::arg("data"), nb::arg("groups"), nb::arg("settings"),
        nb::arg("weights"), nb::arg("statics").none(), nb::arg("futr").none(), nb::arg("h_future"),
        nb::arg("n_windows"), nb::arg("cv_step"));
  m.def("predict_at", &predict_at, nb::arg("data"), nb::arg("groups"), nb::arg("settings"),
        nb::arg("weights"), nb::arg("statics").none(), nb::arg("starts"), nb::arg("ends"));
}

}  // namespace shoal::py
