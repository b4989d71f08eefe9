#include "shoal/layers/view_ops.h"

#include <algorithm>

#include "shoal/core/error.h"

namespace shoal::layers {

template <class T>
void copy_view(ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  for (Index r = 0; r < x.rows; ++r) std::copy_n(x.row(r), x.cols, y.row(r));
}

template <class T>
void add_into(ConstMat<T> x, MatView<T> y) {
  SHOAL_DCHECK(x.rows == y.rows && x.cols == y.cols);
  for (Index r = 0; r < x.rows; ++r) {
    const T* xr = x.row(r);
    T* yr = y.row(r);
    for (Index c = 0; c < x.cols; ++c) yr[c] += xr[c];
  }
}

template <class T>
void transpose_windows(ConstMat<T> x, MatView<T> y, Index batch, bool accumulate) {
  const Index rows = x.rows / batch, cols = x.cols;
  SHOAL_DCHECK(x.rows == batch * rows && y.rows == batch * cols && y.cols == rows);
  for (Index b = 0; b < batch; ++b)
    for (Index r = 0; r < rows; ++r) {
      const T* xr = x.row(b * rows + r);
      if (accumulate)
        for (Index c = 0; c < cols; ++c) y(b * cols + c, r) += xr[c];
      else
        for (Index c = 0; c < cols; ++c) y(b * cols + c, r) = xr[c];
    }
}

#define SHOAL_INSTANTIATE(T)                           \
  template void copy_view<T>(ConstMat<T>, MatView<T>); \
  template void add_into<T>(ConstMat<T>, MatView<T>);  \
  template void transpose_windows<T>(ConstMat<T>, MatView<T>, Index, bool);
SHOAL_INSTANTIATE(float)
SHOAL_INSTANTIATE(double)
#undef SHOAL_INSTANTIATE

}  // namespace shoal::layers
