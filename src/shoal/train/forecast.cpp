#include "shoal/train/forecast.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "shoal/models/forecast.h"
#include "shoal/models/tsmixer.h"
#include "shoal/models/tsmixerx.h"
#include "shoal/optim/lr_schedule.h"
#include "shoal/profile/recorder.h"
#include "shoal/train/checkpoint.h"
#include "shoal/train/checks.h"
#include "shoal/train/metrics.h"

namespace shoal::train {
namespace {

struct Registered {
  const char* name;
  FitPredictFn fn;
  bool neural;
};

constexpr Registered kModels[] = {
    {"tsmixerx", &fit_predict_tsmixerx, true},
    {"tsmixer", &fit_predict_tsmixer, true},
    {"seasonal_naive", &fit_predict_seasonal_naive, false},
    {"naive", &fit_predict_naive, false},
};

FitResult baseline(const data::Panel& panel, const ForecastJob& job, Index m) {
  const data::SeriesSet& set = panel.set();
  const Index h = job.windows.h;
  if (h < 1) hyper_parameter_out_of_range("h", "an integer ≥ 1", double(h));
  FitResult r;
  r.forecasts.resize(size_t(panel.n_series() * h));
  for (Index n = 0; n < panel.n_series(); ++n)
    seasonal_naive(set.y_of(panel.series()[size_t(n)]), m,
                   std::span<double>(r.forecasts.data() + n * h, size_t(h)));
  return r;
}

// The model's configuration from the job and the panel (neuralforecast defaults where the job
// leaves a knob < 0).
models::TSMixerx<float>::Config mixer_config(const data::Panel& p, const ForecastJob& job,
                                             models::TSMixerx<float>*) {
  models::TSMixerx<float>::Config c;
  c.h = job.windows.h;
  c.input_size = job.windows.input_size;
  c.n_series = p.n_series();
  c.hist_exog_size = p.n_hist();
  c.futr_exog_size = p.n_futr();
  c.stat_exog_size = p.n_stat();
  if (job.mixer.n_block >= 0) c.n_block = job.mixer.n_block;
  if (job.mixer.ff_dim > 0) c.ff_dim = job.mixer.ff_dim;
  if (job.mixer.dropout >= 0) c.dropout = job.mixer.dropout;
  c.revin = job.mixer.revin;
  return c;
}

models::TSMixer<float>::Config mixer_config(const data::Panel& p, const ForecastJob& job,
                                            models::TSMixer<float>*) {
  SHOAL_CHECK(p.n_hist() == 0 && p.n_futr() == 0 && p.n_stat() == 0,
              "tsmixer takes no exogenous inputs (got {} hist, {} futr, {} static); use tsmixerx",
              p.n_hist(), p.n_futr(), p.n_stat());
  models::TSMixer<float>::Config c;
  c.h = job.windows.h;
  c.input_size = job.windows.input_size;
  c.n_series = p.n_series();
  if (job.mixer.n_block >= 0) c.n_block = job.mixer.n_block;
  if (job.mixer.ff_dim > 0) c.ff_dim = job.mixer.ff_dim;
  if (job.mixer.dropout >= 0) c.dropout = job.mixer.dropout;
  c.revin = job.mixer.revin;
  return c;
}

models::ForecastInputs<float> inputs_of(const data::WindowBatch& b) {
  return {.batch = b.B,
          .insample_y = b.insample_y.data,
          .hist_exog = b.X > 0 ? b.hist_exog.data : nullptr,
          .futr_exog = b.F > 0 ? b.futr_exog.data : nullptr,
          .stat_exog = b.S > 0 ? b.stat_exog.data : nullptr};
}

// One model and its trainer, set up for a job on a panel.
template <class Model>
struct Fit {
  using Trainer = models::ForecastTrainer<Model, float>;
  Model model;
  Trainer trainer;

