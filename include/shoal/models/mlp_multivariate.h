// neuralforecast's MLPMultivariate (neuralforecast.models.MLPMultivariate): one MLP over the
// flattened windows of all N series of a panel,
//   x = [y (L·N), hist (X·L·N), futr (F·(L+H)·N), stat (N·S)]   per window, in the layouts of
//       models/forecast.h flattened as they are (neuralforecast's reshape(batch_size, −1) of
//       [B, L, N], [B, X, L, N], [B, F, L+H, N] and the static [N, S] repeated per window)
//   ŷ = MlpStack(x)  D → K … K → H·N·M, read as [B, H, N·M] (neuralforecast's
//       reshape(batch_size, h, −1))
// with MlpStack of models/mlp_forecast.h (num_layers ReLU layers of hidden_size units).
// Parameters: "mlp.<i>.weight/bias", "out.weight/bias"; PyTorch's default init. With
// Config::exog_grads backward also forms the exogenous inputs' gradients (exog_grads()), the
// statics' summed over the windows that repeat them.
// Legend: B windows, L input_size, H horizon, N series, X/F/S exogenous counts,
// D = N·(L + X·L + F·(L+H) + S), K hidden_size, M outputs per forecast value
// (models/forecast.h).
#pragma once

#include "shoal/models/mlp_forecast.h"

namespace shoal::models {

template <class T>
class MlpMultivariate {
 public:
  struct Config {
    Index h = 0;
    Index input_size = 0;
    Index n_series = 0;
    Index hist_exog_size = 0;  // X
    Index futr_exog_size = 0;  // F
    Index stat_exog_size = 0;  // S
    Index num_layers = 2;
    Index hidden_size = 1024;
    Index outputs = 1;        // M, from the loss (set_shape), not an option
    bool exog_grads = false;  // from the shape (set_shape), not an option

    // Its shared-option defaults (max_steps 1000, learning_rate 1e-3, windows_batch_size 32)
    // are every forecaster's.
    void visit(OptionVisitor& v) { visit_mlp_options(*this, v); }
    void validate() const {
      validate_mlp_options(*this);
      SHOAL_CHECK(outputs >= 1, "mlp_multivariate needs outputs ≥ 1, got {}", outputs);
    }
    void set_shape(const WindowShape& s) {
      h = s.h;
      input_size = s.input_size;
      n_series = s.n_series;
      hist_exog_size = s.hist_exog;
      futr_exog_size = s.futr_exog;
      stat_exog_size = s.stat_exog;
      outputs = s.outputs;
      exog_grads = s.exog_grads;
    }
    Index input_width() const {
      return n_series * (input_size + hist_exog_size * input_size +
                         futr_exog_size * (input_size + h) + stat_exog_size);
    }
  };

  static constexpr bool kWindowsIndependent = true;
  // A batch runs whole (see MlpStack).
  static constexpr Index kChunkWindows = 0;

  explicit MlpMultivariate(Config cfg);
  MlpMultivariate(const MlpMultivariate&) = delete;
  MlpMultivariate& operator=(const MlpMultivariate&) = delete;

  const Config& config() const { return cfg_; }
  Index horizon() const { return cfg_.h; }
  Index n_series() const { return cfg_.n_series; }

  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng) { stack_.init(rng); }
  // The forecasts [B·H, N·M] (a view of the model's output buffer).
  MatView<T> forward(const Ctx& ctx, const ForecastInputs<T>& in);
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout);
  // ∂L/∂exog of the last backward (models/forecast.h); planned with Config::exog_grads only.
  ExogGrads<T> exog_grads() const { return {dhist_.view.data, dfutr_.view.data, dstat_.view.data}; }
  // Zones "inputs" (the packing), "mlp.<i>", "out"; rows = windows.
  void register_zones(profile::Recorder& rec, int model = 0);

  template <class F>
  void for_each_param(F&& f) {
    stack_.for_each_param(f);
  }

 private:
  Config cfg_;
  Index max_batch_ = 0;
  MlpStack<T> stack_;
  Buffer<T> x_;                      // [B, D] packed inputs
  Buffer<T> dx_;                     // [B, D] their gradient (exog_grads)
  Buffer<T> dhist_, dfutr_, dstat_;  // [B, X, L, N], [B, F, L + H, N], [N, S] (exog_grads)
  profile::LayerZones pack_zones_;
};

}  // namespace shoal::models
