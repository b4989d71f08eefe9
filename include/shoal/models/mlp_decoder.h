// The MLP decoder of neuralforecast's sequence models (RNN, GRU, LSTM, TCN, DilatedRNN: their
// `mlp_decoder`), decoding every horizon step at once from the encoder's states:
//   ŷ_j = MLP([u_j | futr_{L+j}])  [M] per horizon step j       ŷ [B, H, M]
// MLP (neuralforecast's common MLP): decoder_layers Linears, Hd + F → hidden → … → M, the
// activation after each but the last (one layer: a single Linear, no activation). Its
// nn.Sequential holds Linear, activation and dropout per hidden layer, so the Linears' state_dict
// names are mlp_decoder.layers.<3k>.weight/.bias.
// The states u arrive time-major [H·B, Hd] (row j·B + w: window w at horizon step j, as
// models/time_major.h lays them); the forecasts leave window-major [B·H, M], as the trainer reads
// them. Legend: B windows, L input_size, H horizon, Hd the states' width, F future exogenous
// values per step, M outputs per forecast value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/options.h"
#include "shoal/core/rng.h"
#include "shoal/layers/linear.h"
#include "shoal/models/forecast.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

// The decoder activations shoal runs (neuralforecast takes more: the others are refused).
inline constexpr std::string_view kDecoderActivations[] = {"ReLU", "GELU", "Identity"};

struct MlpDecoderConfig {
  Index states = 0;   // Hd
  Index futr = 0;     // F
  Index hidden = 0;   // decoder_hidden_size
  Index layers = 1;   // decoder_layers
  Index outputs = 1;  // M
  kernels::Act act = kernels::Act::kRelu;
  Index input_size = 0;  // L: where the future values of the horizon start
  Index h = 0;           // H
};

// The decoder's options in a model's Config, neuralforecast's names and defaults.
struct MlpDecoderOptions {
  int64_t decoder_hidden_size = 128;
  int64_t decoder_layers = 2;
  std::string decoder_activation = "ReLU";

  void visit_mlp_decoder(OptionVisitor& v);
  void validate_mlp_decoder() const;
  // The decoder of a model of `shape` whose encoder yields `states` values per step.
  MlpDecoderConfig mlp_decoder_config(const WindowShape& shape, Index states) const;
};

template <class T>
class MlpDecoder {
 public:
  using Config = MlpDecoderConfig;

  explicit MlpDecoder(const Config& cfg);

  template <class F>
  void for_each_layer(F&& f) {
    for (size_t k = 0; k < layers_.size(); ++k)
      f("mlp_decoder.layers." + std::to_string(3 * k) + ".", layers_[k]);
  }
  void init(RngStream& rng);
  void plan(Planner& planner, Index max_batch);
  // The forecasts [B·H, M] (a view of the decoder's buffer) from the states u [H·B, Hd].
  MatView<T> forward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> u);
  // From dout [B·H, M], ∂/∂u into du [H·B, Hd] (overwritten); u as in the last forward.
  void backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> u, ConstMat<T> dout,
                MatView<T> du);
  // Profiler zones "mlp_decoder" (rows = windows); the model's ZoneChain enters them.
  void register_zones(profile::Recorder& rec, int model);
  const profile::LayerZones& zones() const { return zones_; }

 private:
  Config cfg_;
  std::vector<layers::Linear<T>> layers_;
  Buffer<T> d_, dd_;               // [H·B, Hd + F] the input with future exogenous values (F > 0)
  std::vector<Buffer<T>> a_, da_;  // [H·B, hidden] per hidden layer
  Buffer<T> o_, do_;               // [H·B, M] the output, time-major
  Buffer<T> out_;                  // [B, H·M]
  profile::LayerZones zones_;
};

}  // namespace shoal::models
