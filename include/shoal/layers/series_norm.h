// The normalisation iTransformer takes from the Non-stationary Transformer (neuralforecast's
// iTransformer with use_norm): each series of each window is centred and scaled by its own
// statistics over the L input steps, and the forecast scaled back,
//   μ = mean_t x[b, t, n],  σ = √(mean_t (x[b, t, n] − μ)² + eps)      eps 1e-5
//   normalize:   y[b, t, n] = (x[b, t, n] − μ) / σ                        [B, L, N]
//   denormalize: y[b, r, n] = x[b, r, n] · σ + μ   for each of R rows    [B, R, N]
// No parameters. The input is data, so normalize has no backward; denormalize's is dx = dy · σ
// (μ and σ depend on the input only, so nothing flows into them from the model's weights).
// Legend: B windows, L input_size, R rows per window of the denormalised output (H·M), N series.
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct SeriesNorm {
  struct Config {
    Index n_series = 0;    // N
    Index input_size = 0;  // L: rows per window of normalize's input
    Index rows = 0;        // R: rows per window of denormalize's input
    double eps = 1e-5;
  };
  struct Params {};

  Config cfg;
  Params p;
  Buffer<T> mu, sigma;  // [B, N] the last normalize's statistics

  explicit SeriesNorm(Config c) : cfg(c) {}
  template <class F>
  void for_each_param(F&&) {}

  // max_rows: rows of normalize's input, B·L.
  void plan(Planner& planner, Index max_rows);
  void init(RngStream&) {}
  // x [B·L, N], y [B·L, N] (any ld; y may alias x).
  void normalize(ConstMat<T> x, MatView<T> y);
  // x, y [B·R, N] (y may alias x), with the last normalize's statistics.
  void denormalize(ConstMat<T> x, MatView<T> y) const;
  // dx = dy · σ, [B·R, N] (dx may alias dy).
  void denormalize_backward(ConstMat<T> dy, MatView<T> dx) const;

  profile::Cost normalize_cost(double rows) const;
  profile::Cost denormalize_cost(double rows) const;
  profile::Cost denormalize_backward_cost(double rows) const;
};

}  // namespace shoal::layers
