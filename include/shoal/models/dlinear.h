// DLinear (neuralforecast.models.DLinear; Zeng et al., AAAI 2023): the input window split by a
// centred moving average (window moving_avg_window, replicate padding: kernels/moving_avg.h)
// into trend and remainder, each mapped to the horizon by its own linear layer:
//   trend = MovingAvg_k(y),  season = y − trend
//   ŷ = Linear_trend(trend) + Linear_season(season)          (L → H·M each)
// read as [B, H, M] (neuralforecast's reshape(batch_size, h, outputsize_multiplier)).
// A univariate model: one series per panel (N = 1), no exogenous inputs. Its parameters are
// neuralforecast's state_dict keys "linear_trend.{weight,bias}", "linear_season.{weight,bias}"
// in that module order; PyTorch's default init. The input is data: backward forms the
// parameters' gradients only. Legend: B windows, L input_size, H horizon, k moving_avg_window,
// M outputs per forecast value (models/forecast.h).
#pragma once

#include "shoal/layers/linear.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct DLinearConfig : ForecastConfig<DLinearConfig> {
  static constexpr ForecastKind kKind{
      .name = "dlinear", .class_name = "DLinear", .defaults = kLinearDefaults};
  Index moving_avg_window = 25;

  void visit(OptionVisitor& v) {
    v("moving_avg_window", moving_avg_window,
      "Window of the moving average that splits trend from season (odd)");
  }
  void validate_options() const;
};

// A batch runs whole (the base's kChunkWindows): chunks of 8 windows re-read both [H, L] weights
// per chunk and give 8-row GEMMs. `shoal forecast --model dlinear`, 1,024 windows, 300 steps, s
// per fit (whole | chunks of 8): L 24 H 6 0.155 | 0.163, L 96 H 24 0.43 | 0.56, L 336 H 96
// 2.03 | 4.37.
template <class T>
class DLinear : public ForecastModel<DLinearConfig>, public NamedLayers<DLinear<T>> {
 public:
  explicit DLinear(Config cfg);

  // Zones "decomp", "linear_trend", "linear_season"; rows = windows.
  SHOAL_WINDOW_MODEL_MEMBERS;

  template <class F>
  void for_each_layer(F&& f) {
    f("linear_trend.", trend_);
    f("linear_season.", season_);
  }

 private:
  layers::Linear<T> trend_, season_;
  Buffer<T> xt_, xs_;   // [B, L] trend and season parts of the windows
  Buffer<T> yt_, out_;  // [B, H·M] the trend map's output; the forecast
  profile::LayerZones decomp_zones_, trend_zones_, season_zones_;
};

}  // namespace shoal::models
