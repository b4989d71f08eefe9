// Fast elementwise kernels: straight loops compiled once per SIMD target (Highway's
// foreach_target) and vectorised there by gcc -O3 with that target's vectors, so one build runs
// them at AVX2 or AVX-512 width where the CPU has it. Outputs may alias inputs element for
// element, which gcc's runtime alias check handles. GELU stays scalar per element: erf has no
// vector form in glibc's libmvec, and a polynomial erf would not match the reference to float
// rounding for x ≪ 0. The loops' arithmetic is the same on every target (no reassociation);
// only contraction into FMA differs.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "shoal/kernels/elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include "simd.h"  // per target, after foreach_target.h

#include <type_traits>

#include "dispatch.h"
#include "shoal/kernels/activations.h"
#include "shoal/kernels/elementwise.h"

HWY_BEFORE_NAMESPACE();
namespace shoal::kernels {
namespace HWY_NAMESPACE {

template <class T>
void add_t(Index n, const T* a, const T* b, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

template <class T>
void axpy_t(Index n, T alpha, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] += alpha * x[i];
}

template <class T>
void mul_t(Index n, const T* a, const T* b, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

template <class T>
void scale_t(Index n, T alpha, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = alpha * x[i];
}

template <class T>
void relu_forward_t(Index n, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <class T>
void relu_backward_t(Index n, const T* y, const T* dy, T* dx) {
  // A multiply rather than a select, so a NaN in dy propagates exactly as in the reference.
  for (Index i = 0; i < n; ++i) dx[i] = dy[i] * (y[i] > T(0) ? T(1) : T(0));
}

template <class T>
void relu_mask_t(Index n, const T* y, const T* dy, T* dx) {
  for (Index i = 0; i < n; ++i) dx[i] = y[i] > T(0) ? dy[i] : T(0);
}

template <class T>
void gelu_forward_t(Index n, const T* x, T* y) {
  for (Index i = 0; i < n; ++i) y[i] = gelu(x[i]);
}

template <class T>
void gelu_backward_t(Index n, const T* x, const T* dy, T* dx) {
  for (Index i = 0; i < n; ++i) dx[i] = dy[i] * gelu_derivative(x[i]);
}

template <class T>
void bias_act_rows_t(MatView<T> y, const T* bias, bool relu) {
  for (Index r = 0; r < y.rows; ++r) {
    T* __restrict yr = y.row(r);
    if (bias != nullptr)
      for (Index j = 0; j < y.cols; ++j) yr[j] += bias[j];
    if (relu)
      for (Index j = 0; j < y.cols; ++j) yr[j] = yr[j] < T(0) ? T(0) : yr[j];  // std::max
  }
}

// lane_sum's loop spelled out here: reduce.h's template is compiled for the baseline target,
// and it cannot inline a lambda compiled for a wider one.
template <class T>
double sum_lanes_t(Index n, const T* x) {
  double acc[8] = {};
  Index j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) acc[k] += static_cast<double>(x[j + k]);
  double tail = 0;
  for (; j < n; ++j) tail += static_cast<double>(x[j]);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
}

// One exported function per kernel and type (Highway exports plain functions, not templates).
#define SHOAL_PER_TYPE(T, S)                                        \
  void add_##S(Index n, const T* a, const T* b, T* y) {             \
    add_t<T>(n, a, b, y);                                           \
  }                                                                 \
  void axpy_##S(Index n, T alpha, const T* x, T* y) {               \
    axpy_t<T>(n, alpha, x, y);                                      \
  }                                                                 \
  void mul_##S(Index n, const T* a, const T* b, T* y) {             \
    mul_t<T>(n, a, b, y);                                           \
  }                                                                 \
  void scale_##S(Index n, T alpha, const T* x, T* y) {              \
    scale_t<T>(n, alpha, x, y);                                     \
  }                                                                 \
  void relu_forward_##S(Index n, const T* x, T* y) {                \
    relu_forward_t<T>(n, x, y);                                     \
  }                                                                 \
  void relu_backward_##S(Index n, const T* y, const T* dy, T* dx) { \
    relu_backward_t<T>(n, y, dy, dx);                               \
  }                                                                 \
  void relu_mask_##S(Index n, const T* y, const T* dy, T* dx) {     \
    relu_mask_t<T>(n, y, dy, dx);                                   \
  }                                                                 \
  void gelu_forward_##S(Index n, const T* x, T* y) {                \
    gelu_forward_t<T>(n, x, y);                                     \
  }                                                                 \
  void gelu_backward_##S(Index n, const T* x, const T* dy, T* dx) { \
    gelu_backward_t<T>(n, x, dy, dx);                               \
  }                                                                 \
  void bias_act_rows_##S(MatView<T> y, const T* bias, bool relu) {  \
    bias_act_rows_t<T>(y, bias, relu);                              \
  }                                                                 \
  double sum_lanes_##S(Index n, const T* x) {                       \
    return sum_lanes_t<T>(n, x);                                    \
  }
