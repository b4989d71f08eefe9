// Series decomposition, vectorised over the outputs t of a row: the trend row is the
// accumulator, and term j adds x[t + j − p] to every t at once. The terms that fall into the
// padding are the row's first or last value (a broadcast); the rest is a contiguous slice of x,
// so the inner loops are unit-stride adds that gcc vectorises. Each t still adds its terms in
// order j = 0 … k − 1, starting from 0: the reference's sum, bit for bit.
#include <algorithm>

#include "shoal/kernels/moving_avg.h"

namespace shoal::kernels {

template <class T>
void series_decomp(ConstMat<T> x, Index k, MatView<T> trend, MatView<T> season) {
  SHOAL_DCHECK(k >= 1 && k % 2 == 1 && trend.rows == x.rows && season.rows == x.rows);
  const Index l = x.cols, p = (k - 1) / 2;
  const T kf = static_cast<T>(k);
  for (Index r = 0; r < x.rows; ++r) {
    const T* __restrict xr = x.row(r);
    T* __restrict tr = trend.row(r);
    T* __restrict se = season.row(r);
    std::fill(tr, tr + l, T(0));
    const T first = xr[0], last = xr[l - 1];
    for (Index j = 0; j < k; ++j) {
      const Index d = j - p;  // term j of output t reads x[t + d]
      // t < lo reads x[0]; t ≥ hi reads x[l − 1]; [lo, hi) reads x[t + d].
      const Index lo = std::clamp<Index>(-d, 0, l), hi = std::clamp<Index>(l - d, lo, l);
      for (Index t = 0; t < lo; ++t) tr[t] += first;
      for (Index t = lo; t < hi; ++t) tr[t] += xr[t + d];
      for (Index t = hi; t < l; ++t) tr[t] += last;
    }
    for (Index t = 0; t < l; ++t) {
      tr[t] = tr[t] / kf;
      se[t] = xr[t] - tr[t];
    }
  }
}

template void series_decomp<float>(ConstMat<float>, Index, MatView<float>, MatView<float>);
template void series_decomp<double>(ConstMat<double>, Index, MatView<double>, MatView<double>);

}  // namespace shoal::kernels
