#include "shoal/train/forecast.h"

#include "shoal/train/metrics.h"

namespace shoal::train {
namespace {

struct Registered {
  const char* name;
  FitPredictFn fn;
  bool neural;
};

// TSMixer(x) register here once their fit loops exist (see the header).
constexpr Registered kModels[] = {
    {"seasonal_naive", &fit_predict_seasonal_naive, false},
    {"naive", &fit_predict_naive, false},
};

FitResult baseline(const data::Panel& panel, const ForecastJob& job, Index m) {
  const data::SeriesSet& set = panel.set();
  const Index h = job.windows.h;
  SHOAL_CHECK(h >= 1, "h must be ≥ 1, got {}", h);
  FitResult r;
  r.forecasts.resize(size_t(panel.n_series() * h));
  for (Index n = 0; n < panel.n_series(); ++n)
    seasonal_naive(set.y_of(panel.series()[size_t(n)]), m,
                   std::span<double>(r.forecasts.data() + n * h, size_t(h)));
  return r;
}

}  // namespace

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

}  // namespace shoal::train
