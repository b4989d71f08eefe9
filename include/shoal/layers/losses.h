// Losses on [N, F] predictions: the masked, weighted point losses of neuralforecast and
// PyTorch's BCE-with-logits. Each is a small struct: forward returns the scalar loss (double),
// backward overwrites the gradient w.r.t. the prediction, scaled by the upstream dloss.
//
// Point losses (neuralforecast's single-output losses), with e = ŷ − y and
// W = mask · weight · col_weight · horizon_weight[r mod H] (row r of a [B·H, N] view):
//   M = Σ ℓ(ŷ, y)·c·W / Σ W, and M = 0 (gradient 0) when that ratio is NaN or ±inf: an
//   all-masked batch, a zero weight sum, or a NaN in the sums (neuralforecast's _divide_no_nan).
//   The horizon weight is therefore normalised by Σ W, as the mask is. L = M, except RMSE's √M.
//   MAE      ℓ = |e|                  ℓ' = sign(e), sign(0) = 0 (as torch.abs)
//   MSE      ℓ = e²                   ℓ' = 2e
//   RMSE     ℓ = e², L = √M           ∂L/∂ŷ = ∂M/∂ŷ / (2√M) (0 when M = 0)
//   MAPE     ℓ = |e|·a, a = 1/|y| (0 where not finite)          ℓ' = sign(e)·a
//   SMAPE    ℓ = 2|e|/s, s = |y| + |ŷ| (0 where not finite)     ℓ' = 2(sign(e) − |e|·sign(ŷ)/s)/s
//   MASE     ℓ = |e|, c = c[column] (see set_insample)          ℓ' = sign(e)
//   Huber    (torch huber_loss) ℓ = ½e² if |e| < δ else δ(|e| − ½δ), ℓ' = clamp(e, −δ, δ)
//   Quantile ℓ = max(q(y − ŷ), (q − 1)(y − ŷ)), ℓ' = 1 − q (e > 0), −q (e < 0), ½ − q (e = 0:
//            torch.max splits a tie's gradient)
//   ∂M/∂ŷ = dloss · ℓ'·c·W / Σ W; c = 1 except MASE's.
// BCE with logits z, target y, optional per-element weight w (torch mean reduction):
//   L = (1/(N·F)) Σ w·(max(z, 0) − z·y + log(1 + exp(−|z|)))   (stable for any |z|)
//   ∂L/∂z = dloss · w·(σ(z) − y) / (N·F).
// Shapes: ŷ, y, mask, weight, dŷ [N, F] (any leading dimensions); col_weight [F]; a horizon
// weight [H] needs N a multiple of H (rows b·H + t). Sums accumulate in double. Derivations:
// docs/derivations/losses.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal::layers {

// Optional weights of a point loss; a view with data == nullptr (the default) means all ones.
template <class T>
struct LossWeights {
  ConstMat<T> mask;               // [N, F] 1 keeps an element, 0 drops it
  ConstMat<T> weight;             // [N, F] per-element weight
  const T* col_weight = nullptr;  // [F] per-column weight, broadcast over rows
};

// neuralforecast's losses: the point losses (one output per forecast value), MQLoss,
// DistributionLoss with a Normal, StudentT or Poisson likelihood and the GMM (several:
// layers/multi_output_losses.h). Every kind from kNormal on is a likelihood.
enum class LossKind : uint8_t {
  kMae,
  kMse,
  kRmse,
  kMape,
  kSmape,
  kMase,
  kHuber,
  kQuantile,
  kMultiQuantile,
  kNormal,
  kStudentT,
  kPoisson,
  kGmm
};

inline bool is_point_loss(LossKind k) {
  return k < LossKind::kMultiQuantile;
}
inline bool is_distribution_loss(LossKind k) {
  return k >= LossKind::kNormal;
}

// A loss and its parameters: neuralforecast's loss classes and their arguments.
struct LossConfig {
  LossKind kind = LossKind::kMae;
  double delta = 1.0;                  // HuberLoss, > 0
  double q = 0.5;                      // QuantileLoss, in (0, 1)
  Index seasonality = 1;               // MASE, ≥ 1
  std::vector<double> horizon_weight;  // [H] weight of each horizon step; empty: all ones
  // MQLoss: the quantiles it is trained on; DistributionLoss: those its forecasts report (from
  // the samples), the median first (level_quantiles / unique_quantiles in
  // layers/multi_output_losses.h give neuralforecast's lists for level= and quantiles=).
  std::vector<double> quantiles;
  Index num_samples = 1000;    // DistributionLoss: draws per forecast value
  bool return_params = false;  // DistributionLoss: forecasts include the mapped parameters
  Index n_components = 1;      // GMM: mixture components, in [1, kMaxMixtureComponents]
  bool weighted = false;       // GMM: learned component weights (else all 1/n_components)
};

// Outputs of a model trained with `c` per forecast value (M: 1 for a point loss, the quantiles
// of MQLoss, the distribution's parameters), and the values a forecast reports per step (C:
// the output itself, MQLoss's quantiles, or DistributionLoss's mean, quantiles and, with
// return_params, its parameters).
Index loss_outputs(const LossConfig& c);
Index forecast_values(const LossConfig& c);

