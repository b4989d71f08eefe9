// A post-norm transformer decoder layer as neuralforecast's TransDecoderLayer
// (common/_modules.py), the decoder block of VanillaTransformer and Informer:
//   x1 = norm1(x + dropout(SelfAttention(x, x)))
//   x2 = norm2(x1 + dropout(CrossAttention(x1, cross)))       (keys and values: the encoder's)
//   f  = dropout(conv2(dropout(act(conv1(x2)))))               (conv1, conv2: Conv1d, kernel 1)
//   y  = norm3(x2 + f)
// Parameters in neuralforecast's order and names: self_attention.*, cross_attention.*
// ({query,key,value,out}_projection), conv1, conv2 (torch's Conv1d shape [out, in, 1]), norm1,
// norm2, norm3. neuralforecast applies one Dropout module at four places; here each place draws
// its own mask (streams stream+2..+5), as four calls of torch's module draw four; the two
// attentions' dropouts use streams stream and stream+1.
// causal is FullAttention's mask on the self-attention. neuralforecast 3.3.0's VanillaTransformer
// sets mask_flag but passes no mask, and its scaled_dot_product_attention path applies only a
// mask it is given, so its decoder's self-attention is not masked: that model builds this layer
// with causal false.
// Rows: x [B·Ld, hidden] the windows' decoder tokens, cross [B·Le, hidden] their encoder
// outputs. A chunk of a batch's windows passes row0, the index of its first decoder row in the
// batch, so that every dropout draws the chunk's part of the batch's masks.
// Legend: B windows, Ld decoder tokens, Le encoder tokens per window.
#pragma once

#include <string>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/layers/attention_layer.h"
#include "shoal/layers/dropout.h"
#include "shoal/layers/layer_norm.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/transformer_encoder_layer.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct TransformerDecoderLayer {
  struct Config {
    Index hidden_size = 0;
    Index n_heads = 1;
    Index conv_hidden_size = 0;  // 0: 4 · hidden_size
    Index tokens = 1;            // Ld
    Index cross_tokens = 1;      // Le
    double dropout = 0.1;
    double attention_dropout = 0.1;
    bool gelu = false;    // activation: "relu" (default) or "gelu"
    bool causal = false;  // the self-attention's mask
    uint64_t stream = 0;  // dropout streams stream .. stream + 5
  };
  struct Params {};

  Config cfg;
  Params p;
  AttentionLayer<T> self_attention, cross_attention;
  Linear<T> conv1, conv2;
  LayerNorm<T> norm1, norm2, norm3;
  Dropout<T> drop_self, drop_cross, drop_hidden, drop_out;
  Buffer<T> a, s1, x1, ca, s2, x2, h, hd, f, s3;  // saved activations (ca: cross-attention)
  Buffer<T> ds, dx1, dx2, dh, dtmp, dcross_tmp;   // gradients (scratch)

  explicit TransformerDecoderLayer(Config c);

  template <class F>
  void for_each_param(F&& fn) {
    auto each = [&](const char* prefix, auto& layer) {
      layer.for_each_param([&](std::string_view n, Param<T>& param) {
        fn(std::string(prefix) + std::string(n), param);
      });
    };
    each("self_attention.", self_attention);
    each("cross_attention.", cross_attention);
    each("conv1.", conv1);
    each("conv2.", conv2);
    each("norm1.", norm1);
    each("norm2.", norm2);
    each("norm3.", norm3);
  }

  // max_rows: decoder rows (windows · Ld).
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> cross, MatView<T> y, Index row0 = 0);
  // dx is overwritten; the encoder outputs' gradient is added into dcross.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> cross, ConstMat<T> dy, MatView<T> dx,
                MatView<T> dcross, Index row0 = 0);

  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows) const;
};

}  // namespace shoal::layers
