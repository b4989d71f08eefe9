#include "shoal/models/mlp_multivariate.h"

#include <algorithm>

namespace shoal::models {

// Each input flattened as it is, the panel's statics repeated in every window.
template <class T>
void pack_mlp_inputs(const MlpMultivariateConfig& c, const ForecastInputs<T>& in, MatView<T> x) {
  const Index l = c.input_size, h = c.h, n = c.n_series;
  const Index ny = l * n, nx = c.hist_exog * l * n, nf = c.futr_exog * (l + h) * n,
              ns = c.stat_exog * n;
  for (Index w = 0; w < in.batch; ++w) {
    T* dst = x.row(w);
    dst = std::copy_n(in.insample_y + w * ny, ny, dst);
    if (nx > 0) dst = std::copy_n(in.hist_exog + w * nx, nx, dst);
    if (nf > 0) dst = std::copy_n(in.futr_exog + w * nf, nf, dst);
    if (ns > 0) std::copy_n(in.stat_exog, ns, dst);
  }
}

// The statics' gradient is summed over the windows that repeat them.
template <class T>
void unpack_mlp_grads(const MlpMultivariateConfig& c, const ForecastInputs<T>& in, ConstMat<T> dx,
                      T* dhist, T* dfutr, T* dstat) {
  const Index l = c.input_size, h = c.h, n = c.n_series;
  const Index ny = l * n, nx = c.hist_exog * l * n, nf = c.futr_exog * (l + h) * n,
              ns = c.stat_exog * n;
  if (ns > 0) std::fill_n(dstat, ns, T(0));
  for (Index w = 0; w < in.batch; ++w) {
    const T* src = dx.row(w) + ny;
    if (nx > 0) std::copy_n(src, nx, dhist + w * nx);
    src += nx;
    if (nf > 0) std::copy_n(src, nf, dfutr + w * nf);
    src += nf;
    for (Index s = 0; s < ns; ++s) dstat[s] += src[s];
  }
}

#define SHOAL_MLP_PACKING(T)                                                                \
  template void pack_mlp_inputs<T>(const MlpMultivariateConfig&, const ForecastInputs<T>&,  \
                                   MatView<T>);                                             \
  template void unpack_mlp_grads<T>(const MlpMultivariateConfig&, const ForecastInputs<T>&, \
                                    ConstMat<T>, T*, T*, T*);
SHOAL_MLP_PACKING(float)
SHOAL_MLP_PACKING(double)
#undef SHOAL_MLP_PACKING

}  // namespace shoal::models
