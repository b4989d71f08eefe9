// Elementwise kernels on flat arrays of n elements (a contiguous MatView is rows·cols of them;
// strided views are walked row by row by the caller). Every fast kernel has a *_ref twin with
// the plainest loop; both are instantiated for float and double. Outputs may alias inputs
// element for element (y == a is fine), but not with an offset.
#pragma once

#include "shoal/core/tensor.h"

namespace shoal::kernels {

// y = a + b
template <class T>
void add(Index n, const T* a, const T* b, T* y);
template <class T>
void add_ref(Index n, const T* a, const T* b, T* y);

// y += alpha · x
template <class T>
void axpy(Index n, T alpha, const T* x, T* y);
template <class T>
void axpy_ref(Index n, T alpha, const T* x, T* y);

// y = a ⊙ b
template <class T>
void mul(Index n, const T* a, const T* b, T* y);
template <class T>
void mul_ref(Index n, const T* a, const T* b, T* y);

// y = alpha · x
template <class T>
void scale(Index n, T alpha, const T* x, T* y);
template <class T>
void scale_ref(Index n, T alpha, const T* x, T* y);

// y = max(x, 0)
template <class T>
void relu_forward(Index n, const T* x, T* y);
template <class T>
void relu_forward_ref(Index n, const T* x, T* y);

// dx = dy ⊙ [y > 0], from ReLU's output y (PyTorch's convention: derivative 0 at 0)
template <class T>
void relu_backward(Index n, const T* y, const T* dy, T* dx);
template <class T>
void relu_backward_ref(Index n, const T* y, const T* dy, T* dx);

// dx = y > 0 ? dy : +0, from ReLU's output y (PyTorch's threshold_backward: a select, so
// dy's NaNs where y ≤ 0 and the sign of zero do not come through, unlike relu_backward)
template <class T>
void relu_mask(Index n, const T* y, const T* dy, T* dx);
template <class T>
void relu_mask_ref(Index n, const T* y, const T* dy, T* dx);

// Per row of y [R, C]: y += bias (bias [C]; skipped when null), then ReLU when `relu` as
// std::max(y, 0) (NaN and -0 kept).
template <class T>
void bias_act_rows(MatView<T> y, const T* bias, bool relu);
template <class T>
void bias_act_rows_ref(MatView<T> y, const T* bias, bool relu);

// Σ x[j] over [0, n) in double: lane_sum's 8 lanes and tree (reduce.h), so bitwise equal to
// lane_sum(n, [&](j) { return double(x[j]); }) on every target.
template <class T>
double sum_lanes(Index n, const T* x);
template <class T>
double sum_lanes_ref(Index n, const T* x);

// y = x · Φ(x) = 0.5 x (1 + erf(x / √2))   (exact GELU)
template <class T>
void gelu_forward(Index n, const T* x, T* y);
template <class T>
void gelu_forward_ref(Index n, const T* x, T* y);

// dx = dy ⊙ (Φ(x) + x φ(x)), from GELU's input x
template <class T>
void gelu_backward(Index n, const T* x, const T* dy, T* dx);
template <class T>
void gelu_backward_ref(Index n, const T* x, const T* dy, T* dx);

}  // namespace shoal::kernels
