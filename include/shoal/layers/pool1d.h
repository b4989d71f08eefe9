// NHITS's input pooling: nn.MaxPool1d / nn.AvgPool1d(kernel_size=k, stride=k, ceil_mode=True)
// along each row, as neuralforecast's NHITSBlock applies it to the [B, L] insample window.
//   P = ⌈L / k⌉ windows w_p = [p·k, min(p·k + k, L)), the last one short when k ∤ L
//   max: y[n, p] = max over w_p of x[n, ·]; the gradient goes to the first maximal element of
//        w_p (PyTorch keeps the first index on ties; the last NaN wins over numbers)
//   avg: y[n, p] = mean over w_p (a short last window is divided by its own length: with no
//        padding, PyTorch's count_include_pad divisor is the clipped window)
// Shapes: x, dx [N, L], y, dy [N, P] (any ld). Legend: N rows, L length, P pooled length.
// Max backward recomputes the argmax from x, so nothing is stored between the passes.
#pragma once

#include <cstdint>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

enum class PoolMode : uint8_t { kMax, kAvg };

template <class T>
struct Pool1d {
  struct Config {
    Index length = 0;       // L
    Index kernel_size = 1;  // k (= stride)
    PoolMode mode = PoolMode::kMax;
  };
  struct Params {};

  Config cfg;
  Params p;

  explicit Pool1d(Config c) : cfg(c) {}

  Index out_length() const { return (cfg.length + cfg.kernel_size - 1) / cfg.kernel_size; }

  template <class F>
  void for_each_param(F&&) {}
  // Validates the config; no parameters, no buffers.
  void plan(Planner& planner, Index max_rows);
  void init(RngStream&) {}
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // dx overwritten (never aliasing dy).
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, ConstMat<T> dy, MatView<T> dx);

  // One comparison or add per input element; the backward writes every dx.
  profile::Cost forward_cost(double rows) const {
    return {rows * double(cfg.length), sizeof(T) * rows * double(cfg.length + out_length())};
  }
  profile::Cost backward_cost(double rows) const {
    const double reads = cfg.mode == PoolMode::kMax ? double(cfg.length) : 0.0;  // x, argmax
    return {rows * double(cfg.length),
            sizeof(T) * rows * (reads + double(out_length() + cfg.length))};
  }
};

}  // namespace shoal::layers
