// TSMixer (neuralforecast.models.TSMixer): no exogenous inputs; keeps the input length
// L through every block, then projects time L → H. Per block (pre-norm, no norm after adds):
//   temporal:  x ← x + dropout(relu(Linear_{L→L}(BN_{N·L}(x as [B, N, L]))))   (along time)
//   feature:   x ← x + dropout(Linear_{K→N}(dropout(relu(Linear_{N→K}(BN_{L·N}(x))))))
//   out = RevIN⁻¹(Linear_{L→H·M} along time(x)),  x₀ = RevIN(insample_y)
// The head's [B, H·M, N] (row h·M + m of each window) is denormalised as is and read as
// neuralforecast's [B, H, M·N] (column m·N + n): the same memory, no copy.
// BatchNorm1d: eps 1e-3, momentum 0.01; the temporal norm's features are ordered series-major
// (n·L + l), the feature norm's time-major (l·N + n), as neuralforecast flattens them.
// Activations are [B·L, N]; the halves are models/mixing.h's TemporalMixing and FeatureMixing.
// Names are neuralforecast's state_dict keys ("mixing_layers.0.temporal_mixer.temporal_lin.weight",
// "...temporal_norm.running_mean", "out.weight", "norm.affine_weight").
// Legend: B windows, L input_size, H horizon, N series, K ff_dim, M outputs per forecast value
// (models/forecast.h).
#pragma once

#include <string>
#include <vector>

#include "shoal/models/forecast_model.h"
#include "shoal/models/mixing.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct TSMixerConfig : MixerConfig<TSMixerConfig> {
  static constexpr ForecastKind kKind{
      .name = "tsmixer", .class_name = "TSMixer", .multivariate = true};
  static constexpr double kDefaultDropout = 0.9;
};

template <class T>
class TSMixer : public ForecastModel<TSMixerConfig>, public NamedLayers<TSMixer<T>> {
 public:
  // BatchNorm normalises over the windows of a batch, so a batch cannot be split.
  static constexpr bool kWindowsIndependent = false;

  explicit TSMixer(Config cfg);

  // Training mode needs B ≥ 2 (BatchNorm's batch statistics), as PyTorch. Profiler zones per
  // half block ("mixing_layers.{k}.temporal_mixer", ".feature_mixer"), RevIN and the head, with
  // the blocks' own analytic costs (models/zones.h).
  SHOAL_WINDOW_MODEL_MEMBERS;

  template <class F>
  void for_each_layer(F&& f) {
    if (cfg_.revin) f("norm.", revin_);
    for (size_t k = 0; k < blocks_.size(); ++k) {
      f(block_prefix(k) + "temporal_mixer.", blocks_[k].temporal);
      f(block_prefix(k) + "feature_mixer.", blocks_[k].feature);
    }
    f("out.", out_);
  }

 private:
  struct Block {  // mixing_layers.{k}
    TemporalMixing<T> temporal;
    FeatureMixing<T> feature;
    Buffer<T> xa, dxa;  // [B·L, N]: the temporal half's output (the feature half's input)
    profile::LayerZones temporal_zones, feature_zones;
  };
  static std::string block_prefix(size_t k) { return "mixing_layers." + std::to_string(k) + "."; }

  RevIn<T> revin_;
  std::vector<Block> blocks_;
  TimeLinear<T> out_;
  std::vector<Buffer<T>> x_, dx_;  // x_[k]: input of block k; x_.back(): head input [B·L, N]
  Buffer<T> head_, dhead_, fcst_;  // [B·H·M, N]
  profile::LayerZones norm_zones_, norm_inverse_zones_, out_zones_;
};

extern template class TSMixer<float>;
extern template class TSMixer<double>;

}  // namespace shoal::models
