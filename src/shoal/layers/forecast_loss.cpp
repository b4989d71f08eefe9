#include "shoal/layers/forecast_loss.h"

#include <cmath>

#include "shoal/core/error.h"

namespace shoal::layers {

Index loss_outputs(const LossConfig& c) {
  switch (c.kind) {
    case LossKind::kMultiQuantile:
      return Index(c.quantiles.size());
    case LossKind::kNormal:
    case LossKind::kStudentT:
    case LossKind::kPoisson:
    case LossKind::kGmm:
      return distribution_parameters(distribution_config(c));
    default:
      return 1;
  }
}

Index forecast_values(const LossConfig& c) {
  if (!is_distribution_loss(c.kind)) return loss_outputs(c);
  return 1 + Index(c.quantiles.size()) + (c.return_params ? loss_outputs(c) : 0);
}

DistributionConfig distribution_config(const LossConfig& c) {
  DistributionKind kind = DistributionKind::kNormal;
  switch (c.kind) {
    case LossKind::kStudentT:
      kind = DistributionKind::kStudentT;
      break;
    case LossKind::kPoisson:
      kind = DistributionKind::kPoisson;
      break;
    case LossKind::kGmm:
      kind = DistributionKind::kGmm;
      break;
    default:
      break;
  }
  return {.kind = kind,
          .horizon_weight = c.horizon_weight,
          .n_components = c.n_components,
          .weighted = c.weighted};
}

template <class T>
ForecastLoss<T>::ForecastLoss(const LossConfig& c) : cfg_(c) {
  if (is_point_loss(c.kind)) {
    point_.emplace(c);
  } else if (c.kind == LossKind::kMultiQuantile) {
    quantiles_.emplace(
        MultiQuantileConfig{.quantiles = c.quantiles, .horizon_weight = c.horizon_weight});
  } else {
    SHOAL_CHECK(c.num_samples >= 1, "DistributionLoss num_samples must be ≥ 1, got {}",
                c.num_samples);
    distribution_.emplace(distribution_config(c));
  }
}

template <class T>
void ForecastLoss<T>::set_insample(const T* insample, Index windows, Index input_size,
                                   Index n_series) {
  if (point_ && cfg_.kind == LossKind::kMase)
    point_->set_insample(insample, windows, input_size, n_series);
}

template <class T>
std::span<const double> ForecastLoss<T>::insample_factor() const {
  return point_ ? point_->insample_factor() : std::span<const double>{};
}

template <class T>
void ForecastLoss<T>::set_insample_factor(std::span<const double> f) {
  if (point_) point_->set_insample_factor(f);
}

template <class T>
double ForecastLoss<T>::denominator(ConstMat<T> mask, Index rows, Index cols) const {
  if (point_) return point_->denominator(mask, rows, cols);
  if (quantiles_) return quantiles_->denominator(mask, rows, cols);
  return distribution_->denominator(mask, rows, cols);
}

template <class T>
double ForecastLoss<T>::finish(double mean) const {
  return point_ ? point_->finish(mean) : mean;
}

template <class T>
double ForecastLoss<T>::finish_grad(double mean) const {
  return point_ ? point_->finish_grad(mean) : 1.0;
}

template <class T>
double ForecastLoss<T>::forward(ConstMat<T> out, ConstMat<T> target, ConstMat<T> mask,
                                ConstMat<T> loc, ConstMat<T> scale) {
  if (point_) {
    const double l = point_->forward(out, target, {.mask = mask});
    finite_ = point_->numerator_finite();
    return l;
  }
  const double l = quantiles_ ? quantiles_->forward(out, target, mask)
                              : distribution_->forward(out, target, loc, scale, mask);
  finite_ = std::isfinite(l);
  return finite_ ? l : 0.0;
}

template <class T>
void ForecastLoss<T>::backward(ConstMat<T> out, ConstMat<T> target, MatView<T> dout,
                               ConstMat<T> mask, ConstMat<T> loc, ConstMat<T> scale) {
  if (point_) {
    point_->backward(out, target, dout, {.mask = mask});
  } else if (!finite_) {
    for (Index r = 0; r < dout.rows; ++r)
      for (Index c = 0; c < dout.cols; ++c) dout(r, c) = T(0);
  } else if (quantiles_) {
    quantiles_->backward(out, target, dout, mask);
  } else {
    distribution_->backward(out, target, loc, scale, dout, mask);
  }
}

template <class T>
double ForecastLoss<T>::chunk(ConstMat<T> out, ConstMat<T> target, ConstMat<T> mask,
                              ConstMat<T> loc, ConstMat<T> scale, MatView<T> dout, T s) {
  if (point_) return point_->chunk(out, target, mask, dout, s);
  if (quantiles_) return quantiles_->chunk(out, target, mask, dout, s);
  return distribution_->chunk(out, target, loc, scale, mask, dout, s);
}

template class ForecastLoss<float>;
template class ForecastLoss<double>;

}  // namespace shoal::layers
