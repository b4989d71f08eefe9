// What neuralforecast's RNN, GRU and LSTM share (models/rnn.h, gru.h, lstm.h name the three):
// a stack of recurrent layers encodes the input window step by step, and an MLP decodes every
// horizon step at once from the hidden states (neuralforecast's recurrent=False, its default):
//   e_t = [y_t | hist_t | stat | futr_t]               t < L        (1 + X + S + F features)
//   s = Recurrent(e) [L, B, Hd]                         (layers/recurrent.h, time-major)
//   u = s's last H steps (H ≤ L), or Linear_{L→H}(s) along time (H > L: upsample_sequence)
//   ŷ_j = MLP([u_j | futr_{L+j}])  [M] per horizon step j       ŷ [B, H, M]
// MLP (neuralforecast's common MLP): decoder_layers Linears, in → decoder_hidden_size → … → M,
// decoder_activation after each but the last (one layer: a single Linear, no activation).
// Names: neuralforecast's state_dict keys: hist_encoder.weight_ih_l0, …, mlp_decoder.layers.<3k>
// .weight/.bias (its nn.Sequential holds Linear, activation, dropout per hidden layer),
// upsample_sequence.weight/.bias; init in that module order (torch's).
//
// recurrent=True (neuralforecast's step-by-step forecasts): no MLP decoder; every step's state
// is projected to the M outputs of the next step's forecast, by the LSTM's own projection
// (torch's proj_size = M: hist_encoder.weight_hr_l<k>, the state R = M wide) or by a Linear
// after the GRU's and RNN's last layer (proj.weight/.bias). The windows are one step longer
// (L' = L + 1 input steps) and the input is shifted: step p reads y_p with the exogenous values
// of p + 1 (hist zero past the window's input), so that its output forecasts y_{p+1}.
//   training (H_t = h_train):  steps p < L' + H_t − 1, y_p the window's own (its first H_t − 1
//       targets after the L' inputs: teacher forcing); ŷ = the last H_t steps' outputs [B, H_t, M]
//   inference (L_e = inference_input_size + 1, default L'):  the L_e inputs give ŷ_1; then each
//       forecast (the mean of its M outputs, as neuralforecast feeds MQLoss back, or a Normal's
//       or StudentT's location: feedback_output) is the next step's y, H times in all,
//       the encoder carrying its state from step to step: ŷ [B, H, M]
// Eval mode (ctx.training false) decodes; validation and predict both do, as neuralforecast.
// A univariate model (N = 1). Exogenous inputs in shoal's layout (models/forecast.h).
// Legend: B windows, L input_size, H horizon, X/F/S hist/futr/stat exogenous sizes, Hd
// encoder_hidden_size, M outputs per forecast value, R the encoder's output width (M for an LSTM
// with recurrent=True, else Hd).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/recurrent.h"
#include "shoal/models/forecast_model.h"
#include "shoal/models/mlp_decoder.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

// The options the three share, neuralforecast's names and defaults (GRU's Config sets its own
// encoder_hidden_size default, 200). A model's Config derives from ForecastConfig<Config> and
// from this, and names its kind and its cell (kCell).
struct RecurrentOptions : MlpDecoderOptions {
  int64_t encoder_n_layers = 2;
  int64_t encoder_hidden_size = 128;
  bool encoder_bias = true;
  double encoder_dropout = 0.0;
  // Step-by-step forecasts (the file comment); h_train and inference_input_size apply only to it.
  bool recurrent = false;
  int64_t h_train = 1;
  int64_t inference_input_size = 0;  // 0: input_size (neuralforecast's None)
  // Not an option: what the decode feeds back, set from the loss by the fit
  // (layers/losses.h, recurrent_feedback_output): -1 the mean of the M outputs, else output k.
  int64_t feedback_output = -1;

  void visit_recurrent(OptionVisitor& v);
  void validate_recurrent() const;
};

template <class T, class C>
class RecurrentForecast : public ForecastModel<C>, public NamedLayers<RecurrentForecast<T, C>> {
  using Base = ForecastModel<C>;

 public:
  using Config = C;
  // Windows per forward/backward chunk: the activations kept for the backward are
  // T·B·(G + 2)·Hd values per layer (21 MB for an LSTM at its defaults, B = 128), so a predict
  // pass of 1,024 windows runs in chunks rather than planning 8 times that; a training step of
  // the default 128 windows runs whole (its per-step GEMMs want the rows).
  static constexpr Index kChunkWindows = 128;
  explicit RecurrentForecast(Config cfg);

  // The windows the trainer gives it: input steps and horizon in training and at inference
  // (recurrent=True: L + 1 and h_train, L_e and H; else L and H both).
  Index window_input_size(bool training) const;
  Index window_horizon(bool training) const;
  // Profiler zones "hist_encoder", "upsample_sequence" (H > L), "mlp_decoder"; "proj" with
  // recurrent=True.
  SHOAL_WINDOW_MODEL_MEMBERS;

  template <class F>
  void for_each_layer(F&& f) {
    f("hist_encoder.", encoder_);
    if (proj_) f("proj.", *proj_);
    if (decoder_) decoder_->for_each_layer(f);
    if (upsample_) f("upsample_sequence.", *upsample_);
  }

 private:
  Index encoder_in() const { return 1 + cfg().hist_exog + cfg().stat_exog + cfg().futr_exog; }
  Index state_width() const;  // R
  // recurrent=True: the encoder's input rows of steps [p0, p1) of windows of li input steps and
  // hz horizon (y from the window, or, past its inputs, its targets: teacher forcing).
  void step_inputs(const ForecastInputs<T>& in, Index li, Index hz, Index p0, Index p1);
  // recurrent=True: the outputs [rows, M] of the states s [rows, R] (GRU, RNN: proj).
  void project(const Ctx& ctx, ConstMat<T> s, MatView<T> o);
  MatView<T> forward_teacher(const Ctx& ctx, const ForecastInputs<T>& in);
  MatView<T> forward_decode(const Ctx& ctx, const ForecastInputs<T>& in);
  void backward_teacher(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout);
  const Config& cfg() const { return Base::cfg_; }
  // The H steps' states the decoder reads, time-major [H·B, Hd]: the upsampled ones, or the
  // last H steps'.
  ConstMat<T> decoder_states(Index batch) const;

  layers::Recurrent<T> encoder_;
  std::unique_ptr<MlpDecoder<T>> decoder_;       // recurrent=False
  std::unique_ptr<layers::Linear<T>> upsample_;  // H > L only
  std::unique_ptr<layers::Linear<T>> proj_;      // recurrent=True, GRU and RNN
  Buffer<T> x_;          // [L·B, 1 + X + S + F] the encoder's input, time-major
  Buffer<T> s_, ds_;     // [L·B, R] its states and their gradient
  Index max_steps_ = 0;  // L, or recurrent=True the longest sequence of either mode
  Buffer<T> u_, du_;     // [H·B, Hd] upsampled states (H > L)
  Buffer<T> o_, do_;     // recurrent=True: [h_train·B, M] the projected outputs, time-major
  Buffer<T> out_;        // recurrent=True: [B, H·M]
  profile::LayerZones zenc_, zup_, zproj_;
};

}  // namespace shoal::models
