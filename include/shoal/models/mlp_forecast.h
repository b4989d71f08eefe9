// neuralforecast's MLP (neuralforecast.models.MLP), a univariate forecaster, and the dense stack
// it shares with MLPMultivariate (models/mlp_multivariate.h):
//   x   = [y (L), hist (L·X, time-major), futr ((L+H)·F, time-major), stat (S)]  per window
//   z_0 = ReLU(x · W_0ᵀ + b_0)          mlp.0   D → K
//   z_i = ReLU(z_{i−1} · W_iᵀ + b_i)    mlp.i   K → K,  i = 1 … num_layers − 1
//   ŷ   = z · W_outᵀ + b_out            out     K → H·M, read as [B, H, M]
// (torch.cat of insample_y with the [B, L, X] / [B, L+H, F] exogenous windows reshaped per
// window, as neuralforecast concatenates them.) Parameters are neuralforecast's state_dict keys
// ("mlp.0.weight", …, "out.bias") in its module order, PyTorch's default init, so a
// Generator::kTorchCpu stream with neuralforecast's random_seed draws its initial weights.
// Inputs are data: backward forms the parameters' gradients, and with Config::exog_grads the
// exogenous inputs' (exog_grads(), models/forecast.h) from the first layer's input gradient.
// Legend: B windows, L input_size, H horizon, X/F/S exogenous counts, D = L + X·L + F·(L+H) + S,
// K hidden_size, M outputs per forecast value (models/forecast.h).
#pragma once

#include <string>
#include <vector>

#include "shoal/layers/linear.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

// num_layers ReLU Linears of `hidden` units and a linear output layer, on one packed input row
// per window. Weights dominate its memory traffic (K² per hidden layer against K per window),
// so a model built on it runs a batch whole rather than in chunks: every GEMM then has the
// batch's rows and reads each weight once per step.
template <class T>
class MlpStack {
 public:
  MlpStack(Index in, Index hidden, Index num_layers, Index out);
  MlpStack(const MlpStack&) = delete;
  MlpStack& operator=(const MlpStack&) = delete;

  Index in() const { return layers_.front().cfg.in; }
  Index out() const { return out_.cfg.out; }
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // x [R, in] → the output [R, out] (a view of the stack's buffer).
  MatView<T> forward(const Ctx& ctx, ConstMat<T> x);
  // From dout [R, out] of the last forward on x: parameter gradients (accumulated), and the
  // input's gradient into dx [R, in] when it has data (a model's exogenous inputs' gradients).
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dout, MatView<T> dx = {});
  // Zones "mlp.<i>" and "out" per window (rows = windows); dx0: backward forms the input's
  // gradient.
  void register_zones(profile::Recorder& rec, int model, bool dx0 = false);

  template <class F>
  void for_each_param(F&& f) {
    for (size_t i = 0; i < layers_.size(); ++i)
      layers_[i].for_each_param([&](std::string_view n, Param<T>& p) {
        f("mlp." + std::to_string(i) + "." + std::string(n), p);
      });
    out_.for_each_param([&](std::string_view n, Param<T>& p) { f("out." + std::string(n), p); });
  }

 private:
  std::vector<layers::Linear<T>> layers_;
  layers::Linear<T> out_;
  std::vector<Buffer<T>> act_;              // act_[i]: z_i [R, K]
  Buffer<T> dact_[2];                       // [R, K] ping-pong gradients of z_i
  Buffer<T> y_;                             // [R, out]
  std::vector<profile::LayerZones> zones_;  // layers, then out
};

// The options MLP and MLPMultivariate share, with neuralforecast's names.
template <class Config>
void visit_mlp_options(Config& c, OptionVisitor& v) {
  v("num_layers", c.num_layers, "Hidden ReLU layers of the MLP");
  v("hidden_size", c.hidden_size, "Units of each hidden layer");
}
template <class Config>
void validate_mlp_options(const Config& c) {
  if (c.num_layers < 1) option_out_of_range("num_layers", "an integer ≥ 1", double(c.num_layers));
  if (c.hidden_size < 1)
    option_out_of_range("hidden_size", "an integer ≥ 1", double(c.hidden_size));
}

struct MlpConfig : ForecastConfig<MlpConfig> {
  static constexpr ForecastKind kKind{
      .name = "mlp",
      .class_name = "MLP",
      .hist_exog = true,
      .futr_exog = true,
      .stat_exog = true,
      .defaults = {.windows_batch_size = 1024, .inference_windows_batch_size = -1}};
  Index num_layers = 2;
  Index hidden_size = 1024;

  // Its defaults for the shared options (max_steps 1000, learning_rate 1e-3,
  // windows_batch_size 1024) are in its registry entry.
  void visit(OptionVisitor& v) { visit_mlp_options(*this, v); }
  void validate_options() const { validate_mlp_options(*this); }
  Index input_width() const {  // D
    return input_size + hist_exog * input_size + futr_exog * (input_size + h) + stat_exog;
  }
};

// A window's inputs packed into its row of x [B, D] (the layout of the header comment), and the
// exogenous inputs' gradients read back from dx [B, D] the same way; one pair per Config
// (MLPMultivariate's: models/mlp_multivariate.h).
template <class T>
void pack_mlp_inputs(const MlpConfig& c, const ForecastInputs<T>& in, MatView<T> x);
template <class T>
void unpack_mlp_grads(const MlpConfig& c, const ForecastInputs<T>& in, ConstMat<T> dx, T* dhist,
                      T* dfutr, T* dstat);

// An MLP forecaster: the inputs packed per window, then MlpStack. Config (MlpConfig or
// MlpMultivariateConfig) says how a window is packed (pack_mlp_inputs) and how wide it is.
// A batch runs whole (MlpStack: its weights, not its windows, are the traffic). MLP at its
// defaults (h 12, input_size 48, 1,024 windows), 50 steps: 3.47 s per fit against 10.2 s in
// chunks of 8 windows.
template <class T, class C>
class MlpModel : public ForecastModel<C>, public ExogGradBuffers<T> {
  using Base = ForecastModel<C>;
  using Base::batch_rows;
  using Base::cfg_;

 public:
  using Config = C;

  explicit MlpModel(Config cfg);

  // Zones "inputs" (the packing), "mlp.<i>", "out"; rows = windows.
  SHOAL_WINDOW_MODEL_MEMBERS;
  void init(RngStream& rng) { stack_.init(rng); }

  template <class F>
  void for_each_param(F&& f) {
    stack_.for_each_param(f);
  }

 private:
  MlpStack<T> stack_;
  Buffer<T> x_;   // [B, D] packed inputs
  Buffer<T> dx_;  // [B, D] their gradient (exog_grads)
  profile::LayerZones pack_zones_;
};

template <class T>
using MlpForecast = MlpModel<T, MlpConfig>;

}  // namespace shoal::models
