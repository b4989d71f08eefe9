// Internal to src/shoal/kernels: the recurrent cells' gate math per element, in plain scalar
// code. The reference kernels run it over whole rows; the fast ones over the columns their
// vectors leave at a row's end. One step's blocks: g [B, G·Hd] (a row's gates side by side, in
// PyTorch's order), every other block [B, Hd]. Formulas: shoal/kernels/recurrent.h.
#pragma once

#include <cmath>

#include "shoal/core/tensor.h"

namespace shoal::kernels::cell {

template <class T>
inline T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// LSTM: g's pre-activations (i f g o) become the activated gates; c and h are written.
template <class T>
inline void lstm_forward(Index hd, Index j0, T* g, const T* cp, T* c, T* h) {
  for (Index j = j0; j < hd; ++j) {
    const T i = sigmoid(g[j]), f = sigmoid(g[hd + j]), gg = std::tanh(g[2 * hd + j]),
            o = sigmoid(g[3 * hd + j]);
    g[j] = i, g[hd + j] = f, g[2 * hd + j] = gg, g[3 * hd + j] = o;
    const T cn = f * cp[j] + i * gg;
    c[j] = cn;
    h[j] = o * std::tanh(cn);
  }
}

// LSTM backward of one step: dh is ∂L/∂h_t (whole), dc ∂L/∂c_t through the next step on entry
// and ∂L/∂c_{t−1} on exit; dg receives the gates' pre-activation gradients.
template <class T>
inline void lstm_backward(Index hd, Index j0, const T* g, const T* cp, const T* c, const T* dh,
                          T* dc, T* dg) {
  for (Index j = j0; j < hd; ++j) {
    const T i = g[j], f = g[hd + j], gg = g[2 * hd + j], o = g[3 * hd + j];
    const T tc = std::tanh(c[j]);
    const T dct = dc[j] + dh[j] * o * (T(1) - tc * tc);
    dg[j] = dct * gg * i * (T(1) - i);
    dg[hd + j] = dct * cp[j] * f * (T(1) - f);
    dg[2 * hd + j] = dct * i * (T(1) - gg * gg);
    dg[3 * hd + j] = dh[j] * tc * o * (T(1) - o);
    dc[j] = dct * f;
  }
}

// GRU: g holds W_ih x + b_ih (r z n) and becomes the activated gates; gh is W_hh h' + b_hh;
// hn keeps gh's n part, which the backward needs.
template <class T>
inline void gru_forward(Index hd, Index j0, T* g, const T* gh, const T* hp, T* hn, T* h) {
  for (Index j = j0; j < hd; ++j) {
    const T r = sigmoid(g[j] + gh[j]), z = sigmoid(g[hd + j] + gh[hd + j]);
    const T n = std::tanh(g[2 * hd + j] + r * gh[2 * hd + j]);
    g[j] = r, g[hd + j] = z, g[2 * hd + j] = n;
    hn[j] = gh[2 * hd + j];
    h[j] = (T(1) - z) * n + z * hp[j];
  }
}

// GRU backward of one step: dgi, dgh the pre-activation gradients of the input and hidden
// products (they differ in the n part, which r scales on the hidden side); dhp receives the
// direct share of ∂L/∂h_{t−1} (z ⊙ dh), the product with W_hh is the caller's.
template <class T>
inline void gru_backward(Index hd, Index j0, const T* g, const T* hn, const T* hp, const T* dh,
                         T* dgi, T* dgh, T* dhp) {
  for (Index j = j0; j < hd; ++j) {
    const T r = g[j], z = g[hd + j], n = g[2 * hd + j];
    const T dan = dh[j] * (T(1) - z) * (T(1) - n * n);
    const T dar = dan * hn[j] * r * (T(1) - r);
    const T daz = dh[j] * (hp[j] - n) * z * (T(1) - z);
    dgi[j] = dar, dgi[hd + j] = daz, dgi[2 * hd + j] = dan;
    dgh[j] = dar, dgh[hd + j] = daz, dgh[2 * hd + j] = dan * r;
    dhp[j] = dh[j] * z;
  }
}

// Elman RNN: a's pre-activation becomes h = tanh(a), in place.
template <class T>
inline void tanh_forward(Index n, Index j0, T* a) {
  for (Index j = j0; j < n; ++j) a[j] = std::tanh(a[j]);
}

// da = dh ⊙ (1 − h²).
template <class T>
inline void tanh_backward(Index n, Index j0, const T* h, const T* dh, T* da) {
  for (Index j = j0; j < n; ++j) da[j] = dh[j] * (T(1) - h[j] * h[j]);
}

}  // namespace shoal::kernels::cell
