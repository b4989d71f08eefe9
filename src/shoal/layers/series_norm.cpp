#include "shoal/layers/series_norm.h"

#include <cmath>

#include "shoal/core/error.h"
#include "shoal/kernels/reduce.h"

namespace shoal::layers {

template <class T>
void SeriesNorm<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.n_series > 0 && cfg.input_size > 0 && cfg.rows > 0,
              "a series norm needs n_series, input_size, rows > 0, got {} {} {}", cfg.n_series,
              cfg.input_size, cfg.rows);
  SHOAL_CHECK(max_rows > 0 && max_rows % cfg.input_size == 0,
              "a series norm plans whole windows of {} rows, got {}", cfg.input_size, max_rows);
  const Index windows = max_rows / cfg.input_size;
  planner.buffer(mu, Region::kActivations, "mu", {windows, cfg.n_series});
  planner.buffer(sigma, Region::kActivations, "sigma", {windows, cfg.n_series});
}

template <class T>
void SeriesNorm<T>::normalize(ConstMat<T> x, MatView<T> y) {
  const Index n = cfg.n_series, len = cfg.input_size, windows = x.rows / len;
  SHOAL_DCHECK(x.cols == n && y.cols == n && y.rows == x.rows && x.rows == windows * len);
  const double inv_l = 1.0 / double(len);
  for (Index b = 0; b < windows; ++b) {
    T* mb = mu.view.data + b * n;
    T* sb = sigma.view.data + b * n;
    for (Index s = 0; s < n; ++s) {
      const double m =
          kernels::lane_sum(len, [&](Index t) { return double(x(b * len + t, s)); }) * inv_l;
      const double v = kernels::lane_sum(len,
                                         [&](Index t) {
                                           const double d = double(x(b * len + t, s)) - m;
                                           return d * d;
                                         }) *
                       inv_l;
      mb[s] = T(m);
      sb[s] = T(std::sqrt(v + cfg.eps));
    }
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      T* yr = y.row(b * len + t);
      for (Index s = 0; s < n; ++s) yr[s] = (xr[s] - mb[s]) / sb[s];
    }
  }
}

template <class T>
void SeriesNorm<T>::denormalize(ConstMat<T> x, MatView<T> y) const {
  const Index n = cfg.n_series, len = cfg.rows, windows = x.rows / len;
  SHOAL_DCHECK(x.cols == n && y.cols == n && y.rows == x.rows && x.rows == windows * len);
  for (Index b = 0; b < windows; ++b) {
    const T* mb = mu.view.data + b * n;
    const T* sb = sigma.view.data + b * n;
    for (Index r = 0; r < len; ++r) {
      const T* xr = x.row(b * len + r);
      T* yr = y.row(b * len + r);
      for (Index s = 0; s < n; ++s) yr[s] = xr[s] * sb[s] + mb[s];
    }
  }
}

template <class T>
void SeriesNorm<T>::denormalize_backward(ConstMat<T> dy, MatView<T> dx) const {
  const Index n = cfg.n_series, len = cfg.rows, windows = dy.rows / len;
  for (Index b = 0; b < windows; ++b) {
    const T* sb = sigma.view.data + b * n;
    for (Index r = 0; r < len; ++r) {
      const T* dyr = dy.row(b * len + r);
      T* dxr = dx.row(b * len + r);
      for (Index s = 0; s < n; ++s) dxr[s] = dyr[s] * sb[s];
    }
  }
}

template <class T>
profile::Cost SeriesNorm<T>::normalize_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 6, 1, sizeof(T));
}
template <class T>
profile::Cost SeriesNorm<T>::denormalize_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 2, 1, sizeof(T));
}
template <class T>
profile::Cost SeriesNorm<T>::denormalize_backward_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 1, 1, sizeof(T));
}

template struct SeriesNorm<float>;
template struct SeriesNorm<double>;

}  // namespace shoal::layers
