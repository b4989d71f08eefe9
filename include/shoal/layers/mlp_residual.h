// TiDE's residual block (neuralforecast's MLPResidual) on x [N, I]:
//   a = dropout(relu(x·W₁ᵀ + b₁)·W₂ᵀ + b₂)      s = a + x·Wₛᵀ + bₛ      y = LayerNorm_O(s)
// (y = s when layernorm is false). TiDE uses it for the exogenous projections (per time step,
// N = B·T rows), the dense encoder and decoder (per window, N = B) and the temporal decoder:
// the same block on the B·H rows of the decoded [B, H, D] (D decoder_output_dim) activation,
// output O = Q per step. With O = 1 the LayerNorm maps every row to its bias (a one-element
// sample has no spread), exactly as in neuralforecast, and passes no gradient back.
// Shapes: x, dx [N, I]; y, dy [N, O]; hidden K. Names and torch's order: norm (layernorm
// only), lin1, lin2, skip. Init: lin1, lin2, skip draw as nn.Linear, in that order; norm is
// 1 and 0. Dropout uses cfg.stream.
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
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct MLPResidual {
  struct Config {
    Index input_dim = 0;    // I
    Index hidden_size = 0;  // K
    Index output_dim = 0;   // O
    double dropout = 0.0;
    bool layernorm = true;
    uint64_t stream = 0;
  };

  Config cfg;
  LayerNorm<T> norm;
  Dropout<T> drop;
  Linear<T> lin1, lin2, skip;
  Buffer<T> a1, a2, s;  // [N, K] relu(lin1), [N, O] dropout(lin2), [N, O] pre-norm sum
  Buffer<T> da1, ds;    // [N, K], [N, O]
  Buffer<T> da2;        // [N, O], with dropout only
  Buffer<T> dskip;      // [N, I] the skip's share of dx

  explicit MLPResidual(Config c);

  template <class F>
  void for_each_param(F&& f) {
    each_child([&](std::string_view prefix, auto& layer) {
      layer.for_each_param([&](std::string_view name, Param<T>& p) {
        f(std::string(prefix) + std::string(name), p);
      });
    });
  }
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // row0: the first row's index in the whole batch (dropout masks, layers/dropout.h).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0 = 0);
  // dx overwritten; an empty dx (no data) skips the input gradient. Parameter grads accumulate.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx, Index row0 = 0);

  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;

  // A LayerNorm over one output normalizes every row to 0, so y is the norm's bias whatever x
  // is: x cannot change y and receives no gradient (dx = 0, and lin1, lin2, skip and the norm's
  // weight get zero gradients). A caller may then skip computing x (TiDE's dense layers).
  bool output_is_bias() const { return cfg.layernorm && cfg.output_dim == 1; }

 private:
  template <class F>
  void each_child(F&& f) {
    if (cfg.layernorm) f("norm.", norm);
    f("lin1.", lin1);
    f("lin2.", lin2);
    f("skip.", skip);
  }
};

// TiDE's temporal decoder: the residual block applied per horizon step to the decoded features
// and, with future exogenous inputs, their projection at that step:
//   x_t = [dec[b, t·D : (t+1)·D] | futr[b, t·F : (t+1)·F]]  (D + F wide)   y[b, t·Q + q] =
//   block(x_t)_q
// (neuralforecast: temporal_decoder(cat(x.reshape(B, H, D), x_futr_exog[:, L:], dim=2))).
// dec [B, H·D] is the dense decoder's output, futr [B, H·F] the horizon steps of the projected
// future exogenous (F = 0: none), y [B, H·Q]. The block runs on its own [B·H, D + F] gather of
// them, so the three may have any ld. Rows are windows (B); the block inside is planned for B·H.
// Backward: ddec [B, H·D] and dfutr [B, H·F] overwritten (either may be empty: skipped).
template <class T>
struct TemporalDecoder {
  struct Config {
    Index h = 0;                   // H
    Index decoder_output_dim = 0;  // D
    Index futr_dim = 0;            // F (TiDE's temporal_width when it has future exogenous)
    Index hidden_size = 0;         // temporal_decoder_dim
    Index outputs = 1;             // Q
    double dropout = 0.0;
    bool layernorm = true;
    uint64_t stream = 0;
  };

  Config cfg;
  MLPResidual<T> block;
  Buffer<T> x, y;  // [B·H, D + F], [B·H, Q]
  Buffer<T> dx;    // [B·H, D + F]

  explicit TemporalDecoder(Config c)
      : cfg(c),
        block({.input_dim = c.decoder_output_dim + c.futr_dim,
               .hidden_size = c.hidden_size,
               .output_dim = c.outputs,
               .dropout = c.dropout,
               .layernorm = c.layernorm,
               .stream = c.stream}) {}

  template <class F>
  void for_each_param(F&& f) {
    block.for_each_param(f);
  }
  // max_rows: windows B.
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng) { block.init(rng); }
  // row0: the first window's index in the whole batch (dropout masks).
  void forward(const Ctx& ctx, ConstMat<T> dec, ConstMat<T> futr, MatView<T> out, Index row0 = 0);
  void backward(const Ctx& ctx, ConstMat<T> dout, MatView<T> ddec, MatView<T> dfutr,
                Index row0 = 0);
  // When block.output_is_bias(): out is the LayerNorm's bias at every step, whatever dec and
  // futr are, and the only gradient is the bias's (Σ dout): the full block's results, as a
  // one-element sample's normalized value is exactly 0.
  bool output_is_bias() const { return block.output_is_bias(); }
  void forward_bias(MatView<T> out) const;
  void backward_bias(ConstMat<T> dout);

  profile::Cost forward_cost(double rows) const {
    const double w = double(cfg.decoder_output_dim + cfg.futr_dim), h = double(cfg.h);
    if (output_is_bias()) return {0, sizeof(T) * rows * h};  // forward_bias: writes
    return block.forward_cost(rows * h) +
           profile::Cost{0, 2 * sizeof(T) * rows * h * (w + double(cfg.outputs))};
  }
  profile::Cost backward_cost(double rows, bool dx_wanted = true) const {
    const double w = double(cfg.decoder_output_dim + cfg.futr_dim), h = double(cfg.h);
    if (output_is_bias()) return {rows * h, sizeof(T) * rows * h};  // backward_bias: a sum
    return block.backward_cost(rows * h, dx_wanted) +
           profile::Cost{0, 2 * sizeof(T) * rows * h * (w + double(cfg.outputs))};
  }
};

}  // namespace shoal::layers