  Fit(const data::Panel& panel, const ForecastJob& job, Index max_batch)
      : model(mixer_config(panel, job, static_cast<Model*>(nullptr))),
        trainer(model, typename Trainer::Config{.max_batch = max_batch,
                                                .seed = job.train.seed,
                                                .init_generator = job.train.init_generator,
                                                .adam = {.lr = job.train.learning_rate},
                                                .loss = job.train.loss,
                                                .huber_delta = job.train.huber_delta}) {}
};

// Hyper-parameters, each named with its value; `fitting` adds what only training needs.
void check_job(const ForecastJob& job, bool fitting) {
  const data::WindowConfig& w = job.windows;
  if (w.h < 1) hyper_parameter_out_of_range("h", "an integer ≥ 1", double(w.h));
  if (w.input_size < 1)
    hyper_parameter_out_of_range("input_size", "an integer ≥ 1", double(w.input_size));
  if (w.step_size < 1)
    hyper_parameter_out_of_range("step_size", "an integer ≥ 1", double(w.step_size));
  if (w.windows_batch_size < 0)
    hyper_parameter_out_of_range("windows_batch_size", "an integer ≥ 1 (or 0: every window)",
                                 double(w.windows_batch_size));
  if (w.val_size != 0 && w.val_size < w.h)
    hyper_parameter_out_of_range("val_size", fmt::format("0 or ≥ h = {}", w.h), double(w.val_size));
  // dropout < 0 means "the model's default".
  if (job.mixer.dropout >= 1 || std::isnan(job.mixer.dropout))
    hyper_parameter_out_of_range("dropout", "a probability in [0, 1)", job.mixer.dropout);
  if (!fitting) return;
  if (job.train.max_steps < 1)
    hyper_parameter_out_of_range("max_steps", "an integer ≥ 1", double(job.train.max_steps));
  if (!(job.train.learning_rate > 0) || !std::isfinite(job.train.learning_rate))
    hyper_parameter_out_of_range("learning_rate", "a finite number > 0", job.train.learning_rate);
  SHOAL_CHECK(job.train.early_stop_patience_steps <= 0 || w.val_size > 0,
              "early stopping (patience {}) needs validation data: set val_size ≥ h",
              job.train.early_stop_patience_steps);
}

// Profiler zones of a fit outside the trainer (which registers the model's, the loss's and the
// optimizer's): sampling, validation, predict, and the fit as a whole.
struct FitZones {
  profile::Recorder* rec = nullptr;
  bool steps = false;  // this thread marks profiler steps
  profile::ZoneId fit = profile::kStepZone, setup = profile::kStepZone, sample = profile::kStepZone,
                  validation = profile::kStepZone, predict = profile::kStepZone;
  explicit FitZones(const ForecastJob& job) : rec(job.profiler) {
    if (rec == nullptr) return;
    using profile::Category;
    const int m = job.profile_model;
    steps = rec->can_step();
    fit = rec->zone("fit", Category::kOther, {}, m);
    setup = rec->zone("fit.setup", Category::kOther, {}, m);
    sample = rec->zone("data.sample", Category::kData, {}, m);
    validation = rec->zone("eval.validation", Category::kEval, {}, m);
    predict = rec->zone("eval.predict", Category::kEval, {}, m);
  }
};

template <class Model>
FitResult fit_mixer(const data::Panel& panel, const ForecastJob& job) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const FitZones fz(job);
  profile::ZoneChain whole(fz.steps ? nullptr : fz.rec, 0);  // profiler: a fleet worker's fit
  whole.next(fz.fit);
  profile::ZoneChain zone(fz.rec, 0);
  zone.next(fz.setup);
  check_job(job, true);
  const data::WindowConfig& wc = job.windows;
  const Index h = wc.h, n = panel.n_series();
  data::TrainBatcher batcher(panel, wc, job.train.seed);  // throws when too short
  const Index max_batch =
      std::max<Index>(wc.windows_batch_size > 0 ? wc.windows_batch_size : batcher.n_valid(), 1);
  Fit<Model> fit(panel, job, max_batch);
  auto& trainer = fit.trainer;
  // Not strict: a torch state_dict may hold buffers shoal does not keep (num_batches_tracked).
  if (!job.init_weights.empty())
    load_checkpoint_bytes(trainer.arena(), job.init_weights, "init weights", /*strict=*/false);
  if (fz.rec != nullptr) trainer.set_profiler(fz.rec, job.profile_model);
  optim::StepLR sched = optim::StepLR::neuralforecast(job.train.learning_rate, job.train.max_steps,
                                                      job.train.num_lr_decays);
  trainer.optimizer().set_lr(sched.lr());

