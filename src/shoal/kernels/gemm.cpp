// Fast GEMM entry points. Placeholder: forwards to the reference loops until the libxsmm path
// lands.
#include "shoal/kernels/gemm.h"

namespace shoal::kernels {

template <class T>
void gemm(Trans ta, Trans tb, Index m, Index n, Index k, T alpha, const T* a, Index lda, const T* b,
          Index ldb, T beta, T* c, Index ldc) {
  gemm_ref<T>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <class T>
void linear_forward(ConstMat<T> x, ConstMat<T> w, const T* b, Act act, MatView<T> y,
                    MatView<T> pre) {
  linear_forward_ref<T>(x, w, b, act, y, pre);
}

template <class T>
void linear_backward(ConstMat<T> x, ConstMat<T> w, ConstMat<T> act_saved, Act act, ConstMat<T> dy,
                     MatView<T> dz, MatView<T> dx, MatView<T> dw, T* db, bool accumulate) {
  linear_backward_ref<T>(x, w, act_saved, act, dy, dz, dx, dw, db, accumulate);
}

#define SHOAL_INSTANTIATE(T)                                                                       \
  template void gemm<T>(Trans, Trans, Index, Index, Index, T, const T*, Index, const T*, Index, T, \
                        T*, Index);                                                                \
  template void linear_forward<T>(ConstMat<T>, ConstMat<T>, const T*, Act, MatView<T>,             \
                                  MatView<T>);                                                     \
  template void linear_backward<T>(ConstMat<T>, ConstMat<T>, ConstMat<T>, Act, ConstMat<T>,        \
                                   MatView<T>, MatView<T>, MatView<T>, T*, bool);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
