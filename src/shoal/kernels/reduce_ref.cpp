// Reference reductions: sequential sums in T, straight from the formulas in reduce.h.
#include "shoal/kernels/reduce.h"

namespace shoal::kernels {

template <class T>
T sum_ref(Index n, const T* x) {
  T s = 0;
  for (Index i = 0; i < n; ++i) s += x[i];
  return s;
}

template <class T>
T dot_ref(Index n, const T* a, const T* b) {
  T s = 0;
  for (Index i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

template <class T>
void col_sums_ref(ConstMat<T> x, T* s, bool accumulate) {
  for (Index c = 0; c < x.cols; ++c) {
    T acc = 0;
    for (Index r = 0; r < x.rows; ++r) acc += x(r, c);
    s[c] = accumulate ? s[c] + acc : acc;
  }
}

template <class T>
void row_mean_var_ref(ConstMat<T> x, T* mean, T* var) {
  for (Index r = 0; r < x.rows; ++r) {
    T m = 0;
    for (Index c = 0; c < x.cols; ++c) m += x(r, c);
    m = x.cols > 0 ? m / static_cast<T>(x.cols) : T(0);
    T v = 0;
    for (Index c = 0; c < x.cols; ++c) v += (x(r, c) - m) * (x(r, c) - m);
    mean[r] = m;
    var[r] = x.cols > 0 ? v / static_cast<T>(x.cols) : T(0);
  }
}

#define SHOAL_INSTANTIATE(T)                            \
  template T sum_ref<T>(Index, const T*);               \
  template T dot_ref<T>(Index, const T*, const T*);     \
  template void col_sums_ref<T>(ConstMat<T>, T*, bool); \
  template void row_mean_var_ref<T>(ConstMat<T>, T*, T*);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::kernels
