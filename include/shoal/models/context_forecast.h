// What neuralforecast's TCN and DilatedRNN share (models/tcn.h, dilated_rnn.h name the two): an
// encoder over the input window with every exogenous input, a Linear along time from the L
// encoded steps to the H horizon steps (the context adapter), and an MLP decoding every horizon
// step at once:
//   e_t = [y_t | hist_t | stat | futr_t]               t < L        (1 + X + S + F features)
//   s = Encoder(e) [L, B, Hd]                           (time-major)
//   u = Linear_{L→H}(s) along time [H, B, Hd]           (context_adapter)
//   ŷ_j = MLP([u_j | futr_{L+j}])  [M] per horizon step j       ŷ [B, H, M]
// The MLP is neuralforecast's common MLP, as the recurrent models' (models/recurrent_forecast.h).
// Names: the encoder's under its module name (C::kEncoderName), context_adapter.weight/.bias,
// mlp_decoder.layers.<3k>.weight/.bias; init in that module order (torch's).
// A model's Config derives from ForecastConfig<Config>, names the encoder layer (Encoder<T>, with
// the layer interface of layers/temporal_conv.h) and builds its Config (encoder_config).
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
#include "shoal/profile/recorder.h"

namespace shoal::models {

template <class T, class C>
class ContextForecast : public ForecastModel<C> {
  using Base = ForecastModel<C>;
  using Encoder = typename C::template Encoder<T>;

 public:
  using Config = C;
  // Windows per forward/backward chunk, as the recurrent models (their kChunkWindows).
  static constexpr Index kChunkWindows = 128;
  explicit ContextForecast(Config cfg);

  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng);
  // Returns the forecasts [B·H, M] (a view of the model's output buffer); dout likewise.
  MatView<T> forward(const Ctx& ctx, const ForecastInputs<T>& in);
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout);
  // Profiler zones C::kEncoderName, "context_adapter", "mlp_decoder".
  void register_zones(profile::Recorder& rec, int model = 0);

  template <class F>
  void for_each_param(F&& f) {
    const std::string enc = std::string(C::kEncoderName) + ".";
    encoder_.for_each_param([&](const std::string& n, Param<T>& p) { f(enc + n, p); });
    context_.for_each_param(
        [&](std::string_view n, Param<T>& p) { f("context_adapter." + std::string(n), p); });
    for (size_t k = 0; k < decoder_.size(); ++k)
      decoder_[k].for_each_param([&](std::string_view n, Param<T>& p) {
        f("mlp_decoder.layers." + std::to_string(3 * k) + "." + std::string(n), p);
      });
  }

 private:
  Index encoder_in() const { return 1 + cfg().hist_exog + cfg().stat_exog + cfg().futr_exog; }
  Index decoder_in() const { return cfg().encoder_hidden_size + cfg().futr_exog; }
  const Config& cfg() const { return Base::cfg_; }
  ConstMat<T> decoder_input(const ForecastInputs<T>& in);

  Encoder encoder_;
  layers::Linear<T> context_;
  std::vector<layers::Linear<T>> decoder_;
  Buffer<T> x_;                    // [L·B, 1 + X + S + F] the encoder's input, time-major
  Buffer<T> s_, ds_;               // [L·B, Hd] its output and gradient
  Buffer<T> u_, du_;               // [H·B, Hd] the context adapter's output
  Buffer<T> d_, dd_;               // [H·B, Hd + F] the decoder's input (with future exogenous)
  std::vector<Buffer<T>> a_, da_;  // [H·B, decoder_hidden_size] per hidden decoder layer
  Buffer<T> o_, do_;               // [H·B, M] the decoder's output, time-major
  Buffer<T> out_;                  // [B, H·M]
  profile::LayerZones zenc_, zctx_, zdec_;
};

}  // namespace shoal::models