  // Validation (raw space, neuralforecast's valid_loss = loss) and predict share one assembler
  // and one output buffer, both sized here.
  const bool validate = wc.val_size > 0;
  const std::vector<Index> val_starts =
      validate ? data::val_window_starts(panel, wc) : std::vector<Index>{};
  const Index vend = validate ? data::val_end(panel, wc) : 0;
  data::WindowAssembler eval(panel, wc, max_batch);
  std::vector<float> yhat(size_t(max_batch * h * n));
  layers::PointLoss<float> val_loss({.kind = job.train.loss, .delta = job.train.huber_delta});
  FitResult r;
  r.train_losses.reserve(size_t(job.train.max_steps));
  if (validate)
    r.val_losses.reserve(
        size_t(job.train.max_steps / std::max<Index>(job.train.val_check_steps, 1) + 1));
  auto run_eval = [&](const data::WindowBatch& b) {
    const ConstMat<float> out = trainer.predict(inputs_of(b));
    std::copy_n(out.data, size_t(b.B * h * n), yhat.data());
    eval.inverse_scale(yhat.data());
  };
  auto validation_loss = [&] {
    double sum = 0;
    Index count = 0;
    for (size_t i = 0; i < val_starts.size(); i += size_t(max_batch)) {
      const size_t k = std::min(val_starts.size() - i, size_t(max_batch));
      const data::WindowBatch& b = eval.assemble({val_starts.data() + i, k}, vend);
      run_eval(b);
      const Index rows = b.B * h;
      const double l = val_loss.forward(ConstMat<float>(yhat.data(), rows, n),
                                        ConstMat<float>(b.outsample_y_raw.data, rows, n),
                                        {.mask = ConstMat<float>(b.outsample_mask.data, rows, n)});
      sum += l * double(b.B);
      count += b.B;
    }
    return sum / double(std::max<Index>(count, 1));
  };

  const Index interval =
      std::max<Index>(std::min(job.train.val_check_steps, job.train.max_steps), 1);
  const Index patience = job.train.early_stop_patience_steps;
  double best = std::numeric_limits<double>::infinity();
  Index wait = 0;
  zone.close();
  if (fz.steps) fz.rec->step();  // profiler: setup is a step of its own
  profile::ZoneChain step_zone(fz.rec, 0);
  for (Index step = 1; step <= job.train.max_steps; ++step) {
    if (job.train.stop != nullptr && job.train.stop->load(std::memory_order_relaxed))
      throw Error(fmt::format("training interrupted at step {}", step));
    if (fz.steps && step > 1) fz.rec->step();
    step_zone.next(fz.sample);
    const data::WindowBatch& b = batcher.next();
    step_zone.close();
    const Index rows = b.B * h;
    const double loss =
        trainer.train_step(inputs_of(b), ConstMat<float>(b.outsample_y.data, rows, n),
                           ConstMat<float>(b.outsample_mask.data, rows, n));
    if (!std::isfinite(loss) || trainer.last_step_diverged()) [[unlikely]] {
      const Arena* arena = &trainer.arena();
      throw_non_finite_loss(step, {&arena, 1});
    }
    trainer.optimizer().set_lr(sched.step());
    r.train_losses.push_back(loss);
    r.steps = step;
    if (validate && step % interval == 0) {
      step_zone.next(fz.validation);
      const double v = validation_loss();
      step_zone.close();
      r.val_losses.push_back(v);
      if (patience > 0) {
        if (!std::isfinite(v)) break;  // Lightning stops on a non-finite monitor
        if (v < best) {
          best = v;
          wait = 0;
        } else if (++wait >= patience) {
          break;  // the last weights stay (no checkpoint restore)
        }
      }
    }
  }

