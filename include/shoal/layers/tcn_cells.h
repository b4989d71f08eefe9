// A stack of neuralforecast's BiTCN cells (its TCNCell) in one direction, over sequences stored
// time-major (row t·B + b of x [T·B, C] is step t of sequence b). Cell j, dilation 2^j, carries
// a state h and an output sum o (h_0 = x, o_0 = 0):
//   a = Conv_j(h)        kernel K, C → C, causal or anti-causal (kernels/causal_conv.h)
//   m = dropout(GELU(a))
//   z = Conv1x1_j(m)     C → 2C
//   h ← h + z[:, :C]     o ← o + z[:, C:]
// y = o after the last cell (the state is not returned). Parameters per cell j, neuralforecast's
// names: <j>.conv1.weight [C, C, K], <j>.conv1.bias [C], <j>.conv2.weight [2C, C, 1],
// <j>.conv2.bias [2C]; init neuralforecast's CustomConv1d, cell after cell: each weight then
// its bias U(−k, k) with k = √(1/(C·K)) as −k + 2k·rand in float (torch.rand's words).
// Dropout draws its mask like layers/dropout.h (stream cfg.stream + j), per window: row t·B + b
// of a time-major tensor is row (window0 + b)·T + t of the mask, so a batch run in chunks of
// windows draws the whole batch's masks (dropout_time_major).
// Legend: T steps, B sequences, C channels, K kernel size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/causal_conv.h"
#include "shoal/layers/dropout.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

using kernels::ConvDir;

// In place, dropout (backward: its gradient, the same mask) of a time-major x [T·B, F] whose B
// sequences are windows window0 … window0 + B − 1 of a batch: row t·B + b as the mask's row
// (window0 + b)·T + t. Nothing in eval or with p = 0.
template <class T>
void dropout_time_major(Dropout<T>& drop, const Ctx& ctx, MatView<T> x, Index steps, Index window0,
                        bool backward);

template <class T>
struct TCNCells {
  struct Config {
    Index channels = 0;  // C
    Index kernel = 2;    // K
    Index cells = 1;     // dilations 1, 2, 4, …
    ConvDir dir = ConvDir::kCausal;
    double dropout = 0;
    uint64_t stream = 0;  // the first cell's dropout stream; cell j takes stream + j
    Index steps = 0;      // T: a call's rows are T·B
  };
  struct CellParams {
    Param<T> w1, b1, w2, b2;
  };

  Config cfg;
  std::vector<CellParams> p;

  explicit TCNCells(Config c);

  template <class F>
  void for_each_param(F&& f) {
    for (size_t j = 0; j < p.size(); ++j) {
      const std::string s = std::to_string(j);
      f(s + ".conv1.weight", p[j].w1);
      f(s + ".conv1.bias", p[j].b1);
      f(s + ".conv2.weight", p[j].w2);
      f(s + ".conv2.bias", p[j].b2);
    }
  }

  // max_rows: T·B at the largest batch (a multiple of T).
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // window0: the first window's index in the whole batch (dropout masks).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index window0 = 0);
  // Parameter gradients accumulate; dx (when it has data) is written. dy is kept.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx, Index window0 = 0);

  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;

 private:
  kernels::CausalConv<T> conv1(size_t j, Index batch) const;
  kernels::CausalConv<T> conv2(size_t j, Index batch) const;

  std::vector<Dropout<T>> drop_;
  std::vector<Buffer<T>> h_;  // [T·B, C] the state entering cells 1 … n−1
  std::vector<Buffer<T>> a_;  // [T·B, C] per cell, before GELU
  std::vector<Buffer<T>> m_;  // [T·B, C] per cell, after GELU and dropout
  Buffer<T> z_, dz_;          // [T·B, 2C]
  Buffer<T> dh_, dm_, tmp_;   // [T·B, C]
  Buffer<T> scratch_;
};

}  // namespace shoal::layers
