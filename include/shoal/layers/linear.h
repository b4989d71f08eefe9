// Linear: y = act(x · Wᵀ + b), the activation (ReLU or GELU) fused into the GEMM epilogue.
// Shapes: x [N, I], W [O, I], b [O], y [N, O]. Init as PyTorch: W, b ~ U(±1/√I).
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/gemm.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

using kernels::Act;

template <class T>
struct Linear {
  struct Config {
    Index in = 0;
    Index out = 0;
    bool bias = true;
    Act act = Act::kNone;
    // The same map as a kernel-1 Conv1d over the rows (neuralforecast's TransEncoderLayer
    // conv1/conv2): the weight is named with torch's shape [O, I, 1], so saved weights load
    // into the peer's module as they are.
    bool pointwise_conv = false;
  };
  struct Params {
    Param<T> weight;  // [O, I] ([O, I, 1] as a pointwise convolution)
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

  // Analytic cost (profile/cost.h) of one call on `rows` rows; a backward without dx computes
  // the parameter gradients only.
  profile::Cost forward_cost(double rows) const {
    return profile::linear_forward(rows, double(cfg.in), double(cfg.out), cfg.bias, act_kind(),
                                   sizeof(T));
  }
  profile::Cost backward_cost(double rows, bool dx = true) const {
    profile::Cost c =
        profile::linear_backward_dw(rows, double(cfg.in), double(cfg.out), cfg.bias, sizeof(T));
    if (dx)
      c +=
          profile::linear_backward_dx(rows, double(cfg.in), double(cfg.out), act_kind(), sizeof(T));
    return c;
  }
  profile::ActKind act_kind() const {
    return cfg.act == Act::kRelu   ? profile::ActKind::kRelu
           : cfg.act == Act::kGelu ? profile::ActKind::kGelu
                                   : profile::ActKind::kNone;
  }
};

}  // namespace shoal::layers