// What a recurrent model that forecasts step by step feeds back as its next input, in the scaled
// space (neuralforecast's _predict_step_recurrent_single): -1 the mean of its M outputs (a point
// loss's one, MQLoss's quantiles); k ≥ 0 output k, the distribution's location, which is the
// scaled mean (Normal's mean, StudentT's loc); kNoRecurrentFeedback where no output is the mean
// (Poisson's rate passes a nonlinear map, a GMM's mean mixes its components).
inline constexpr Index kNoRecurrentFeedback = -2;
inline Index recurrent_feedback_output(const LossConfig& c) {
  switch (c.kind) {
    case LossKind::kNormal:
      return 0;
    case LossKind::kStudentT:
      return 1;
    case LossKind::kPoisson:
    case LossKind::kGmm:
      return kNoRecurrentFeedback;
    default:
      return -1;
  }
}

// The masked weighted mean of an elementwise loss. backward uses the ratio of the last forward
// (to zero the gradient when it was not finite), so call it after forward on the same inputs.
template <class T>
struct PointLoss {
  using Config = LossConfig;

  Config cfg;

  explicit PointLoss(Config c);
  // MASE's factor c[n] = Σ_b 1/scale[b, n] over the batch's windows, scale[b, n] = mean over t of
  // |x[b, t, n] − x[b, t − s, n]| (t ∈ [s, L)), terms with a zero or non-finite scale dropped.
  // It is the sum over every window, not each window's own scale: neuralforecast 3.3.0 divides
  // the [B, H, N] errors by scale[:, None, None] ([B, 1, 1, N]), which broadcasts to
  // [B, B, H, N] and sums each error over every window's scale. Call before forward / chunk
  // with the batch's insample x [B, L, N] (the space the loss is taken in); other losses ignore
  // it.
  void set_insample(const T* insample, Index windows, Index input_size, Index n_series);
  std::span<const double> insample_factor() const { return factor_; }
  void set_insample_factor(std::span<const double> f) { factor_.assign(f.begin(), f.end()); }
  // Σ W of a batch's mask ([B·H, N], empty: all ones) with the horizon weight: the denominator
  // chunk() needs.
  double denominator(ConstMat<T> mask, Index rows, Index cols) const;
  // The loss of a mean M = Σ ℓ·c·W / Σ W (RMSE: √M; others: M), and its derivative (what a
  // trainer that summed chunks' gradients of M multiplies them by; 1 except RMSE).
  double finish(double mean) const;
  double finish_grad(double mean) const;
  double forward(ConstMat<T> pred, ConstMat<T> target, const LossWeights<T>& w = {});
  void backward(ConstMat<T> pred, ConstMat<T> target, MatView<T> dpred,
                const LossWeights<T>& w = {}, double dloss = 1.0) const;
  // One chunk of a batch whose Σ W is known beforehand (a batch trained a few rows at a time):
  // returns the chunk's Σ ℓ·c·W and writes dŷ = scale · ℓ'·c·W, with scale = 1 / Σ W of the
  // whole batch (denominator()), so the chunks' gradients are exactly the whole batch's mean's
  // (times finish_grad for RMSE). mask may be empty; a chunk starts at a window (row b·H).
  double chunk(ConstMat<T> pred, ConstMat<T> target, ConstMat<T> mask, MatView<T> dpred,
               T scale) const;
  // Whether the last forward's Σ ℓ·W was finite. forward returns 0 for a non-finite ratio (as
  // neuralforecast's _divide_no_nan does), which hides a diverged model; trainers ask this.
  bool numerator_finite() const { return num_finite_; }

 private:
  double inv_den_ = 0;  // finish_grad / Σ W of the last forward, 0 when its ratio was not finite
  bool num_finite_ = true;
  std::vector<double> factor_;  // MASE's c [N], from set_insample
};

// Σ of a mask's entries in double (a loss's denominator); a contiguous mask is summed as one
// run (rows of one series would otherwise pay a reduction's set-up per element).
template <class T>
double mask_sum(ConstMat<T> mask);

template <class T>
struct MaeLoss : PointLoss<T> {
  MaeLoss() : PointLoss<T>({.kind = LossKind::kMae}) {}
};
template <class T>
struct MseLoss : PointLoss<T> {
  MseLoss() : PointLoss<T>({.kind = LossKind::kMse}) {}
};
template <class T>
struct HuberLoss : PointLoss<T> {
  explicit HuberLoss(double delta = 1.0)
      : PointLoss<T>({.kind = LossKind::kHuber, .delta = delta}) {}
};

// torch.nn.functional.binary_cross_entropy_with_logits(z, y, weight, reduction="mean").
template <class T>
struct BceWithLogitsLoss {
  double forward(ConstMat<T> logits, ConstMat<T> target, ConstMat<T> weight = {}) const;
  void backward(ConstMat<T> logits, ConstMat<T> target, MatView<T> dlogits, ConstMat<T> weight = {},
                double dloss = 1.0) const;
};

}  // namespace shoal::layers
