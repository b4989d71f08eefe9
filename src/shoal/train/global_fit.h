// The fit, plan and predict of a univariate windowed model over a panel of many series: one
// model trained globally on the windows of every series (data/global_windows.h), data-parallel
// over the step's windows (train/parallel_forecast_trainer.h). Private to the registry; a
// one-series panel keeps the windowed path (windowed_fit.h).
#pragma once

#include <algorithm>
#include <chrono>

#include "shoal/data/global_windows.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/checks.h"
#include "shoal/train/parallel_forecast_trainer.h"
#include "windowed_fit.h"

namespace shoal::train::detail {

models::ForecastInputs<float> univariate_inputs_of(const data::WindowBatch& b);

// Windows per inference pass (inference_windows_batch_size; -1: all of `total`).
inline Index inference_batch(const data::WindowConfig& wc, Index total) {
  return std::max<Index>(
      wc.inference_windows_batch_size < 0 ? total : wc.inference_windows_batch_size, 1);
}

template <class Model>
using GlobalTrainer = ParallelForecastTrainer<Model, float>;

template <class Model>
typename GlobalTrainer<Model>::Trainer::Config global_trainer_config(const data::Panel& panel,
                                                                     const ForecastJob& job,
                                                                     Index max_batch) {
  return {.max_batch = max_batch,
          .seed = job.train.seed,
          .init_generator = job.train.init_generator,
          .adam = {.lr = job.train.learning_rate},
          .loss = job.train.loss,
          .gradient_clip_val = job.train.gradient_clip_val,
          .chunk_windows = chunk_windows_of<Model>(),
          .categorical = exog_embeddings_config(panel, job)};
}

// Predictions of `windows` (series-major) into out [windows, h, C] (data scale; C values per
// step, forecast_values.h), in inference passes of at most eval.max_windows() windows.
template <class Trainer>
void predict_univariate(Trainer& trainer, data::UnivariateAssembler& eval, ForecastValues& values,
                        std::span<const data::SeriesWindow> windows, Index end, bool future,
                        Index h, float* out) {
  const auto total = static_cast<Index>(windows.size());
  const Index c = values.values();
  for (Index i = 0; i < total; i += eval.max_windows()) {
    const Index k = std::min(eval.max_windows(), total - i);
    const data::WindowBatch& b = eval.assemble(windows.subspan(size_t(i), size_t(k)), end, future);
    values.map(trainer.predict(univariate_inputs_of(b)), b, uint64_t(i), out + i * h * c);
  }
}

template <class Model>
FitResult fit_global(const data::Panel& panel, const ForecastJob& job) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // Profiler: the fit's sampling, validation and predict zones, one step per training step and
  // every replica's layer zones (each thread's share of a step); a fleet worker's fit is one
  // zone.
  const FitZones fz(job);
  profile::ZoneChain whole(fz.steps ? nullptr : fz.rec, 0);
  whole.next(fz.fit);
  profile::ZoneChain zone(fz.rec, 0);
  zone.next(fz.setup);
  check_forecast_job(job, true);
  const auto cfg = model_config<Model>(panel, job, 1);
  // Validation and predict windows; the training ones may differ (model_windows).
  const data::WindowConfig wc = model_windows<Model>(job.windows, cfg, false);
  const Index h = wc.h, n = panel.n_series();
  data::GlobalBatcher batcher(panel, model_windows<Model>(job.windows, cfg, true), job.train.seed);
  // Validation windows: every series' (series-major), scored in groups of valid_batch_size
  // series and passes of inference_windows_batch_size windows, as neuralforecast's
  // validation_step weights each pass's masked mean by its windows.
  const bool validate = wc.val_size > 0;
  const std::vector<Index> val_starts =
      validate ? data::val_window_starts(panel, wc) : std::vector<Index>{};
  const Index vw = Index(val_starts.size());
  const Index vgroup = wc.valid_batch_size > 0 ? wc.valid_batch_size : wc.batch_size;
  const Index most = std::max<Index>(std::min(vgroup, n) * vw, n);  // windows of one pass
  const Index infer = std::min(inference_batch(wc, most), most);
  GlobalTrainer<Model> gt(cfg, global_trainer_config<Model>(panel, job, batcher.max_windows()),
                          static_cast<int>(job.train.threads), infer);
  auto& trainer = gt.source();
  if (fz.rec != nullptr && fz.steps) gt.set_profiler(fz.rec, job.profile_model);
  if (!job.init_weights.empty()) {
    load_checkpoint_bytes(trainer.arena(), job.init_weights, "init weights", /*strict=*/false);
    gt.sync_state();
  }
  data::UnivariateAssembler eval(panel, wc, infer);
  const std::vector<data::SeriesWindow> val_windows = data::every_series(n, val_starts);
  const Index vend = validate ? data::val_end(panel, wc) : 0;
  ValidationScorer scorer(job.train, wc.scaler, infer, h, 1, wc.input_size);
  const bool raw_target = trainer.loss().scores_raw_target();
  auto validation_loss = [&] {
    double sum = 0;
    Index count = 0;
    for (Index g = 0; g < n; g += vgroup) {
      const Index gw = std::min(vgroup, n - g) * vw;  // this group's windows
      for (Index i = 0; i < gw; i += infer) {
        const Index k = std::min(infer, gw - i);
        const std::span<const data::SeriesWindow> ws(val_windows.data() + g * vw + i, size_t(k));
        const data::WindowBatch& b = eval.assemble(ws, vend);
        const double l = scorer.score(trainer.predict(univariate_inputs_of(b)), b);
        sum += l * double(k);
        count += k;
      }
    }
    return sum / double(std::max<Index>(count, 1));
  };

