// TCN (neuralforecast.models.TCN): a stack of dilated causal convolutions (neuralforecast's
// TemporalConvolutionEncoder, layers/temporal_conv.h) over the input window with every
// exogenous input, a Linear along time from the L encoded steps to the H horizon steps (the
// context adapter), and an MLP decoding every horizon step at once:
//   e_t = [y_t | hist_t | stat | futr_t]               t < L        (1 + X + S + F features)
//   s = TemporalConv(e) [L, B, Hd]                      (time-major; one layer per dilation)
//   u = Linear_{L→H}(s) along time [H, B, Hd]           (context_adapter)
//   ŷ_j = MLP([u_j | futr_{L+j}])  [M] per horizon step j       ŷ [B, H, M]
// The MLP is neuralforecast's common MLP, as the recurrent models' (models/recurrent_forecast.h).
// Names: neuralforecast's state_dict keys hist_encoder.tcn.<j>.conv.weight/.bias,
// context_adapter.weight/.bias, mlp_decoder.layers.<3k>.weight/.bias; init in that module order.
// (neuralforecast's state_dict also lists each conv under the alias
// hist_encoder.tcn.<j>.causalconv.0.*, the same tensor.) Univariate (N = 1); historical, future
// and static exogenous inputs.
// Legend: B windows, L input_size, H horizon, X/F/S hist/futr/stat exogenous sizes, Hd
// encoder_hidden_size, M outputs per forecast value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/temporal_conv.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct TCNConfig : ForecastConfig<TCNConfig> {
  static constexpr ForecastKind kKind{
      .name = "tcn", .hist_exog = true, .futr_exog = true, .stat_exog = true};
  // Not an aggregate: GCC 12 flags the strings of `TCNConfig{}` as maybe uninitialized.
  TCNConfig() = default;

  int64_t kernel_size = 2;
  std::vector<int64_t> dilations = {1, 2, 4, 8, 16};
  int64_t encoder_hidden_size = 128;
  std::string encoder_activation = "ReLU";
  // Stored by neuralforecast's TCN and read by nothing: accepted to the same effect.
  int64_t context_size = 10;
  int64_t decoder_hidden_size = 128;
  int64_t decoder_layers = 2;
  std::string decoder_activation = "ReLU";
  // Read by neuralforecast's base model for recurrent models only: no effect on a TCN.
  int64_t inference_input_size = 0;  // 0: input_size (neuralforecast's None)

  void visit(OptionVisitor& v);
  void validate_options() const;
};

template <class T>
class TCN : public ForecastModel<TCNConfig> {
  using Base = ForecastModel<TCNConfig>;

 public:
  using Config = TCNConfig;
  // Windows per forward/backward chunk, as the recurrent models (their kChunkWindows).
  static constexpr Index kChunkWindows = 128;
  explicit TCN(Config cfg);

  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng);
  // Returns the forecasts [B·H, M] (a view of the model's output buffer); dout likewise.
  MatView<T> forward(const Ctx& ctx, const ForecastInputs<T>& in);
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> dout);
  // Profiler zones "hist_encoder", "context_adapter", "mlp_decoder".
  void register_zones(profile::Recorder& rec, int model = 0);

  template <class F>
  void for_each_param(F&& f) {
    encoder_.for_each_param([&](const std::string& n, Param<T>& p) { f("hist_encoder." + n, p); });
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

  layers::TemporalConv<T> encoder_;
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
