// One recurrent layer over a whole sequence: PyTorch's nn.RNN (tanh), nn.GRU and nn.LSTM cells
// with their gate orders and equations, forward and backward through time in one call each.
//   RNN   h = tanh(W_ih x + b_ih + W_hh h' + b_hh)
//   GRU   r, z = σ(W_i{r,z} x + b_i{r,z} + W_h{r,z} h' + b_h{r,z})
//         n = tanh(W_in x + b_in + r ⊙ (W_hn h' + b_hn))        h = (1 − z) ⊙ n + z ⊙ h'
//   LSTM  i, f, o = σ(·), g = tanh(·) of W_ih x + b_ih + W_hh h' + b_hh (rows i | f | g | o)
//         c = f ⊙ c' + i ⊙ g                                     h = o ⊙ tanh(c)
// An LSTM with a projection (PyTorch's proj_size P > 0) carries the projected state instead:
//         m = o ⊙ tanh(c)          h = W_hr m  [P]  (h' and the layer's output are P wide)
// (h', c': the previous step's state, zero before the first step unless the forward is given
// one: RnnLayer's h0 and c0.) Every matrix is time-major:
// row t·B + b holds step t of sequence b, so one step's rows are a contiguous [B, ·] block, the
// input product of all steps is one GEMM before the loop, and the backward's weight gradients
// are one GEMM each after it. Each step then costs one [B, Hd]·[Hd, G·Hd] GEMM and one fused
// pass of the gate math, its state in a [B, Hd] block that stays in cache.
// Legend: T steps, B sequences, I input features, Hd hidden size, G gates (RNN 1, GRU 3, LSTM 4),
// R the state's width (P with a projection, else Hd).
// Derivation: docs/derivations/recurrent.md.
#pragma once

#include <cstdint>

#include "shoal/core/tensor.h"

namespace shoal::kernels {

enum class RnnCell : uint8_t { kRnnTanh, kGru, kLstm };

constexpr Index rnn_gates(RnnCell c) {
  return c == RnnCell::kLstm ? 4 : c == RnnCell::kGru ? 3 : 1;
}

// A layer's shape and weights (PyTorch's weight_ih_l{k} [G·Hd, I], weight_hh_l{k} [G·Hd, R],
// bias_ih_l{k}, bias_hh_l{k} [G·Hd]; null biases: bias=False; weight_hr_l{k} [P, Hd], LSTM with
// proj > 0 only).
template <class T>
struct RnnLayer {
  RnnCell cell = RnnCell::kLstm;
  Index steps = 0, batch = 0, in = 0, hidden = 0;
  Index proj = 0;  // P: LSTM only, 0 < P < Hd; 0: no projection
  const T* w_ih = nullptr;
  const T* w_hh = nullptr;
  const T* b_ih = nullptr;
  const T* b_hh = nullptr;
  const T* w_hr = nullptr;
  // The forward's state before its first step, [B, R] and (LSTM) [B, Hd]; null: zero. Inference
  // continues a sequence with it (a recurrent forecast's decode); the backward takes a zero
  // initial state only.
  const T* h0 = nullptr;
  const T* c0 = nullptr;

  Index state() const { return proj > 0 ? proj : hidden; }  // R
};

// What the forward keeps for the backward, besides its output h [T·B, R]:
//   gates [T·B, G·Hd]  the activated gates (LSTM i f g o, GRU r z n; RNN: unused, may be null)
//   hn    [T·B, Hd]    GRU: W_hn h' + b_hn, the candidate's hidden part (else null)
//   c     [T·B, Hd]    LSTM: the cell state (else null)
//   m     [T·B, Hd]    LSTM with a projection: o ⊙ tanh(c) before it (else null)
template <class T>
struct RnnSaved {
  T* gates = nullptr;
  T* hn = nullptr;
  T* c = nullptr;
  T* m = nullptr;
};

// The gradients a backward accumulates (+=) into: [G·Hd, I], [G·Hd, R], [G·Hd] × 2 (null
// biases when the layer has none), [P, Hd] (a projection's).
template <class T>
struct RnnGrads {
  T* dw_ih = nullptr;
  T* dw_hh = nullptr;
  T* db_ih = nullptr;
  T* db_hh = nullptr;
  T* dw_hr = nullptr;
};

// Scratch elements the forward and the backward need.
Index rnn_forward_scratch(RnnCell cell, Index steps, Index batch, Index hidden);
Index rnn_backward_scratch(RnnCell cell, Index steps, Index batch, Index hidden);

// h [T·B, R] from x [T·B, I]; fills `saved`.
template <class T>
void rnn_forward(const RnnLayer<T>& layer, const T* x, T* h, const RnnSaved<T>& saved, T* scratch);
template <class T>
void rnn_forward_ref(const RnnLayer<T>& layer, const T* x, T* h, const RnnSaved<T>& saved,
                     T* scratch);

// Back through time from dh [T·B, R] (∂L/∂h of every step, from the layers above): the
// weights' gradients accumulate into `grads`; dx [T·B, I] is written when not null. x, h and
// `saved` are the forward's.
template <class T>
void rnn_backward(const RnnLayer<T>& layer, const T* x, const T* h, const RnnSaved<T>& saved,
                  const T* dh, T* dx, const RnnGrads<T>& grads, T* scratch);
template <class T>
void rnn_backward_ref(const RnnLayer<T>& layer, const T* x, const T* h, const RnnSaved<T>& saved,
                      const T* dh, T* dx, const RnnGrads<T>& grads, T* scratch);

// The per-step gate math alone (the fast kernels' inner pass, exposed for the tests), on one
// step's [B, ·] blocks: see recurrent.cpp.
template <class T>
void lstm_step_forward(Index b, Index hd, T* gates, const T* c_prev, T* c, T* h);
template <class T>
void lstm_step_forward_ref(Index b, Index hd, T* gates, const T* c_prev, T* c, T* h);

}  // namespace shoal::kernels
