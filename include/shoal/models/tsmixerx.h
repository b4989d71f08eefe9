// TSMixerx (neuralforecast.models.TSMixerx): multivariate mixer with historical,
// future and static exogenous inputs. Forward, with C₀ = 1 + X + F and m = 1 + [F>0] + [S>0]:
//   y' = RevIN(insample_y)                                         [B, L, N]
//   P  = TimeLinear_{L→H}([y', hist, futr[:L]])                     [B, H, C₀·N]  (col c·N + n)
//   Z  = [FM_hist(P), FM_futr(futr[L:]) if F, FM_stat(stat) if S]   [B, H, m·K]
//   Z  = FM(TM(Z)) (first_mixing, m·K → K)
//   n_block × ( S = 0: FM(TM(Z));  S > 0: FM(TM([Z, FM_stat_k(stat)])) )
//   out = RevIN⁻¹(Z · W_outᵀ + b_out)                               [B, H, M·N]  (col m·N + n)
// RevIN⁻¹ reads the head's [B·H, M·N] as neuralforecast's reshape [B, H·M, N] (the same
// memory: row h·M + m of each window), so the forecast is a view, no copy.
// TM = TemporalMixingX, FM = FeatureMixingX (models/mixing.h). Parameter names are
// neuralforecast's state_dict keys (e.g. "mixing_block.0.temporal_mixer.temporal_lin.weight").
// With WindowShape::exog_grads the backward also returns ∂L/∂(hist, futr, stat) (exog_grads()):
// the projection's input gradient for hist and futr[:L], FM_futr's for futr[L:], and the static
// mixers' summed over the H rows of every window (stat is [N, S], shared by the windows).
// Legend: B windows, L input_size, H horizon, N series, K ff_dim, X/F/S exogenous counts, M outputs
// per forecast value (models/forecast.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shoal/models/forecast_model.h"
#include "shoal/models/mixing.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct TSMixerxConfig : MixerConfig<TSMixerxConfig> {
  static constexpr ForecastKind kKind{.name = "tsmixerx",
                                      .class_name = "TSMixerx",
                                      .multivariate = true,
                                      .hist_exog = true,
                                      .futr_exog = true,
                                      .stat_exog = true};
  static constexpr double kDefaultDropout = 0.0;
};

template <class T>
class TSMixerx : public ForecastModel<TSMixerxConfig>, public NamedLayers<TSMixerx<T>> {
 public:
  // Chunks of 8 windows keep a chunk's activations in L2 (docs/tsmixerx.md).
  static constexpr Index kChunkWindows = 8;

  explicit TSMixerx(Config cfg);

  // Profiler zones "<module>.forward" / ".backward" per layer (neuralforecast module names),
  // rows = windows, with the blocks' own analytic costs (models/zones.h); recorded when
  // ctx.profiler is set.
  SHOAL_WINDOW_MODEL_MEMBERS;
  // ∂L/∂(hist, futr, stat exog) of the last backward (models/forecast.h); with exog_grads only.
  ExogGrads<T> exog_grads() const;

  template <class F>
  void for_each_layer(F&& f) {
    if (cfg_.revin) f("norm.", revin_);
    f("temporal_projection.", projection_);
    f("feature_mixer_hist.", *fm_hist_);
    if (fm_futr_) f("feature_mixer_futr.", *fm_futr_);
    if (fm_stat_) f("feature_mixer_stat.", *fm_stat_);
    for (size_t j = 0; j < mixers_.size(); ++j) {
      const std::string p = mixer_prefix(j);
      if (mixers_[j].stat) f(p + "feature_mixer_stat.", *mixers_[j].stat);
      f(p + "temporal_mixer.", *mixers_[j].temporal);
      f(p + "feature_mixer.", *mixers_[j].feature);
    }
    f("out.", out_);
  }

