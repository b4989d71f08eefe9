// Reversible instance normalisation (neuralforecast's RevINMultivariate) on batch-major views.
// Legend: B windows, L input_size, H horizon, N series.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

// RevINMultivariate(num_features = N, affine = True) on [B, L, N] and [B, H, N] views.
//   normalize:   μ, σ over the L steps of each (window, series), σ = √(var_biased + eps),
//                detached; y = (x − μ)/σ · w + b
//   denormalize: y = (x − b)/w · σ + μ   (no eps on w, as neuralforecast)
// Parameters affine_weight, affine_bias [1, 1, N] (init 1, 0). No gradient flows to the
// normalized input (it is data, and the statistics are detached).
template <class T>
struct RevIn {
  struct Config {
    Index n_series = 0;    // N
    Index input_size = 0;  // L: rows per window of normalize's input
    Index h = 0;           // H: rows per window of denormalize's input
    double eps = 1e-5;
  };
  Config cfg;
  Param<T> affine_weight;  // [1, 1, N]
  Param<T> affine_bias;    // [1, 1, N]
  Buffer<T> mu;            // [B, N] statistics of the last normalize
  Buffer<T> sigma;         // [B, N]

  explicit RevIn(Config c) : cfg(c) {}
  template <class F>
  void for_each_param(F&& f) {
    f(std::string_view("affine_weight"), affine_weight);
    f(std::string_view("affine_bias"), affine_bias);
  }
  // max_rows: rows of normalize's input, B·L.
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // x [B·L, N] contiguous rows of N (ld N), y [B·L, N] any ld.
  void normalize(ConstMat<T> x, MatView<T> y);
  // dy [B·L, N] → weight/bias grads (accumulate) only.
  void normalize_backward(ConstMat<T> x, ConstMat<T> dy);
  // x, y [B·H, N]; uses the statistics of the last normalize.
  void denormalize(ConstMat<T> x, MatView<T> y);
  // dx overwritten; weight/bias grads accumulate.
  void denormalize_backward(ConstMat<T> x, ConstMat<T> dy, MatView<T> dx);
  // Statistics (4 FLOPs per element) and normalise + affine (4); the inverse 4; the backwards
  // 2 (affine grads) and 4. rows: the input's, B·L or B·H.
  profile::Cost normalize_cost(double rows) const;
  profile::Cost normalize_backward_cost(double rows) const;
  profile::Cost denormalize_cost(double rows) const;
  profile::Cost denormalize_backward_cost(double rows) const;
};

}  // namespace shoal::layers
