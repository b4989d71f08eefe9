// A stack of dilated causal convolutions, neuralforecast's TemporalConvolutionEncoder: layer j
// is PyTorch's nn.Conv1d(I_j, O, K, dilation=d_j, padding=(K−1)·d_j) with its right padding cut
// off, then the activation (kernels/causal_conv.h), over sequences stored time-major: row
// t·B + b of x [T·B, I] and y [T·B, O] is step t of sequence b. I_0 = I, I_j = O after.
// Parameters per layer j, neuralforecast's names: tcn.<j>.conv.weight [O, I_j, K] and
// tcn.<j>.conv.bias [O]; init torch's Conv1d default (kaiming_uniform(a=√5), bias U(±1/√fan_in),
// fan_in = I_j·K), layer after layer.
// Legend: T steps, B sequences, I input channels, O output channels, K kernel size, d dilation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/causal_conv.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

using kernels::ConvAct;

template <class T>
struct TemporalConv {
  struct Config {
    Index in = 0;      // I
    Index out = 0;     // O
    Index kernel = 2;  // K
    std::vector<int64_t> dilations;
    ConvAct act = ConvAct::kRelu;
    Index steps = 0;  // T: a call's rows are T·B
  };
  struct LayerParams {
    Param<T> weight, bias;
  };

  Config cfg;
  std::vector<LayerParams> p;

  explicit TemporalConv(Config c);

  template <class F>
  void for_each_param(F&& f) {
    for (size_t j = 0; j < p.size(); ++j) {
      const std::string s = "tcn." + std::to_string(j) + ".conv.";
      f(s + "weight", p[j].weight);
      f(s + "bias", p[j].bias);
    }
  }

  // max_rows: T·B at the largest batch (a multiple of T).
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // Parameter gradients accumulate; dx (when it has data) is written. dy is overwritten.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, MatView<T> dy, MatView<T> dx);

  // Analytic cost of a call on `rows` = T·B rows: each tap's product on the rows it reaches,
  // the bias and activation pass, and the traffic of the saved outputs.
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;

 private:
  Index in_of(size_t j) const { return j == 0 ? cfg.in : cfg.out; }
  kernels::CausalConv<T> conv(size_t j, Index batch) const;
  // The share of the T·B rows tap k of layer j reaches.
  double reach(size_t j, Index k) const;

  // Outputs of the layers below the last [T·B, O] and their gradients.
  std::vector<Buffer<T>> h_, dh_;
  Buffer<T> scratch_;
};

}  // namespace shoal::layers
