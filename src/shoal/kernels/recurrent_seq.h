// Internal to src/shoal/kernels: the sequence loop of a recurrent layer (kernels/recurrent.h),
// shared by the fast kernels and the reference, which differ in `Ops`: the GEMM and the
// per-step gate passes (lstm/gru/tanh forward and backward over one step's [B, ·] blocks).
#pragma once

#include <algorithm>

#include "shoal/kernels/gemm.h"
#include "shoal/kernels/recurrent.h"

namespace shoal::kernels::detail {

// Forward scratch: a zero state [B·Hd], the summed biases [G·Hd], W_hhᵀ [R, G·Hd] (R ≤ Hd), GRU's
// hidden product [B·3Hd], an LSTM projection's W_hrᵀ [Hd, P] (P < Hd).
inline Index rnn_forward_scratch_of(RnnCell cell, Index batch, Index hidden) {
  const Index g = rnn_gates(cell) * hidden;
  return batch * hidden + g + hidden * g + (cell == RnnCell::kGru ? batch * g : 0) +
         (cell == RnnCell::kLstm ? hidden * hidden : 0);
}

// Backward scratch: dG [T·B, G·Hd] (the pre-activations' gradients of the input side), GRU's
// hidden-side dGh [T·B, 3Hd], and [B, Hd] blocks: ∂L/∂h through the next step, the step's
// whole ∂L/∂h, ∂L/∂c, a zero state, and an LSTM projection's ∂L/∂m; then a projection's ∂L/∂h of
// every step [T·B, P] (P < Hd), for its weight gradient in one GEMM after the loop.
inline Index rnn_backward_scratch_of(RnnCell cell, Index steps, Index batch, Index hidden) {
  const Index g = rnn_gates(cell) * hidden;
  return steps * batch * g * (cell == RnnCell::kGru ? 2 : 1) + 5 * batch * hidden +
         (cell == RnnCell::kLstm ? steps * batch * hidden : 0);
}

template <class T, class Ops>
void rnn_forward_seq(const RnnLayer<T>& L, const T* x, T* h, const RnnSaved<T>& s, T* scratch) {
  const Index tn = L.steps, b = L.batch, hd = L.hidden, gw = rnn_gates(L.cell) * hd, rw = L.state();
  const bool gru = L.cell == RnnCell::kGru, lstm = L.cell == RnnCell::kLstm, proj = L.proj > 0;
  T* zero = scratch;
  T* bias = zero + b * hd;
  T* wt = bias + gw;
  T* gh = wt + hd * gw;
  std::fill_n(zero, b * hd, T(0));
  // W_hhᵀ once, so that every step's hidden product is a plain [B, Hd]·[Hd, G·Hd] GEMM (a
  // transposed operand would be packed again at each step).
  for (Index r = 0; r < gw; ++r)
    for (Index k = 0; k < rw; ++k) wt[k * gw + r] = L.w_hh[r * rw + k];
  // W_hrᵀ likewise (where a GRU keeps its hidden product): the projection a plain step GEMM.
  T* wrt = gh;
  if (proj)
    for (Index r = 0; r < rw; ++r)
      for (Index k = 0; k < hd; ++k) wrt[k * rw + r] = L.w_hr[r * hd + k];
  // The input side of every step at once; RNN's pre-activations go straight into h.
  T* g = lstm || gru ? s.gates : h;
  Ops::gemm(Trans::kNo, Trans::kYes, tn * b, gw, L.in, T(1), x, L.in, L.w_ih, L.in, T(0), g, gw);
  // Both biases of an RNN or LSTM add to the same pre-activation; a GRU's hidden bias stays with
  // the hidden product, which r scales in the n gate.
  for (Index k = 0; k < gw; ++k)
    bias[k] =
        (L.b_ih != nullptr ? L.b_ih[k] : T(0)) + (!gru && L.b_hh != nullptr ? L.b_hh[k] : T(0));
  if (L.b_ih != nullptr || (!gru && L.b_hh != nullptr))
    for (Index r = 0; r < tn * b; ++r) {
      T* row = g + r * gw;
      for (Index k = 0; k < gw; ++k) row[k] += bias[k];
    }
  for (Index t = 0; t < tn; ++t) {
    T* gt = g + t * b * gw;
    T* ht = h + t * b * rw;
    const bool first = t == 0 && L.h0 == nullptr;  // the previous state is zero
    const T* hp = t > 0 ? ht - b * rw : L.h0 != nullptr ? L.h0 : zero;
    if (gru) {
      if (!first)
        Ops::step_gemm(b, gw, hd, T(1), hp, hd, wt, gw, T(0), gh, gw);
      else
        std::fill_n(gh, b * gw, T(0));
      if (L.b_hh != nullptr)
        for (Index r = 0; r < b; ++r)
          for (Index k = 0; k < gw; ++k) gh[r * gw + k] += L.b_hh[k];
      Ops::gru_step(b, hd, gt, gh, hp, s.hn + t * b * hd, ht);
      continue;
    }
    if (!first) Ops::step_gemm(b, gw, rw, T(1), hp, rw, wt, gw, T(1), gt, gw);
    if (lstm) {
      // With a projection the cell's output m is kept (the projection's backward reads it) and
      // its projection W_hr m becomes the state the next step reads.
      T* mt = proj ? s.m + t * b * hd : ht;
      const T* cp = t > 0 ? s.c + (t - 1) * b * hd : L.c0 != nullptr ? L.c0 : zero;
      Ops::lstm_step(b, hd, gt, cp, s.c + t * b * hd, mt);
      if (proj) Ops::step_gemm(b, rw, hd, T(1), mt, hd, wrt, rw, T(0), ht, rw);
    } else {
      Ops::tanh_step(b * hd, ht);
    }
  }
}

template <class T>
void add_column_sums(Index rows, Index cols, const T* a, T* sums) {
  for (Index r = 0; r < rows; ++r)
    for (Index k = 0; k < cols; ++k) sums[k] += a[r * cols + k];
}

template <class T, class Ops>
void rnn_backward_seq(const RnnLayer<T>& L, const T* x, const T* h, const RnnSaved<T>& s,
                      const T* dh, T* dx, const RnnGrads<T>& grads, T* scratch) {
  const Index tn = L.steps, b = L.batch, hd = L.hidden, gw = rnn_gates(L.cell) * hd, rw = L.state();
  const bool gru = L.cell == RnnCell::kGru, lstm = L.cell == RnnCell::kLstm, proj = L.proj > 0;
  T* dg = scratch;
  T* dgh = gru ? dg + tn * b * gw : dg;  // the hidden side's: the input side's but for a GRU
  T* dnext = (gru ? dgh + tn * b * gw : dg + tn * b * gw);
  T* dht_block = dnext + b * hd;
  T* dc = dht_block + b * hd;
  T* zero = dc + b * hd;
  T* dm = zero + b * hd;
  T* dhs = dm + b * hd;  // a projection's ∂L/∂h per step
  std::fill_n(dnext, b * hd, T(0));
  std::fill_n(dc, b * hd, T(0));
  std::fill_n(zero, b * hd, T(0));
  for (Index t = tn; t-- > 0;) {
    const Index o = t * b * hd, orw = t * b * rw;
    T* dht = proj ? dhs + orw : dht_block;
    for (Index k = 0; k < b * rw; ++k) dht[k] = dh[orw + k] + dnext[k];
    T* dgt = dg + t * b * gw;
    if (gru) {
      Ops::gru_step_back(b, hd, s.gates + t * b * gw, s.hn + o, t > 0 ? h + o - b * hd : zero, dht,
                         dgt, dgh + t * b * gw, dnext);
      if (t > 0) Ops::step_gemm(b, hd, gw, T(1), dgh + t * b * gw, gw, L.w_hh, hd, T(1), dnext, hd);
      continue;
    }
    if (lstm) {
      // Through the projection h = W_hr m: ∂L/∂m = ∂L/∂h · W_hr (∂L/∂W_hr after the loop).
      const T* dmt = dht;
      if (proj) {
        Ops::step_gemm(b, hd, rw, T(1), dht, rw, L.w_hr, hd, T(0), dm, hd);
        dmt = dm;
      }
      Ops::lstm_step_back(b, hd, s.gates + t * b * gw, t > 0 ? s.c + o - b * hd : zero, s.c + o,
                          dmt, dc, dgt);
    } else {
      Ops::tanh_step_back(b * hd, h + o, dht, dgt);
    }
    if (t > 0) Ops::step_gemm(b, rw, gw, T(1), dgt, gw, L.w_hh, rw, T(0), dnext, rw);
  }
  // The weights' gradients over every step at once: the input side against x, the hidden side of
  // steps 1.. against the states of steps ..T−2 (step 0's previous state is zero).
  Ops::gemm(Trans::kYes, Trans::kNo, gw, L.in, tn * b, T(1), dg, gw, x, L.in, T(1), grads.dw_ih,
            L.in);
  if (tn > 1)
    Ops::gemm(Trans::kYes, Trans::kNo, gw, rw, (tn - 1) * b, T(1), dgh + b * gw, gw, h, rw, T(1),
              grads.dw_hh, rw);
  if (proj)  // ∂L/∂W_hr += Σ_t ∂L/∂h_tᵀ · m_t
    Ops::gemm(Trans::kYes, Trans::kNo, rw, hd, tn * b, T(1), dhs, rw, s.m, hd, T(1), grads.dw_hr,
              hd);
  if (grads.db_ih != nullptr) add_column_sums(tn * b, gw, dg, grads.db_ih);
  if (grads.db_hh != nullptr) add_column_sums(tn * b, gw, dgh, grads.db_hh);
  if (dx != nullptr)
    Ops::gemm(Trans::kNo, Trans::kNo, tn * b, L.in, gw, T(1), dg, gw, L.w_ih, L.in, T(0), dx, L.in);
}

}  // namespace shoal::kernels::detail
