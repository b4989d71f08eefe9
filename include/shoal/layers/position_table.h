// A learned table of one vector per token position, added to every window's tokens (PatchTST's
// W_pos, neuralforecast's positional_encoding with pe "zeros": U(−0.02, 0.02), learn_pe):
//   y[b·L + t, e] = x[b·L + t, e] + W_pos[t, e]
// Parameter W_pos [L, E]; with learn false it is state (drawn the same, saved, never trained),
// as neuralforecast's requires_grad=False parameter. Backward: dW_pos[t] += Σ_b dy[b·L + t]
// (learn only); dx = dy is the caller's (it passes dy on).
// Legend: B windows, L tokens per window, E width.
#pragma once

#include <string_view>

#include "shoal/core/arena.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct PositionTable {
  struct Config {
    Index tokens = 0;  // L
    Index width = 0;   // E
    bool learn = true;
    float bound = 0.02f;
  };
  Config cfg;
  Param<T> w_pos;     // [L, E] (learn)
  Buffer<T> w_fixed;  // [L, E] (not learn: state)

  explicit PositionTable(Config c) : cfg(c) {}
  template <class F>
  void for_each_param(F&& f) {
    if (cfg.learn) f(std::string_view("W_pos"), w_pos);
  }
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // y = x + W_pos per window (in place allowed); rows a multiple of L.
  void forward(ConstMat<T> x, MatView<T> y) const;
  void backward(ConstMat<T> dy);
  profile::Cost cost(double rows) const {
    return {.flops = rows * double(cfg.width),
            .bytes = 2.0 * rows * double(cfg.width * Index(sizeof(T)))};
  }

 private:
  ConstMat<T> table() const;
};

}  // namespace shoal::layers
