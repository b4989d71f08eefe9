#include "shoal/layers/revin.h"

#include <algorithm>
#include <cmath>

#include "shoal/kernels/reduce.h"

namespace shoal::layers {
namespace {

using kernels::lane_sum;

}  // namespace

template <class T>
void RevIn<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.n_series > 0 && cfg.input_size > 0 && cfg.h > 0,
              "RevIN needs n_series, input_size, h > 0, got {} {} {}", cfg.n_series, cfg.input_size,
              cfg.h);
  SHOAL_CHECK(max_rows > 0 && max_rows % cfg.input_size == 0,
              "RevIN max_rows must be a positive multiple of input_size = {}, got {}",
              cfg.input_size, max_rows);
  const Index max_batch = max_rows / cfg.input_size;
  planner.param(affine_weight, "affine_weight", {1, 1, cfg.n_series});
  planner.param(affine_bias, "affine_bias", {1, 1, cfg.n_series});
  planner.buffer(mu, Region::kActivations, "mu", {max_batch, cfg.n_series});
  planner.buffer(sigma, Region::kActivations, "sigma", {max_batch, cfg.n_series});
}

template <class T>
void RevIn<T>::init(RngStream&) {
  std::fill(affine_weight.value.begin(), affine_weight.value.end(), T(1));
  std::fill(affine_bias.value.begin(), affine_bias.value.end(), T(0));
}

template <class T>
void RevIn<T>::normalize(ConstMat<T> x, MatView<T> y) {
  const Index n = cfg.n_series, len = cfg.input_size, batch = x.rows / len;
  SHOAL_DCHECK(x.cols == n && y.cols == n && y.rows == x.rows && x.rows == batch * len);
  const T* w = affine_weight.value.data;
  const T* bs = affine_bias.value.data;
  const double inv_l = 1.0 / static_cast<double>(len);
  for (Index b = 0; b < batch; ++b) {
    T* mb = mu.view.data + b * n;
    T* sb = sigma.view.data + b * n;
    for (Index s = 0; s < n; ++s) {
      const double m =
          lane_sum(len, [&](Index t) { return static_cast<double>(x(b * len + t, s)); }) * inv_l;
      const double v = lane_sum(len,
                                [&](Index t) {
                                  const double d = static_cast<double>(x(b * len + t, s)) - m;
                                  return d * d;
                                }) *
                       inv_l;
      mb[s] = static_cast<T>(m);
      sb[s] = static_cast<T>(std::sqrt(v + cfg.eps));
    }
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      T* yr = y.row(b * len + t);
      for (Index s = 0; s < n; ++s) yr[s] = (xr[s] - mb[s]) / sb[s] * w[s] + bs[s];
    }
  }
}

template <class T>
void RevIn<T>::normalize_backward(ConstMat<T> x, ConstMat<T> dy) {
  const Index n = cfg.n_series, len = cfg.input_size, batch = x.rows / len;
  T* dw = affine_weight.grad.data;
  T* db = affine_bias.grad.data;
  for (Index b = 0; b < batch; ++b) {
    const T* mb = mu.view.data + b * n;
    const T* sb = sigma.view.data + b * n;
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      const T* dyr = dy.row(b * len + t);
      for (Index s = 0; s < n; ++s) {
        dw[s] += dyr[s] * ((xr[s] - mb[s]) / sb[s]);
        db[s] += dyr[s];
      }
    }
  }
}

template <class T>
void RevIn<T>::denormalize(ConstMat<T> x, MatView<T> y) {
  const Index n = cfg.n_series, len = cfg.h, batch = x.rows / len;
  const T* w = affine_weight.value.data;
  const T* bs = affine_bias.value.data;
  for (Index b = 0; b < batch; ++b) {
    const T* mb = mu.view.data + b * n;
    const T* sb = sigma.view.data + b * n;
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      T* yr = y.row(b * len + t);
      for (Index s = 0; s < n; ++s) yr[s] = (xr[s] - bs[s]) / w[s] * sb[s] + mb[s];
    }
  }
}

template <class T>
void RevIn<T>::denormalize_backward(ConstMat<T> x, ConstMat<T> dy, MatView<T> dx) {
  const Index n = cfg.n_series, len = cfg.h, batch = x.rows / len;
  const T* w = affine_weight.value.data;
  const T* bs = affine_bias.value.data;
  T* dw = affine_weight.grad.data;
  T* db = affine_bias.grad.data;
  for (Index b = 0; b < batch; ++b) {
    const T* sb = sigma.view.data + b * n;
    for (Index t = 0; t < len; ++t) {
      const T* xr = x.row(b * len + t);
      const T* dyr = dy.row(b * len + t);
      T* dxr = dx.row(b * len + t);
      for (Index s = 0; s < n; ++s) {
        // y = (x − b)/w · σ + μ:  ∂y/∂x = σ/w,  ∂y/∂b = −σ/w,  ∂y/∂w = −(x − b)/w² · σ
        const T g = dyr[s] * sb[s] / w[s];
        dxr[s] = g;
        db[s] -= g;
        dw[s] -= g * (xr[s] - bs[s]) / w[s];
      }
    }
  }
}

template <class T>
profile::Cost RevIn<T>::normalize_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 8, 1, sizeof(T));
}
template <class T>
profile::Cost RevIn<T>::normalize_backward_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 2, 2, sizeof(T));
}
template <class T>
profile::Cost RevIn<T>::denormalize_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 4, 1, sizeof(T));
}
template <class T>
profile::Cost RevIn<T>::denormalize_backward_cost(double rows) const {
  return profile::elementwise(rows, double(cfg.n_series), 4, 2, sizeof(T));
}

template struct RevIn<float>;
template struct RevIn<double>;

}  // namespace shoal::layers
