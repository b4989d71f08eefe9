// neuralforecast's MLPMultivariate (neuralforecast.models.MLPMultivariate): one MLP over the
// flattened windows of all N series of a panel,
//   x = [y (L·N), hist (X·L·N), futr (F·(L+H)·N), stat (N·S)]   per window, in the layouts of
//       models/forecast.h flattened as they are (neuralforecast's reshape(batch_size, −1) of
//       [B, L, N], [B, X, L, N], [B, F, L+H, N] and the static [N, S] repeated per window)
//   ŷ = MlpStack(x)  D → K … K → H·N·M, read as [B, H, N·M] (neuralforecast's
//       reshape(batch_size, h, −1))
// with the MLP model of models/mlp_forecast.h (num_layers ReLU layers of hidden_size units);
// what is its own is the packing. Parameters: "mlp.<i>.weight/bias", "out.weight/bias";
// PyTorch's default init. With Config::exog_grads backward also forms the exogenous inputs'
// gradients (exog_grads()), the statics' summed over the windows that repeat them.
// Legend: B windows, L input_size, H horizon, N series, X/F/S exogenous counts,
// D = N·(L + X·L + F·(L+H) + S), K hidden_size, M outputs per forecast value
// (models/forecast.h).
#pragma once

#include "shoal/models/mlp_forecast.h"

namespace shoal::models {

struct MlpMultivariateConfig : ForecastConfig<MlpMultivariateConfig> {
  static constexpr ForecastKind kKind{.name = "mlp_multivariate",
                                      .class_name = "MLPMultivariate",
                                      .multivariate = true,
                                      .hist_exog = true,
                                      .futr_exog = true,
                                      .stat_exog = true};
  Index num_layers = 2;
  Index hidden_size = 1024;

  // Its shared-option defaults (max_steps 1000, learning_rate 1e-3, windows_batch_size 32)
  // are every forecaster's.
  void visit(OptionVisitor& v) { visit_mlp_options(*this, v); }
  void validate_options() const { validate_mlp_options(*this); }
  Index input_width() const {  // D
    return n_series *
           (input_size + hist_exog * input_size + futr_exog * (input_size + h) + stat_exog);
  }
};

template <class T>
void pack_mlp_inputs(const MlpMultivariateConfig& c, const ForecastInputs<T>& in, MatView<T> x);
template <class T>
void unpack_mlp_grads(const MlpMultivariateConfig& c, const ForecastInputs<T>& in, ConstMat<T> dx,
                      T* dhist, T* dfutr, T* dstat);

template <class T>
using MlpMultivariate = MlpModel<T, MlpMultivariateConfig>;

}  // namespace shoal::models