SHOAL_PER_TYPE(float, f32)
SHOAL_PER_TYPE(double, f64)
#undef SHOAL_PER_TYPE

}  // namespace HWY_NAMESPACE
}  // namespace shoal::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace shoal::kernels {

SHOAL_EXPORT_BOTH(add)
SHOAL_EXPORT_BOTH(axpy)
SHOAL_EXPORT_BOTH(mul)
SHOAL_EXPORT_BOTH(scale)
SHOAL_EXPORT_BOTH(relu_forward)
SHOAL_EXPORT_BOTH(relu_backward)
SHOAL_EXPORT_BOTH(relu_mask)
SHOAL_EXPORT_BOTH(gelu_forward)
SHOAL_EXPORT_BOTH(gelu_backward)
SHOAL_EXPORT_BOTH(bias_act_rows)
SHOAL_EXPORT_BOTH(sum_lanes)
#undef SHOAL_EXPORT_BOTH

// The float or double table entry of a kernel.
template <class T>
void add(Index n, const T* a, const T* b, T* y) {
  SHOAL_BY_TYPE(add, n, a, b, y);
}

template <class T>
void axpy(Index n, T alpha, const T* x, T* y) {
  SHOAL_BY_TYPE(axpy, n, alpha, x, y);
}

template <class T>
void mul(Index n, const T* a, const T* b, T* y) {
  SHOAL_BY_TYPE(mul, n, a, b, y);
}

template <class T>
void scale(Index n, T alpha, const T* x, T* y) {
  SHOAL_BY_TYPE(scale, n, alpha, x, y);
}

template <class T>
void relu_forward(Index n, const T* x, T* y) {
  SHOAL_BY_TYPE(relu_forward, n, x, y);
}

template <class T>
void relu_backward(Index n, const T* y, const T* dy, T* dx) {
  SHOAL_BY_TYPE(relu_backward, n, y, dy, dx);
}

template <class T>
void relu_mask(Index n, const T* y, const T* dy, T* dx) {
  SHOAL_BY_TYPE(relu_mask, n, y, dy, dx);
}

template <class T>
void gelu_forward(Index n, const T* x, T* y) {
  SHOAL_BY_TYPE(gelu_forward, n, x, y);
}

template <class T>
void gelu_backward(Index n, const T* x, const T* dy, T* dx) {
  SHOAL_BY_TYPE(gelu_backward, n, x, dy, dx);
}

template <class T>
void bias_act_rows(MatView<T> y, const T* bias, bool relu) {
  SHOAL_BY_TYPE(bias_act_rows, y, bias, relu);
}

template <class T>
double sum_lanes(Index n, const T* x) {
  SHOAL_BY_TYPE(sum_lanes, n, x);
}

#define SHOAL_INSTANTIATE(T)                                     \
  template void add<T>(Index, const T*, const T*, T*);           \
  template void axpy<T>(Index, T, const T*, T*);                 \
  template void mul<T>(Index, const T*, const T*, T*);           \
  template void scale<T>(Index, T, const T*, T*);                \
  template void relu_forward<T>(Index, const T*, T*);            \
  template void relu_backward<T>(Index, const T*, const T*, T*); \
  template void relu_mask<T>(Index, const T*, const T*, T*);     \
  template void gelu_forward<T>(Index, const T*, T*);            \
  template void gelu_backward<T>(Index, const T*, const T*, T*); \
  template void bias_act_rows<T>(MatView<T>, const T*, bool);    \
  template double sum_lanes<T>(Index, const T*);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
#endif  // HWY_ONCE
