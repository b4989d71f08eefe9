// The registry of forecasting models: one entry per model, the only place that knows a model
// by name. Every front end (the CLI, jobs files, Python) and every engine path (fit, plan,
// predict, the fleet) looks a model up here; nothing else compares a model's name.
//
// Adding a model is one entry in the registry (src/shoal/train/forecast_registry.cpp). A
// windowed neural model (its file pair in models/) derives from models::ForecastModel with a
// Config that names its kind and holds its options (models/forecast_model.h), and has the
// members the trainer's concept names (train/forecast_trainer.h: WindowModel); its entry is
// then `windowed_model<models::Name<float>>("name", "Name")`, which takes `multivariate` from
// the kind. docs/architecture.md walks through it.
#pragma once

#include <any>
#include <span>
#include <string>
#include <string_view>

#include "shoal/core/options.h"
#include "shoal/train/forecast_job.h"

namespace shoal::train {

struct ForecastModel {
  std::string_view name;        // --model, a jobs line's "model", Python's model name
  std::string_view class_name;  // neuralforecast's class: the forecast column's name
  bool neural = false;          // trains on windows: needs input_size
  // Neural models: true when the model mixes the series of a panel (TSMixer: one model over N
  // series jointly); false for a univariate model (NLinear: one series per window), which
  // trains globally over every series of a panel, as neuralforecast's MULTIVARIATE = False.
  // The model's ForecastKind says which (models/forecast_model.h).
  bool multivariate = false;
  // Takes categorical exogenous features (ExogSpec::categorical): it returns the gradients of
  // its exogenous inputs, through which their embeddings train (train/exog_embeddings.h).
  bool categorical_exog = false;
  // Its defaults for the options every forecaster shares, where they differ from
  // visit_forecast_options' (neuralforecast gives each model its own max_steps, ...). Null: none.
  void (*shared_defaults)(ForecastJob& job) = nullptr;
  // Its options: the defaults, and one visit over them (reading, writing, listing them).
  std::any (*default_options)() = nullptr;
  void (*visit_options)(std::any& options, OptionVisitor& v) = nullptr;
  void (*validate)(const std::any& options) = nullptr;
  FitResult (*fit)(const data::Panel&, const ForecastJob&) = nullptr;
  size_t (*planned_bytes)(const data::Panel&, const ForecastJob&) = nullptr;
  // Null for models without weights (baselines).
  std::vector<double> (*predict)(const data::Panel&, const ForecastJob&, std::string_view weights,
                                 std::span<const Index> starts, Index end, bool future) = nullptr;
};

std::span<const ForecastModel> forecast_models();
// A job for `name` with every default: the shared options', the model's own, and the model's
// defaults for shared options.
ForecastJob default_job(std::string_view name);
// The entry named `name`; throws shoal::Error listing the registered names otherwise.
const ForecastModel& forecast_model(std::string_view name);
// The registered names, comma separated (for messages and help).
std::string forecast_model_names();

}  // namespace shoal::train
