// Dropout (PyTorch semantics): in training y = x ⊙ m / (1 − p) with m ∈ {0, 1}, P(m = 0) = p;
// in eval, or with p = 0, y = x. Backward: dx = dy ⊙ m / (1 − p) (eval: dx = dy).
// Shapes: x, y, dy, dx [N, F] (any ld). Legend: N batch rows, F features.
//
// The mask is never stored. Element e = r·F + c of the logical [N, F] tensor (independent of
// ld) at step s is kept iff  u01(Philox(ctx.seed, cfg.stream).block(s, e / 4)[e % 4]) >= p,
// so backward regenerates the forward's mask and the result does not depend on threads or
// on the memory layout. u01 has 24 bits, so the test is done exactly in integers:
// (word >> 8) >= ceil(p · 2²⁴).
//
// A caller that runs the batch in row blocks (sub-batches, threads) passes row0, the index of
// the block's first row in the logical tensor, so each block draws its own part of the mask.
// y may alias x and dx may alias dy (each element is read before it is written).
#pragma once

#include <cstdint>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct Dropout {
  struct Config {
    double p = 0.5;       // drop probability, in [0, 1)
    uint64_t stream = 0;  // Philox stream id, assigned by the model (unique per dropout layer)
  };
  struct Params {};

  Config cfg;
  Params p;

  explicit Dropout(Config c) : cfg(c) {}

  template <class F>
  void for_each_param(F&&) {}

  // Validates p; Dropout keeps no buffers.
  void plan(Planner& planner, Index max_rows);
  void init(RngStream&) {}
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0 = 0);
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx,
                Index row0 = 0);

  // Whether element (r, c) of a [rows, cols] tensor is kept at ctx.step (training mode); for
  // tests and for fused consumers that need the same mask.
  bool kept(const Ctx& ctx, Index cols, Index r, Index c) const;

  // Analytic cost of a forward or a backward on [rows, cols] (the same mask multiply); nothing
  // when p = 0 (the identity).
  profile::Cost cost(double rows, double cols) const {
    return cfg.p > 0 ? profile::dropout(rows, cols, sizeof(T)) : profile::Cost{};
  }
};

}  // namespace shoal::layers