  FitResult r;
  train_steps(
      job, fz, zone, trainer, r, [&]() -> const data::WindowBatch& { return batcher.next(); },
      [&](const data::WindowBatch& b) {
        const LossTarget lt = loss_target(b, raw_target, 1);
        return gt.train_step(univariate_inputs_of(b), lt.target, lt.mask, lt.loc, lt.scale);
      },
      [&] { return gt.last_step_diverged(); }, validation_loss);

  zone.next(fz.predict);
  const Index start = data::predict_window_start(panel, wc);
  const std::vector<data::SeriesWindow> pw = data::every_series(n, {&start, 1});
  ForecastValues values(job.train.loss, wc.scaler, job.train.seed, infer * h, 1);
  std::vector<float> yhat(size_t(n * h * values.values()));
  predict_univariate(trainer, eval, values, pw, panel.length(), /*future=*/true, h, yhat.data());
  zone.close();
  r.forecasts.assign(yhat.begin(), yhat.end());
  finish_fit(job, trainer, t0, r);
  return r;
}

template <class Model>
size_t plan_global(const data::Panel& panel, const ForecastJob& job) {
  check_forecast_job(job, true);
  const auto cfg = model_config<Model>(panel, job, 1);
  const data::GlobalBatcher batcher(panel, model_windows<Model>(job.windows, cfg, true),
                                    job.train.seed);
  Model model(cfg);
  typename GlobalTrainer<Model>::Trainer trainer(
      model, global_trainer_config<Model>(panel, job, batcher.max_windows()));
  return trainer.arena().bytes();
}

template <class Model>
std::vector<double> predict_global(const data::Panel& panel, const ForecastJob& job,
                                   std::string_view weights, std::span<const Index> starts,
                                   Index end, bool future) {
  check_forecast_job(job, false);
  const auto cfg = model_config<Model>(panel, job, 1);
  const data::WindowConfig wc = model_windows<Model>(job.windows, cfg, false);
  const Index h = wc.h, n = panel.n_series(), w = Index(starts.size());
  const std::vector<data::SeriesWindow> windows =
      data::every_series(n, model_starts(starts, job.windows, wc));
  const Index max_batch = std::min(inference_batch(wc, n * w), n * w);
  Model model(cfg);
  typename GlobalTrainer<Model>::Trainer trainer(
      model, global_trainer_config<Model>(panel, job, max_batch));
  load_checkpoint_bytes(trainer.arena(), weights, "weights");
  data::UnivariateAssembler eval(panel, wc, max_batch);
  ForecastValues values(job.train.loss, wc.scaler, job.train.seed, max_batch * h, 1);
  std::vector<float> y(size_t(n * w * h * values.values()));
  predict_univariate(trainer, eval, values, windows, end, future, h, y.data());
  return {y.begin(), y.end()};  // [series, window, h, C]: series-major windows
}

// A univariate model: a panel of many series trains one model globally, a one-series panel
// the windowed way (the same windows, sampled as before).
template <class Model>
FitResult fit_univariate(const data::Panel& p, const ForecastJob& job) {
  return p.n_series() > 1 ? fit_global<Model>(p, job) : fit_windowed<Model>(p, job);
}
template <class Model>
size_t plan_univariate(const data::Panel& p, const ForecastJob& job) {
  return p.n_series() > 1 ? plan_global<Model>(p, job) : plan_windowed<Model>(p, job);
}
template <class Model>
std::vector<double> predict_univariate_windows(const data::Panel& p, const ForecastJob& job,
                                               std::string_view weights,
                                               std::span<const Index> starts, Index end,
                                               bool future) {
  return p.n_series() > 1 ? predict_global<Model>(p, job, weights, starts, end, future)
                          : predict_windowed<Model>(p, job, weights, starts, end, future);
}

// The registry entry of a windowed model: its Config holds the options (train/forecast_registry.h)
// and its kind (models/forecast_model.h): a multivariate model mixes the series of a panel
// (TSMixer); a univariate one sees one series per window and trains over many series globally
// (NLinear).
template <class Model>
ForecastModel windowed_model(std::string_view name, std::string_view class_name,
                             void (*shared_defaults)(ForecastJob&) = nullptr) {
  using Config = typename Model::Config;
  constexpr bool multivariate = Config::kKind.multivariate;
  constexpr bool categorical_exog = requires(Model & model) {
    model.exog_grads();
  };
  ForecastModel m{
      .name = name,
      .class_name = class_name,
      .neural = true,
      .multivariate = multivariate,
      .categorical_exog = categorical_exog,
      .shared_defaults = shared_defaults,
      .default_options = [] { return std::any(Config{}); },
      .visit_options = [](std::any& o, OptionVisitor& v) { std::any_cast<Config&>(o).visit(v); },
      .validate = [](const std::any& o) { std::any_cast<const Config&>(o).validate(); },
      .fit = &fit_windowed<Model>,
      .planned_bytes = &plan_windowed<Model>,
      .predict = &predict_windowed<Model>,
  };
  if constexpr (!multivariate) {
    m.fit = &fit_univariate<Model>;
    m.planned_bytes = &plan_univariate<Model>;
    m.predict = &predict_univariate_windows<Model>;
  }
  return m;
}

}  // namespace shoal::train::detail
