// PatchTST's encoder layer (neuralforecast's TSTEncoderLayer with its _MultiheadAttention and
// _ScaledDotProductAttention, models/patchtst.py), over the patches of each window:
//   post-norm (pre_norm false):            pre-norm (pre_norm true):
//     a  = MHA(x)                             u  = norm_attn(x)
//     x1 = norm_attn(x + drop(a))             a  = MHA(u)
//     f  = ff.3(drop(act(ff.0(x1))))          x1 = norm_ffn(u + drop(a))
//     y  = norm_ffn(x1 + drop(f))             y  = x1 + drop(ff(x1))
// (pre-norm's residuals add the normalised input, as neuralforecast's reassigned src does).
//   MHA(x) = drop(to_out.0(concat_h softmax(S_h) V_h)),  Q, K, V = W_Q x, W_K x, W_V x
//   S_h = scale · Q_h K_hᵀ (+ S_prev,h with res_attention: the previous layer's scores)
// scale is neuralforecast's float32 parameter head_dim^-0.5 (rounded to float, in double too).
// With res_attention the layer writes its scores S for the next layer and its backward takes
// their gradient from the next layer and hands the previous one its own (kernels/attention.h).
// The norms are BatchNorm1d over the hidden features of every token of the batch (neuralforecast
// passes no norm, so its default "BatchNorm" holds): training uses the batch's statistics and
// updates the running ones, eval reads the running ones.
// The attention's output passes two dropouts in a row (to_out's and dropout_attn), each its own
// mask, as two torch modules draw two. Streams stream .. stream + 4.
// Parameters in neuralforecast's order and names: self_attn.{W_Q, W_K, W_V, to_out.0},
// norm_attn.1, ff.0, ff.3, norm_ffn.1 (its running statistics buffers beside them).
// Rows: the windows' tokens, [B·L, hidden_size]. Legend: B windows, L tokens per window,
// H heads, E a head's width.
#pragma once

#include <string>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/attention.h"
#include "shoal/layers/batch_norm.h"
#include "shoal/layers/dropout.h"
#include "shoal/layers/linear.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct TSTEncoderLayer {
  struct Config {
    Index hidden_size = 0;
    Index n_heads = 1;
    Index linear_hidden_size = 0;
    Index tokens = 1;  // L
    double dropout = 0;
    double attention_dropout = 0;
    bool gelu = true;  // activation "gelu" (else "relu")
    bool res_attention = true;
    bool pre_norm = false;
    uint64_t stream = 0;
  };
  struct Params {};

  Config cfg;
  Params p;
  Linear<T> w_q, w_k, w_v, to_out, ff0, ff3;
  BatchNorm1d<T> norm_attn, norm_ffn;
  Dropout<T> drop_probs, drop_proj, drop_attn, drop_ff, drop_ffn;
  Buffer<T> u, q, k, v, heads, a, s1, x1, h, hd, f, s2;  // saved activations
  Buffer<T> probs, mask, scores;                         // [B·H·L, L]
  Buffer<T> dq, dk, dv, dheads, da, ds, dx1, dh, dg;     // gradients (scratch)
  Buffer<T> scratch;                                     // the kernel's

  explicit TSTEncoderLayer(Config c);

  template <class F>
  void for_each_param(F&& fn) {
    auto each = [&](const char* prefix, auto& layer) {
      layer.for_each_param([&](std::string_view n, Param<T>& param) {
        fn(std::string(prefix) + std::string(n), param);
      });
    };
    each("self_attn.W_Q.", w_q);
    each("self_attn.W_K.", w_k);
    each("self_attn.W_V.", w_v);
    each("self_attn.to_out.0.", to_out);
    each("norm_attn.1.", norm_attn);
    each("ff.0.", ff0);
    each("ff.3.", ff3);
    each("norm_ffn.1.", norm_ffn);
  }

  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // prior: the previous layer's scores (res_attention; null in the first layer). The layer's own
  // are `scores` after the call.
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0 = 0,
               const T* prior = nullptr);
  // dx overwritten. dscores: the gradient of this layer's scores from the next layer (null in
  // the last); dprior: written with the gradient of `prior` (null: not wanted).
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx,
                Index row0 = 0, const T* dscores = nullptr, T* dprior = nullptr);

  kernels::AttentionShape shape(Index windows) const;
  // Elements of one layer's scores at `windows` windows ([B·H·L, L]).
  Index score_rows(Index windows) const { return windows * cfg.n_heads * cfg.tokens; }
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows) const;
};

}  // namespace shoal::layers
