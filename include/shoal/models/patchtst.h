// PatchTST (neuralforecast.models.PatchTST): each window cut into overlapping patches, each
// patch one token of a transformer encoder; the encoded patches flattened and projected to the
// horizon. Univariate (each series its own token sequence: neuralforecast's channel
// independence with c_in = 1); no exogenous inputs (its EXOGENOUS_* are all False).
//   x̃ = revin ? RevIN(insample_y) : insample_y               (layers/revin_last.h)
//   x̄ = x̃ padded at the end with S copies of its last value  (padding_patch "end")
//   p_j = x̄[j·S, j·S + P),  j < Np = ⌊(L − P)/S⌋ + 2           (unfold; P = min(patch_len, L + S))
//   z₀ = dropout(W_P p_j + W_pos[j])                            [B·Np, E]
//   z_k = TSTEncoderLayer_k(z_{k−1}, scores_{k−1})               (layers/tst_encoder_layer.h)
//   ŷ = head_dropout(head.linear(flatten(z_n)))                 flatten: each window's [E, Np]
//   forecast = revin ? RevIN⁻¹(ŷ) : ŷ, read as [B, H, M]
// neuralforecast always uses BatchNorm in the encoder layers (its PatchTST passes no norm on),
// and its batch_normalization option turns on pre_norm; fc_dropout is stored and read by nothing
// (its pretrain head is off). The batch norms couple the windows of a batch.
// Parameters: neuralforecast's state_dict keys (model.revin_layer.*, model.backbone.W_P,
// model.backbone.W_pos, model.backbone.encoder.layers.<k>.*, model.head.linear), drawn in its
// module order. Its sdp_attn.scale is the fixed float head_dim^-0.5 (no parameter here).
// Legend: B windows, L input_size, S stride, P patch_len, Np patches, E hidden_size,
// H horizon, M outputs per forecast value.
#pragma once

#include <string>
#include <vector>

#include "shoal/layers/dropout.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/position_table.h"
#include "shoal/layers/revin_last.h"
#include "shoal/layers/tst_encoder_layer.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/recorder.h"

namespace shoal::models {

struct PatchTSTConfig : ForecastConfig<PatchTSTConfig> {
  static constexpr ForecastKind kKind{
      .name = "patchtst", .class_name = "PatchTST", .defaults = kLinearDefaults};
  // Not an aggregate: GCC 12 flags the string of `PatchTSTConfig{}` as maybe uninitialized.
  PatchTSTConfig() = default;

  Index encoder_layers = 3;
  Index n_heads = 16;
  Index hidden_size = 128;
  Index linear_hidden_size = 256;
  double dropout = 0.2;
  double fc_dropout = 0.2;  // read by nothing (neuralforecast's too)
  double head_dropout = 0.0;
  double attn_dropout = 0.0;
  Index patch_len = 16;
  Index stride = 8;
  bool revin = true;
  bool revin_affine = false;
  bool revin_subtract_last = true;
  std::string activation = "gelu";
  bool res_attention = true;
  bool batch_normalization = false;  // neuralforecast's: pre_norm of the encoder layers
  bool learn_pos_embed = true;

  void visit(OptionVisitor& v);
  void validate_options() const;
  // neuralforecast's min(patch_len, input_size + stride).
  Index patch() const { return std::min(patch_len, input_size + stride); }
  Index patch_num() const { return (input_size + stride - patch()) / stride + 1; }
};

template <class T>
class PatchTST : public ForecastModel<PatchTSTConfig>, public NamedLayers<PatchTST<T>> {
 public:
  // The batch norms' statistics are the whole batch's.
  static constexpr bool kWindowsIndependent = false;

  explicit PatchTST(Config cfg);

  // Zones "revin", "W_P" (patching, projection, positions), "encoder.layers.<k>", "head".
  SHOAL_WINDOW_MODEL_MEMBERS;

  template <class F>
  void for_each_layer(F&& f) {
    f("model.revin_layer.", revin_);
    f("model.backbone.W_P.", w_p_);
    f("model.backbone.", pos_);
    for (size_t k = 0; k < layers_.size(); ++k)
      f("model.backbone.encoder.layers." + std::to_string(k) + ".", layers_[k]);
    f("model.head.linear.", head_);
  }

 private:
  layers::RevInLast<T> revin_;
  layers::Linear<T> w_p_;
  layers::PositionTable<T> pos_;
  layers::Dropout<T> drop_in_, drop_head_;
  std::vector<layers::TSTEncoderLayer<T>> layers_;
  layers::Linear<T> head_;
  Buffer<T> xp_, dxp_;               // [B, L + S] the (normalised) padded windows and gradient
  Buffer<T> patches_, dpatches_;     // [B·Np, P]
  std::vector<Buffer<T>> z_;         // [B·Np, E] the encoder's input and each layer's output
  Buffer<T> dz_a_, dz_b_;            // [B·Np, E] their gradients, in turn
  Buffer<T> ds_a_, ds_b_;            // [B·heads·Np, Np] the scores' gradients, in turn
  Buffer<T> flat_, dflat_;           // [B, E·Np]
  Buffer<T> head_out_, out_, dout_;  // [B, H·M] before and after RevIN's inverse
  profile::LayerZones zrevin_, zembed_, zhead_;
  std::vector<profile::LayerZones> zlayers_;
};

extern template class PatchTST<float>;
extern template class PatchTST<double>;

}  // namespace shoal::models
