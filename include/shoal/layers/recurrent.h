// A stack of recurrent layers, PyTorch's nn.RNN (tanh) / nn.GRU / nn.LSTM with batch_first
// inputs and a zero initial state, over sequences stored time-major: row t·B + b of x [T·B, I]
// and y [T·B, Hd] is step t of sequence b. Layer k > 0 reads layer k − 1's output, after
// dropout(p) in training as torch applies it (not after the last layer). The cell math and the
// loop through time are kernels/recurrent.h's, one call per layer and direction of the pass.
// Parameters per layer k, torch's names and order: weight_ih_l{k} [G·Hd, I_k], weight_hh_l{k}
// [G·Hd, Hd], bias_ih_l{k}, bias_hh_l{k} [G·Hd]; init U(±1/√Hd) for all, in that order.
// Legend: T steps, B sequences, I input features (I_0 = I, I_k = Hd), Hd hidden size, G gates
// (RNN 1, GRU 3, LSTM 4), K layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/kernels/recurrent.h"
#include "shoal/layers/dropout.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

using kernels::RnnCell;

template <class T>
struct Recurrent {
  struct Config {
    RnnCell cell = RnnCell::kLstm;
    Index in = 0;          // I
    Index hidden = 0;      // Hd
    Index num_layers = 1;  // K
    Index steps = 0;       // T: a call's rows are T·B
    bool bias = true;
    double dropout = 0;   // between layers, in training
    uint64_t stream = 0;  // Philox stream of the dropout masks
  };
  struct LayerParams {
    Param<T> w_ih, w_hh, b_ih, b_hh;
  };

  Config cfg;
  std::vector<LayerParams> p;

  explicit Recurrent(Config c);

  template <class F>
  void for_each_param(F&& f) {
    for (size_t k = 0; k < p.size(); ++k) {
      const std::string s = std::to_string(k);
      f("weight_ih_l" + s, p[k].w_ih);
      f("weight_hh_l" + s, p[k].w_hh);
      if (cfg.bias) {
        f("bias_ih_l" + s, p[k].b_ih);
        f("bias_hh_l" + s, p[k].b_hh);
      }
    }
  }

  // max_rows: T·B at the largest batch (a multiple of T).
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  // `row0`: the first sequence's index in the whole batch, when x holds a chunk of it (the
  // dropout masks are drawn per sequence of the whole batch).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0 = 0);
  // Parameter gradients accumulate; dx (when it has data) is written. dy may be modified.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, MatView<T> dy, MatView<T> dx,
                Index row0 = 0);

  // Analytic cost of a call on `rows` = T·B rows: the input and hidden products, the gate math
  // (transcendentals counted as one flop each), and the traffic of the saved activations.
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;

 private:
  Index gates() const { return kernels::rnn_gates(cfg.cell) * cfg.hidden; }
  Index in_of(size_t k) const { return k == 0 ? cfg.in : cfg.hidden; }
  bool dropping(const Ctx& ctx) const { return ctx.training && cfg.dropout > 0; }
  kernels::RnnLayer<T> layer(size_t k, Index batch) const;
  kernels::RnnSaved<T> saved(size_t k);

  Dropout<T> drop_;
  // Per layer: gates [T·B, G·Hd] (RNN: none), GRU's hn and LSTM's c [T·B, Hd]; outputs of the
  // layers below the last [T·B, Hd], their dropped copies (the next layer's input) and gradients.
  std::vector<Buffer<T>> gates_, hn_, c_, h_, hd_, dh_;
  Buffer<T> scratch_;
};

}  // namespace shoal::layers
