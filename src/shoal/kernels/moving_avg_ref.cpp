// Reference series decomposition: the sum of each window straight from moving_avg.h.
#include <algorithm>

#include "shoal/kernels/moving_avg.h"

namespace shoal::kernels {

template <class T>
void series_decomp_ref(ConstMat<T> x, Index k, MatView<T> trend, MatView<T> season) {
  const Index l = x.cols, p = (k - 1) / 2;
  for (Index r = 0; r < x.rows; ++r) {
    const T* xr = x.row(r);
    for (Index t = 0; t < l; ++t) {
      T s = 0;
      for (Index j = 0; j < k; ++j) s += xr[std::clamp<Index>(t + j - p, 0, l - 1)];
      trend(r, t) = s / static_cast<T>(k);
      season(r, t) = xr[t] - trend(r, t);
    }
  }
}

template void series_decomp_ref<float>(ConstMat<float>, Index, MatView<float>, MatView<float>);
template void series_decomp_ref<double>(ConstMat<double>, Index, MatView<double>, MatView<double>);

}  // namespace shoal::kernels
