// Reference elementwise kernels: one scalar statement per element, written from the formulas
// in elementwise.h, through the same scalar activation helpers the layers use.
#include <algorithm>

#include "shoal/kernels/activations.h"
#include "shoal/kernels/elementwise.h"

namespace shoal::kernels {

template <class T>
void add_ref(Index n, const T* a, const T* b, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
template <class T>
void axpy_ref(Index n, T alpha, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = y[i] + alpha * x[i];
}
template <class T>
void mul_ref(Index n, const T* a, const T* b, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = a[i] * b[i];
}
template <class T>
void scale_ref(Index n, T alpha, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = alpha * x[i];
}
template <class T>
void relu_forward_ref(Index n, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = act_forward(Act::kRelu, x[i]);
}
template <class T>
void relu_backward_ref(Index n, const T* y, const T* dy, T* dx) {
  for (Index i = 0; i < n; ++i) dx[i] = dy[i] * act_derivative(Act::kRelu, y[i]);
}
template <class T>
void gelu_forward_ref(Index n, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = act_forward(Act::kGelu, x[i]);
}
template <class T>
void gelu_backward_ref(Index n, const T* x, const T* dy, T* dx) {
  for (Index i = 0; i < n; ++i) dx[i] = dy[i] * act_derivative(Act::kGelu, x[i]);
}

template <class T>
void relu_mask_ref(Index n, const T* y, const T* dy, T* dx) {
  for (Index i = 0; i < n; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
}
template <class T>
void bias_act_rows_ref(MatView<T> y, const T* bias, bool relu) {
  for (Index r = 0; r < y.rows; ++r)
    for (Index j = 0; j < y.cols; ++j) {
      const T v = bias != nullptr ? y(r, j) + bias[j] : y(r, j);
      y(r, j) = relu ? std::max(v, T(0)) : v;
    }
}
template <class T>
double sum_lanes_ref(Index n, const T* x) {
  double acc[8] = {};
  Index j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) acc[k] = acc[k] + static_cast<double>(x[j + k]);
  double tail = 0;
  for (; j < n; ++j) tail = tail + static_cast<double>(x[j]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

#define SHOAL_INSTANTIATE(T)                                         \
  template void add_ref<T>(Index, const T*, const T*, T*);           \
  template void axpy_ref<T>(Index, T, const T*, T*);                 \
  template void mul_ref<T>(Index, const T*, const T*, T*);           \
  template void scale_ref<T>(Index, T, const T*, T*);                \
  template void relu_forward_ref<T>(Index, const T*, T*);            \
  template void relu_backward_ref<T>(Index, const T*, const T*, T*); \
  template void gelu_forward_ref<T>(Index, const T*, T*);            \
  template void gelu_backward_ref<T>(Index, const T*, const T*, T*); \
  template void relu_mask_ref<T>(Index, const T*, const T*, T*);     \
  template void bias_act_rows_ref<T>(MatView<T>, const T*, bool);    \
  template double sum_lanes_ref<T>(Index, const T*);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
