// The inverted embedding of iTransformer (neuralforecast's DataEmbedding_inverted, and the
// Linear its iTransformer applies to future exogenous inputs): each channel of each series of a
// window, its whole sequence of S steps, is one token, projected to the model's width:
//   x [B, C, S, N]  →  z [B·N·C, S], row (b·N + n)·C + c  =  x[b, c, :, n]
//   y = dropout(z · Wᵀ + b)   [B·N·C, E]
// With C = 1 and S = L, x is the insample window [B, L, N] and token n is series n
// (DataEmbedding_inverted's permute); with C = F and S = L + H, the future exogenous inputs
// [B, F, L + H, N] become N·F tokens ordered series-major, as iTransformer's permute(0, 3, 1, 2)
// and reshape order them. Parameters: the Linear's weight [E, S] and bias [E], PyTorch's init.
// Dropout draws its mask per token row of the whole batch (window0: a chunk's first window).
// Legend: B windows, C channels, S steps, N series, E hidden_size.
#pragma once

#include <cstdint>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/layers/dropout.h"
#include "shoal/layers/linear.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct InvertedEmbedding {
  struct Config {
    Index steps = 0;     // S: the Linear's input width
    Index channels = 1;  // C
    Index n_series = 1;  // N
    Index hidden_size = 0;
    double dropout = 0;
    uint64_t stream = 0;  // dropout's Philox stream
  };
  struct Params {};

  Config cfg;
  Params p;
  Linear<T> linear;
  Dropout<T> dropout;
  Buffer<T> z;   // [B·N·C, S] the tokens' inputs (saved)
  Buffer<T> dz;  // [B·N·C, S] their gradient (scratch)
  Buffer<T> dy;  // [B·N·C, E] the gradient behind the dropout (scratch)

  explicit InvertedEmbedding(Config c);

  template <class F>
  void for_each_param(F&& f) {
    linear.for_each_param(f);
  }

  Index tokens() const { return cfg.n_series * cfg.channels; }  // per window
  // max_rows: rows of the input view [B·C·S, N].
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // x [B·C·S, N] (rows of N), y [B·N·C, E] any ld.
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index window0 = 0);
  // The Linear's gradients accumulate; dx [B·C·S, N] is overwritten, or skipped when empty.
  void backward(const Ctx& ctx, ConstMat<T> dyv, MatView<T> dx, Index window0 = 0);

  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = false) const;
};

}  // namespace shoal::layers
