// The forecasting models shoal knows: one entry each (train/forecast_registry.h).
#include "shoal/train/forecast_registry.h"

#include <fmt/format.h>

#include "global_fit.h"
#include "shoal/models/dilated_rnn.h"
#include "shoal/models/dlinear.h"
#include "shoal/models/gru.h"
#include "shoal/models/lstm.h"
#include "shoal/models/mlp_forecast.h"
#include "shoal/models/mlp_multivariate.h"
#include "shoal/models/nbeats.h"
#include "shoal/models/nbeatsx.h"
#include "shoal/models/nhits.h"
#include "shoal/models/nlinear.h"
#include "shoal/models/rnn.h"
#include "shoal/models/tcn.h"
#include "shoal/models/tide.h"
#include "shoal/models/tsmixer.h"
#include "shoal/models/tsmixerx.h"
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

// neuralforecast's shared defaults for the stacked MLP models (NHITS, NBEATS, NBEATSx): 1,024
// windows per step, every window of a series at inference, three learning-rate decays.
void stacked_mlp_defaults(ForecastJob& j) {
  j.train.num_lr_decays = 3;
  j.windows.windows_batch_size = 1024;
  j.windows.inference_windows_batch_size = -1;
}

// neuralforecast's shared defaults for the recurrent models (RNN, GRU, LSTM) and TCN:
// input_size -1 (3 × h), 128 training windows, 1,024 per inference pass, the robust scaler.
void recurrent_defaults(ForecastJob& j) {
  j.windows.input_size = -1;
  j.windows.windows_batch_size = 128;
  j.windows.inference_windows_batch_size = 1024;
  j.windows.scaler = data::ScalerType::kRobust;
}

const std::vector<ForecastModel>& registry() {
  static const std::vector<ForecastModel> models = {
      detail::windowed_model<models::TSMixerx<float>>("tsmixerx", "TSMixerx"),
      detail::windowed_model<models::TSMixer<float>>("tsmixer", "TSMixer"),
      detail::windowed_model<models::NLinear<float>>("nlinear", "NLinear",
                                                     [](ForecastJob& j) {
                                                       j.train.max_steps = 5000;
                                                       j.train.learning_rate = 1e-4;
                                                       j.windows.windows_batch_size = 1024;
                                                       j.windows.inference_windows_batch_size =
                                                           1024;
                                                     }),
      detail::windowed_model<models::MlpForecast<float>>("mlp", "MLP",
                                                         [](ForecastJob& j) {
                                                           j.windows.windows_batch_size = 1024;
                                                           j.windows.inference_windows_batch_size =
                                                               -1;
                                                         }),
      detail::windowed_model<models::DLinear<float>>("dlinear", "DLinear",
                                                     [](ForecastJob& j) {
                                                       j.train.max_steps = 5000;
                                                       j.train.learning_rate = 1e-4;
                                                       j.windows.windows_batch_size = 1024;
                                                       j.windows.inference_windows_batch_size =
                                                           1024;
                                                     }),
      detail::windowed_model<models::MlpMultivariate<float>>("mlp_multivariate", "MLPMultivariate"),
      detail::windowed_model<models::NHITS<float>>("nhits", "NHITS", &stacked_mlp_defaults),
      detail::windowed_model<models::NBEATS<float>>("nbeats", "NBEATS", &stacked_mlp_defaults),
      detail::windowed_model<models::NBEATSx<float>>("nbeatsx", "NBEATSx", &stacked_mlp_defaults),
      detail::windowed_model<models::TiDE<float>>("tide", "TiDE",
                                                  [](ForecastJob& j) {
                                                    j.windows.windows_batch_size = 1024;
                                                    j.windows.inference_windows_batch_size = 1024;
                                                  }),
      detail::windowed_model<models::RNN<float>>("rnn", "RNN", &recurrent_defaults),
      detail::windowed_model<models::GRU<float>>("gru", "GRU", &recurrent_defaults),
      detail::windowed_model<models::LSTM<float>>("lstm", "LSTM", &recurrent_defaults),
      detail::windowed_model<models::TCN<float>>("tcn", "TCN", &recurrent_defaults),
      detail::windowed_model<models::DilatedRNN<float>>("dilated_rnn", "DilatedRNN",
                                                        [](ForecastJob& j) {
                                                          recurrent_defaults(j);
                                                          j.train.num_lr_decays = 3;
                                                        }),
      baseline("seasonal_naive", "SeasonalNaive",
               [](const data::Panel& p, const ForecastJob& j) {
                 return repeat_last_season(p, j, true);
               }),
      baseline("naive", "Naive",
               [](const data::Panel& p, const ForecastJob& j) {
                 return repeat_last_season(p, j, false);
               }),
  };
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
