#include "shoal/fleet/jobs.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <tuple>

#include <fmt/format.h>

#include "shoal/core/error.h"
#include "shoal/core/file_io.h"
#include "shoal/core/options.h"
#include "shoal/data/csv.h"
#include "shoal/data/gzip.h"
#include "shoal/data/ncf.h"
#include "shoal/data/text.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/fleet/forecast_jobs.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/lanes_mlp_trainer.h"
#include "shoal/train/metrics.h"
#include "shoal/train/mlp_trainer.h"
#include "shoal/train/ncf_trainer.h"
#include "shoal/train/search.h"
#include "shoal/train/search_space.h"

#include "lanes_jobs.h"

namespace shoal::fleet {

void ScoreSums::add(const nlohmann::json& m) {
  if (!m.contains("scores")) return;
  const nlohmann::json& s = m.at("scores");
  smape += s.value("smape_sum", 0.0);
  mase += s.value("mase_sum", 0.0);
  mae += s.value("mae_sum", 0.0);
  snaive_smape += s.value("snaive_smape_sum", 0.0);
  snaive_mase += s.value("snaive_mase_sum", 0.0);
  snaive_mae += s.value("snaive_mae_sum", 0.0);
  n += s.value("n", int64_t{0});
  n_mase += s.value("n_mase", int64_t{0});
}

namespace {

// A field by the one CSV writer (data/text.h).
std::string csv_field(const std::string& s) {
  std::string out;
  data::append_csv_field(out, s);
  return out;
}

// Everything loaded once and shared by the jobs (read-only while they run).
struct Loaded {
  std::map<std::string, std::shared_ptr<const data::SeriesSet>> series;
  std::map<std::string, std::shared_ptr<const data::SeriesSet>> futr;  // no y column needed
  std::map<std::string, std::shared_ptr<const data::StaticTable>> statics;
  std::map<std::string, std::shared_ptr<const data::NumericTable>> tables;
  std::map<std::string, std::shared_ptr<const data::NcfPositives>> ncf_train;
  std::map<std::string, std::shared_ptr<const data::NcfTestSet>> ncf_test;
  std::map<std::string, std::string> errors;   // path → why it could not be read
  std::map<std::string, std::string> digests;  // path → digest of its bytes (journal keys)
  detail::LanesMlpGroups lanes_mlp;            // MLP sweeps below the crossover, 8 per group

