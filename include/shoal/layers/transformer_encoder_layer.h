// A post-norm transformer encoder layer as neuralforecast's TransEncoderLayer (common/_modules.py),
// the block iTransformer, VanillaTransformer and TimeXer stack:
//   a  = AttentionLayer(x, x)                      (self-attention, layers/attention_layer.h)
//   x1 = norm1(x + dropout(a))
//   f  = conv2(dropout(act(conv1(x1))))            (conv1, conv2: Conv1d with kernel 1, i.e.
//   y  = norm2(x1 + dropout(f))                     Linears over each token; act ReLU or GELU)
// Parameters in neuralforecast's order and names: attention.{query,key,value,out}_projection,
// conv1, conv2, norm1, norm2. conv1/conv2 hold a Linear's [out, in]; neuralforecast's state_dict
// has them as [out, in, 1] (the same numbers). neuralforecast applies one Dropout module at
// three places; here each place draws its own mask (streams stream+1..+3), as three calls of
// torch's module draw three.
// Rows: the windows' tokens, [B·L, hidden_size]. A chunk of a batch's windows passes row0, the
// index of its first row in the batch, so that every dropout draws the chunk's part of the
// batch's masks (layers/dropout.h).
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
#include "shoal/profile/cost.h"

namespace shoal::layers {

// The feed-forward's width of neuralforecast's encoder and decoder layers: conv_hidden_size,
// or 4 · hidden_size when it is 0 (their default).
inline Index feed_forward_width(Index conv_hidden_size, Index hidden_size) {
  return conv_hidden_size > 0 ? conv_hidden_size : 4 * hidden_size;
}

template <class T>
struct TransformerEncoderLayer {
  struct Config {
    Index hidden_size = 0;
    Index n_heads = 1;
    Index conv_hidden_size = 0;  // 0: 4 · hidden_size
    Index tokens = 1;            // L, tokens per window
    double dropout = 0.1;
    double attention_dropout = 0.1;
    bool gelu = false;  // activation: "relu" (default) or "gelu"
    bool causal = false;
    uint64_t stream = 0;  // dropout streams stream .. stream + 3
  };
  struct Params {};

  Config cfg;
  Params p;
  AttentionLayer<T> attention;
  Linear<T> conv1, conv2;
  LayerNorm<T> norm1, norm2;
  Dropout<T> drop_attention, drop_hidden, drop_out;
  Buffer<T> a, s1, x1, h, hd, f, s2;  // saved activations
  Buffer<T> ds, dx1, dh, dtmp;        // gradients (scratch)

  explicit TransformerEncoderLayer(Config c);

  template <class F>
  void for_each_param(F&& fn) {
    auto each = [&](const char* prefix, auto& layer) {
      layer.for_each_param([&](std::string_view n, Param<T>& param) {
        fn(std::string(prefix) + std::string(n), param);
      });
    };
    each("attention.", attention);
    each("conv1.", conv1);
    each("conv2.", conv2);
    each("norm1.", norm1);
    each("norm2.", norm2);
  }

  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0 = 0);
  // dx is overwritten.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx,
                Index row0 = 0);

  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows) const;
};

}  // namespace shoal::layers
