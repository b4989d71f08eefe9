// Forecasting jobs: which model, which windows, how to train; and the registry that maps a
// model name to its fit-and-predict function. One call fits one model on one Panel (N series
// modelled jointly: N = 1 for a model per series, N = all for one multivariate model) and
// returns its forecasts for the h steps after the panel's end.
//
// To plug in a model: write `FitResult fit_predict_<name>(const data::Panel&, const ForecastJob&)`
// (build a TrainBatcher from the panel and job.windows, run job.train.max_steps steps, then
// assemble the predict window, run the model, WindowAssembler::inverse_scale) and add it to the
// table in src/shoal/train/forecast.cpp.
#pragma once

#include <atomic>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/data/windows.h"
#include "shoal/layers/losses.h"

namespace shoal::profile {
class Recorder;
}

namespace shoal::train {

// neuralforecast's training loop settings (spec §6), with its defaults.
struct TrainConfig {
  Index max_steps = 1000;
  double learning_rate = 1e-3;
  Index num_lr_decays = -1;  // -1: no StepLR decay (TSMixer(x) default)
  Index val_check_steps = 100;
  Index early_stop_patience_steps = -1;  // > 0 (with windows.val_size > 0): early stopping
  layers::PointLossKind loss = layers::PointLossKind::kMae;  // training and validation loss
  double huber_delta = 1.0;
  uint64_t seed = 1;
  // Where the initial weights are drawn from: torch's CPU generator by default, so a seed gives
  // the weights neuralforecast's random_seed gives (and forecasts stay comparable model for
  // model); kPhilox is shoal's own counter-based stream (docs/accuracy.md compares the two).
  Generator init_generator = Generator::kTorchCpu;
  int threads = 1;
  // When set and true (Ctrl-C in a caller), the fit stops at the next step and throws
  // shoal::Error("training interrupted").
  const std::atomic<bool>* stop = nullptr;
};

// Architecture knobs shared by TSMixer and TSMixerx (spec §4); < 0 means the model's default.
struct MixerOptions {
  Index n_block = 2;
  Index ff_dim = 64;
  double dropout = -1.0;  // TSMixer 0.9, TSMixerx 0.0
  bool revin = true;
};

struct ForecastJob {
  std::string model;           // "tsmixerx", "tsmixer", "seasonal_naive", "naive"
  data::WindowConfig windows;  // input_size, h, scaler, sampling
  data::ExogSpec exog;
  TrainConfig train;
  MixerOptions mixer;
  bool keep_weights = false;  // FitResult::weights: the trained params and state
  // Safetensors bytes with every parameter under neuralforecast's names (e.g. a torch model's
  // state_dict): training starts from these weights instead of the seed's init (the seed still
  // drives window sampling and dropout). Empty: the seed's init.
  std::string init_weights;
  Index seasonality = 1;  // seasonal_naive
  // Profiler (--profile): a neural fit records its zones (data, layers, loss, optimizer,
  // validation, predict) into `profiler` under trace process `profile_model`. Where the
  // recorder allows it (Recorder::can_step: the thread that started it, outside other zones)
  // every training step is a profiler step; elsewhere (a fleet job) the fit is one "fit" zone.
  // Null: off.
  profile::Recorder* profiler = nullptr;
  int profile_model = 0;
};

struct FitResult {
  std::vector<double> forecasts;     // [N, h], the panel's series order, data scale
  double fit_seconds = 0;            // training time (0 for baselines)
  Index steps = 0;                   // optimizer steps taken
  size_t arena_bytes = 0;            // planned arena of the fit (0 for baselines)
  std::vector<double> val_losses;    // one per validation check (raw space), when validating
  std::vector<double> train_losses;  // one per step (scaled space): neuralforecast's
                                     // train_trajectories
  std::string weights;  // safetensors bytes (neuralforecast names), when job.keep_weights
};

using FitPredictFn = FitResult (*)(const data::Panel&, const ForecastJob&);

// The function for a model name, or nullptr when none is registered.
FitPredictFn find_model(std::string_view name);
// Names of the registered models, comma separated (for messages).
std::string model_names();
// Whether a model trains on windows (and so needs input_size and input_size + h rows).
bool is_neural(std::string_view name);

// Throws shoal::Error naming the first hyper-parameter out of range (h, input_size, step_size,
// windows_batch_size, val_size, dropout; with `fitting`, also max_steps and learning_rate).
void check_forecast_job(const ForecastJob& job, bool fitting);

// The loss named "mae", "mse" or "huber" (throws shoal::Error otherwise).
layers::PointLossKind parse_loss(std::string_view name);

// The bytes of the arena a fit of `job` on `panel` plans (0 for baselines); builds the model and
// its arena once, trains nothing. Fits of panels with the same N and exog counts plan the same.
size_t planned_arena_bytes(const data::Panel& panel, const ForecastJob& job);

// TSMixerx / TSMixer (spec §5–6): windows sampled per step, Adam + StepLR stepped every step,
// validation every val_check_steps and early stopping when val_size > 0 and patience > 0 (the
// final weights are the last ones), then one predict window, inverse-scaled. No heap
// allocation per step once set up. Throws shoal::Error on a too-short panel or a NaN loss.
FitResult fit_predict_tsmixerx(const data::Panel& panel, const ForecastJob& job);
FitResult fit_predict_tsmixer(const data::Panel& panel, const ForecastJob& job);

// Forecasts [N, starts.size(), h] (data scale) of the model `job` names, built for `panel` and
// holding `weights` (safetensors bytes as FitResult::weights; every tensor must match), for the
// windows at `starts` reading data in [0, end) (`future`: futr exog after the panel's end from its
// futr_df rows). TSMixer(x) only; throws shoal::Error for other models or mismatched weights.
std::vector<double> predict_windows(const data::Panel& panel, const ForecastJob& job,
                                    std::string_view weights, std::span<const Index> starts,
                                    Index end, bool future);

// Baselines: the last season (job.seasonality) or the last value, repeated.
FitResult fit_predict_seasonal_naive(const data::Panel& panel, const ForecastJob& job);
FitResult fit_predict_naive(const data::Panel& panel, const ForecastJob& job);

}  // namespace shoal::train
