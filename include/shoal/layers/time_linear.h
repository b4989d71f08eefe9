// TimeLinear: a Linear along the time rows of a batch-major [B·R, C] view (TSMixer's temporal
// mixers and heads, TSMixerx's projection), one GEMM per window with the weight on the left,
// so no transpose is materialised. Legend: B windows, R rows (time steps) per window, C
// features, I/O in/out steps.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/gemm.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

// A Linear along time, shared by every feature column:
//   y_b = act(W · x_b + bias ⊗ 1ᵀ)        x_b [I, C], W [O, I], bias [O], y_b [O, C]
// i.e. PyTorch's nn.Linear(I, O) applied to x.permute(0, 2, 1) and permuted back. act is kNone
// or kRelu (ReLU backward reads y, so y may later be scaled in place by a dropout: a dropped
// element has dy = 0 and a kept one keeps its sign).
template <class T>
struct TimeLinear {
  struct Config {
    Index in = 0;    // I (time steps in)
    Index out = 0;   // O (time steps out)
    Index cols = 0;  // C
    kernels::Act act = kernels::Act::kNone;
  };
  Config cfg;
  Param<T> weight;  // [O, I]
  Param<T> bias;    // [O]
  Buffer<T> dz;     // scratch [B·O, C]: dy after the activation's derivative
  Buffer<T> wt;     // scratch [I, O]: Wᵀ, packed once per backward for the dx products

  explicit TimeLinear(Config c) : cfg(c) {}
  template <class F>
  void for_each_param(F&& f) {
    f(std::string_view("weight"), weight);
    f(std::string_view("bias"), bias);
  }
  // max_rows: rows of x, B·I.
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // x [B·I, C], y [B·O, C].
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // dx (if it has data) is overwritten, or added to with accumulate_dx (a residual's gradient
  // already stored there). weight/bias grads accumulate. dy may alias dx when accumulate_dx
  // (dy is read in full before dx is written).
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx,
                bool accumulate_dx);
  // A Linear I → O on the B·C columns of rows = B·I input rows.
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;
};

}  // namespace shoal::layers
