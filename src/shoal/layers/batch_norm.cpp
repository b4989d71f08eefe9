#include "shoal/layers/batch_norm.h"

#include <cmath>

namespace shoal::layers {

template <class T>
void BatchNorm1d<T>::plan(Planner& planner, Index max_rows) {
  const Index f = cfg.num_features;
  SHOAL_CHECK(f > 0, "BatchNorm1d needs num_features > 0, got {}", f);
  SHOAL_CHECK(cfg.eps >= 0, "BatchNorm1d eps must be >= 0, got {}", cfg.eps);
  SHOAL_CHECK(cfg.momentum >= 0 && cfg.momentum <= 1,
              "BatchNorm1d momentum must be in [0, 1], got {}", cfg.momentum);
  SHOAL_CHECK(max_rows > 0, "BatchNorm1d max_rows must be > 0, got {}", max_rows);
  if (cfg.affine) {
    planner.param(p.weight, "weight", {f});
    planner.param(p.bias, "bias", {f});
  }
  planner.buffer(running_mean, Region::kState, "running_mean", {f});
  planner.buffer(running_var, Region::kState, "running_var", {f});
  planner.buffer(saved_mean, Region::kActivations, "saved_mean", {f});
  planner.buffer(saved_rstd, Region::kActivations, "saved_rstd", {f});
  planner.buffer(acc, Region::kScratch, "acc", {2, f});
}

template <class T>
void BatchNorm1d<T>::init(RngStream&) {
  if (cfg.affine) {
    for (T& w : p.weight.value) w = T(1);
    for (T& b : p.bias.value) b = T(0);
  }
  for (T& v : running_mean.view) v = T(0);
  for (T& v : running_var.view) v = T(1);
}

template <class T>
void BatchNorm1d<T>::forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y) {
  const Index f = cfg.num_features;
  const Index rows = x.rows;
  SHOAL_DCHECK(x.cols == f && y.cols == f && y.rows == rows);
  T* mu = saved_mean.view.data;
  T* rs = saved_rstd.view.data;
  if (ctx.training) {
    SHOAL_CHECK(rows > 1,
                "BatchNorm1d: Expected more than 1 value per channel when training, got input "
                "size [{}, {}]",
                rows, f);
    double* sum = acc.view.data;
    double* sq = acc.view.data + f;
    for (Index j = 0; j < f; ++j) sum[j] = 0, sq[j] = 0;
    for (Index n = 0; n < rows; ++n) {
      const T* xr = x.row(n);
      for (Index j = 0; j < f; ++j) sum[j] += static_cast<double>(xr[j]);
    }
    const double inv_n = 1.0 / static_cast<double>(rows);
    for (Index j = 0; j < f; ++j) sum[j] *= inv_n;  // now the mean
    for (Index n = 0; n < rows; ++n) {
      const T* xr = x.row(n);
      for (Index j = 0; j < f; ++j) {
        const double d = static_cast<double>(xr[j]) - sum[j];
        sq[j] += d * d;
      }
    }
    const double m = cfg.momentum;
    const double unbias = static_cast<double>(rows) / static_cast<double>(rows - 1);
    T* rm = running_mean.view.data;
    T* rv = running_var.view.data;
    for (Index j = 0; j < f; ++j) {
      const double var = sq[j] * inv_n;
      mu[j] = static_cast<T>(sum[j]);
      rs[j] = static_cast<T>(1.0 / std::sqrt(var + cfg.eps));
      rm[j] = static_cast<T>((1 - m) * static_cast<double>(rm[j]) + m * sum[j]);
      rv[j] = static_cast<T>((1 - m) * static_cast<double>(rv[j]) + m * var * unbias);
    }
  } else {
    for (Index j = 0; j < f; ++j) {
      mu[j] = running_mean.view.data[j];
      rs[j] =
          static_cast<T>(1.0 / std::sqrt(static_cast<double>(running_var.view.data[j]) + cfg.eps));
    }
  }
  for (Index n = 0; n < rows; ++n) {
    const T* xr = x.row(n);
    T* yr = y.row(n);
    if (cfg.affine) {
      const T* w = p.weight.value.data;
      const T* b = p.bias.value.data;
      for (Index j = 0; j < f; ++j) yr[j] = (xr[j] - mu[j]) * rs[j] * w[j] + b[j];
    } else {
      for (Index j = 0; j < f; ++j) yr[j] = (xr[j] - mu[j]) * rs[j];
    }
  }
}

template <class T>
void BatchNorm1d<T>::backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T>, ConstMat<T> dy,
                              MatView<T> dx) {
  const Index f = cfg.num_features;
  const Index rows = x.rows;
  SHOAL_DCHECK(x.cols == f && dy.cols == f && dx.cols == f && dy.rows == rows && dx.rows == rows);
  const T* mu = saved_mean.view.data;
  const T* rs = saved_rstd.view.data;
  // Column sums Σ dy and Σ dy·x̂, in double: they feed dbias, dweight and (training) dx.
  double* sdy = acc.view.data;
  double* sdyx = acc.view.data + f;
  for (Index j = 0; j < f; ++j) sdy[j] = 0, sdyx[j] = 0;
  for (Index n = 0; n < rows; ++n) {
    const T* xr = x.row(n);
    const T* dyr = dy.row(n);
    for (Index j = 0; j < f; ++j) {
      sdy[j] += static_cast<double>(dyr[j]);
      sdyx[j] += static_cast<double>(dyr[j]) * static_cast<double>((xr[j] - mu[j]) * rs[j]);
    }
  }
  if (cfg.affine) {
    T* dw = p.weight.grad.data;
    T* db = p.bias.grad.data;
    for (Index j = 0; j < f; ++j) {
      dw[j] += static_cast<T>(sdyx[j]);
      db[j] += static_cast<T>(sdy[j]);
    }
  }
  const T* w = cfg.affine ? p.weight.value.data : nullptr;
  if (ctx.training) {
    // dx = w·r·(dy − mean_n(dy) − x̂·mean_n(dy·x̂)); fold the column terms into sdy/sdyx.
    const double inv_n = 1.0 / static_cast<double>(rows);
    for (Index j = 0; j < f; ++j) sdy[j] *= inv_n, sdyx[j] *= inv_n;
    for (Index n = 0; n < rows; ++n) {
      const T* xr = x.row(n);
      const T* dyr = dy.row(n);
      T* dxr = dx.row(n);
      for (Index j = 0; j < f; ++j) {
        const T scale = w != nullptr ? w[j] * rs[j] : rs[j];
        const T xhat = (xr[j] - mu[j]) * rs[j];
        dxr[j] = scale * (dyr[j] - static_cast<T>(sdy[j]) - xhat * static_cast<T>(sdyx[j]));
      }
    }
  } else {
    for (Index n = 0; n < rows; ++n) {
      const T* dyr = dy.row(n);
      T* dxr = dx.row(n);
      for (Index j = 0; j < f; ++j) dxr[j] = dyr[j] * (w != nullptr ? w[j] * rs[j] : rs[j]);
    }
  }
}

template struct BatchNorm1d<float>;
template struct BatchNorm1d<double>;

}  // namespace shoal::layers