 private:
  struct Mixer {                              // first_mixing (j = 0) or mixing_block.{j − 1}
    std::unique_ptr<FeatureMixingX<T>> stat;  // MixingLayerWithStaticExogenous only
    std::unique_ptr<TemporalMixingX<T>> temporal;
    std::unique_ptr<FeatureMixingX<T>> feature;
    Index cols = 0;  // input width
  };
  static std::string mixer_prefix(size_t j) {
    return j == 0 ? std::string("first_mixing.") : "mixing_block." + std::to_string(j - 1) + ".";
  }
  Index c0() const { return 1 + cfg_.hist_exog + cfg_.futr_exog; }
  void check_inputs(const ForecastInputs<T>& in) const;
  // Static feature mixers: once per chunk when no dropout is drawn (see tsmixerx.cpp).
  bool stat_shared(const Ctx& ctx) const;
  void stat_forward(const Ctx& ctx, FeatureMixingX<T>& fm, MatView<T> y, Index bsz, Index row0);
  // With exog_grads it also adds the mixer's input gradient, summed over rows, into dstat_.
  void stat_backward(const Ctx& ctx, FeatureMixingX<T>& fm, MatView<T> dy, Index bsz, Index row0);
  void pack_inputs(const ForecastInputs<T>& in);
  // The inverse of pack_inputs for the gradients: dxin's and dxfutr_'s exogenous columns into
  // dhist_ and dfutr_.
  void unpack_exog_grads(Index bsz);
  // Whether the projection's input gradient is needed: RevIN's affine grads, or the exogenous
  // inputs' with exog_grads.
  bool projection_dx() const {
    return cfg_.revin || (cfg_.exog_grads && cfg_.hist_exog + cfg_.futr_exog > 0);
  }
  MatView<T> rows(const Buffer<T>& b, Index n) const { return b.mat().rows_block(0, n); }
  // The first r rows of a [B·H, M·N] head buffer as RevIN's [B·H·M, N].
  MatView<T> by_series(const Buffer<T>& b, Index r) const {
    return MatView<T>(b.mat().data, r * cfg_.outputs, cfg_.n_series);
  }
  // Where mixer j writes its output: the next mixer's input (left block) or the head input.
  MatView<T> mixer_out(size_t j, Index n) const;
  MatView<T> mixer_dout(size_t j, Index n) const;

  RevIn<T> revin_;
  TimeLinear<T> projection_;
  std::unique_ptr<FeatureMixingX<T>> fm_hist_, fm_futr_, fm_stat_;
  std::vector<Mixer> mixers_;
  layers::Linear<T> out_;

  Buffer<T> xin_, dxin_;    // [B·L, C₀·N] RevIN'd y, hist, futr[:L]
  Buffer<T> proj_, dproj_;  // [B·H, C₀·N]
  Buffer<T> xfutr_;         // [B·H, F·N] futr[L:]
  Buffer<T> xstat_;         // [B·H, N·S] broadcast static
  // With exog_grads: FM_futr's and the static mixers' input gradients [B·H, F·N], [B·H, N·S],
  // and the returned ones: hist [B, X, L, N], futr [B, F, L + H, N], stat [N, S].
  Buffer<T> dxfutr_, dxstat_, dhist_, dfutr_, dstat_;
  std::vector<Buffer<T>> io_, dio_;  // io_[j]: input of mixer j; io_.back(): head input [B·H, K]
  std::vector<Buffer<T>> tm_, dtm_;  // temporal-mixer output of mixer j
  Buffer<T> head_, dhead_;           // [B·H, M·N] head output before RevIN⁻¹
  Buffer<T> fcst_;                   // [B·H, M·N] forecast

  // Profiler (register_zones); unregistered: nothing recorded.
  struct MixerZones {
    profile::LayerZones stat, temporal, feature;
  };
  struct Zones {
    profile::LayerZones norm, norm_inverse, projection, fm_hist, fm_futr, fm_stat, out;
    std::vector<MixerZones> mixers;
    const MixerZones& mixer(size_t j) const {
      static constexpr MixerZones kNone{};
      return j < mixers.size() ? mixers[j] : kNone;
    }
  } zones_;
  profile::Recorder* profiler(const Ctx& ctx) const {
    return zones_.norm.registered() ? ctx.profiler : nullptr;
  }
};

extern template class TSMixerx<float>;
extern template class TSMixerx<double>;

}  // namespace shoal::models
