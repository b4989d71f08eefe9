// What neuralforecast's TCN and DilatedRNN share (models/tcn.h, dilated_rnn.h name the two): an
// encoder over the input window with every exogenous input, a Linear along time from the L
// encoded steps to the H horizon steps (the context adapter), and an MLP decoding every horizon
// step at once:
//   e_t = [y_t | hist_t | stat | futr_t]               t < L        (1 + X + S + F features)
//   s = Encoder(e) [L, B, Hd]                           (time-major)
//   u = Linear_{L→H}(s) along time [H, B, Hd]           (context_adapter)
//   ŷ_j = MLP([u_j | futr_{L+j}])  [M] per horizon step j       ŷ [B, H, M]
// The decoder is models/mlp_decoder.h's, as the recurrent models'.
// Names: the encoder's under its module name (C::kEncoderName), context_adapter.weight/.bias,
// the decoder's mlp_decoder.layers.<3k>.weight/.bias; init in that module order (torch's).
// A model's Config derives from ForecastConfig<Config> and ContextForecastOptions, names the
// encoder layer (Encoder<T>, with the layer interface of layers/temporal_conv.h) and builds its
// Config (encoder_config).
// Univariate (N = 1); historical, future and static exogenous inputs.
// Legend: B windows, L input_size, H horizon, X/F/S hist/futr/stat exogenous sizes, Hd
// encoder_hidden_size, M outputs per forecast value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/layers/linear.h"
#include "shoal/models/forecast_model.h"
#include "shoal/models/mlp_decoder.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

// The options TCN and DilatedRNN share after their encoder's, neuralforecast's names and defaults.
struct ContextForecastOptions : MlpDecoderOptions {
  // Stored by neuralforecast's TCN and DilatedRNN and read by nothing: accepted to the same
  // effect.
  int64_t context_size = 10;
  // Read by neuralforecast's base model for recurrent models only: no effect here.
  int64_t inference_input_size = 0;  // 0: input_size (neuralforecast's None)

  void visit_context_forecast(OptionVisitor& v);
  void validate_context_forecast() const;
};

template <class T, class C>
class ContextForecast : public ForecastModel<C>, public NamedLayers<ContextForecast<T, C>> {
  using Base = ForecastModel<C>;
  using Encoder = typename C::template Encoder<T>;

 public:
  using Config = C;
  // Windows per forward/backward chunk, as the recurrent models (their kChunkWindows).
  static constexpr Index kChunkWindows = 128;
  explicit ContextForecast(Config cfg);

  // Profiler zones C::kEncoderName, "context_adapter", "mlp_decoder".
  SHOAL_WINDOW_MODEL_MEMBERS;

  template <class F>
  void for_each_layer(F&& f) {
    f(std::string(C::kEncoderName) + ".", encoder_);
    f(std::string("context_adapter."), context_);
    decoder_.for_each_layer(f);
  }

 private:
  Index encoder_in() const { return 1 + cfg().hist_exog + cfg().stat_exog + cfg().futr_exog; }
  const Config& cfg() const { return Base::cfg_; }

  Encoder encoder_;
  layers::Linear<T> context_;
  MlpDecoder<T> decoder_;
  Buffer<T> x_;       // [L·B, 1 + X + S + F] the encoder's input, time-major
  Buffer<T> s_, ds_;  // [L·B, Hd] its output and gradient
  Buffer<T> u_, du_;  // [H·B, Hd] the context adapter's output
  profile::LayerZones zenc_, zctx_;
};

}  // namespace shoal::models
