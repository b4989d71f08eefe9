// Activation layers: y = f(x), dx = dy ⊙ f'(·). Shapes: x, y, dy, dx [N, F] (any ld).
// Legend: N batch rows, F features.
//   ReLU: f(x) = max(x, 0); f' is taken from the output: 1 where y > 0, else 0 (0 at x = 0, as
//         in PyTorch). Backward reads only y, so forward may run in place (y aliasing x).
//   GELU: f(x) = x · Φ(x) with the exact erf form (PyTorch's default approximate='none');
//         f'(x) = Φ(x) + x · φ(x). Backward reads x, so x must survive until backward.
// dx may alias dy. Standalone activations are for places a Linear epilogue cannot fuse them
// (after a norm, a residual add, an embedding).
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/gemm.h"

namespace shoal::layers {

template <class T, kernels::Act A>
struct Activation {
  static_assert(A == kernels::Act::kRelu || A == kernels::Act::kGelu);
  struct Config {};
  struct Params {};

  Config cfg;
  Params p;

  explicit Activation(Config c = {}) : cfg(c) {}

  template <class F>
  void for_each_param(F&&) {}

  void plan(Planner&, Index) {}  // no parameters, no buffers
  void init(RngStream&) {}
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);
};

template <class T>
using ReLU = Activation<T, kernels::Act::kRelu>;
template <class T>
using GELU = Activation<T, kernels::Act::kGelu>;

}  // namespace shoal::layers
