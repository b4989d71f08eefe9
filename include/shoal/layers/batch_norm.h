// BatchNorm1d on [N, F] (PyTorch nn.BatchNorm1d): every column is normalised over the rows of
// the batch.
//
// Training (ctx.training):
//   μ_f = (1/N) Σ_n x[n, f]     σ²_f = (1/N) Σ_n (x[n, f] − μ_f)²     r_f = 1 / √(σ²_f + eps)
//   running_mean ← (1 − m)·running_mean + m·μ_f
//   running_var  ← (1 − m)·running_var  + m·σ²_f·N/(N − 1)      (unbiased, as PyTorch)
// Eval: μ_f = running_mean[f], r_f = 1 / √(running_var[f] + eps).
//   y[n, f] = (x[n, f] − μ_f) · r_f · weight[f] + bias[f]
//
// Shapes: x, y [N, F]; weight, bias, running_mean, running_var [F]. weight/bias init 1/0
// (absent with affine = false); init() also resets the running stats to 0 and 1. The running
// stats are not trainable: they are Buffers named "running_mean"/"running_var" in the
// state region, so checkpoints find them by name and nothing reuses their memory. N = 1 in training
// throws shoal::Error as PyTorch does. Backward (training: through the batch statistics; eval:
// affine only): docs/derivations/batch_norm.md.
//
// Numerics: column statistics are two-pass (mean, then Σ(x − μ)²) and accumulate in double
// per column, rows outer and columns inner so both passes vectorise over F.
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct BatchNorm1d {
  struct Config {
    Index num_features = 0;  // F
    double eps = 1e-5;       // TSMixer: 1e-3
    double momentum = 0.1;   // TSMixer: 0.01 (Keras 0.99)
    bool affine = true;
  };
  struct Params {
    Param<T> weight;  // [F], init 1
    Param<T> bias;    // [F], init 0
  };

  Config cfg;
  Params p;
  Buffer<T> running_mean;  // [F] persistent state, not trained
  Buffer<T> running_var;   // [F]
  Buffer<T> saved_mean;    // [F] μ of the last forward (batch or running)
  Buffer<T> saved_rstd;    // [F] r of the last forward
  Buffer<double> acc;      // [2, F] scratch: column sums in double

  explicit BatchNorm1d(Config c) : cfg(c) {}

  template <class F>
  void for_each_param(F&& f) {
    if (cfg.affine) {
      f(std::string_view("weight"), p.weight);
      f(std::string_view("bias"), p.bias);
    }
  }

  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // Training mode also updates the running stats (once per call).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // Uses ctx.training, which must match the forward's. dx overwritten; grads accumulate.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);

  // Analytic cost (profile/cost.h) of one call on `rows` rows.
  profile::Cost forward_cost(double rows) const {
    return profile::batch_norm_forward(rows, double(cfg.num_features), cfg.affine, sizeof(T));
  }
  profile::Cost backward_cost(double rows) const {
    return profile::batch_norm_backward_dx(rows, double(cfg.num_features), sizeof(T)) +
           profile::batch_norm_backward_dw(rows, double(cfg.num_features), cfg.affine, sizeof(T));
  }
};

}  // namespace shoal::layers
