// NLinear (neuralforecast.models.NLinear; Zeng et al., AAAI 2023): one linear map from the input
// window to the horizon, on the window taken relative to its last value:
//   ŷ = Linear_{L→H·M}(y − y_L) + y_L, read as [H, M]
// A univariate model: one series per panel (N = 1), no exogenous inputs. Its parameters are
// neuralforecast's state_dict keys "linear.weight" [H·M, L] and "linear.bias" [H·M]; PyTorch's
// default init. The input y is data: backward forms the parameters' gradients only.
// Legend: B windows, L input_size, H horizon, M outputs per value (a multi-output loss's).
#pragma once

#include "shoal/layers/linear.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

// No options beyond those every forecaster shares (univariate, no exogenous inputs).
struct NLinearConfig : ForecastConfig<NLinearConfig> {
  static constexpr ForecastKind kKind{
      .name = "nlinear", .class_name = "NLinear", .defaults = kLinearDefaults};
};

template <class T>
class NLinear : public ForecastModel<NLinearConfig>, public NamedLayers<NLinear<T>> {
 public:
  explicit NLinear(Config cfg);

  // Profiler zone "linear" (rows = windows), recorded when ctx.profiler is set.
  SHOAL_WINDOW_MODEL_MEMBERS;
  template <class F>
  void for_each_layer(F&& f) {
    f("linear.", linear_);
  }

 private:
  layers::Linear<T> linear_;
  Buffer<T> x_;    // [B, L] the windows relative to their last value
  Buffer<T> out_;  // [B, H]
  profile::LayerZones zones_;
};

}  // namespace shoal::models
