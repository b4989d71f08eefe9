// NHITS's forecast basis: F.interpolate(knots, size=H, mode=...) of each row's K knots to the
// horizon H, as neuralforecast's _IdentityBasis calls it (no scale_factor, PyTorch's defaults).
//   linear  (align_corners=False): s = K / H, u_h = max(s·(h + ½) − ½, 0), i = ⌊u_h⌋,
//           j = min(i + 1, K − 1), λ = u_h − i;  y[n, h] = (1 − λ)·x[n, i] + λ·x[n, j]
//   nearest: s = K / H in float (as torch computes it for every dtype), i = min(⌊h·s⌋, K − 1);
//           y[n, h] = x[n, i]
// s and u_h are computed in T, as torch's CPU kernel computes them in the tensor's math type.
// Backward scatters dy back with the same weights: dx[n, i] += (1 − λ)·dy[n, h], … (dx is
// overwritten first). Shapes: x, dx [N, K], y, dy [N, H] (any ld). Legend: N rows, K knots,
// H horizon. A row holds one output channel's knots: a model with Q outputs per step runs it on
// each output's K columns of its [B, Q·K] knots (NHITS, whose rows also hold the backcast).
#pragma once

#include <cstdint>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

enum class InterpMode : uint8_t { kLinear, kNearest };

template <class T>
struct Interpolate1d {
  struct Config {
    Index in_size = 0;   // K
    Index out_size = 0;  // H
    InterpMode mode = InterpMode::kLinear;
  };
  struct Params {};

  Config cfg;
  Params p;

  explicit Interpolate1d(Config c) : cfg(c) {}

  template <class F>
  void for_each_param(F&&) {}
  // Validates the config; no parameters, no buffers.
  void plan(Planner& planner, Index max_rows);
  void init(RngStream&) {}
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // dx overwritten (never aliasing dy).
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);

  // Source index and weight of output h (linear: y = (1 − λ)·x[i] + λ·x[j]; nearest: λ = 0).
  struct Tap {
    Index i, j;
    T lambda;
  };
  Tap tap(Index h) const;

  // Linear: 3 FLOPs per output element (two products, one add); nearest: a copy.
  profile::Cost forward_cost(double rows) const {
    const double per = cfg.mode == InterpMode::kLinear ? 3.0 : 0.0;
    return {per * rows * double(cfg.out_size),
            sizeof(T) * rows * double(cfg.in_size + cfg.out_size)};
  }
  profile::Cost backward_cost(double rows) const {
    const double per = cfg.mode == InterpMode::kLinear ? 4.0 : 1.0;
    return {per * rows * double(cfg.out_size),
            sizeof(T) * rows * double(cfg.in_size + cfg.out_size)};
  }
};

}  // namespace shoal::layers
