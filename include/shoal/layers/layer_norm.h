// LayerNorm over the trailing dims (PyTorch nn.LayerNorm): every sample of x is normalised with
// its own mean and biased variance, then scaled and shifted elementwise.
//
//   μ_n = (1/F) Σ_f x[n, f]      σ²_n = (1/F) Σ_f (x[n, f] − μ_n)²      r_n = 1 / √(σ²_n + eps)
//   y[n, f] = (x[n, f] − μ_n) · r_n · weight[f] + bias[f]
//
// Shapes: F = numel(normalized_shape); weight, bias have normalized_shape (init 1 and 0).
// A sample is one row of x [N, F] (cols = 0 or F), or, with cols = C the last dim of
// normalized_shape, the R = F / C consecutive rows of x [N·R, C]: TSMixerx's norm over (H, C)
// on a [B·H, C] activation, whose windows may be a column block of a wider buffer.
// Saved for backward: mean [N], rstd [N]. Backward: docs/derivations/layer_norm.md.
//
// Numerics (kernels/layer_norm.h): two passes per sample (mean, then Σ(x − μ)²), so a large
// offset does not cancel the variance the way E[x²] − E[x]² does; each row is summed in T in 8
// lanes and the rows are joined in double.
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct LayerNorm {
  struct Config {
    Shape normalized_shape;  // e.g. {h, C}; its numel is F
    double eps = 1e-5;
    bool elementwise_affine = true;
    bool bias = true;  // only with elementwise_affine (PyTorch ≥ 2.1 `bias=`)
    Index cols = 0;    // width of x's rows: 0 (= F) or the last dim of normalized_shape
  };
  struct Params {
    Param<T> weight;  // normalized_shape, init 1
    Param<T> bias;    // normalized_shape, init 0
  };

  Config cfg;
  Params p;
  Buffer<T> mean;  // [N] per-sample mean of the last forward
  Buffer<T> rstd;  // [N] per-sample 1/√(var + eps) of the last forward

  explicit LayerNorm(Config c) : cfg(c) {}

  Index features() const { return cfg.normalized_shape.numel(); }
  Index cols() const { return cfg.cols > 0 ? cfg.cols : features(); }
  Index rows_per_sample() const { return features() / cols(); }
  bool has_weight() const { return cfg.elementwise_affine; }
  bool has_bias() const { return cfg.elementwise_affine && cfg.bias; }

  template <class F>
  void for_each_param(F&& f) {
    if (has_weight()) f(std::string_view("weight"), p.weight);
    if (has_bias()) f(std::string_view("bias"), p.bias);
  }

  // max_rows: rows of x (N·R).
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // s = a + res (kept for the backward, which then takes s as its x), then y = LayerNorm(s),
  // the add fused into the statistics pass. res may alias s.
  void forward_residual(const Ctx& ctx, ConstMat<T> a, ConstMat<T> res, MatView<T> s, MatView<T> y);
  // dx is overwritten (it may alias dy); weight.grad and bias.grad accumulate. y is not used.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);

  // Analytic cost (profile/cost.h) of one call on `rows` rows of x, counted per row of the view
  // as cost.h's closed forms do (rows · cols elements; forward_residual's add is its caller's).
  profile::Cost forward_cost(double rows) const {
    return profile::layer_norm_forward(rows, double(cols()), has_weight(), sizeof(T));
  }
  profile::Cost backward_cost(double rows) const {
    return profile::layer_norm_backward_dx(rows, double(cols()), sizeof(T)) +
           profile::layer_norm_backward_dw(rows, double(cols()), has_weight(), sizeof(T));
  }
};

}  // namespace shoal::layers
