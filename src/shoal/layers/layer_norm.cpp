#include "shoal/layers/layer_norm.h"

#include <cmath>

#include "shoal/kernels/reduce.h"

namespace shoal::layers {

using kernels::lane_sum;

template <class T>
void LayerNorm<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.normalized_shape.rank > 0 && features() > 0,
              "LayerNorm needs a non-empty normalized_shape, got {}", cfg.normalized_shape.str());
  SHOAL_CHECK(cfg.eps >= 0, "LayerNorm eps must be >= 0, got {}", cfg.eps);
  SHOAL_CHECK(max_rows > 0, "LayerNorm max_rows must be > 0, got {}", max_rows);
  if (has_weight()) planner.param(p.weight, "weight", cfg.normalized_shape);
  if (has_bias()) planner.param(p.bias, "bias", cfg.normalized_shape);
  planner.buffer(mean, Region::kActivations, "mean", {max_rows});
  planner.buffer(rstd, Region::kActivations, "rstd", {max_rows});
}

template <class T>
void LayerNorm<T>::init(RngStream&) {
  if (has_weight())
    for (T& w : p.weight.value) w = T(1);
  if (has_bias())
    for (T& b : p.bias.value) b = T(0);
}

template <class T>
void LayerNorm<T>::forward(const Ctx&, ConstMat<T> x, MatView<T> y) {
  const Index f = features();
  SHOAL_DCHECK(x.cols == f && y.cols == f && x.rows == y.rows && x.rows <= mean.view.numel());
  const T* w = has_weight() ? p.weight.value.data : nullptr;
  const T* b = has_bias() ? p.bias.value.data : nullptr;
  for (Index n = 0; n < x.rows; ++n) {
    const T* xr = x.row(n);
    T* yr = y.row(n);
    const double mu =
        lane_sum(f, [&](Index j) { return static_cast<double>(xr[j]); }) / static_cast<double>(f);
    const double var = lane_sum(f,
                                [&](Index j) {
                                  const double d = static_cast<double>(xr[j]) - mu;
                                  return d * d;
                                }) /
                       static_cast<double>(f);
    const T m = static_cast<T>(mu);
    const T r = static_cast<T>(1.0 / std::sqrt(var + cfg.eps));
    mean.view.data[n] = m;
    rstd.view.data[n] = r;
    if (w != nullptr && b != nullptr) {
      for (Index j = 0; j < f; ++j) yr[j] = (xr[j] - m) * r * w[j] + b[j];
    } else if (w != nullptr) {
      for (Index j = 0; j < f; ++j) yr[j] = (xr[j] - m) * r * w[j];
    } else {
      for (Index j = 0; j < f; ++j) yr[j] = (xr[j] - m) * r;
    }
  }
}

template <class T>
void LayerNorm<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T>, ConstMat<T> dy, MatView<T> dx) {
  const Index f = features();
  SHOAL_DCHECK(x.cols == f && dy.cols == f && dx.cols == f && dy.rows == x.rows &&
               dx.rows == x.rows);
  const T* w = has_weight() ? p.weight.value.data : nullptr;
  T* dw = has_weight() ? p.weight.grad.data : nullptr;
  T* db = has_bias() ? p.bias.grad.data : nullptr;
  const double inv_f = 1.0 / static_cast<double>(f);
  for (Index n = 0; n < x.rows; ++n) {
    const T* xr = x.row(n);
    const T* dyr = dy.row(n);
    T* dxr = dx.row(n);
    const T m = mean.view.data[n];
    const T r = rstd.view.data[n];
    // g = dy·w; dx = r·(g − mean(g) − x̂·mean(g·x̂)).
    auto g = [&](Index j) { return w != nullptr ? dyr[j] * w[j] : dyr[j]; };
    const double mean_g = lane_sum(f, [&](Index j) { return static_cast<double>(g(j)); }) * inv_f;
    const double mean_gx =
        lane_sum(f,
                 [&](Index j) {
                   return static_cast<double>(g(j)) * static_cast<double>((xr[j] - m) * r);
                 }) *
        inv_f;
    const T a = static_cast<T>(mean_g);
    const T c = static_cast<T>(mean_gx);
    for (Index j = 0; j < f; ++j) {
      const T xhat = (xr[j] - m) * r;
      dxr[j] = r * (g(j) - a - xhat * c);
    }
    if (dw != nullptr)
      for (Index j = 0; j < f; ++j) dw[j] += dyr[j] * ((xr[j] - m) * r);
    if (db != nullptr)
      for (Index j = 0; j < f; ++j) db[j] += dyr[j];
  }
}

template struct LayerNorm<float>;
template struct LayerNorm<double>;

}  // namespace shoal::layers
