// Building blocks of neuralforecast's TSMixer / TSMixerx (docs/tsmixerx.md).
//
// Activations are batch-major: a [B, R, C] tensor (B windows, R time rows, C features) is the
// row-major matrix [B·R, C], row b·R + r. Feature-wise Linears are then plain row GEMMs, and
// time-wise ones (TimeLinear) are one GEMM per window with the weight on the left, so no
// transpose is ever materialised. Every view may have ld > cols (concat as column blocks).
//
// The blocks follow the layer convention (layers/README.md): plan(planner, max_rows) with the
// rows of the input view ([B·R, C] has B·R), and forward/backward on views alone; a block knows
// its window length R from its Config, so its windows are x.rows / R. Each block also reports
// its analytic cost per call, forward_cost(rows) and backward_cost(rows[, dx]), of its input
// rows (profile/cost.h conventions); models register their profiler zones from these.
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
#include "shoal/layers/batch_norm.h"
#include "shoal/layers/dropout.h"
#include "shoal/layers/layer_norm.h"
#include "shoal/layers/linear.h"
#include "shoal/layers/revin.h"
#include "shoal/layers/time_linear.h"
#include "shoal/layers/view_ops.h"
#include "shoal/models/forecast_model.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

using layers::add_into;
using layers::copy_view;
using layers::RevIn;
using layers::TimeLinear;
using layers::transpose_windows;

// The options TSMixer and TSMixerx share, with neuralforecast's names and defaults (Derived, the
// model's Config, names its default dropout: kDefaultDropout).
template <class Derived>
struct MixerConfig : ForecastConfig<Derived> {
  Index n_block = 2;
  Index ff_dim = 64;
  double dropout = Derived::kDefaultDropout;
  bool revin = true;
  uint64_t stream_base = 1;  // dropout layers take consecutive Philox streams from here

  void visit(OptionVisitor& v) {
    v("n_block", n_block, "Mixing blocks");
    v("ff_dim", ff_dim, "Hidden width of each feature mixer's MLP");
    v("dropout", dropout, "Dropout probability");
    v("revin", revin, "Reversible instance normalisation of the input and output");
  }
  void validate_options() const {
    if (n_block < 0) option_out_of_range("n_block", "an integer ≥ 0", double(n_block));
    if (ff_dim < 1) option_out_of_range("ff_dim", "an integer ≥ 1", double(ff_dim));
    if (!(dropout >= 0 && dropout < 1))
      option_out_of_range("dropout", "a probability in [0, 1)", dropout);
  }
};

// TSMixerx FeatureMixing(in → out), post-norm, on [B·H, in]:
//   a = dropout₁(relu(x·W₁ᵀ + b₁));  s = dropout₂(a·W₂ᵀ + b₂) + (in ≠ out ? x·Wₚᵀ + bₚ : x)
//   y = LayerNorm_(H, out)(s)
// Names: feature_lin_1, feature_lin_2, project_residual (in ≠ out only), feature_norm.
template <class T>
struct FeatureMixingX : NamedLayers<FeatureMixingX<T>> {
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
  void for_each_layer(F&& f) {
    f("feature_lin_1.", lin1);
    f("feature_lin_2.", lin2);
    if (projects()) f("project_residual.", proj);
    f("feature_norm.", norm);
  }
  // max_rows: rows of x, B·H.
  void plan(Planner& planner, Index max_rows);
  // row0: the first row's index in the whole batch (dropout masks, layers/dropout.h).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0 = 0);
  // dx overwritten; an empty dx (no data) skips the input gradient.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx, Index row0 = 0);
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;
};

// TSMixerx TemporalMixing(C), post-norm, on [B·H, C]:
//   y = LayerNorm_(H, C)(x + dropout(relu(W · x_b + b)))     W [H, H]
// Names: temporal_norm, temporal_lin.
template <class T>
struct TemporalMixingX : NamedLayers<TemporalMixingX<T>> {
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
  void for_each_layer(F&& f) {
    f("temporal_norm.", norm);
    f("temporal_lin.", lin);
  }
  // max_rows: rows of x, B·H.
  void plan(Planner& planner, Index max_rows);
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0 = 0);
  // dx overwritten (dy may alias it).
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx, Index row0 = 0);
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;
};

// TSMixer TemporalMixing, pre-norm, on x [B·L, N] (no norm after the add):
//   y = x + dropout(relu(Linear_{L→L}(BN_{N·L}(x as [B, N, L]))))   (Linear along time)
// It works on the per-window transpose [B·N, L] = [B, N·L], so its BatchNorm1d (features
// ordered series-major, n·L + l, as neuralforecast flattens them) and Linear are the plain
// layers with PyTorch's parameter order. Names: temporal_norm, temporal_lin.
template <class T>
struct TemporalMixing : NamedLayers<TemporalMixing<T>> {
  struct Config {
    Index n_series = 0;    // N
    Index input_size = 0;  // L
    double dropout = 0.0;
    uint64_t stream = 0;
  };
  Config cfg;
  layers::BatchNorm1d<T> norm;
  layers::Linear<T> lin;
  layers::Dropout<T> drop;
  Buffer<T> tt, tu, tv;     // [B·N, L]: transposed x, normed, linear out
  Buffer<T> tw;             // [B·L, N]: linear out transposed back, then dropped
  Buffer<T> dtt, dtu, dtv;  // their gradients
  Buffer<T> dtw;

  explicit TemporalMixing(Config c);
  template <class F>
  void for_each_layer(F&& f) {
    f("temporal_norm.", norm);
    f("temporal_lin.", lin);
  }
  // max_rows: rows of x, B·L.
  void plan(Planner& planner, Index max_rows);
  // Training mode needs B ≥ 2 (BatchNorm batch statistics).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // dx (if it has data) overwritten.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx);
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows) const;
};

// TSMixer FeatureMixing(N → K → N), pre-norm, on x [B·L, N]:
//   y = x + dropout₂(Linear_{K→N}(dropout₁(relu(Linear_{N→K}(BN_{L·N}(x))))))
// BatchNorm1d's features are ordered time-major (l·N + n): the window [L, N] is one row of
// [B, L·N]. Names: feature_norm, feature_lin_1, feature_lin_2.
template <class T>
struct FeatureMixing : NamedLayers<FeatureMixing<T>> {
  struct Config {
    Index n_series = 0;    // N
    Index input_size = 0;  // L
    Index ff = 0;          // K
    double dropout = 0.0;
    uint64_t stream = 0;  // uses stream and stream + 1
  };
  Config cfg;
  layers::BatchNorm1d<T> norm;
  layers::Linear<T> lin1, lin2;
  layers::Dropout<T> drop1, drop2;
  Buffer<T> fb, f1, f2;          // [B·L, N], [B·L, K], [B·L, N]
  Buffer<T> dfb, df1, df2, dbn;  // their gradients; dbn: the norm's input gradient

  explicit FeatureMixing(Config c);
  template <class F>
  void for_each_layer(F&& f) {
    f("feature_norm.", norm);
    f("feature_lin_1.", lin1);
    f("feature_lin_2.", lin2);
  }
  // max_rows: rows of x, B·L.
  void plan(Planner& planner, Index max_rows);
  // Training mode needs B ≥ 2 (BatchNorm batch statistics).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // dx overwritten.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx);
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows) const;
};

}  // namespace shoal::models
