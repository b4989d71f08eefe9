// The forecasting models shoal knows: one entry each (train/forecast_registry.h).
#include "shoal/train/forecast_registry.h"

#include <fmt/format.h>

#include "global_fit.h"
#include "shoal/models/forecast_models.h"
#include "shoal/train/checks.h"
#include "shoal/train/metrics.h"

namespace shoal::train {
namespace {

// The last season (`seasonality`, or the data's season length when 0) repeated; m = 1 is the
// last value.
FitResult repeat_last_season(const data::Panel& panel, const ForecastJob& job, bool seasonal) {
  check_forecast_job(job, false);
  const data::SeriesSet& set = panel.set();
  const Index h = job.windows.h;
  FitResult r;
  r.forecasts.resize(size_t(panel.n_series() * h));
  for (Index n = 0; n < panel.n_series(); ++n) {
    const Index s = panel.series()[size_t(n)];
    const Index m = !seasonal             ? 1
                    : job.seasonality > 0 ? job.seasonality
                                          : set.freq[size_t(s)].season_length();
    seasonal_naive(set.y_of(s), m, std::span<double>(r.forecasts.data() + n * h, size_t(h)));
  }
  return r;
}

size_t no_arena(const data::Panel&, const ForecastJob&) {
  return 0;
}

ForecastModel baseline(std::string_view name, std::string_view class_name,
                       FitResult (*fit)(const data::Panel&, const ForecastJob&)) {
  return {.name = name,
          .class_name = class_name,
          .neural = false,
          .default_options = [] { return std::any(); },
          .visit_options = [](std::any&, OptionVisitor&) {},
          .validate = [](const std::any&) {},
          .fit = fit,
          .planned_bytes = &no_arena,
          .predict = nullptr};
}

// Model's defaults for the shared options (models/forecast_model.h, JobDefaults) on `j`.
template <class Model>
void apply_defaults(ForecastJob& j) {
  const models::JobDefaults& d = Model::Config::kKind.defaults;
  if (d.max_steps) j.train.max_steps = *d.max_steps;
  if (d.learning_rate) j.train.learning_rate = *d.learning_rate;
  if (d.num_lr_decays) j.train.num_lr_decays = *d.num_lr_decays;
  if (d.input_size) j.windows.input_size = *d.input_size;
  if (d.windows_batch_size) j.windows.windows_batch_size = *d.windows_batch_size;
  if (d.inference_windows_batch_size)
    j.windows.inference_windows_batch_size = *d.inference_windows_batch_size;
  if (d.robust_scaler) j.windows.scaler = data::ScalerType::kRobust;
}

template <class... Model>
struct Windowed {
  // One entry per model, named by its kind.
  static void add_to(std::vector<ForecastModel>& out) {
    (out.push_back(detail::windowed_model<Model>(
         Model::Config::kKind.name, Model::Config::kKind.class_name, &apply_defaults<Model>)),
     ...);
  }
};

const std::vector<ForecastModel>& registry() {
  static const std::vector<ForecastModel> models = [] {
    std::vector<ForecastModel> out;
    models::ForecastModels<Windowed, float>::add_to(out);
    out.push_back(baseline(
        "seasonal_naive", "SeasonalNaive",
        [](const data::Panel& p, const ForecastJob& j) { return repeat_last_season(p, j, true); }));
    out.push_back(baseline("naive", "Naive", [](const data::Panel& p, const ForecastJob& j) {
      return repeat_last_season(p, j, false);
    }));
    return out;
  }();
  return models;
}

}  // namespace

std::span<const ForecastModel> forecast_models() {
  return registry();
}

const ForecastModel& forecast_model(std::string_view name) {
  for (const ForecastModel& m : registry())
    if (m.name == name) return m;
  throw Error(fmt::format("unknown model '{}'", name),
              ErrorContext{.field = "model",
                           .expected = "one of: " + forecast_model_names(),
                           .actual = name.empty() ? "(missing)" : std::string(name)});
}

ForecastJob default_job(std::string_view name) {
  const ForecastModel& m = forecast_model(name);
  ForecastJob job;
  job.model = std::string(m.name);
  job.options = m.default_options();
  if (m.shared_defaults != nullptr) m.shared_defaults(job);
  return job;
}

std::string forecast_model_names() {
  std::string out;
  for (const ForecastModel& m : registry()) out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

}  // namespace shoal::train
