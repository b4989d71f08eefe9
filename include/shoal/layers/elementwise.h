// Two-input elementwise layers on [N, F] views (any ld each). Legend: N batch rows, F features.
//   Add (residual):  y = a + b;      da = dy,      db = dy
//   Mul (GMF):       y = a ⊙ b;      da = dy ⊙ b,  db = dy ⊙ a
// Input gradients overwrite (layers/README.md). A gradient view with no data is skipped (an
// input that needs none). y may alias a or b; da or db may alias dy (each element is read
// before it is written). Add's backward does not read a, b or y; it takes them so that model
// code calls both layers alike.
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"

namespace shoal::layers {

template <class T>
struct Add {
  struct Config {};
  struct Params {};
  Config cfg;
  Params p;

  explicit Add(Config c = {}) : cfg(c) {}
  template <class F>
  void for_each_param(F&&) {}
  void plan(Planner&, Index) {}
  void init(RngStream&) {}
  void forward(const Ctx& ctx, ConstMat<T> a, ConstMat<T> b, MatView<T> y);
  void backward(const Ctx& ctx, ConstMat<T> a, ConstMat<T> b, ConstMat<T> y, ConstMat<T> dy,
                MatView<T> da, MatView<T> db);
};

template <class T>
struct Mul {
  struct Config {};
  struct Params {};
  Config cfg;
  Params p;

  explicit Mul(Config c = {}) : cfg(c) {}
  template <class F>
  void for_each_param(F&&) {}
  void plan(Planner&, Index) {}
  void init(RngStream&) {}
  void forward(const Ctx& ctx, ConstMat<T> a, ConstMat<T> b, MatView<T> y);
  void backward(const Ctx& ctx, ConstMat<T> a, ConstMat<T> b, ConstMat<T> y, ConstMat<T> dy,
                MatView<T> da, MatView<T> db);
};

}  // namespace shoal::layers
