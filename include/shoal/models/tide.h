// TiDE (neuralforecast.models.TiDE; Das et al., TMLR 2023): a dense encoder-decoder of residual
// blocks, a per-step temporal decoder and a global linear skip.
//   x = [y | P_hist(hist) | P_futr(futr) | stat]    e = Encoder(x)    d = Decoder(e) [B, H·D]
//   ŷ = TemporalDecoder(d, P_futr(futr)[L:]) + Wy + b   [B, H, M] (element h·M + q)
// P_hist, P_futr: residual blocks (X or F → hidden_size → temporal_width) per time step, their
// [L, tw] and [L + H, tw] outputs flattened time-major into x; the future one's horizon steps
// also feed the temporal decoder. Encoder: num_encoder_layers MLPResidual(·, hidden_size,
// hidden_size); Decoder: num_decoder_layers of them, the last one out to D·H (D
// decoder_output_dim); TemporalDecoder: the residual block per step on [D | tw] features
// (layers/mlp_residual.h), out M; global_skip: Linear(L, H·M), its outputs read as [H, M]. M:
// outputs per forecast value (1 for a point loss; a multi-output loss's count, set by the
// shape, not an option). With layernorm (the default) and M = 1 the temporal decoder's
// LayerNorm over its one output makes that term its bias, as in neuralforecast: the forecast is
// Wy + b + bias whatever the projections, encoder and decoder compute, and they receive zero
// gradients, so shoal computes none of them (only the global skip and that bias train, in both
// tools); with M > 1 that LayerNorm is over M values and live, and every layer runs. Exogenous
// inputs come in shoal's layout (models/forecast.h: hist [B, X, L], futr [B, F, L + H], stat [S]
// per series, or [B, S] rows with stat_window_stride); with WindowShape::exog_grads the backward
// also returns their gradients (exog_grads(): zero where the forecast is Wy + b + bias).
// A univariate model (N = 1). Names: neuralforecast's state_dict keys
// (hist_exog_projection.lin1.weight, dense_encoder.<k>.lin1.weight, temporal_decoder.norm.bias,
// global_skip.weight, …); init in torch's module order, so a Generator::kTorchCpu stream seeded
// with random_seed reproduces its weights (neuralforecast builds the historical projection whenever
// it has historical or future exogenous; without historical ones it is unused, and shoal only draws
// its numbers). Legend: B windows, L input_size, H horizon, D decoder_output_dim, tw
// temporal_width, X/F/S hist/futr/stat exogenous sizes, M outputs per forecast value.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/mlp_residual.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct TiDEConfig : ForecastConfig<TiDEConfig> {
  static constexpr ForecastKind kKind{
      .name = "tide",
      .class_name = "TiDE",
      .hist_exog = true,
      .futr_exog = true,
      .stat_exog = true,
      .defaults = {.windows_batch_size = 1024, .inference_windows_batch_size = 1024}};
  int64_t hidden_size = 512;
  int64_t decoder_output_dim = 32;
  int64_t temporal_decoder_dim = 128;
  double dropout = 0.3;
  bool layernorm = true;
  int64_t num_encoder_layers = 1;
  int64_t num_decoder_layers = 1;
  int64_t temporal_width = 4;

  void visit(OptionVisitor& v);
  void validate_options() const;
};

// Every block works per window (LayerNorm over a window's features): chunks are exact, and a
// batch runs whole (the base's kChunkWindows: the block weights, not the windows, are the
// traffic; ms per training step at its defaults, 1,024 windows, 2 loaded cores: whole 83,
// chunks of 64 126, chunks of 8 346).
template <class T>
class TiDE : public ForecastModel<TiDEConfig>, public NamedLayers<TiDE<T>> {
 public:
  explicit TiDE(Config cfg);

  // Profiler zones "exog_projection" (with exogenous inputs), "dense_encoder",
  // "dense_decoder", "temporal_decoder", "global_skip".
  SHOAL_WINDOW_MODEL_MEMBERS;
  // Torch's draws, with the unused historical projection's (see tide.cpp).
  void init(RngStream& rng);
  // ∂L/∂(hist, futr, stat exog) of the last backward (models/forecast.h); with exog_grads only.
  ExogGrads<T> exog_grads() const;

  template <class F>
  void for_each_layer(F&& f) {
    if (hist_proj_) f("hist_exog_projection.", *hist_proj_);
    if (futr_proj_) f("futr_exog_projection.", *futr_proj_);
    for (size_t k = 0; k < encoder_.size(); ++k)
      f("dense_encoder." + std::to_string(k) + ".", *encoder_[k]);
    for (size_t k = 0; k < decoder_.size(); ++k)
      f("dense_decoder." + std::to_string(k) + ".", *decoder_[k]);
    f("temporal_decoder.", temporal_);
    f("global_skip.", skip_);
  }

 private:
  Index encoder_input() const;  // L + L·tw (X > 0) + (L + H)·tw (F > 0) + S
  bool has_exog() const { return cfg_.hist_exog + cfg_.futr_exog + cfg_.stat_exog > 0; }
  // Whether backward needs the first encoder block's input gradient: the projections' share,
  // and the static columns' with exog_grads.
  bool first_dx() const {
    return hist_proj_ || futr_proj_ || (cfg_.exog_grads && cfg_.stat_exog > 0);
  }
  // Scatters the projections' row gradients and the static columns of dxin into the exogenous
  // gradients, in ForecastInputs' layout.
  void write_exog_grads(const ForecastInputs<T>& in);
  void zero_exog_grads(const ForecastInputs<T>& in);
  // out = global_skip(x) + tout, as the trainer's [B·H, M].
  MatView<T> add_skip(const Ctx& ctx, ConstMat<T> x, MatView<T> out, ConstMat<T> tout,
                      profile::ZoneChain& zone);

  std::unique_ptr<layers::MLPResidual<T>> hist_proj_, futr_proj_;  // null when absent
  std::vector<std::unique_ptr<layers::MLPResidual<T>>> encoder_, decoder_;
  layers::TemporalDecoder<T> temporal_;
  layers::Linear<T> skip_;
  std::vector<Buffer<T>> h_, dh_;  // the encoder's and decoder's outputs and their gradients
  Buffer<T> out_;                  // [B, H·M]
  Buffer<T> tout_;                 // [B, H·M] the temporal decoder's share
  Buffer<T> hrows_, hp_, dhp_;     // [B·L, X], [B·L, tw] × 2: the historical projection
  Buffer<T> frows_, fp_, dfp_;     // [B·(L + H), F], [B·(L + H), tw] × 2: the future one
  Buffer<T> dfh_;                  // [B, H·tw] the temporal decoder's share of dfp
  Buffer<T> xin_, dxin_;           // [B, encoder_input()] with exogenous inputs
  // With exog_grads: the projections' input gradients [B·L, X], [B·(L + H), F], and the
  // returned ones: hist [B, X, L], futr [B, F, L + H], stat [B, S] (row 0 alone when shared).
  Buffer<T> dhrows_, dfrows_, dhist_, dfutr_, dstat_;
  profile::LayerZones zproj_;
  profile::LayerZones zenc_, zdec_, ztmp_, zskip_;
};

}  // namespace shoal::models