  if (fz.steps) fz.rec->step();
  zone.next(fz.predict);
  const Index start = data::predict_window_start(panel, wc);
  const data::WindowBatch& b = eval.assemble({&start, 1}, panel.length(), /*future=*/true);
  run_eval(b);
  r.forecasts.resize(size_t(n * h));
  for (Index s = 0; s < n; ++s)
    for (Index t = 0; t < h; ++t) r.forecasts[size_t(s * h + t)] = double(yhat[size_t(t * n + s)]);
  zone.close();
  r.arena_bytes = trainer.arena().bytes();
  if (job.keep_weights) r.weights = encode_checkpoint(trainer.arena());
  r.fit_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

template <class Model>
size_t plan_bytes(const data::Panel& panel, const ForecastJob& job) {
  check_job(job, true);
  const Index max_batch = job.windows.windows_batch_size > 0
                              ? job.windows.windows_batch_size
                              : data::TrainBatcher(panel, job.windows, job.train.seed).n_valid();
  Fit<Model> fit(panel, job, std::max<Index>(max_batch, 1));
  return fit.trainer.arena().bytes();
}

template <class Model>
std::vector<double> predict_mixer(const data::Panel& panel, const ForecastJob& job,
                                  std::string_view weights, std::span<const Index> starts,
                                  Index end, bool future) {
  check_job(job, false);
  const Index h = job.windows.h, n = panel.n_series(), w = Index(starts.size());
  const Index max_batch = std::clamp<Index>(w, 1, 256);
  Fit<Model> fit(panel, job, max_batch);
  load_checkpoint_bytes(fit.trainer.arena(), weights, "weights");
  data::WindowAssembler eval(panel, job.windows, max_batch);
  std::vector<double> out(size_t(n * w * h));
  for (Index i = 0; i < w; i += max_batch) {
    const Index k = std::min(w - i, max_batch);
    const data::WindowBatch& b = eval.assemble(starts.subspan(size_t(i), size_t(k)), end, future);
    const ConstMat<float> y = fit.trainer.predict(inputs_of(b));
    std::vector<float> yhat(y.data, y.data + k * h * n);
    eval.inverse_scale(yhat.data());
    for (Index j = 0; j < k; ++j)
      for (Index s = 0; s < n; ++s)
        for (Index t = 0; t < h; ++t)
          out[size_t((s * w + i + j) * h + t)] = double(yhat[size_t((j * h + t) * n + s)]);
  }
  return out;
}

}  // namespace

std::vector<double> predict_windows(const data::Panel& panel, const ForecastJob& job,
                                    std::string_view weights, std::span<const Index> starts,
                                    Index end, bool future) {
  if (job.model == "tsmixerx")
    return predict_mixer<models::TSMixerx<float>>(panel, job, weights, starts, end, future);
  if (job.model == "tsmixer")
    return predict_mixer<models::TSMixer<float>>(panel, job, weights, starts, end, future);
  throw Error(
      fmt::format("predict_windows needs a neural model (tsmixerx, tsmixer), got '{}'", job.model));
}

FitResult fit_predict_tsmixerx(const data::Panel& panel, const ForecastJob& job) {
  return fit_mixer<models::TSMixerx<float>>(panel, job);
}

FitResult fit_predict_tsmixer(const data::Panel& panel, const ForecastJob& job) {
  return fit_mixer<models::TSMixer<float>>(panel, job);
}

size_t planned_arena_bytes(const data::Panel& panel, const ForecastJob& job) {
  if (job.model == "tsmixerx") return plan_bytes<models::TSMixerx<float>>(panel, job);
  if (job.model == "tsmixer") return plan_bytes<models::TSMixer<float>>(panel, job);
  return 0;
}

layers::PointLossKind parse_loss(std::string_view name) {
  if (name == "mae") return layers::PointLossKind::kMae;
  if (name == "mse") return layers::PointLossKind::kMse;
  if (name == "huber") return layers::PointLossKind::kHuber;
  throw Error(
      fmt::format("unknown loss '{}'", name),
      ErrorContext{.field = "loss", .expected = "mae, mse or huber", .actual = std::string(name)});
}

FitResult fit_predict_seasonal_naive(const data::Panel& panel, const ForecastJob& job) {
  return baseline(panel, job, job.seasonality);
}

FitResult fit_predict_naive(const data::Panel& panel, const ForecastJob& job) {
  return baseline(panel, job, 1);
}

FitPredictFn find_model(std::string_view name) {
  for (const auto& m : kModels)
    if (name == m.name) return m.fn;
  return nullptr;
}

std::string model_names() {
  std::string out;
  for (const auto& m : kModels) out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

bool is_neural(std::string_view name) {
  for (const auto& m : kModels)
    if (name == m.name) return m.neural;
  return name == "tsmixer" || name == "tsmixerx";
}

void check_forecast_job(const ForecastJob& job, bool fitting) {
  check_job(job, fitting);
}

}  // namespace shoal::train
