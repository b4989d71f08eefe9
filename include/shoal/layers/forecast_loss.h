// The loss of a forecasting model's training step, whichever of neuralforecast's losses it is:
// a point loss (layers/losses.h) on one output per forecast value, MQLoss or DistributionLoss
// (layers/multi_output_losses.h) on M outputs per value. One interface for the trainer: the
// batch's Σ W first (denominator), then forward/backward on the whole batch or chunk() on its
// windows a few at a time, with the same masked-mean semantics for every kind.
//
// Shapes: out and dout [rows, N·M] (rows = windows·H), target and mask [rows, N], loc and scale
// [windows, N] (the window scaler's shift and scale: DistributionLoss maps its parameters with
// them and scores the raw target; the other losses ignore them and score the scaled target).
#pragma once

#include <optional>
#include <span>

#include "shoal/layers/losses.h"
#include "shoal/layers/multi_output_losses.h"

namespace shoal::layers {

// The likelihood of a distribution kind of LossConfig (is_distribution_loss).
DistributionConfig distribution_config(const LossConfig& c);

template <class T>
class ForecastLoss {
 public:
  explicit ForecastLoss(const LossConfig& c);

  const LossConfig& config() const { return cfg_; }
  Index outputs() const { return loss_outputs(cfg_); }
  // Whether the loss scores the raw target through the scaler's loc and scale
  // (DistributionLoss), rather than the scaled target.
  bool scores_raw_target() const { return is_distribution_loss(cfg_.kind); }

  // MASE's batch-wide insample factor (PointLoss::set_insample); nothing for other losses.
  void set_insample(const T* insample, Index windows, Index input_size, Index n_series);
  std::span<const double> insample_factor() const;
  void set_insample_factor(std::span<const double> f);

  double denominator(ConstMat<T> mask, Index rows, Index cols) const;
  // The loss of a mean M = Σ ℓ·W / Σ W and its derivative (RMSE's √; identity otherwise).
  double finish(double mean) const;
  double finish_grad(double mean) const;

  double forward(ConstMat<T> out, ConstMat<T> target, ConstMat<T> mask = {}, ConstMat<T> loc = {},
                 ConstMat<T> scale = {});
  // Overwrites dout with ∂L/∂out; call after forward on the same inputs.
  void backward(ConstMat<T> out, ConstMat<T> target, MatView<T> dout, ConstMat<T> mask = {},
                ConstMat<T> loc = {}, ConstMat<T> scale = {});
  // One chunk of a batch (rows start at a window; loc and scale: the chunk's windows): returns
  // its Σ ℓ·W and writes dout = s · ∂(Σ ℓ·W)/∂out, s = 1 / denominator() of the whole batch.
  double chunk(ConstMat<T> out, ConstMat<T> target, ConstMat<T> mask, ConstMat<T> loc,
               ConstMat<T> scale, MatView<T> dout, T s);
  // Whether the last forward's Σ ℓ·W was finite (a non-finite one makes the loss 0 and the
  // step a no-op, as neuralforecast's _divide_no_nan; trainers stop on it).
  bool numerator_finite() const { return finite_; }

 private:
  LossConfig cfg_;
  std::optional<PointLoss<T>> point_;
  std::optional<MultiQuantileLoss<T>> quantiles_;
  std::optional<DistributionNll<T>> distribution_;
  bool finite_ = true;
};

}  // namespace shoal::layers
