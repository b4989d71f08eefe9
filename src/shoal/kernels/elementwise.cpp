// Fast elementwise kernels: straight loops that gcc -O3 -march=native vectorises (checked with
// -fopt-info-vec); outputs may alias inputs element for element, which gcc's runtime alias
// check handles. GELU stays scalar per element: erf has no vector form in glibc's libmvec, and
// a polynomial erf would not match the reference to float rounding for x ≪ 0.
#include "shoal/kernels/elementwise.h"

#include "shoal/kernels/activations.h"

namespace shoal::kernels {

template <class T>
void add(Index n, const T* a, const T* b, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

template <class T>
void axpy(Index n, T alpha, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] += alpha * x[i];
}

template <class T>
void mul(Index n, const T* a, const T* b, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

template <class T>
void scale(Index n, T alpha, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = alpha * x[i];
}

template <class T>
void relu_forward(Index n, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <class T>
void relu_backward(Index n, const T* y, const T* dy, T* dx) {
  // A multiply rather than a select, so a NaN in dy propagates exactly as in the reference.
  for (Index i = 0; i < n; ++i) dx[i] = dy[i] * (y[i] > T(0) ? T(1) : T(0));
}

template <class T>
void gelu_forward(Index n, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = gelu(x[i]);
}

template <class T>
void gelu_backward(Index n, const T* x, const T* dy, T* dx) {
  for (Index i = 0; i < n; ++i) dx[i] = dy[i] * gelu_derivative(x[i]);
}

#define SHOAL_INSTANTIATE(T)                                     \
  template void add<T>(Index, const T*, const T*, T*);           \
  template void axpy<T>(Index, T, const T*, T*);                 \
  template void mul<T>(Index, const T*, const T*, T*);           \
  template void scale<T>(Index, T, const T*, T*);                \
  template void relu_forward<T>(Index, const T*, T*);            \
  template void relu_backward<T>(Index, const T*, const T*, T*); \
  template void gelu_forward<T>(Index, const T*, T*);            \
  template void gelu_backward<T>(Index, const T*, const T*, T*);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
