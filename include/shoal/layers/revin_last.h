// Reversible instance normalisation as neuralforecast's RevIN (common/_modules.py, PatchTST's
// revin) on univariate windows: each window by its own centre and deviation, and back.
//   c = subtract_last ? x[L−1] : mean_t x[t]      σ = √(var_biased(x) + eps)   (per window)
//   normalize:   y = (x − c)/σ · w + b            (w, b only with affine)
//   denormalize: y = (x − b)/(w + eps²) · σ + c    (neuralforecast's eps² guard on w)
// The statistics are treated as constants (neuralforecast detaches the mean and σ; its last
// value is the input's, which is data and takes no gradient). Parameters affine_weight,
// affine_bias [1] (init 1, 0), only with affine. Backward: the affine's gradients and the
// denormalised input's.
// Legend: B windows, L input_size, R values per window that denormalize reads.
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct RevInLast {
  struct Config {
    Index input_size = 0;  // L
    bool affine = false;
    bool subtract_last = true;
    double eps = 1e-5;
  };
  Config cfg;
  Param<T> affine_weight;  // [1]
  Param<T> affine_bias;    // [1]
  Buffer<T> center;        // [B] c of the last normalize
  Buffer<T> stdev;         // [B] σ

  explicit RevInLast(Config c) : cfg(c) {}
  template <class F>
  void for_each_param(F&& f) {
    if (cfg.affine) {
      f(std::string_view("affine_weight"), affine_weight);
      f(std::string_view("affine_bias"), affine_bias);
    }
  }
  // max_windows: B.
  void plan(Planner& planner, Index max_windows);
  void init(RngStream& rng);
  // x, y [B, L].
  void normalize(ConstMat<T> x, MatView<T> y);
  // dy [B, L] of the normalised values → the affine's gradients (accumulated).
  void normalize_backward(ConstMat<T> x, ConstMat<T> dy);
  // x, y [B, R] (in place allowed); the statistics of the last normalize.
  void denormalize(ConstMat<T> x, MatView<T> y);
  // dx overwritten (in place allowed); the affine's gradients accumulate.
  void denormalize_backward(ConstMat<T> x, ConstMat<T> dy, MatView<T> dx);
  profile::Cost cost(double elements) const;
};

}  // namespace shoal::layers
