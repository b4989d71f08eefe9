// Forecasting jobs: which model, which windows, how to train, and the calls that fit, plan and
// predict any registered model (train/forecast_registry.h lists them). One call fits one model
// on one Panel (N series modelled jointly: N = 1 for a model per series, N = all for one
// multivariate model) and returns its forecasts for the h steps after the panel's end.
//
// A job is built from the one key–value form every front end speaks (forecast_job): the
// options every forecaster shares (visit_forecast_options: windows, training, exogenous
// columns) and the model's own (its Config::visit), each with the default written once, in
// the struct that holds it.
#pragma once

#include <any>
#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shoal/core/options.h"
#include "shoal/core/rng.h"
#include "shoal/data/windows.h"
#include "shoal/layers/losses.h"

namespace shoal::profile {
class Recorder;
}

namespace shoal::train {

// A fit's progress, written by the fit's loop at every step and read by another thread (a
// progress bar): relaxed atomics, so writing costs a step nothing measurable.
struct FitProgress {
  std::atomic<int64_t> step{0};
  std::atomic<int64_t> total{0};
  std::atomic<double> loss{0.0};
  void set(int64_t s, double l) {
    step.store(s, std::memory_order_relaxed);
    loss.store(l, std::memory_order_relaxed);
  }
};

// neuralforecast's training loop settings, with its defaults.
struct TrainConfig {
  Index max_steps = 1000;
  double learning_rate = 1e-3;
  Index num_lr_decays = -1;  // -1: no StepLR decay (TSMixer(x) default)
  Index val_check_steps = 100;
  Index early_stop_patience_steps = -1;  // > 0 (with windows.val_size > 0): early stopping
  layers::LossConfig loss{};  // training loss (scaled space), and validation's by default
  // Validation and early-stopping loss (raw space): neuralforecast's valid_loss; none: `loss`.
  std::optional<layers::LossConfig> valid_loss;
  const layers::LossConfig& validation_loss() const { return valid_loss ? *valid_loss : loss; }
  // > 0: gradients clipped to this global norm each step (Lightning's gradient_clip_val,
  // a trainer argument in neuralforecast); 0: off.
  double gradient_clip_val = 0;
  // The embedding width of each categorical exogenous column (ExogSpec::categorical): an
  // integer, or neuralforecast's rule "fastai", "sqrt" or "half"
  // (layers::categorical_embedding_dim).
  std::string cat_emb_dim = "fastai";
  uint64_t seed = 1;
  // Threads of one global fit of a univariate model over many series (data-parallel over each
  // step's windows; a thread count gives bitwise-identical weights). 0: every allowed CPU.
  Index threads = 0;
  // Where the initial weights are drawn from: torch's CPU generator by default, so a seed gives
  // the weights neuralforecast's random_seed gives (and forecasts stay comparable model for
  // model); kPhilox is shoal's own counter-based stream (docs/accuracy.md compares the two).
  Generator init_generator = Generator::kTorchCpu;
  // When set and true (Ctrl-C in a caller), the fit stops at the next step and throws
  // shoal::Error("training interrupted").
  const std::atomic<bool>* stop = nullptr;
  // When set, the fit reports its steps and training loss there (one fit per FitProgress).
  FitProgress* progress = nullptr;
  // When set, called with each validation check's number (1-based) and loss: false stops the
  // fit there, as pruned (a search's successive halving, train/pruner.h).
  const std::function<bool(Index check, double loss)>* keep_training = nullptr;
};

struct ForecastJob {
  std::string model;           // a registered name: "tsmixerx", "tsmixer", "naive", ...
  data::WindowConfig windows;  // input_size, h, scaler, sampling
  data::ExogSpec exog;
  TrainConfig train;
  Index seasonality = 0;  // seasonal_naive and MASE; 0: the data's season length
  // The model's own options: its Config (models/), holding its defaults. Empty: the defaults.
  std::any options;
  bool keep_weights = false;  // FitResult::weights: the trained params and state
  // Safetensors bytes with every parameter under neuralforecast's names (e.g. a torch model's
  // state_dict): training starts from these weights instead of the seed's init (the seed still
  // drives window sampling and dropout). Empty: the seed's init.
  std::string init_weights;
  // Profiler (--profile): a neural fit records its zones (data, layers, loss, optimizer,
  // validation, predict) into `profiler` under trace process `profile_model`. Where the
  // recorder allows it (Recorder::can_step: the thread that started it, outside other zones)
  // every training step is a profiler step; elsewhere (a fleet job) the fit is one "fit" zone.
  // Null: off.
  profile::Recorder* profiler = nullptr;
  int profile_model = 0;
};

struct FitResult {
  // [N, h, C], the panel's series order, data scale; C = layers::forecast_values(loss): 1 for a
  // point loss, more for MQLoss and DistributionLoss (src/shoal/train/forecast_values.h).
  std::vector<double> forecasts;
  double fit_seconds = 0;            // training time (0 for baselines)
  Index steps = 0;                   // optimizer steps taken
  size_t arena_bytes = 0;            // planned arena of the fit (0 for baselines)
  std::vector<double> val_losses;    // one per validation check (raw space), when validating
  std::vector<double> train_losses;  // one per step (scaled space): neuralforecast's
                                     // train_trajectories
  std::string weights;  // safetensors bytes (neuralforecast names), when job.keep_weights
  bool pruned = false;  // stopped by TrainConfig::keep_training
  // A searched fit (train/search.h): its trials and best configuration, SearchResult::summary;
  // null for a plain fit.
  nlohmann::json search;
};

// The options every forecaster shares, in the one key–value form (neuralforecast's names).
void visit_forecast_options(ForecastJob& job, OptionVisitor& v);
// Every option of `job`: the shared ones, then its model's (Config::visit).
void visit_job_options(ForecastJob& job, OptionVisitor& v);

// The job for `model` with `options` (a JSON object of overrides; keys as visit_job_options
// names them) over the defaults. Throws shoal::Error for an unknown model or key and for a
// value out of range.
ForecastJob forecast_job(std::string_view model, const nlohmann::json& options = {});
// Every option of `job`, defaults included, as a JSON object (journal keys, metrics).
nlohmann::json forecast_settings(const ForecastJob& job);
// The options `model` takes, with its defaults (CLI flags, Python's checks, docs).
std::vector<OptionInfo> forecast_options(std::string_view model);

// Whether `job`'s model trains on windows (and so needs input_size and input_size + h rows).
bool is_neural(const ForecastJob& job);
// Whether `job`'s model is a neural model that mixes the series of a panel (TSMixer); a
// univariate one (NLinear) fits a panel of many series globally, one model over all of them.
bool is_multivariate(const ForecastJob& job);

// Throws shoal::Error naming the first option out of range (h, input_size, step_size,
// windows_batch_size, val_size, the model's own; with `fitting`, also max_steps and
// learning_rate).
void check_forecast_job(const ForecastJob& job, bool fitting);

// The loss named "mae", "mse", "rmse", "mape", "smape", "mase", "huber" or "quantile" (throws
// shoal::Error naming `field` otherwise), and the name of a loss.
layers::LossKind parse_loss(std::string_view name, std::string_view field = "loss");
const char* loss_name(layers::LossKind kind);

// Fits `job`'s model on `panel` and forecasts the h steps after it. A univariate model on a
// panel of many series trains one model globally (batch_size series per step, their windows
// pooled and sampled; data-parallel on train.threads threads). Neural models: windows
// sampled per step, Adam + StepLR stepped every step, validation every val_check_steps and early
// stopping when val_size > 0 and patience > 0 (the final weights are the last ones), then one
// predict window, inverse-scaled; no heap allocation per step once set up. Throws shoal::Error
// on a too-short panel or a NaN loss.
FitResult fit_forecast(const data::Panel& panel, const ForecastJob& job);

// The bytes of the arena a fit of `job` on `panel` plans (0 for baselines); builds the model and
// its arena once, trains nothing. Fits of panels with the same N and exog counts plan the same.
size_t planned_arena_bytes(const data::Panel& panel, const ForecastJob& job);

// Forecasts [N, starts.size(), h, C] (data scale; C as FitResult's) of `job`'s model, built for
// `panel` and holding `weights` (safetensors bytes as FitResult::weights; every tensor must
// match), for the windows at `starts` reading data in [0, end) (`future`: futr exog after the
// panel's end from its futr_df rows). Throws shoal::Error for a model without weights or
// mismatched weights.
std::vector<double> predict_windows(const data::Panel& panel, const ForecastJob& job,
                                    std::string_view weights, std::span<const Index> starts,
                                    Index end, bool future);

}  // namespace shoal::train
