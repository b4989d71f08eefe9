// Linear: y = act(x · Wᵀ + b), the activation (ReLU or GELU) fused into the GEMM epilogue.
// Shapes: x [N, I], W [O, I], b [O], y [N, O]. Init as PyTorch: W, b ~ U(±1/√I).
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/gemm.h"

namespace shoal::layers {

using kernels::Act;

template <class T>
struct Linear {
  struct Config {
    Index in = 0;
    Index out = 0;
    bool bias = true;
    Act act = Act::kNone;
  };
  struct Params {
    Param<T> weight;  // [O, I]
    Param<T> bias;    // [O]
  };

  Config cfg;
  Params p;
  Buffer<T> pre;  // [N, O] pre-activation, kept only for GELU
  Buffer<T> dz;   // [N, O] scratch: dy times the activation's derivative

  explicit Linear(Config c) : cfg(c) {}

  template <class F>
  void for_each_param(F&& f) {
    f(std::string_view("weight"), p.weight);
    if (cfg.bias) f(std::string_view("bias"), p.bias);
  }

  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);
};

}  // namespace shoal::layers
