// A stack of recurrent layers, PyTorch's nn.RNN (tanh) / nn.GRU / nn.LSTM with batch_first
// inputs and a zero initial state, over sequences stored time-major: row t·B + b of x [T·B, I]
// and y [T·B, R] is step t of sequence b. Layer k > 0 reads layer k − 1's output, after
// dropout(p) in training as torch applies it (not after the last layer). The cell math and the
// loop through time are kernels/recurrent.h's, one call per layer and direction of the pass.
// Parameters per layer k, torch's names and order: weight_ih_l{k} [G·Hd, I_k], weight_hh_l{k}
// [G·Hd, R], bias_ih_l{k}, bias_hh_l{k} [G·Hd], and an LSTM's projection weight_hr_l{k} [P, Hd]
// (torch's proj_size P > 0: the state each step carries and outputs is W_hr (o ⊙ tanh(c)));
// init U(±1/√Hd) for all, in that order.
// Legend: T steps, B sequences, I input features (I_0 = I, I_k = R), Hd hidden size, P proj,
// R state width (P when P > 0, else Hd), G gates (RNN 1, GRU 3, LSTM 4), K layers.
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
    Index proj = 0;        // P: LSTM only, 0 < P < Hd; 0: none
    Index steps = 0;       // T: a call's rows are T·B
    bool bias = true;
    double dropout = 0;   // between layers, in training
    uint64_t stream = 0;  // Philox stream of the dropout masks
  };
  struct LayerParams {
    Param<T> w_ih, w_hh, b_ih, b_hh, w_hr;
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
      if (cfg.proj > 0) f("weight_hr_l" + s, p[k].w_hr);
    }
  }

  // max_rows: T·B at the largest batch (a multiple of T).
  void plan(Planner& planner, Index max_rows);
  // The steps of the calls that follow, at most the planned T (a model whose sequences are
  // shorter at inference, or grow step by step as it decodes, plans for the longest).
  void set_steps(Index steps);
  void init(RngStream& rng);
  // `row0`: the first sequence's index in the whole batch, when x holds a chunk of it (the
  // dropout masks are drawn per sequence of the whole batch).
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y, Index row0 = 0);
  // Parameter gradients accumulate; dx (when it has data) is written. dy may be modified.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, MatView<T> dy, MatView<T> dx,
                Index row0 = 0);

  // Inference step by step (a recurrent forecast's decode): forward_carry runs the next steps of
  // the sequences, x [T·B, I] holding only those, from the state the previous carried call
  // ended in (zero after reset_carry), and keeps the state its last step reaches.
  void reset_carry() { carried_ = false; }
  void forward_carry(const Ctx& ctx, ConstMat<T> x, MatView<T> y);

  // Analytic cost of a call on `rows` = T·B rows: the input and hidden products, the gate math
  // (transcendentals counted as one flop each), and the traffic of the saved activations.
  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;

 private:
  Index gates() const { return kernels::rnn_gates(cfg.cell) * cfg.hidden; }
  Index state() const { return cfg.proj > 0 ? cfg.proj : cfg.hidden; }  // R
  Index in_of(size_t k) const { return k == 0 ? cfg.in : state(); }
  bool dropping(const Ctx& ctx) const { return ctx.training && cfg.dropout > 0; }
  kernels::RnnLayer<T> layer(size_t k, Index batch) const;
  kernels::RnnSaved<T> saved(size_t k);

  Dropout<T> drop_;
  // Per layer: gates [T·B, G·Hd] (RNN: none), GRU's hn, LSTM's c and a projection's m [T·B, Hd];
  // outputs of the layers below the last [T·B, R], their dropped copies (the next layer's input)
  // and gradients.
  std::vector<Buffer<T>> gates_, hn_, c_, m_, h_, hd_, dh_;
  // forward_carry's state per layer: h [B, R], LSTM c [B, Hd].
  std::vector<Buffer<T>> carry_h_, carry_c_;
  bool carried_ = false;
  Buffer<T> scratch_;
  Index planned_steps_ = 0;
};

}  // namespace shoal::layers
