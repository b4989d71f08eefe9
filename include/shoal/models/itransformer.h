// iTransformer (neuralforecast.models.iTransformer): attention across the variates rather than
// along time. Each series' input window is one token, and each future exogenous input's
// sequence of each series another; a post-norm transformer encoder mixes the tokens, and the
// series' tokens are projected to the horizon:
//   x̃ = use_norm ? SeriesNorm(insample_y) : insample_y          (layers/series_norm.h)
//   e = InvertedEmbedding_{L→E}(x̃)   [B·N, E]                   (enc_embedding.value_embedding)
//   f = InvertedEmbedding_{L+H→E}(futr_exog)  [B·N·F, E]        (futr_embedding, F > 0)
//   z₀ = [e_b | f_b] per window: N + N·F tokens                 (series first, then n·F + f)
//   z_k = TransEncoderLayer_k(z_{k−1}), k = 1..e_layers          (GELU, d_ff, dropout)
//   p = Linear_{E→H·M}(LayerNorm(z_{e_layers}) of the N series' tokens)   [B·N, H·M]
//   ŷ = p per window transposed to [B, H·M, N], denormalised when use_norm, read as
//       neuralforecast's [B, H, M·N] (column m·N + n): the same memory
// The final LayerNorm runs on the series' tokens only: the exogenous tokens' outputs are
// neuralforecast's too, but nothing reads them. d_layers and factor are stored and read by
// nothing, as in neuralforecast (its FullAttention ignores factor).
// Parameters: neuralforecast's state_dict keys, in its module (and init) order:
// enc_embedding.value_embedding, futr_embedding (F > 0), encoder.attn_layers.<k>.{attention.
// {query,key,value,out}_projection, conv1, conv2, norm1, norm2}, encoder.norm, projector.
// Multivariate; future exogenous inputs only (neuralforecast's EXOGENOUS_FUTR), with their
// gradients when built with exog_grads.
// Legend: B windows, L input_size, H horizon, N series, F future exogenous, E hidden_size,
// M outputs per forecast value.
#pragma once

#include <string>
#include <vector>

#include "shoal/layers/inverted_embedding.h"
#include "shoal/layers/layer_norm.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/series_norm.h"
#include "shoal/layers/transformer_encoder_layer.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct ITransformerConfig : ForecastConfig<ITransformerConfig> {
  // Its shared-option defaults (max_steps 1000, learning_rate 1e-3, 32 windows a step and a
  // pass, the identity scaler) are every forecaster's.
  static constexpr ForecastKind kKind{.name = "itransformer",
                                      .class_name = "iTransformer",
                                      .multivariate = true,
                                      .futr_exog = true};
  Index hidden_size = 512;
  Index n_heads = 8;
  Index e_layers = 2;
  Index d_layers = 1;  // read by nothing (neuralforecast's too)
  Index d_ff = 2048;   // 0: 4 · hidden_size, as neuralforecast's `d_ff or 4 * hidden_size`
  Index factor = 1;    // read by nothing (FullAttention ignores it)
  double dropout = 0.1;
  bool use_norm = true;

  void visit(OptionVisitor& v);
  void validate_options() const;
  Index tokens() const { return n_series * (1 + futr_exog); }  // per window
};

template <class T>
class ITransformer : public ForecastModel<ITransformerConfig>,
                     public NamedLayers<ITransformer<T>>,
                     public ExogGradBuffers<T> {
 public:
  explicit ITransformer(Config cfg);

  // Zones "enc_embedding", "futr_embedding", "encoder.attn_layers.<k>", "encoder.norm",
  // "projector", "norm" (the series norm and its inverse), rows = windows.
  SHOAL_WINDOW_MODEL_MEMBERS;

  template <class F>
  void for_each_layer(F&& f) {
    f("enc_embedding.value_embedding.", enc_);
    if (cfg_.futr_exog > 0) f("futr_embedding.", futr_);
    for (size_t k = 0; k < layers_.size(); ++k)
      f("encoder.attn_layers." + std::to_string(k) + ".", layers_[k]);
    f("encoder.norm.", norm_);
    f("projector.", projector_);
  }

 private:
  layers::SeriesNorm<T> stats_;
  layers::InvertedEmbedding<T> enc_, futr_;
  std::vector<layers::TransformerEncoderLayer<T>> layers_;
  layers::LayerNorm<T> norm_;
  layers::Linear<T> projector_;
  Buffer<T> xn_;                 // [B·L, N] the normalised input (use_norm)
  Buffer<T> e_, f_, de_, df_;    // [B·N, E], [B·N·F, E] the embeddings apart (F > 0)
  std::vector<Buffer<T>> z_;     // [B·T, E] the encoder's input and each layer's output
  Buffer<T> dz_a_, dz_b_;        // [B·T, E] their gradients, in turn
  Buffer<T> g_, gn_, dg_, dgn_;  // [B·N, E] the series' tokens, normed (F > 0: gathered)
  Buffer<T> p_, dp_;             // [B·N, H·M] the projection
  Buffer<T> out_, dout_;         // [B·H·M, N]
  profile::LayerZones zstats_, zenc_, zfutr_, znorm_, zproj_;
  std::vector<profile::LayerZones> zlayers_;
};

extern template class ITransformer<float>;
extern template class ITransformer<double>;

}  // namespace shoal::models