  template <class T, class F>
  std::shared_ptr<const T> get(std::map<std::string, std::shared_ptr<const T>>& cache,
                               const std::string& key, F&& load) {
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    auto e = errors.find(key);
    if (e != errors.end()) throw Error(e->second);
    try {
      auto p = std::make_shared<const T>(load());
      cache.emplace(key, p);
      return p;
    } catch (const std::exception& ex) {
      errors.emplace(key, ex.what());
      throw;
    }
  }
};

// A line's error prefixed with where the line is ("jobs.jsonl:3: ...").
std::string located(const JobSpec& s, const std::string& message) {
  return s.source.empty() ? message : fmt::format("{}:{}: {}", s.source, s.line, message);
}

Job failing_job(const std::string& id, const std::string& key, const std::string& error) {
  return {id, 0, [error]() -> JobOutput { throw Error(error); }, key};
}

// ---- forecasting ----

// The line's forecasting job: its config (the one key–value form of train/forecast_job.h) with the
// line's seed; a stated n_series must agree with the panels the line makes.
train::ForecastJob forecast_job(const JobSpec& s, const data::SeriesSet& set) {
  nlohmann::json options = s.config;
  SHOAL_CHECK(!options.contains("random_seed"),
              "give the seed as the line's 'seed', not as config 'random_seed'");
  if (options.contains("n_series")) {
    OptionReader reader(options, "n_series");
    const Index want = s.series != "all"  ? 1
                       : s.max_series > 0 ? std::min<Index>(s.max_series, set.n_series())
                                          : set.n_series();
    Index got = want;
    reader("n_series", got, "");
    if (got != want)
      throw Error(
          "n_series does not match the data",
          ErrorContext{.file = s.data,
                       .field = "n_series",
                       .expected = s.series != "all"
                                       ? std::string("1 (series 'each': one model per series)")
                                       : fmt::format("{} (the series in the data)", want),
                       .actual = fmt::format("{}", got)});
    options.erase("n_series");
  }
  SHOAL_CHECK(options.contains("h"), "config 'h' (the forecast horizon) is required");
  train::ForecastJob job = train::forecast_job(s.model, options);
  // Set on the job, not in its config, as a baseline reads neither.
  job.train.seed = s.seed;
  // The fleet runs its jobs side by side, one per worker: a global fit takes one thread.
  if (!options.contains("num_threads")) job.train.threads = 1;
  SHOAL_CHECK(job.exog.stat.empty() || !s.static_df.empty(),
              "stat_exog_list needs a static table: give the line a 'static' file");
  SHOAL_CHECK(job.exog.futr.empty() || !s.futr_df.empty() || !train::is_neural(job),
              "futr_exog_list needs the future values: give the line a 'futr_df' file");
  if (job.seasonality == 0) job.seasonality = set.freq.front().season_length();
  train::check_forecast_job(job, true);
  // Jobs files and the CLI write one point forecast per step.
  SHOAL_CHECK(layers::is_point_loss(job.train.loss.kind),
              "loss {} forecasts several values per step, which this output does not hold; "
              "train it from Python (shoal.NeuralForecast)",
              train::loss_name(job.train.loss.kind));
  return job;
}

nlohmann::json score_series(const data::SeriesSet& set, Index s, const data::SeriesSet& test,
                            const std::string& test_path, const double* f, Index h, Index m) {
  const auto y = train::held_out(set, s, test, test_path, h);
  train::ScoreAccumulator model, base;
  model.add(y, std::span<const double>(f, size_t(h)), set.y_of(s), m);
  std::vector<double> sn(static_cast<size_t>(h));
  train::seasonal_naive(set.y_of(s), m, sn);
  base.add(y, sn, set.y_of(s), m);
  return {{"n", model.n},
          {"n_mase", model.n_mase},
          {"smape_sum", model.smape_sum},
          {"mase_sum", model.mase_sum},
          {"mae_sum", model.mae_sum},
          {"snaive_smape_sum", base.smape_sum},
          {"snaive_mase_sum", model.n_mase ? base.mase_sum : 0.0},
          {"snaive_mae_sum", base.mae_sum}};
}

void add_forecast_jobs(const JobSpec& s, Loaded& loaded, BuiltJobs& out) {
  const std::string key = job_key(s, loaded.digests);
  std::shared_ptr<const data::SeriesSet> set, test, futr;
  std::shared_ptr<const data::StaticTable> statics;
  train::ForecastJob job;
  train::SearchSettings search;
  try {
    SHOAL_CHECK(!s.data.empty(), "'data' (a long-format CSV) is required");
    SHOAL_CHECK(s.series == "each" || s.series == "all", "'series' must be each or all, got '{}'",
                s.series);
    SHOAL_CHECK(s.max_series >= 0, "'max_series' must be ≥ 0");
    set = loaded.get(loaded.series, s.data, [&] { return data::read_series(s.data); });
    if (!s.test.empty())
      test = loaded.get(loaded.series, s.test, [&] { return data::read_series(s.test); });
    if (!s.static_df.empty())
      statics =
          loaded.get(loaded.statics, s.static_df, [&] { return data::read_static(s.static_df); });
    if (!s.futr_df.empty())
      futr = loaded.get(loaded.futr, s.futr_df,
                        [&] { return data::read_series(s.futr_df, /*require_y=*/false); });
    if (s.tune.is_null()) {
      job = forecast_job(s, *set);
    } else {
      // The line's job is one draw's: its fixed options checked now, its arena planned for
      // the fleet's memory budget.
      search = train::SearchSettings::from_json(s.tune);
      search.seed = s.seed;
      SHOAL_CHECK(!s.config.contains("val_size"),
                  "a tune line validates on tune 'val_size' rows, not on config 'val_size'");
      SHOAL_CHECK(s.config.contains("h") && s.config.at("h").is_number_integer(),
                  "config 'h' (the forecast horizon) is required");
      const train::SearchSpace space =
          train::default_search_space(s.model, s.config.at("h").get<Index>());
      SHOAL_CHECK(!space.empty(), "model '{}' has no hyper-parameters to search", s.model);
      std::mt19937_64 probe = train::search_rng(s.seed, "probe");
      JobSpec drawn = s;
      drawn.config = train::trial_options(train::draw(space, probe), s.config, search.val_size);
      drawn.config.erase("random_seed");
      job = forecast_job(drawn, *set);
    }
  } catch (const std::exception& e) {
    out.jobs.push_back(failing_job(s.id, key, located(s, e.what())));
    out.info.push_back({s.group, s.model, true});
    return;
  }
  const Index h = job.windows.h, m = job.seasonality;
  const std::string test_path = s.test;
  // The job's data outlive this call: the jobs keep the tables alive.
  auto owner = std::make_shared<std::tuple<decltype(set), decltype(futr), decltype(statics)>>(
      set, futr, statics);
  const ForecastData data{.set = set.get(),
                          .statics = statics.get(),
                          .futr = futr.get(),
                          .h_future = h,
                          .owner = owner};
  const auto panels = forecast_panels(set->n_series(), s.series != "all", s.max_series);
  const std::string line_id = s.id;
  ForecastJobsConfig cfg{.id_prefix = s.id + "/", .joint_id = s.id, .key = key};
  if (!s.tune.is_null()) {
    // Each job searches its panel (a series, or all of them) and refits the best draw.
    nlohmann::json fixed = s.config;
    fixed.erase("n_series");
    cfg.fit = [set, model = s.model, fixed, search](std::span<const Index> series,
                                                    const data::Panel& panel,
                                                    const train::ForecastJob& base) {
      const std::string label = series.size() == 1 ? set->ids[size_t(series[0])] : "all";
      train::SearchResult r = train::search_and_refit(panel, model, fixed, search, label, base);
      train::FitResult fit = std::move(r.fit);
      fit.search = r.summary();
      return fit;
    };
  }
  std::vector<Job> jobs = forecast_jobs(
      data, job, panels, cfg,
      [set, test, test_path, h, m, line_id](std::span<const Index> series, train::FitResult& r) {
        const std::string id =
            series.size() == 1 ? line_id + "/" + set->ids[size_t(series[0])] : line_id;
        JobOutput o;
        nlohmann::json scores;
        for (size_t k = 0; k < series.size(); ++k) {
          const Index sid = series[k];
          int64_t ds = set->ds_of(sid).back();
          const std::string prefix = csv_field(id) + "," + csv_field(set->ids[size_t(sid)]) + ",";
          for (Index t = 0; t < h; ++t) {
            ds = data::advance(ds, set->freq[size_t(sid)]);
            o.rows += prefix + data::format_ds(ds, set->time_kind, set->date_only) +
                      fmt::format(",{}\n", r.forecasts[k * size_t(h) + t]);
          }
          if (test) {
            const nlohmann::json sc =
                score_series(*set, sid, *test, test_path, r.forecasts.data() + k * size_t(h), h, m);
            if (scores.is_null()) {
              scores = sc;
            } else {
              for (const auto& [name, v] : sc.items())
                scores[name] = scores[name].get<double>() + v.get<double>();
            }
          }
        }
        o.metrics = {{"fit_s", r.fit_seconds}, {"steps", r.steps}, {"arena_bytes", r.arena_bytes}};
        if (!scores.is_null()) o.metrics["scores"] = scores;
        if (!r.search.is_null()) o.metrics["search"] = r.search;
        return o;
      });
  for (Job& j : jobs) {
    out.jobs.push_back(std::move(j));
    out.info.push_back({s.group, s.model, true});
  }
}

// ---- MLP regressor ----

struct MlpSettings {
  models::Mlp<float>::Config model;
  train::MlpTrainConfig train;
  std::string target;
  int epochs = 30;
  double val_fraction = 0.2;
};

void add_mlp_job(const JobSpec& s, Loaded& loaded, BuiltJobs& out) {
  const std::string key = job_key(s, loaded.digests);
  try {
    SHOAL_CHECK(!s.data.empty(), "'data' (a numeric CSV) is required");
    SHOAL_CHECK(s.test.empty(), "'test' is not used by model mlp (it holds out val_fraction)");
    const auto table =
        loaded.get(loaded.tables, s.data, [&] { return data::read_numeric_csv(s.data); });
    train::MlpOptions opts;
    OptionReader c(s.config, fmt::format("model '{}'", s.model));
    opts.visit(c);
    // Jobs only: train a sweep's members 8 at a time across SIMD lanes where that wins.
    bool fusion = true;
    c("fusion", fusion, "");
    c.check_all_used();
    opts.validate();
    auto st = std::make_shared<MlpSettings>();
    st->target = opts.target;
    const Index target = table->column(st->target);
    SHOAL_CHECK(table->cols() >= 2, "{}: need a feature column besides '{}'", s.data, st->target);
    st->model = opts.model(table->cols() - 1);
    st->train = {.batch_size = opts.batch_size,
                 .lr = opts.learning_rate,
                 .seed = s.seed,
                 .threads = 1,
                 .pinning = Pinning::kNone};
    st->epochs = static_cast<int>(opts.epochs);
    st->val_fraction = opts.val_fraction;
    const uint64_t seed = s.seed;
    auto run = [table, st, target, seed]() {
      std::vector<double> x, y;
      data::shuffled_xy(*table, target, seed, x, y);
      const Index in = table->cols() - 1;
      const Index n_val = static_cast<Index>(static_cast<double>(table->rows) * st->val_fraction);
      const Index n_train = table->rows - n_val;
      SHOAL_CHECK(n_train > 0, "no rows left for training");
      train::MlpTrainer trainer(st->model, st->train, ConstMat<double>(x.data(), n_train, in),
                                ConstMat<double>(y.data(), n_train, 1));
      double loss = 0;
      for (int e = 0; e < st->epochs; ++e) loss = trainer.train_epoch().train_loss;
      JobOutput o;
      o.metrics = {{"train_loss", loss},
                   {"steps", trainer.steps()},
                   {"arena_bytes", trainer.arena().bytes()}};
      if (n_val > 0) {
        const auto m = trainer.evaluate(ConstMat<double>(x.data() + n_train * in, n_val, in),
                                        ConstMat<double>(y.data() + n_train, n_val, 1));
        o.metrics["val_mse"] = m.mse;
        o.metrics["val_mae"] = m.mae;
        o.metrics["val_r2"] = m.r2;
      }
      return o;
    };
    // Plan: the model's arena does not depend on the data beyond its width.
    size_t bytes = 0;
    {
      std::vector<double> x(size_t(st->model.in), 0.0), y(1, 0.0);
      train::MlpTrainer probe(st->model, st->train, ConstMat<double>(x.data(), 1, st->model.in),
                              ConstMat<double>(y.data(), 1, 1));
      bytes = probe.arena().bytes();
    }
    std::function<JobOutput()> job_run = run;
    // Horizontal fusion below the measured crossover: the seeds and learning rates of one line
    // train 8 at a time across SIMD lanes (lanes_jobs.h, docs/fleet.md).
    if (fusion && train::lanes_mlp_wins(st->model, st->train.batch_size)) {
      nlohmann::json shared = s.config;  // what the group's members share: all but lr and seed
      shared.erase("learning_rate");
      job_run =
          loaded.lanes_mlp.add(s.group + '\n' + s.data + '\n' + shared.dump(),
                               {st->model, st->train, st->epochs, st->val_fraction, table, target},
                               seed, st->train.lr, run);
      // The member that trains its group holds all 8 models' arenas at once; budgeting every
      // member so over-counts a waiting member, which is the safe side of --memory-limit.
      bytes *= 8;
    }
    out.jobs.push_back({s.id, bytes, job_run, key});
  } catch (const std::exception& e) {
    out.jobs.push_back(failing_job(s.id, key, located(s, e.what())));
  }
  out.info.push_back({s.group, s.model, false});
}

// ---- NCF recommender ----

bool is_forecaster(const std::string& model) {
  for (const train::ForecastModel& m : train::forecast_models())
    if (m.name == model) return true;
  return false;
}

// The tabular regressor of `shoal mlp` (the registry's "mlp" is neuralforecast's forecaster).
constexpr std::string_view kMlpRegressor = "mlp_regressor";

bool is_forecast_line(const JobSpec& s) {
  return is_forecaster(s.model);
}

bool ends_with_csv(const std::string& p) {
  return p.size() >= 4 && p.compare(p.size() - 4, 4, ".csv") == 0;
}

void add_ncf_job(const JobSpec& s, Loaded& loaded, BuiltJobs& out) {
  const std::string key = job_key(s, loaded.digests);
  try {
    SHOAL_CHECK(!s.data.empty(), "'data' (a *.train.rating file or a CSV) is required");
    train::NcfOptions opts;
    OptionReader c(s.config, fmt::format("model '{}'", s.model));
    opts.visit(c);
    std::string negatives;  // jobs only: the *.test.negative file beside 'test'
    c("test_negatives", negatives, "");
    c.check_all_used();
    opts.validate();
    negatives = resolve_job_path(negatives, s.base_dir);
    SHOAL_CHECK(s.test.empty() == negatives.empty(),
                "'test' and config 'test_negatives' go together");
    auto tr = loaded.get(loaded.ncf_train, s.data, [&] {
      return ends_with_csv(s.data) ? data::read_ncf_csv(s.data, {})
                                   : data::read_ncf_ratings(s.data);
    });
    std::shared_ptr<const data::NcfTestSet> test;
    if (!s.test.empty())
      test = loaded.get(loaded.ncf_test, s.test + "|" + negatives,
                        [&] { return data::read_ncf_test(s.test, negatives); });
    const Index users = std::max(tr->num_users, test ? test->num_users : 0);
    const Index items = std::max(tr->num_items, test ? test->num_items : 0);
    const models::Ncf<float>::Config model = opts.model(users, items, tr->context_cols());
    const train::NcfTrainConfig cfg = opts.train(s.seed, 1, Pinning::kNone);
    const int epochs = static_cast<int>(opts.epochs);
    const int top_k = static_cast<int>(opts.top_k);
    // The trainer reads the positives with the test set's id range.
    auto run = [tr, test, model, cfg, epochs, top_k]() {
      data::NcfPositives positives = *tr;
      positives.num_users = model.num_users;
      positives.num_items = model.num_items;
      train::NcfTrainer trainer(model, cfg, positives);
      double loss = 0;
      for (int e = 0; e < epochs; ++e) loss = trainer.train_epoch().loss;
      JobOutput o;
      o.metrics = {
          {"loss", loss}, {"steps", trainer.steps()}, {"arena_bytes", trainer.arena().bytes()}};
      if (test) {
        const auto m = trainer.evaluate(*test, top_k);
        o.metrics["hr"] = m.hr;
        o.metrics["ndcg"] = m.ndcg;
        o.metrics["top_k"] = top_k;
      }
      return o;
    };
    out.jobs.push_back({s.id, train::NcfTrainer::planned_bytes(model, cfg, *tr), run, key});
  } catch (const std::exception& e) {
    out.jobs.push_back(failing_job(s.id, key, located(s, e.what())));
  }
  out.info.push_back({s.group, s.model, false});
}

}  // namespace

BuiltJobs build_jobs(const std::vector<JobSpec>& specs) {
  auto loaded = std::make_shared<Loaded>();
  BuiltJobs out;
  for (const JobSpec& s : specs) {
    if (!s.error.empty()) {
      out.jobs.push_back(failing_job(s.id, job_key(s, loaded->digests), s.error));
      out.info.push_back({s.group, s.model, is_forecast_line(s)});
    } else if (is_forecast_line(s)) {
      add_forecast_jobs(s, *loaded, out);
    } else if (s.model == kMlpRegressor) {
      add_mlp_job(s, *loaded, out);
    } else if (s.model == "ncf") {
      add_ncf_job(s, *loaded, out);
    } else {
      out.jobs.push_back(failing_job(
          s.id, job_key(s, loaded->digests),
          format_error(
              fmt::format("unknown model '{}'", s.model),
              {.file = s.source,
               .line = s.line,
               .field = "model",
               .expected = train::forecast_model_names() + " (forecasters), mlp_regressor or ncf",
               .actual = s.model.empty() ? "(missing)" : s.model})));
      out.info.push_back({s.group, s.model, false});
    }
  }
  out.data = loaded;
  return out;
}

}  // namespace shoal::fleet
