// LayerNorm over the trailing dims (PyTorch nn.LayerNorm): every row of x is normalised with its
// own mean and biased variance, then scaled and shifted elementwise.
//
//   μ_n = (1/F) Σ_f x[n, f]      σ²_n = (1/F) Σ_f (x[n, f] − μ_n)²      r_n = 1 / √(σ²_n + eps)
//   y[n, f] = (x[n, f] − μ_n) · r_n · weight[f] + bias[f]
//
// Shapes: x, y [N, F] with F = numel(normalized_shape) (TSMixerx's per-sample norm over (h, C)
// is F = h·C on the flattened sample); weight, bias have normalized_shape (init 1 and 0).
// Saved for backward: mean [N], rstd [N]. Backward: docs/derivations/layer_norm.md.
//
// Numerics: two passes over the row (mean, then Σ(x − μ)²), so a large offset does not cancel
// the variance the way E[x²] − E[x]² does. The sums accumulate in double in 8 independent lanes:
// the compiler vectorises them without reassociating, and the row is in L1 for the second
// pass, so double costs little even for float.
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"

namespace shoal::layers {

template <class T>
struct LayerNorm {
  struct Config {
    Shape normalized_shape;  // e.g. {h, C}; its numel is F
    double eps = 1e-5;
    bool elementwise_affine = true;
    bool bias = true;  // only with elementwise_affine (PyTorch ≥ 2.1 `bias=`)
  };
  struct Params {
    Param<T> weight;  // normalized_shape, init 1
    Param<T> bias;    // normalized_shape, init 0
  };

  Config cfg;
  Params p;
  Buffer<T> mean;  // [N] per-row mean of the last forward
  Buffer<T> rstd;  // [N] per-row 1/√(var + eps) of the last forward

  explicit LayerNorm(Config c) : cfg(c) {}

  Index features() const { return cfg.normalized_shape.numel(); }
  bool has_weight() const { return cfg.elementwise_affine; }
  bool has_bias() const { return cfg.elementwise_affine && cfg.bias; }

  template <class F>
  void for_each_param(F&& f) {
    if (has_weight()) f(std::string_view("weight"), p.weight);
    if (has_bias()) f(std::string_view("bias"), p.bias);
  }

  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // dx is overwritten; weight.grad and bias.grad accumulate. y is not used.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);
};

}  // namespace shoal::layers
