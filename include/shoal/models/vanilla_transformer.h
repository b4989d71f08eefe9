// VanillaTransformer (neuralforecast.models.VanillaTransformer): Informer's baseline, a full
// encoder-decoder transformer over each window's steps. Univariate; future exogenous inputs
// only (neuralforecast's EXOGENOUS_FUTR), with their gradients when built with exog_grads.
//   e₀ = DataEmbedding(insample_y, futr_exog[0, L))   [B·L, E]    (layers/data_embedding.h)
//   e_k = TransEncoderLayer_k(e_{k−1}), k = 1..encoder_layers       (post-norm, activation)
//   m = LayerNorm(e_n)                                               (encoder.norm)
//   x_dec = the window's last Ld values, then H zeros,  Ld = ⌈L · decoder_input_size_multiplier⌉
//   d₀ = DataEmbedding(x_dec, futr_exog[L − Ld, L + H))   [B·(Ld + H), E]
//   d_k = TransDecoderLayer_k(d_{k−1}, m), k = 1..decoder_layers
//   ŷ = Linear_{E→M}(LayerNorm(d_n)) of the last H tokens, read as [B, H, M]
// neuralforecast's decoder self-attention is built with mask_flag but run with no mask (its
// scaled_dot_product_attention path applies only a mask it is passed), so no decoder token is
// masked here either. Both DataEmbeddings add the sine/cosine position table.
// Parameters: neuralforecast's state_dict keys in its module (and init) order: enc_embedding,
// dec_embedding, encoder.attn_layers.<k>, encoder.norm, decoder.layers.<k>, decoder.norm,
// decoder.projection.
// Legend: B windows, L input_size, H horizon, Ld decoder input steps, E hidden_size, M outputs
// per forecast value.
#pragma once

#include <string>
#include <vector>

#include "shoal/layers/data_embedding.h"
#include "shoal/layers/layer_norm.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/transformer_decoder_layer.h"
#include "shoal/layers/transformer_encoder_layer.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct VanillaTransformerConfig : ForecastConfig<VanillaTransformerConfig> {
  static constexpr ForecastKind kKind{.name = "vanilla_transformer",
                                      .class_name = "VanillaTransformer",
                                      .futr_exog = true,
                                      .defaults = kLinearDefaults};
  // Not an aggregate: GCC 12 flags the string of `VanillaTransformerConfig{}` as maybe
  // uninitialized.
  VanillaTransformerConfig() = default;

  double decoder_input_size_multiplier = 0.5;
  Index hidden_size = 128;
  double dropout = 0.05;
  Index n_head = 4;
  Index conv_hidden_size = 32;
  std::string activation = "gelu";
  Index encoder_layers = 2;
  Index decoder_layers = 1;

  void visit(OptionVisitor& v);
  void validate_options() const;
  // neuralforecast's label_len: int(ceil(input_size · decoder_input_size_multiplier)).
  Index label_len() const;
  Index decoder_tokens() const { return label_len() + h; }
};

template <class T>
class VanillaTransformer : public ForecastModel<VanillaTransformerConfig>,
                           public NamedLayers<VanillaTransformer<T>>,
                           public ExogGradBuffers<T> {
 public:
  explicit VanillaTransformer(Config cfg);

  // Zones "enc_embedding", "encoder.attn_layers.<k>", "encoder.norm", "dec_embedding",
  // "decoder.layers.<k>", "decoder.head" (its norm and projection), rows = windows.
  SHOAL_WINDOW_MODEL_MEMBERS;

  template <class F>
  void for_each_layer(F&& f) {
    f("enc_embedding.", enc_embedding_);
    f("dec_embedding.", dec_embedding_);
    for (size_t k = 0; k < encoder_.size(); ++k)
      f("encoder.attn_layers." + std::to_string(k) + ".", encoder_[k]);
    f("encoder.norm.", encoder_norm_);
    for (size_t k = 0; k < decoder_.size(); ++k)
      f("decoder.layers." + std::to_string(k) + ".", decoder_[k]);
    f("decoder.norm.", decoder_norm_);
    f("decoder.projection.", projection_);
  }

 private:
  layers::DataEmbedding<T> enc_embedding_, dec_embedding_;
  std::vector<layers::TransformerEncoderLayer<T>> encoder_;
  layers::LayerNorm<T> encoder_norm_;
  std::vector<layers::TransformerDecoderLayer<T>> decoder_;
  layers::LayerNorm<T> decoder_norm_;
  layers::Linear<T> projection_;
  std::vector<Buffer<T>> ze_;   // [B·L, E] the encoder's input and each layer's output
  Buffer<T> memory_, dmemory_;  // [B·L, E] the normed encoder output and its gradient
  Buffer<T> dze_a_, dze_b_;     // [B·L, E] the encoder's gradients, in turn
  Buffer<T> x_dec_;             // [B·Ld', 1] the decoder's input values (Ld' = Ld + H)
  std::vector<Buffer<T>> zd_;   // [B·Ld', E] the decoder's input and each layer's output
  Buffer<T> dzd_a_, dzd_b_;     // [B·Ld', E] the decoder's gradients, in turn
  Buffer<T> dn_, ddn_;          // [B·Ld', E] the final norm's output and gradient
  Buffer<T> proj_, dproj_;      // [B·Ld', M]
  Buffer<T> out_;               // [B·H, M]
  profile::LayerZones zenc_, zenc_norm_, zhead_;
  std::vector<profile::LayerZones> zencoder_, zdecoder_;
};

extern template class VanillaTransformer<float>;
extern template class VanillaTransformer<double>;

}  // namespace shoal::models
