// Reference LayerNorm kernels: sequential sums in double, straight from layer_norm.h.
#include <cmath>

#include "shoal/kernels/layer_norm.h"

namespace shoal::kernels {
namespace {

template <class T>
void forward_ref(Index n, Index r, Index c, double eps, const T* w, const T* b, ConstMat<T> x,
                 MatView<T> y, T* mean, T* rstd) {
  const double count = static_cast<double>(r * c);
  for (Index s = 0; s < n; ++s) {
    double mu = 0;
    for (Index i = 0; i < r; ++i)
      for (Index j = 0; j < c; ++j) mu += static_cast<double>(x(s * r + i, j));
    mu /= count;
    double var = 0;
    for (Index i = 0; i < r; ++i)
      for (Index j = 0; j < c; ++j) {
        const double d = static_cast<double>(x(s * r + i, j)) - mu;
        var += d * d;
      }
    var /= count;
    const T m = static_cast<T>(mu);
    const T rs = static_cast<T>(1.0 / std::sqrt(var + eps));
    mean[s] = m;
    rstd[s] = rs;
    for (Index i = 0; i < r; ++i)
      for (Index j = 0; j < c; ++j) {
        T v = (x(s * r + i, j) - m) * rs;
        if (w != nullptr) v *= w[i * c + j];
        if (b != nullptr) v += b[i * c + j];
        y(s * r + i, j) = v;
      }
  }
}

}  // namespace

template <class T>
void layer_norm_forward_ref(Index n, Index r, Index c, double eps, const T* w, const T* b,
                            ConstMat<T> x, MatView<T> y, T* mean, T* rstd) {
  forward_ref<T>(n, r, c, eps, w, b, x, y, mean, rstd);
}

template <class T>
void layer_norm_residual_forward_ref(Index n, Index r, Index c, double eps, const T* w, const T* b,
                                     ConstMat<T> a, ConstMat<T> res, MatView<T> s, MatView<T> y,
                                     T* mean, T* rstd) {
  for (Index i = 0; i < a.rows; ++i)
    for (Index j = 0; j < c; ++j) s(i, j) = a(i, j) + res(i, j);
  forward_ref<T>(n, r, c, eps, w, b, s, y, mean, rstd);
}

template <class T>
void layer_norm_backward_ref(Index n, Index r, Index c, const T* w, T* dw, T* db, const T* mean,
                             const T* rstd, ConstMat<T> x, ConstMat<T> dy, MatView<T> dx) {
  const double count = static_cast<double>(r * c);
  for (Index s = 0; s < n; ++s) {
    const T m = mean[s], rs = rstd[s];
    double sg = 0, sgx = 0;
    for (Index i = 0; i < r; ++i)
      for (Index j = 0; j < c; ++j) {
        const T xhat = (x(s * r + i, j) - m) * rs;
        const T g = w != nullptr ? dy(s * r + i, j) * w[i * c + j] : dy(s * r + i, j);
        sg += static_cast<double>(g);
        sgx += static_cast<double>(g * xhat);
        if (dw != nullptr) dw[i * c + j] += dy(s * r + i, j) * xhat;
        if (db != nullptr) db[i * c + j] += dy(s * r + i, j);
      }
    const T a = static_cast<T>(sg / count), cc = static_cast<T>(sgx / count);
    for (Index i = 0; i < r; ++i)
      for (Index j = 0; j < c; ++j) {
        const T xhat = (x(s * r + i, j) - m) * rs;
        const T g = w != nullptr ? dy(s * r + i, j) * w[i * c + j] : dy(s * r + i, j);
        dx(s * r + i, j) = rs * (g - a - xhat * cc);
      }
  }
}

#define SHOAL_INSTANTIATE(T)                                                                       \
  template void layer_norm_forward_ref<T>(Index, Index, Index, double, const T*, const T*,         \
                                          ConstMat<T>, MatView<T>, T*, T*);                        \
  template void layer_norm_residual_forward_ref<T>(Index, Index, Index, double, const T*,          \
                                                   const T*, ConstMat<T>, ConstMat<T>, MatView<T>, \
                                                   MatView<T>, T*, T*);                            \
  template void layer_norm_backward_ref<T>(Index, Index, Index, const T*, T*, T*, const T*,        \
                                           const T*, ConstMat<T>, ConstMat<T>, MatView<T>);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
