#include "shoal/layers/layer_norm.h"

#include "shoal/kernels/layer_norm.h"

namespace shoal::layers {

template <class T>
void LayerNorm<T>::plan(Planner& planner, Index max_rows) {
  SHOAL_CHECK(cfg.normalized_shape.rank > 0 && features() > 0,
              "LayerNorm needs a non-empty normalized_shape, got {}", cfg.normalized_shape.str());
  SHOAL_CHECK(cfg.cols == 0 || cfg.cols == features() ||
                  cfg.cols == cfg.normalized_shape[cfg.normalized_shape.rank - 1],
              "LayerNorm cols must be 0, F or the last dim of normalized_shape {}, got {}",
              cfg.normalized_shape.str(), cfg.cols);
  SHOAL_CHECK(cfg.eps >= 0, "LayerNorm eps must be >= 0, got {}", cfg.eps);
  SHOAL_CHECK(max_rows > 0 && max_rows % rows_per_sample() == 0,
              "LayerNorm max_rows must be a positive multiple of {}, got {}", rows_per_sample(),
              max_rows);
  if (has_weight()) planner.param(p.weight, "weight", cfg.normalized_shape);
  if (has_bias()) planner.param(p.bias, "bias", cfg.normalized_shape);
  planner.buffer(mean, Region::kActivations, "mean", {max_rows / rows_per_sample()});
  planner.buffer(rstd, Region::kActivations, "rstd", {max_rows / rows_per_sample()});
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
  const Index r = rows_per_sample(), n = x.rows / r;
  SHOAL_DCHECK(x.cols == cols() && y.cols == cols() && x.rows == y.rows && x.rows == n * r &&
               n <= mean.view.numel());
  kernels::layer_norm_forward<T>(
      n, r, cols(), cfg.eps, has_weight() ? p.weight.value.data : nullptr,
      has_bias() ? p.bias.value.data : nullptr, x, y, mean.view.data, rstd.view.data);
}

template <class T>
void LayerNorm<T>::forward_residual(const Ctx&, ConstMat<T> a, ConstMat<T> res, MatView<T> s,
                                    MatView<T> y) {
  const Index r = rows_per_sample(), n = a.rows / r;
  SHOAL_DCHECK(a.cols == cols() && a.rows == n * r && n <= mean.view.numel());
  kernels::layer_norm_residual_forward<T>(
      n, r, cols(), cfg.eps, has_weight() ? p.weight.value.data : nullptr,
      has_bias() ? p.bias.value.data : nullptr, a, res, s, y, mean.view.data, rstd.view.data);
}

template <class T>
void LayerNorm<T>::backward(const Ctx&, ConstMat<T> x, ConstMat<T>, ConstMat<T> dy, MatView<T> dx) {
  const Index r = rows_per_sample(), n = x.rows / r;
  SHOAL_DCHECK(x.cols == cols() && dy.cols == cols() && dx.cols == cols() && dy.rows == x.rows &&
               dx.rows == x.rows && x.rows == n * r);
  kernels::layer_norm_backward<T>(n, r, cols(), has_weight() ? p.weight.value.data : nullptr,
                                  has_weight() ? p.weight.grad.data : nullptr,
                                  has_bias() ? p.bias.grad.data : nullptr, mean.view.data,
                                  rstd.view.data, x, dy, dx);
}

template struct LayerNorm<float>;
template struct LayerNorm<double>;

}  // namespace shoal::layers
