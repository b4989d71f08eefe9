#include "forecast_values.h"

#include <algorithm>

#include "shoal/core/error.h"
#include "shoal/data/scalers.h"

namespace shoal::train::detail {
namespace {

using layers::LossKind;

// out [B·H, N·C] (column s·C + k: series s, output k) → dst [B, H, N, C], inverse-scaled with
// each window's and series' statistics.
void unscale_outputs(ConstMat<float> out, const data::WindowBatch& b, data::ScalerType scaler,
                     Index n, Index c, float* dst) {
  const Index rows = out.rows, h = rows / b.B;
  for (Index r = 0; r < rows; ++r) std::copy_n(out.row(r), n * c, dst + r * n * c);
  for (Index w = 0; w < b.B; ++w)
    for (Index s = 0; s < n; ++s) {
      const data::ScaleStats st{b.y_shift.data[w * n + s], b.y_scale.data[w * n + s]};
      for (Index k = 0; k < c; ++k)
        data::unscale_strided(scaler, dst + (w * h * n + s) * c + k, n * c, h, st);
    }
}

ConstMat<float> loc_of(const data::WindowBatch& b, Index n) {
  return {b.y_shift.data, b.B, n};
}
ConstMat<float> scale_of(const data::WindowBatch& b, Index n) {
  return {b.y_scale.data, b.B, n};
}

// The loss validation scores a fit of `train` with (see ValidationScorer).
layers::LossConfig valid_config(const TrainConfig& train) {
  if (layers::is_distribution_loss(train.loss.kind) &&
      (!train.valid_loss || !layers::is_point_loss(train.valid_loss->kind)))
    return train.loss;
  return train.validation_loss();
}

}  // namespace

void check_loss_pair(const TrainConfig& train) {
  const layers::LossConfig& t = train.loss;
  if (!train.valid_loss) return;
  const layers::LossConfig& v = *train.valid_loss;
  if (layers::is_point_loss(t.kind) && !layers::is_point_loss(v.kind))
    throw Error(fmt::format(
        "valid_loss {} needs a model trained with it: with a point training loss, validate "
        "with a point loss (mae, mse, ...)",
        loss_name(v.kind)));
  if (t.kind == LossKind::kMultiQuantile &&
      (v.kind != LossKind::kMultiQuantile || v.quantiles.size() != t.quantiles.size()))
    throw Error(fmt::format(
        "a model trained with MQLoss validates with an MQLoss of as many quantiles ({}): set "
        "valid_loss to one (or leave it unset)",
        t.quantiles.size()));
  if (layers::is_distribution_loss(t.kind) && v.kind == LossKind::kMultiQuantile)
    throw Error(
        "validating a DistributionLoss fit with MQLoss (on sampled quantiles) is not supported; "
        "leave valid_loss unset (the likelihood) or give a point loss (scored on the mean)");
}

ForecastValues::ForecastValues(const layers::LossConfig& loss, data::ScalerType scaler,
                               uint64_t seed, Index max_rows, Index n)
    : loss_(loss), scaler_(scaler), seed_(seed), n_(n), c_(layers::forecast_values(loss)) {
  if (layers::is_distribution_loss(loss.kind)) {
    params_.resize(size_t(max_rows * n * layers::loss_outputs(loss)));
    mean_.resize(size_t(max_rows * n));
    quants_.resize(size_t(max_rows * n) * loss.quantiles.size());
  }
}

void ForecastValues::map(ConstMat<float> out, const data::WindowBatch& b, uint64_t draw,
                         float* dst) {
  if (!layers::is_distribution_loss(loss_.kind)) {
    unscale_outputs(out, b, scaler_, n_, c_, dst);
    return;
  }
  const Index rows = out.rows, k = layers::loss_outputs(loss_), q = Index(loss_.quantiles.size());
  SHOAL_CHECK(size_t(rows * n_) <= mean_.size(), "ForecastValues: {} rows over the planned {}",
              rows, mean_.size() / size_t(n_));
  const layers::DistributionConfig dist = layers::distribution_config(loss_);
  const MatView<float> params(params_.data(), rows, k * n_);
  layers::DistributionNll<float>(dist).map_parameters(out, loc_of(b, n_), scale_of(b, n_), params);
  const MatView<float> mean(mean_.data(), rows, n_), quants(quants_.data(), rows, n_ * q);
  // One stream per window, numbered from `draw`: a window's draws do not depend on how a
  // predict splits its windows into batches.
  const Index h = rows / b.B;
  for (Index w = 0; w < b.B; ++w)
    layers::sample_distribution<float>(dist, params.rows_block(w * h, h), loss_.quantiles,
                                       loss_.num_samples,
                                       seed_ ^ (0x9E3779B97F4A7C15ull * (draw + uint64_t(w) + 1)),
                                       mean.rows_block(w * h, h), quants.rows_block(w * h, h));
  for (Index r = 0; r < rows; ++r)
    for (Index s = 0; s < n_; ++s) {
      float* v = dst + (r * n_ + s) * c_;
      v[0] = mean(r, s);
      for (Index j = 0; j < q; ++j) v[1 + j] = quants(r, s * q + j);
      if (loss_.return_params)
        for (Index j = 0; j < k; ++j)
          v[1 + q + j] = params(r, layers::distribution_column(
                                       dist, n_, s, layers::distribution_return_param(dist, j)));
    }
}

ValidationScorer::ValidationScorer(const TrainConfig& train, data::ScalerType scaler,
                                   Index max_windows, Index h, Index n, Index input_size)
    : train_loss_(train.loss),
      scaler_(scaler),
      h_(h),
      n_(n),
      valid_(valid_config(train)),
      mean_(layers::is_distribution_loss(train.loss.kind) ? layers::distribution_config(train.loss)
                                                          : layers::DistributionConfig{}) {
  const Index m = layers::loss_outputs(train.loss);
  values_.resize(size_t(max_windows * h * n * m));
  if (valid_.config().kind == LossKind::kMase)
    raw_insample_.resize(size_t(max_windows * input_size * n));
}

double ValidationScorer::score(ConstMat<float> out, const data::WindowBatch& b) {
  const Index rows = b.B * h_;
  const ConstMat<float> target(b.outsample_y_raw.data, rows, n_);
  const ConstMat<float> mask(b.outsample_mask.data, rows, n_);
  if (valid_.scores_raw_target())  // the likelihood, on the model's raw outputs
    return valid_.forward(out, target, mask, loc_of(b, n_), scale_of(b, n_));
  Index c = layers::loss_outputs(train_loss_);
  if (layers::is_distribution_loss(train_loss_.kind)) {
    // The distribution's mean (StudentT's ν > 3 keeps it finite).
    mean_.mean(out, loc_of(b, n_), scale_of(b, n_), MatView<float>(values_.data(), rows, n_));
    c = 1;
  } else {
    unscale_outputs(out, b, scaler_, n_, c, values_.data());
  }
  if (valid_.config().kind == LossKind::kMase) {
    data::inverse_scale_insample(b, scaler_, raw_insample_.data());
    valid_.set_insample(raw_insample_.data(), b.B, b.L, n_);
  }
  return valid_.forward(ConstMat<float>(values_.data(), rows, n_ * c), target, mask);
}

}  // namespace shoal::train::detail
