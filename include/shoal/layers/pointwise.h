// The element-wise activations neuralforecast's NBEATS, NBEATSx and NHITS offer besides ReLU
// (their `activation` argument), with PyTorch's definitions and defaults:
//   Softplus   y = log(1 + eˣ), or x where x > 20 (beta 1, threshold 20);  f' = σ(x), or 1
//   Tanh       y = tanh x;                                                  f' = 1 − y²
//   SELU       y = λ·x (x > 0), λ·α·(eˣ − 1) (x ≤ 0);                       f' = λ, or λ·α·eˣ
//              λ = 1.0507009873554804934, α = 1.6732632423543772848
//   LeakyReLU  y = x (x > 0), s·x (x ≤ 0), s = negative_slope = 0.01;       f' = 1, or s
//   Sigmoid    y = 1 / (1 + e⁻ˣ);                                           f' = y·(1 − y)
//   PReLU      y = x (x > 0), a·x (x ≤ 0), one learnable a (init 0.25);     f' = 1, or a;
//              da += Σ over x ≤ 0 of x·dy
// At x = 0 the derivatives take PyTorch's branch (SELU λ·α, LeakyReLU s, PReLU a).
// Shapes: x, y, dy, dx [N, F] (any ld). Legend: N rows, F features.
// Tanh and Sigmoid differentiate from y, the others from x; y may alias x only for Tanh and
// Sigmoid, dx may alias dy for all. Parameter gradients accumulate (layers/README.md).
#pragma once

#include <cstdint>
#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

enum class Pointwise : uint8_t { kSoftplus, kTanh, kSelu, kLeakyRelu, kSigmoid };

// FLOPs per element of a forward and of a backward (exp, log, tanh counted as 1 each, as
// profile/cost.h counts a divide).
double pointwise_flops(Pointwise f);
double pointwise_grad_flops(Pointwise f);

template <class T, Pointwise Fn>
struct PointwiseAct {
  struct Config {
    double negative_slope = 0.01;  // LeakyReLU only
  };
  struct Params {};

  Config cfg;
  Params p;

  explicit PointwiseAct(Config c = {}) : cfg(c) {}

  template <class F>
  void for_each_param(F&&) {}
  void plan(Planner&, Index) {}  // no parameters, no buffers
  void init(RngStream&) {}
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);

  profile::Cost forward_cost(double rows, double cols) const {
    return profile::elementwise(rows, cols, pointwise_flops(Fn), 1, sizeof(T));
  }
  profile::Cost backward_cost(double rows, double cols) const {
    return profile::elementwise(rows, cols, pointwise_grad_flops(Fn), 2, sizeof(T));
  }
};

template <class T>
using Softplus = PointwiseAct<T, Pointwise::kSoftplus>;
template <class T>
using Tanh = PointwiseAct<T, Pointwise::kTanh>;
template <class T>
using SELU = PointwiseAct<T, Pointwise::kSelu>;
template <class T>
using LeakyReLU = PointwiseAct<T, Pointwise::kLeakyRelu>;
template <class T>
using Sigmoid = PointwiseAct<T, Pointwise::kSigmoid>;

// nn.PReLU(num_parameters=1, init=0.25). neuralforecast builds one activation module per block
// and reuses it after every hidden Linear, so a block's PReLU layers share this one weight:
// a model calls the same PReLU on each of those activations, and the gradients accumulate.
template <class T>
struct PReLU {
  struct Config {
    double init = 0.25;
  };
  struct Params {
    Param<T> weight;  // [1]
  };

  Config cfg;
  Params p;

  explicit PReLU(Config c = {}) : cfg(c) {}

  template <class F>
  void for_each_param(F&& f) {
    f(std::string_view("weight"), p.weight);
  }
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);  // constant: draws nothing, as torch
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);

  profile::Cost forward_cost(double rows, double cols) const {
    return profile::elementwise(rows, cols, 2, 1, sizeof(T));
  }
  profile::Cost backward_cost(double rows, double cols) const {
    return profile::elementwise(rows, cols, 4, 2, sizeof(T));
  }
};

}  // namespace shoal::layers
