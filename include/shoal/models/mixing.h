// Building blocks of neuralforecast's TSMixer / TSMixerx (docs/tsmixerx.md, spec §2–§3).
//
// Activations are batch-major: a [B, R, C] tensor (B windows, R time rows, C features) is the
// row-major matrix [B·R, C], row b·R + r. Feature-wise Linears are then plain row GEMMs, and
// time-wise ones (TimeLinear) are one GEMM per window with the weight on the left, so no
// transpose is ever materialised. Every view may have ld > cols (concat as column blocks).
//
// Legend: B windows, R rows (time steps) per window, C features, I/O in/out sizes of a Linear,
// L input_size, H horizon, N series, K ff_dim.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/layers/dropout.h"
#include "shoal/layers/layer_norm.h"
#include "shoal/layers/linear.h"

namespace shoal::models {

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
  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng);
  // x [B·I, C], y [B·O, C].
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index batch);
  // dx (if it has data) is overwritten, or added to with accumulate_dx (a residual's gradient
  // already stored there). weight/bias grads accumulate. dy may alias dx when accumulate_dx
  // (dy is read in full before dx is written).
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx,
                Index batch, bool accumulate_dx);
};

// RevINMultivariate(num_features = N, affine = True) on [B, R, N] views.
//   normalize:   μ, σ over the L steps of each (window, series), σ = √(var_biased + eps),
//                detached; y = (x − μ)/σ · w + b
//   denormalize: y = (x − b)/w · σ + μ   (no eps on w, as neuralforecast)
// Parameters affine_weight, affine_bias [1, 1, N] (init 1, 0). No gradient flows to the
// normalized input (it is data, and the statistics are detached).
template <class T>
struct RevIn {
  struct Config {
    Index n_series = 0;
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
  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng);
  // x [B·L, N] contiguous rows of N (ld N), y [B·L, N] any ld.
  void normalize(ConstMat<T> x, MatView<T> y, Index batch);
  // dy [B·L, N] → weight/bias grads (accumulate) only.
  void normalize_backward(ConstMat<T> x, ConstMat<T> dy, Index batch);
  // x, y [B·H, N]; uses the statistics of the last normalize.
  void denormalize(ConstMat<T> x, MatView<T> y, Index batch);
  // dx overwritten; weight/bias grads accumulate.
  void denormalize_backward(ConstMat<T> x, ConstMat<T> dy, MatView<T> dx, Index batch);
};

// TSMixerx FeatureMixing(in → out), post-norm, on [B·H, in]:
//   a = dropout₁(relu(x·W₁ᵀ + b₁));  s = dropout₂(a·W₂ᵀ + b₂) + (in ≠ out ? x·Wₚᵀ + bₚ : x)
//   y = LayerNorm_(H, out)(s)
// Names: feature_lin_1, feature_lin_2, project_residual (in ≠ out only), feature_norm.
template <class T>
struct FeatureMixingX {
  struct Config {
    Index in = 0;
    Index out = 0;
    Index h = 0;
    Index ff = 0;
    double dropout = 0.0;
    uint64_t stream = 0;  // uses stream and stream + 1
  };
  Config cfg;
  layers::Linear<T> lin1, lin2, proj;
  layers::Dropout<T> drop1, drop2;
  layers::LayerNorm<T> norm;  // over (H, out) / (H, C): one sample per window
  Buffer<T> a1, a2, s;        // [B·H, K], [B·H, out], [B·H, out]
  Buffer<T> ds, da2;          // activation grads [B·H, out] (da2 with dropout only)
  Buffer<T> da1, dproj;       // [B·H, K], scratch [B·H, in]
  // W₁ᵀ, W₂ᵀ, Wₚᵀ for the forward GEMMs (x·Wᵀ as an NN product), packed by the chunk with
  // row0 = 0 and reused by the batch's later chunks (the weights change only between steps).
  Buffer<T> wt1, wt2, wtp;

  explicit FeatureMixingX(Config c);
  bool projects() const { return cfg.in != cfg.out; }
  template <class F>
  void for_each_param(F&& f) {
    each_child([&](std::string_view prefix, auto& layer) {
      layer.for_each_param([&](std::string_view name, Param<T>& p) {
        f(std::string(prefix) + std::string(name), p);
      });
    });
  }
  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng);
  // row0: the first row's index in the whole batch (dropout masks, layers/dropout.h).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index batch, Index row0 = 0);
  // dx overwritten; an empty dx (no data) skips the input gradient.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx, Index batch,
                Index row0 = 0);

 private:
  template <class F>
  void each_child(F&& f) {
    f("feature_lin_1.", lin1);
    f("feature_lin_2.", lin2);
    if (projects()) f("project_residual.", proj);
    f("feature_norm.", norm);
  }
};

// TSMixerx TemporalMixing(C), post-norm, on [B·H, C]:
//   y = LayerNorm_(H, C)(x + dropout(relu(W · x_b + b)))     W [H, H]
// Names: temporal_norm, temporal_lin.
template <class T>
struct TemporalMixingX {
  struct Config {
    Index cols = 0;
    Index h = 0;
    double dropout = 0.0;
    uint64_t stream = 0;
  };
  Config cfg;
  layers::LayerNorm<T> norm;  // over (H, out) / (H, C): one sample per window
  TimeLinear<T> lin;
  layers::Dropout<T> drop;
  Buffer<T> a, s;  // [B·H, C]
  Buffer<T> da;    // [B·H, C], with dropout only

  explicit TemporalMixingX(Config c);
  template <class F>
  void for_each_param(F&& f) {
    norm.for_each_param(
        [&](std::string_view n, Param<T>& p) { f("temporal_norm." + std::string(n), p); });
    lin.for_each_param(
        [&](std::string_view n, Param<T>& p) { f("temporal_lin." + std::string(n), p); });
  }
  void plan(Planner& planner, Index max_batch);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index batch, Index row0 = 0);
  // dx overwritten (dy may alias it).
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx, Index batch,
                Index row0 = 0);
};

// Elementwise helpers on views (row by row, any ld).
template <class T>
void copy_view(ConstMat<T> x, MatView<T> y);
template <class T>
void add_into(ConstMat<T> x, MatView<T> y);  // y += x
// y[c, r] = x[r, c] for each of `batch` [R, C] windows: x [B·R, C] → y [B·C, R].
template <class T>
void transpose_windows(ConstMat<T> x, MatView<T> y, Index batch, bool accumulate);

}  // namespace shoal::models
