#include "shoal/layers/revin_last.h"

#include <cmath>

namespace shoal::layers {

template <class T>
void RevInLast<T>::plan(Planner& planner, Index max_windows) {
  SHOAL_CHECK(cfg.input_size > 0, "RevIN needs input_size > 0, got {}", cfg.input_size);
  if (cfg.affine) {
    planner.param(affine_weight, "affine_weight", {1});
    planner.param(affine_bias, "affine_bias", {1});
  }
  planner.buffer(center, Region::kActivations, "center", {max_windows});
  planner.buffer(stdev, Region::kActivations, "stdev", {max_windows});
}

template <class T>
void RevInLast<T>::init(RngStream&) {
  if (!cfg.affine) return;
  affine_weight.value.data[0] = T(1);
  affine_bias.value.data[0] = T(0);
}

template <class T>
void RevInLast<T>::normalize(ConstMat<T> x, MatView<T> y) {
  const Index l = cfg.input_size;
  const T w = cfg.affine ? affine_weight.value.data[0] : T(1),
          b = cfg.affine ? affine_bias.value.data[0] : T(0);
  for (Index r = 0; r < x.rows; ++r) {
    const T* xr = x.row(r);
    // Two passes in double, as torch's var reduces with a double accumulator's accuracy.
    double mean = 0;
    for (Index t = 0; t < l; ++t) mean += double(xr[t]);
    mean /= double(l);
    double ss = 0;
    for (Index t = 0; t < l; ++t) ss += (double(xr[t]) - mean) * (double(xr[t]) - mean);
    const T sd = T(std::sqrt(T(ss / double(l)) + T(cfg.eps)));
    const T c = cfg.subtract_last ? xr[l - 1] : T(mean);
    center.view.data[r] = c;
    stdev.view.data[r] = sd;
    T* yr = y.row(r);
    for (Index t = 0; t < l; ++t) {
      const T z = (xr[t] - c) / sd;
      yr[t] = cfg.affine ? z * w + b : z;
    }
  }
}

template <class T>
void RevInLast<T>::normalize_backward(ConstMat<T> x, ConstMat<T> dy) {
  if (!cfg.affine) return;
  double dw = 0, db = 0;
  for (Index r = 0; r < x.rows; ++r) {
    const T c = center.view.data[r], sd = stdev.view.data[r];
    for (Index t = 0; t < cfg.input_size; ++t) {
      dw += double(dy(r, t)) * double((x(r, t) - c) / sd);
      db += double(dy(r, t));
    }
  }
  affine_weight.grad.data[0] += T(dw);
  affine_bias.grad.data[0] += T(db);
}

template <class T>
void RevInLast<T>::denormalize(ConstMat<T> x, MatView<T> y) {
  const T eps2 = T(cfg.eps * cfg.eps);
  const T w = cfg.affine ? affine_weight.value.data[0] + eps2 : T(1),
          b = cfg.affine ? affine_bias.value.data[0] : T(0);
  for (Index r = 0; r < x.rows; ++r) {
    const T c = center.view.data[r], sd = stdev.view.data[r];
    for (Index j = 0; j < x.cols; ++j) {
      const T z = cfg.affine ? (x(r, j) - b) / w : x(r, j);
      y(r, j) = z * sd + c;
    }
  }
}

template <class T>
void RevInLast<T>::denormalize_backward(ConstMat<T> x, ConstMat<T> dy, MatView<T> dx) {
  const T eps2 = T(cfg.eps * cfg.eps);
  const T w = cfg.affine ? affine_weight.value.data[0] + eps2 : T(1),
          b = cfg.affine ? affine_bias.value.data[0] : T(0);
  double dw = 0, db = 0;
  for (Index r = 0; r < x.rows; ++r) {
    const T sd = stdev.view.data[r];
    for (Index j = 0; j < x.cols; ++j) {
      const T g = dy(r, j) * sd;  // ∂/∂z
      if (cfg.affine) {
        const T z = (x(r, j) - b) / w;
        dw -= double(g) * double(z / w);
        db -= double(g / w);
        dx(r, j) = g / w;
      } else {
        dx(r, j) = g;
      }
    }
  }
  if (cfg.affine) {
    affine_weight.grad.data[0] += T(dw);
    affine_bias.grad.data[0] += T(db);
  }
}

template <class T>
profile::Cost RevInLast<T>::cost(double elements) const {
  return {.flops = 4.0 * elements, .bytes = 2.0 * elements * double(sizeof(T))};
}

template struct RevInLast<float>;
template struct RevInLast<double>;

}  // namespace shoal::layers
