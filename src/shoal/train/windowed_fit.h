// The fit, plan and predict of any windowed neural forecaster (train/forecast_trainer.h's
// WindowModel) on a panel whose series it models jointly; global_fit.h adds the univariate
// path and the registry entry that wires them: windowed_model<Model>(name, class).
// Private to the registry (src/shoal/train/forecast_registry.cpp).
#pragma once

#include <algorithm>
#include <any>
#include <chrono>
#include <cmath>
#include <limits>

#include "forecast_values.h"
#include "shoal/optim/lr_schedule.h"
#include "shoal/profile/recorder.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/checks.h"
#include "shoal/train/forecast_registry.h"
#include "shoal/train/forecast_trainer.h"

namespace shoal::train::detail {

models::ForecastInputs<float> inputs_of(const data::WindowBatch& b);

// Profiler zones of a fit outside the trainer (which registers the model's, the loss's and the
// optimizer's): sampling, validation, predict, and the fit as a whole.
struct FitZones {
  profile::Recorder* rec = nullptr;
  bool steps = false;  // this thread marks profiler steps
  profile::ZoneId fit = profile::kStepZone, setup = profile::kStepZone, sample = profile::kStepZone,
                  validation = profile::kStepZone, predict = profile::kStepZone;
  explicit FitZones(const ForecastJob& job);
};

// The embeddings of the job's categorical exogenous columns, by stream (empty: none).
ExogEmbeddingsConfig exog_embeddings_config(const data::Panel& p, const ForecastJob& job);

// The model's Config: the job's options (the model's defaults when it has none) shaped by the
// panel, for windows of `n_series` series (the panel's, or 1 for a univariate model); its
// exogenous inputs are the embedded streams where columns are categorical.
template <class Model>
typename Model::Config model_config(const data::Panel& p, const ForecastJob& job, Index n_series) {
  using Config = typename Model::Config;
  Config c = job.options.has_value() ? std::any_cast<const Config&>(job.options) : Config{};
  const ExogEmbeddingsConfig cat = exog_embeddings_config(p, job);
  c.set_shape({.h = job.windows.h,
               .input_size = job.windows.input_size,
               .n_series = n_series,
               .hist_exog = cat.hist.out_channels(),
               .futr_exog = cat.futr.out_channels(),
               .stat_exog = cat.stat.out_channels(),
               .outputs = layers::loss_outputs(job.train.loss),
               .exog_grads = !cat.empty()});
  if constexpr (requires { c.feedback_output; })
    c.feedback_output = layers::recurrent_feedback_output(job.train.loss);
  return c;
}

// The windows a fit of `Model` samples for training (true) or predicts and validates from: the
// job's, unless the model takes others (window_input_size and window_horizon,
// train/forecast_trainer.h: a recurrent model that forecasts step by step).
template <class Model>
data::WindowConfig model_windows(const data::WindowConfig& wc, const typename Model::Config& c,
                                 bool training) {
  const Model m(c);
  data::WindowConfig w = wc;
  w.input_size = window_input_size(m, training);
  w.h = window_horizon(m, training);
  return w;
}

// Window starts for the job's windows (their input's first step), moved to windows of `wc`
// that forecast from the same step (a longer input starts earlier).
inline std::vector<Index> model_starts(std::span<const Index> starts, const data::WindowConfig& job,
                                       const data::WindowConfig& wc) {
  std::vector<Index> r(starts.begin(), starts.end());
  for (Index& s : r) s -= wc.input_size - job.input_size;
  return r;
}

// The training target of a batch and the statistics a DistributionLoss maps its parameters
// with: the raw y and the window scaler's loc and scale for it, the scaled y otherwise.
struct LossTarget {
  ConstMat<float> target, mask, loc, scale;
};
inline LossTarget loss_target(const data::WindowBatch& b, bool raw, Index n) {
  const Index rows = b.B * b.h;
  if (!raw)
    return {ConstMat<float>(b.outsample_y.data, rows, n),
            ConstMat<float>(b.outsample_mask.data, rows, n)};
  return {ConstMat<float>(b.outsample_y_raw.data, rows, n),
          ConstMat<float>(b.outsample_mask.data, rows, n), ConstMat<float>(b.y_shift.data, b.B, n),
          ConstMat<float>(b.y_scale.data, b.B, n)};
}

// Windows per forward/backward chunk: the model's own choice where it states one
// (Model::kChunkWindows, 0 = the whole batch: the MLPs and DLinear, whose weights outweigh
// their activations), else the trainer's default.
template <class Model>
constexpr Index chunk_windows_of() {
  if constexpr (requires { Model::kChunkWindows; })
    return Model::kChunkWindows;
  else
    return typename ForecastTrainer<Model, float>::Config{}.chunk_windows;
}

// The training steps of a fit, whatever its batcher and step: sample a batch, take a step on
// it, stop on a non-finite loss, step the learning rate (neuralforecast's StepLR), report
// progress, and every val_check_steps steps validate, stopping early after
// early_stop_patience_steps checks without improvement (Lightning's EarlyStopping; the last
// weights stay, no checkpoint restore) or when the job's keep_training says so (a search's
// pruner). `next()` samples a step's batch; `step(batch)` trains on
// it and returns the loss before the update; `diverged()` says whether that step diverged;
// `validation_loss()` scores the validation windows. `setup` is the fit's setup zone, closed here
// as the steps begin.
template <class Trainer, class Next, class Step, class Diverged, class Validate>
void train_steps(const ForecastJob& job, const FitZones& fz, profile::ZoneChain& setup,
                 Trainer& trainer, FitResult& r, Next&& next, Step&& step, Diverged&& diverged,
                 Validate&& validation_loss) {
  optim::StepLR sched = optim::StepLR::neuralforecast(job.train.learning_rate, job.train.max_steps,
                                                      job.train.num_lr_decays);
  trainer.optimizer().set_lr(sched.lr());
  const bool validate = job.windows.val_size > 0;
  r.train_losses.reserve(size_t(job.train.max_steps));
  if (validate)
    r.val_losses.reserve(
        size_t(job.train.max_steps / std::max<Index>(job.train.val_check_steps, 1) + 1));
  const Index interval =
      std::max<Index>(std::min(job.train.val_check_steps, job.train.max_steps), 1);
  const Index patience = job.train.early_stop_patience_steps;
  double best = std::numeric_limits<double>::infinity();
  Index wait = 0;
  setup.close();
  if (fz.steps) fz.rec->step();  // profiler: setup is a step of its own
  profile::ZoneChain step_zone(fz.rec, 0);
  if (job.train.progress != nullptr)
    job.train.progress->total.store(job.train.max_steps, std::memory_order_relaxed);
  for (Index s = 1; s <= job.train.max_steps; ++s) {
    if (job.train.stop != nullptr && job.train.stop->load(std::memory_order_relaxed))
      throw Error(fmt::format("training interrupted at step {}", s));
    if (fz.steps && s > 1) fz.rec->step();
    step_zone.next(fz.sample);
    const data::WindowBatch& b = next();
    step_zone.close();
    const double loss = step(b);
    if (!std::isfinite(loss) || diverged()) [[unlikely]] {
      const Arena* arena = &trainer.arena();
      throw_non_finite_loss(s, {&arena, 1});
    }
    trainer.optimizer().set_lr(sched.step());
    r.train_losses.push_back(loss);
    r.steps = s;
    if (job.train.progress != nullptr) job.train.progress->set(s, loss);
    if (validate && s % interval == 0) {
      step_zone.next(fz.validation);
      const double v = validation_loss();
      step_zone.close();
      r.val_losses.push_back(v);
      if (job.train.keep_training != nullptr &&
          !(*job.train.keep_training)(Index(r.val_losses.size()), v)) {
        r.pruned = true;
        break;
      }
      if (patience > 0) {
        if (!std::isfinite(v)) break;  // Lightning stops on a non-finite monitor
        if (v < best) {
          best = v;
          wait = 0;
        } else if (++wait >= patience) {
          break;
        }
      }
    }
  }
  if (fz.steps) fz.rec->step();
}

// What every fit reports once its forecasts are in: the arena's size, the weights when the job
// keeps them, the fit's time since t0.
template <class Trainer>
void finish_fit(const ForecastJob& job, Trainer& trainer, std::chrono::steady_clock::time_point t0,
                FitResult& r) {
  r.arena_bytes = trainer.arena().bytes();
  if (job.keep_weights) r.weights = encode_checkpoint(trainer.arena());
  r.fit_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One model and its trainer, set up for a job on a panel.
template <class Model>
struct Fit {
  using Trainer = ForecastTrainer<Model, float>;
  Model model;
  Trainer trainer;

  Fit(const data::Panel& panel, const ForecastJob& job, Index max_batch)
      : model(model_config<Model>(panel, job, panel.n_series())),
        trainer(model,
                typename Trainer::Config{.max_batch = max_batch,
                                         .seed = job.train.seed,
                                         .init_generator = job.train.init_generator,
                                         .adam = {.lr = job.train.learning_rate},
                                         .loss = job.train.loss,
                                         .gradient_clip_val = job.train.gradient_clip_val,
                                         .chunk_windows = chunk_windows_of<Model>(),
                                         .categorical = exog_embeddings_config(panel, job)}) {}
};

// The fit's loop, for any trainer (see fit_forecast in train/forecast_job.h).
template <class Model>
FitResult fit_windowed(const data::Panel& panel, const ForecastJob& job) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const FitZones fz(job);
  profile::ZoneChain whole(fz.steps ? nullptr : fz.rec, 0);  // profiler: a fleet worker's fit
  whole.next(fz.fit);
  profile::ZoneChain zone(fz.rec, 0);
  zone.next(fz.setup);
  check_forecast_job(job, true);
  const auto cfg = model_config<Model>(panel, job, panel.n_series());
  const data::WindowConfig wc = model_windows<Model>(job.windows, cfg, false);
  const Index h = wc.h, n = panel.n_series();
  // throws when too short
  data::TrainBatcher batcher(panel, model_windows<Model>(job.windows, cfg, true), job.train.seed);
  const Index max_batch =
      std::max<Index>(wc.windows_batch_size > 0 ? wc.windows_batch_size : batcher.n_valid(), 1);
  Fit<Model> fit(panel, job, max_batch);
  auto& trainer = fit.trainer;
  // Not strict: a torch state_dict may hold buffers shoal does not keep (num_batches_tracked).
  if (!job.init_weights.empty())
    load_checkpoint_bytes(trainer.arena(), job.init_weights, "init weights", /*strict=*/false);
  if (fz.rec != nullptr) trainer.set_profiler(fz.rec, job.profile_model);

  // Validation (raw space, neuralforecast's valid_loss, by default the training loss) and
  // predict share one assembler, sized here.
  const bool validate = wc.val_size > 0;
  const std::vector<Index> val_starts =
      validate ? data::val_window_starts(panel, wc) : std::vector<Index>{};
  const Index vend = validate ? data::val_end(panel, wc) : 0;
  data::WindowAssembler eval(panel, wc, max_batch);
  ValidationScorer scorer(job.train, wc.scaler, max_batch, h, n, wc.input_size);
  const bool raw_target = trainer.loss().scores_raw_target();
  FitResult r;
  auto validation_loss = [&] {
    double sum = 0;
    Index count = 0;
    for (size_t i = 0; i < val_starts.size(); i += size_t(max_batch)) {
      const size_t k = std::min(val_starts.size() - i, size_t(max_batch));
      const data::WindowBatch& b = eval.assemble({val_starts.data() + i, k}, vend);
      const double l = scorer.score(trainer.predict(inputs_of(b)), b);
      sum += l * double(b.B);
      count += b.B;
    }
    return sum / double(std::max<Index>(count, 1));
  };
  train_steps(
      job, fz, zone, trainer, r, [&]() -> const data::WindowBatch& { return batcher.next(); },
      [&](const data::WindowBatch& b) {
        const LossTarget lt = loss_target(b, raw_target, n);
        return trainer.train_step(inputs_of(b), lt.target, lt.mask, lt.loc, lt.scale);
      },
      [&] { return trainer.last_step_diverged(); }, validation_loss);

  zone.next(fz.predict);
  const Index start = data::predict_window_start(panel, wc);
  const data::WindowBatch& b = eval.assemble({&start, 1}, panel.length(), /*future=*/true);
  ForecastValues values(job.train.loss, wc.scaler, job.train.seed, h, n);
  const Index c = values.values();
  std::vector<float> yhat(size_t(h * n * c));
  values.map(trainer.predict(inputs_of(b)), b, 0, yhat.data());
  r.forecasts.resize(size_t(n * h * c));
  for (Index s = 0; s < n; ++s)
    for (Index t = 0; t < h; ++t)
      for (Index k = 0; k < c; ++k)
        r.forecasts[size_t((s * h + t) * c + k)] = double(yhat[size_t((t * n + s) * c + k)]);
  zone.close();
  finish_fit(job, trainer, t0, r);
  return r;
}

template <class Model>
size_t plan_windowed(const data::Panel& panel, const ForecastJob& job) {
  check_forecast_job(job, true);
  const data::WindowConfig twc =
      model_windows<Model>(job.windows, model_config<Model>(panel, job, panel.n_series()), true);
  const Index max_batch = twc.windows_batch_size > 0
                              ? twc.windows_batch_size
                              : data::TrainBatcher(panel, twc, job.train.seed).n_valid();
  Fit<Model> fit(panel, job, std::max<Index>(max_batch, 1));
  return fit.trainer.arena().bytes();
}

template <class Model>
std::vector<double> predict_windowed(const data::Panel& panel, const ForecastJob& job,
                                     std::string_view weights, std::span<const Index> starts,
                                     Index end, bool future) {
  check_forecast_job(job, false);
  const data::WindowConfig wc =
      model_windows<Model>(job.windows, model_config<Model>(panel, job, panel.n_series()), false);
  const Index h = wc.h, n = panel.n_series(), w = Index(starts.size());
  const std::vector<Index> moved = model_starts(starts, job.windows, wc);
  starts = moved;
  const Index max_batch = std::clamp<Index>(w, 1, 256);
  Fit<Model> fit(panel, job, max_batch);
  load_checkpoint_bytes(fit.trainer.arena(), weights, "weights");
  data::WindowAssembler eval(panel, wc, max_batch);
  ForecastValues values(job.train.loss, wc.scaler, job.train.seed, max_batch * h, n);
  const Index c = values.values();
  std::vector<double> out(size_t(n * w * h * c));
  std::vector<float> yhat(size_t(max_batch * h * n * c));
  for (Index i = 0; i < w; i += max_batch) {
    const Index k = std::min(w - i, max_batch);
    const data::WindowBatch& b = eval.assemble(starts.subspan(size_t(i), size_t(k)), end, future);
    values.map(fit.trainer.predict(inputs_of(b)), b, uint64_t(i), yhat.data());
    for (Index j = 0; j < k; ++j)
      for (Index s = 0; s < n; ++s)
        for (Index t = 0; t < h; ++t)
          for (Index v = 0; v < c; ++v)
            out[size_t(((s * w + i + j) * h + t) * c + v)] =
                double(yhat[size_t(((j * h + t) * n + s) * c + v)]);
  }
  return out;
}

}  // namespace shoal::train::detail
