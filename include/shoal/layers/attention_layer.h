// Multi-head attention as neuralforecast's AttentionLayer around its FullAttention
// (common/_modules.py), the block of iTransformer, VanillaTransformer and TimeXer:
//   Q = xq·W_qᵀ + b_q,  K = xkv·W_kᵀ + b_k,  V = xkv·W_vᵀ + b_v       (split into H heads)
//   O_h = dropout(softmax(scale · Q_h·K_hᵀ [causal mask])) · V_h          (kernels/attention.h)
//   y = concat_h(O_h) · W_oᵀ + b_o
// Parameters: query_projection, key_projection, value_projection, out_projection (weight,
// bias), neuralforecast's names and PyTorch's Linear init, in that order. Rows: xq holds the
// windows' query tokens, [B·lq, hidden]; xkv their key tokens, [B·lk, hidden] (the same
// matrix for self-attention). The projections stay in the [B, L, H, E] layout the kernel
// reads, so no head is copied out.
// Attention dropout draws its mask like Dropout (layers/dropout.h: seed, stream, step) over
// the [B·H·lq, lk] probabilities of the whole batch; the mask is kept for the backward. A
// forward on a chunk of a batch's windows passes row0, the index of its first query row in the
// batch, so that it draws the chunk's part of the batch's mask.
// Legend: B windows, lq/lk query/key tokens per window, H heads, dk/dv a head's widths.
#pragma once

#include <string>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/attention.h"
#include "shoal/layers/dropout.h"
#include "shoal/layers/linear.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct AttentionLayer {
  struct Config {
    Index hidden_size = 0;
    Index n_heads = 1;
    Index d_keys = 0;              // per head; 0: hidden_size / n_heads
    Index d_values = 0;            // per head; 0: hidden_size / n_heads
    Index lq = 1;                  // query tokens per window
    Index lk = 1;                  // key tokens per window
    bool causal = false;           // FullAttention's mask_flag
    double scale = 0;              // 0: 1/√d_keys
    double attention_dropout = 0;  // on the probabilities
    uint64_t stream = 0;           // dropout's Philox stream (unique in the model)
  };
  struct Params {};

  Config cfg;
  Params p;
  Linear<T> query_projection, key_projection, value_projection, out_projection;
  Dropout<T> dropout;
  Buffer<T> q, k, v, heads_out;  // projections and the heads' outputs (saved)
  Buffer<T> probs, mask;         // [B·H·lq, lk] (saved)
  Buffer<T> dq, dk, dv, dheads;  // their gradients (scratch)
  Buffer<T> dxk, dxv;            // key and value paths' input gradients (scratch)
  Buffer<T> scratch;             // the kernel's

  explicit AttentionLayer(Config c);

  template <class F>
  void for_each_param(F&& f) {
    auto each = [&](const char* prefix, Linear<T>& l) {
      l.for_each_param([&](std::string_view n, Param<T>& param) {
        f(std::string(prefix) + std::string(n), param);
      });
    };
    each("query_projection.", query_projection);
    each("key_projection.", key_projection);
    each("value_projection.", value_projection);
    each("out_projection.", out_projection);
  }

  // max_rows: query rows (windows · lq).
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> xq, ConstMat<T> xkv, MatView<T> y, Index row0 = 0);
  // dxq is overwritten; dxkv too, unless it is dxq itself (self-attention: one input), which
  // then receives the sum of the three paths.
  void backward(const Ctx& ctx, ConstMat<T> xq, ConstMat<T> xkv, ConstMat<T> dy, MatView<T> dxq,
                MatView<T> dxkv);

  kernels::AttentionShape shape(Index windows) const;
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows) const;

 private:
  Index dk_ = 0, dv_ = 0;
};

}  // namespace shoal::layers
