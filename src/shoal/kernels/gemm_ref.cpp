// Reference GEMM and Linear kernels: the plainest correct loops, in the working type, as the
// ground truth for the fast kernels' tests.
#include <cmath>

#include "shoal/kernels/activations.h"
#include "shoal/kernels/gemm.h"

namespace shoal::kernels {

template <class T>
void gemm_ref(Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a, Index lda,
              const T* b, Index ldb, T beta, T* c, Index ldc) {
  for (Index i = 0; i < m; ++i) {
    for (Index j = 0; j < n; ++j) {
      T acc = 0;
      for (Index p = 0; p < k; ++p) {
        const T av = ta == Trans::kNo ? a[i * lda + p] : a[p * lda + i];
        const T bv = tb == Trans::kNo ? b[p * ldb + j] : b[j * ldb + p];
        acc += av * bv;
      }
      T& cij = c[i * ldc + j];
      cij = beta == T(0) ? alpha * acc : alpha * acc + beta * cij;
    }
  }
}

template <class T>
void linear_forward_ref(ConstMat<T> x, ConstMat<T> w, const T* b, Act act, MatView<T> y,
                        MatView<T> pre) {
  gemm_ref<T>(Trans::kNo, Trans::kYes, x.rows, w.rows, x.cols, T(1), x.data, x.ld, w.data, w.ld,
              T(0), y.data, y.ld);
  for (Index i = 0; i < y.rows; ++i) {
    for (Index j = 0; j < y.cols; ++j) {
      T z = y(i, j) + (b ? b[j] : T(0));
      if (pre.data) pre(i, j) = z;
      y(i, j) = act_forward(act, z);
    }
  }
}

template <class T>
void linear_backward_ref(ConstMat<T> x, ConstMat<T> w, ConstMat<T> act_saved, Act act,
                         ConstMat<T> dy, MatView<T> dz, MatView<T> dx, MatView<T> dw, T* db,
                         bool accumulate) {
  for (Index i = 0; i < dy.rows; ++i)
    for (Index j = 0; j < dy.cols; ++j)
      dz(i, j) = act == Act::kNone ? dy(i, j) : dy(i, j) * act_derivative(act, act_saved(i, j));
  const T beta = accumulate ? T(1) : T(0);
  if (dx.data)
    gemm_ref<T>(Trans::kNo, Trans::kNo, dz.rows, dx.cols, dz.cols, T(1), dz.data, dz.ld, w.data,
                w.ld, T(0), dx.data, dx.ld);
  gemm_ref<T>(Trans::kYes, Trans::kNo, dz.cols, x.cols, dz.rows, T(1), dz.data, dz.ld, x.data, x.ld,
              beta, dw.data, dw.ld);
  if (db) {
    for (Index j = 0; j < dz.cols; ++j) {
      T s = 0;
      for (Index i = 0; i < dz.rows; ++i) s += dz(i, j);
      db[j] = accumulate ? db[j] + s : s;
    }
  }
}

#define SHOAL_INSTANTIATE(T)                                                                    \
  template void gemm_ref<T>(Trans, Trans, Index, Index, Index, T, const T*, Index, const T*,    \
                            Index, T, T*, Index);                                               \
  template void linear_forward_ref<T>(ConstMat<T>, ConstMat<T>, const T*, Act, MatView<T>,      \
                                      MatView<T>);                                              \
  template void linear_backward_ref<T>(ConstMat<T>, ConstMat<T>, ConstMat<T>, Act, ConstMat<T>, \
                                       MatView<T>, MatView<T>, MatView<T>, T*, bool);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
